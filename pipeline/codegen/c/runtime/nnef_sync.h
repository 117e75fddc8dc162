/*
 * nnef_sync.h -- sync variables, schedule barriers and step instrumentation of the runtime
 * (nnef_runtime.c implements them; part of the pipeline's C generator, copied verbatim next to
 * the generated code; docs/codegen.md). A header of its own, with C linkage, so that items
 * compiled as C++ (the CUDA items of a mixed deployment, docs/codegen-cuda.md) use the very same
 * protocol without the C primitives of nnef_runtime.h.
 */
#ifndef NNEF_SYNC_H
#define NNEF_SYNC_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- sync variables */

/* A sync variable: the buffer the writer copies its value into, and the number of the
 * inference whose value it holds (0: none yet). */
typedef struct {
    float *data;
    uint32_t floats;
    uint32_t epoch;
} nnef_sync;

/* send: copy the value, then publish it (release). The writer never waits. */
void nnef_send(nnef_sync *s, const float *value, uint32_t epoch);
/* get (event sync): wait until the writer published inference `epoch` (acquire). */
const float *nnef_get(nnef_sync *s, uint32_t epoch);
/* get (barrier sync): the barrier before it published the value; never waits, but counts
 * a value that is not there (a schedule race) in nnef_sync_races. */
const float *nnef_get_published(nnef_sync *s, uint32_t epoch);
/* barrier `id` of the schedule (1-based), shared by every item. */
void nnef_barrier(int id);
extern uint32_t nnef_sync_races;

/* ---------------------------------------------------------------- instrumentation */

#if defined(NNEF_TRACE)
void nnef_step_begin(int item, int step, uint32_t epoch);
void nnef_step_end(int item, int step, uint32_t epoch);
#define NNEF_STEP(item, step, epoch, call) \
    do { \
        nnef_step_begin((item), (step), (epoch)); \
        call; \
        nnef_step_end((item), (step), (epoch)); \
    } while (0)
#else
#define NNEF_STEP(item, step, epoch, call) call
#endif

#ifdef __cplusplus
}
#endif

#endif /* NNEF_SYNC_H */

/*
 * nnef_harness.h -- what the test harness (nnef_main.c) and the runtime (nnef_runtime.c)
 * know about a generated deployment. The tables are defined by the generated
 * nnef_deployment.c: the items with their run functions and trace buffers, the inputs
 * with the arena locations each item reads them from, the outputs with the arena
 * location of the item producing them.
 */
#ifndef NNEF_HARNESS_H
#define NNEF_HARNESS_H

#include <stdint.h>

#include "nnef_config.h"

#define NNEF_MAX_RANK 7

/* One logged event of the instrumented build (docs/target.md, Petri trace format). */
typedef struct {
    uint64_t t;          /* CLOCK_MONOTONIC, ns since the harness started */
    uint32_t inference;  /* 0-based */
    uint16_t step;       /* index into the item's schedule.json list */
    uint16_t end;        /* 0: start, 1: end */
} nnef_event;

typedef struct {
    const char *name;
    void (*run)(uint32_t epoch);   /* one inference, the item's schedule in order */
    int steps;
    nnef_event *events;            /* NNEF_TRACE: capacity events (static, per item) */
    uint32_t capacity;
    uint32_t count;
    uint32_t dropped;
    uint32_t noise_state;          /* xorshift32 state of the noise mode */
    int (*init)(void);             /* once before the first inference (device memory, weights), or NULL; 0 = ok */
} nnef_item;

typedef struct {
    const char *name;
    int rank;
    uint32_t shape[NNEF_MAX_RANK];
    uint32_t floats;
    float *stage;                   /* the harness reads a vector here */
    int targets;
    float *target[NNEF_MAX_ITEMS];  /* copied to each item declaring the input */
} nnef_input;

typedef struct {
    const char *name;
    int rank;
    uint32_t shape[NNEF_MAX_RANK];
    uint32_t floats;
    const float *source;            /* in the arena of the item producing it */
} nnef_output;

extern nnef_item nnef_items[NNEF_ITEMS];
extern const nnef_input nnef_inputs[NNEF_INPUTS];
extern const nnef_output nnef_outputs[NNEF_OUTPUTS];
extern const char nnef_deployment_name[];

/* runtime services used by the harness */
void nnef_runtime_init(int participants);
void nnef_runtime_destroy(void);
uint64_t nnef_now_ns(void);
void nnef_noise_configure(int enabled, uint32_t seed);
int nnef_trace_write(const char *path, const char *clock);

#endif /* NNEF_HARNESS_H */

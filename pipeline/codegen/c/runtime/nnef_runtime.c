/*
 * nnef_runtime.c -- sync variables, schedule barriers, instrumentation and noise
 * (part of the pipeline's C generator; docs/codegen.md, docs/target.md).
 *
 * Event sync. The writer copies its value into the sync variable's own buffer and then
 * publishes the inference number with a release store; a reader spins on an acquire load
 * until it sees that number (yielding the processor after a short spin, so that more items
 * than cores still make progress). The writer never waits. GCC/Clang __atomic builtins are
 * used rather than C11 <stdatomic.h>, which C99 does not have; they compile to plain
 * loads/stores with the required ordering on x86-64 and AArch64. With NNEF_SYNC_MUTEX (or
 * another compiler) a mutex + condition variable implement the same protocol, the writer
 * then holding the mutex only for the constant-time publication.
 *
 * Between two inferences the harness joins every item at its own barrier, so a writer can
 * never overwrite a value a reader of the previous inference has not read yet.
 *
 * Barrier sync. Each barrier id of the schedule is one pthread barrier of all items; values
 * are copied into the sync buffers before the barrier and read after it (the barrier is a
 * full memory synchronisation, POSIX XBD 4.12). The publication number is still written,
 * and a get that finds it stale counts a race (nnef_sync_races): a schedule bug made
 * visible instead of a silently wrong value.
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "nnef_harness.h"
#include "nnef_runtime.h"

#if defined(__GNUC__) && !defined(NNEF_SYNC_MUTEX)
#define NNEF_ATOMIC_SYNC 1
#endif

uint32_t nnef_sync_races = 0;
static uint64_t nnef_t0 = 0;
static pthread_barrier_t nnef_schedule_barriers[NNEF_BARRIERS];
static int nnef_barriers_ready = 0;

#if !defined(NNEF_ATOMIC_SYNC)
static pthread_mutex_t nnef_sync_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t nnef_sync_cond = PTHREAD_COND_INITIALIZER;
#endif

uint64_t nnef_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec - nnef_t0;
}

void nnef_runtime_init(int participants)
{
    nnef_t0 = 0;
    nnef_t0 = nnef_now_ns();
    if (participants > 1 && NNEF_SCHEDULE_BARRIERS > 0) {
        for (int b = 0; b < NNEF_SCHEDULE_BARRIERS; ++b)
            pthread_barrier_init(&nnef_schedule_barriers[b], NULL, (unsigned)participants);
        nnef_barriers_ready = 1;
    }
}

void nnef_runtime_destroy(void)
{
    if (nnef_barriers_ready) {
        for (int b = 0; b < NNEF_SCHEDULE_BARRIERS; ++b)
            pthread_barrier_destroy(&nnef_schedule_barriers[b]);
        nnef_barriers_ready = 0;
    }
}

/* ---------------------------------------------------------------- sync variables */

void nnef_send(nnef_sync *s, const float *value, uint32_t epoch)
{
    memcpy(s->data, value, (size_t)s->floats * sizeof(float));
#if defined(NNEF_ATOMIC_SYNC)
    __atomic_store_n(&s->epoch, epoch, __ATOMIC_RELEASE);
#else
    pthread_mutex_lock(&nnef_sync_mutex);
    s->epoch = epoch;
    pthread_cond_broadcast(&nnef_sync_cond);
    pthread_mutex_unlock(&nnef_sync_mutex);
#endif
}

/* Not inlined, so that instruction counting (callgrind --toggle-collect) can leave the
 * waiting out: how long a reader spins depends on the other threads, not on the data. */
#if defined(__GNUC__)
__attribute__((noinline))
#endif
void nnef_sync_wait(nnef_sync *s, uint32_t epoch)
{
#if defined(NNEF_ATOMIC_SYNC)
    unsigned spins = 0;
    while (__atomic_load_n(&s->epoch, __ATOMIC_ACQUIRE) < epoch) {
        if (++spins >= 64) {
            spins = 0;
            sched_yield();
        }
    }
#else
    pthread_mutex_lock(&nnef_sync_mutex);
    while (s->epoch < epoch)
        pthread_cond_wait(&nnef_sync_cond, &nnef_sync_mutex);
    pthread_mutex_unlock(&nnef_sync_mutex);
#endif
}

const float *nnef_get(nnef_sync *s, uint32_t epoch)
{
    nnef_sync_wait(s, epoch);
    return s->data;
}

const float *nnef_get_published(nnef_sync *s, uint32_t epoch)
{
#if defined(NNEF_ATOMIC_SYNC)
    uint32_t seen = __atomic_load_n(&s->epoch, __ATOMIC_ACQUIRE);
#else
    pthread_mutex_lock(&nnef_sync_mutex);
    uint32_t seen = s->epoch;
    pthread_mutex_unlock(&nnef_sync_mutex);
#endif
    if (seen != epoch) {
#if defined(NNEF_ATOMIC_SYNC)
        __atomic_add_fetch(&nnef_sync_races, 1u, __ATOMIC_RELAXED);
#else
        pthread_mutex_lock(&nnef_sync_mutex);
        ++nnef_sync_races;
        pthread_mutex_unlock(&nnef_sync_mutex);
#endif
    }
    return s->data;
}

#if defined(__GNUC__)
__attribute__((noinline))
#endif
void nnef_barrier(int id)
{
    if (nnef_barriers_ready && id >= 1 && id <= NNEF_SCHEDULE_BARRIERS)
        pthread_barrier_wait(&nnef_schedule_barriers[id - 1]);
}

/* ---------------------------------------------------------------- instrumentation */

static int nnef_noise_enabled = 0;

void nnef_noise_configure(int enabled, uint32_t seed)
{
    nnef_noise_enabled = enabled;
    for (int i = 0; i < NNEF_ITEMS; ++i) {
        uint32_t s = seed ^ (0x9e3779b9u * (uint32_t)(i + 1));
        nnef_items[i].noise_state = s ? s : 0x2545f491u;
    }
}

#if defined(NNEF_TRACE)
/* Temporal noise: before a step, with probability 1/4, sleep 2 to 50 microseconds; the
 * decisions come from the item's own xorshift32 stream (seed and item index), so a noisy
 * run is reproducible in its decisions, not in its timing. */
static void nnef_noise(nnef_item *it)
{
    uint32_t x = it->noise_state;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    it->noise_state = x;
    if ((x & 3u) == 0u) {
        struct timespec d;
        d.tv_sec = 0;
        d.tv_nsec = (long)(2000u + ((x >> 8) % 49u) * 1000u);
        nanosleep(&d, NULL);
    }
}

static void nnef_log(int item, int step, uint32_t epoch, uint16_t end)
{
    nnef_item *it = &nnef_items[item];
    if (it->count < it->capacity) {
        nnef_event *e = &it->events[it->count++];
        e->t = nnef_now_ns();
        e->inference = epoch - 1u;
        e->step = (uint16_t)step;
        e->end = end;
    } else {
        ++it->dropped;
    }
}

void nnef_step_begin(int item, int step, uint32_t epoch)
{
    if (nnef_noise_enabled)
        nnef_noise(&nnef_items[item]);
    nnef_log(item, step, epoch, 0);
}

void nnef_step_end(int item, int step, uint32_t epoch)
{
    nnef_log(item, step, epoch, 1);
}
#endif

/* The per-item logs in the Petri trace format (pipeline/petri/trace.py):
 * {"schema_version": 1, "clock": ..., "items": {ITEM: [{"event", "step", "inference", "t"}]}}
 * plus "dropped" counts when a buffer overflowed. Returns 0 on success. */
int nnef_trace_write(const char *path, const char *clock)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f, "{\"schema_version\": 1, \"clock\": \"%s\", \"dropped\": {", clock);
    for (int i = 0; i < NNEF_ITEMS; ++i)
        fprintf(f, "%s\"%s\": %u", i ? ", " : "", nnef_items[i].name, (unsigned)nnef_items[i].dropped);
    fprintf(f, "}, \"items\": {");
    for (int i = 0; i < NNEF_ITEMS; ++i) {
        const nnef_item *it = &nnef_items[i];
        fprintf(f, "%s\n\"%s\": [", i ? "," : "", it->name);
        for (uint32_t k = 0; k < it->count; ++k) {
            const nnef_event *e = &it->events[k];
            fprintf(f, "%s\n{\"event\": \"%s\", \"step\": %u, \"inference\": %u, \"t\": %llu}", k ? "," : "",
                    e->end ? "end" : "start", (unsigned)e->step, (unsigned)e->inference, (unsigned long long)e->t);
        }
        fprintf(f, "]");
    }
    fprintf(f, "}}\n");
    return fclose(f) == 0 ? 0 : -1;
}

/*
 * nnef_main.c -- the test harness of a generated deployment (docs/target.md).
 *
 *   nnef_run --inputs DIR --outputs DIR [--vectors N]
 *            [--trace FILE] [--noise-seed S]            (instrumented build: -DNNEF_TRACE)
 *            [--time RUNS --timing FILE] [--warmup W]
 *
 * Reads DIR/<input>.dat (NNEF tensor files of shape [V, *input shape], V >= N), runs one
 * inference per vector, writes DIR/<output>.dat of shape [N, *output shape]. One thread
 * per item (a single-item deployment runs in the main thread); the main thread feeds
 * inputs, runs the first item itself (one thread per item: the main thread is the first
 * item's), starts the other items' threads by a barrier and collects outputs after a second.
 * --time runs RUNS more inferences (after W warm-up runs, default 10), cycling through the
 * N vectors, and writes the nanoseconds of each (CLOCK_MONOTONIC around the inference,
 * from the start barrier to the end barrier) as JSON. --trace writes the per-item step
 * logs in the Petri trace format; --noise-seed injects seeded random delays before steps.
 *
 * Exit status: 0 done, 2 bad usage or input file, 3 output file error, 4 a sync race
 * (barrier mode: a value read before it was published) or a trace buffer overflow.
 * Test harness code: it uses stdio, but no dynamic allocation either.
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nnef_harness.h"
#include "nnef_runtime.h"

#define NNEF_HEADER 128

static pthread_t nnef_threads[NNEF_ITEMS];
static pthread_barrier_t nnef_start, nnef_end;
static volatile uint32_t nnef_epoch = 0;
static volatile int nnef_stop = 0;
static FILE *nnef_in[NNEF_INPUTS];
static FILE *nnef_out[NNEF_OUTPUTS];

static int usage(const char *argv0)
{
    fprintf(stderr, "usage: %s --inputs DIR --outputs DIR [--vectors N] [--trace FILE] [--noise-seed S] "
                    "[--time RUNS --timing FILE] [--warmup W]\n", argv0);
    return 2;
}

static uint32_t le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
    p[2] = (unsigned char)(v >> 16);
    p[3] = (unsigned char)(v >> 24);
}

/* Open DIR/<name>.dat and check its header: float32, shape [V, *shape], V >= need. */
static FILE *open_input(const char *dir, const nnef_input *in, uint32_t need, uint32_t *available)
{
    char path[4096];
    unsigned char h[NNEF_HEADER];
    snprintf(path, sizeof path, "%s/%s.dat", dir, in->name);
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "RUN-E010: cannot open input %s\n", path);
        return NULL;
    }
    int ok = fread(h, 1, NNEF_HEADER, f) == NNEF_HEADER && h[0] == 0x4e && h[1] == 0xef && h[2] == 1 && h[3] == 0;
    ok = ok && le32(h + 8) == (uint32_t)in->rank + 1u && le32(h + 44) == 32u && le32(h + 48) == 0u;
    for (int d = 0; ok && d < in->rank; ++d)
        ok = le32(h + 12 + 4 * (d + 1)) == in->shape[d];
    *available = ok ? le32(h + 12) : 0u;
    ok = ok && le32(h + 4) == *available * in->floats * 4u && *available >= need;
    if (!ok) {
        fprintf(stderr, "RUN-E011: %s is not a float32 tensor file of shape [>= %u, %s...] "
                        "(NNEF tensor file, docs/target.md)\n", path, (unsigned)need, in->name);
        fclose(f);
        return NULL;
    }
    return f;
}

static FILE *open_output(const char *dir, const nnef_output *out, uint32_t n)
{
    char path[4096];
    unsigned char h[NNEF_HEADER];
    snprintf(path, sizeof path, "%s/%s.dat", dir, out->name);
    FILE *f = fopen(path, "wb");
    if (!f) {
        fprintf(stderr, "RUN-E012: cannot write %s\n", path);
        return NULL;
    }
    memset(h, 0, sizeof h);
    h[0] = 0x4e;
    h[1] = 0xef;
    h[2] = 1;
    put32(h + 4, n * out->floats * 4u);
    put32(h + 8, (uint32_t)out->rank + 1u);
    put32(h + 12, n);
    for (int d = 0; d < out->rank; ++d)
        put32(h + 12 + 4 * (d + 1), out->shape[d]);
    put32(h + 44, 32u);
    put32(h + 48, 0u);
    if (fwrite(h, 1, NNEF_HEADER, f) != NNEF_HEADER) {
        fclose(f);
        return NULL;
    }
    return f;
}

/* Read vector v of every input into its staging buffer. */
static int load_vector(uint32_t v)
{
    for (int i = 0; i < NNEF_INPUTS; ++i) {
        const nnef_input *in = &nnef_inputs[i];
        long offset = NNEF_HEADER + (long)v * (long)in->floats * 4L;
        if (fseek(nnef_in[i], offset, SEEK_SET) != 0 ||
            fread(in->stage, sizeof(float), in->floats, nnef_in[i]) != in->floats) {
            fprintf(stderr, "RUN-E011: cannot read vector %u of input %s\n", (unsigned)v, in->name);
            return -1;
        }
    }
    return 0;
}

/* Called before each validation vector, in the main thread, while every item waits at the start
 * barrier: the boundary at which an instruction count (callgrind --dump-before) splits one run of
 * several vectors into one count per inference (docs/execute.md "Instruction counts"). Not inlined,
 * not cloned, so that the symbol is there at every optimisation level. */
volatile uint32_t nnef_vector_index;
__attribute__((noinline, noclone)) void nnef_vector_start(uint32_t v)
{
    nnef_vector_index = v;
}

/* Copy the staged inputs into the arenas of the items that declare them. */
static void place_inputs(void)
{
    for (int i = 0; i < NNEF_INPUTS; ++i)
        for (int k = 0; k < nnef_inputs[i].targets; ++k)
            memcpy(nnef_inputs[i].target[k], nnef_inputs[i].stage, (size_t)nnef_inputs[i].floats * sizeof(float));
}

static void *worker(void *arg)
{
    nnef_item *it = (nnef_item *)arg;
    for (;;) {
        pthread_barrier_wait(&nnef_start);
        if (nnef_stop)
            break;
        it->run(nnef_epoch);
        pthread_barrier_wait(&nnef_end);
    }
    return NULL;
}

/* One inference of every item; returns its duration in ns (start to end barrier). */
static uint64_t infer(void)
{
    ++nnef_epoch;
    uint64_t t0 = nnef_now_ns();
    if (NNEF_ITEMS > 1)
        pthread_barrier_wait(&nnef_start);
    nnef_items[0].run(nnef_epoch);
    if (NNEF_ITEMS > 1)
        pthread_barrier_wait(&nnef_end);
    return nnef_now_ns() - t0;
}

static int write_outputs(void)
{
    for (int o = 0; o < NNEF_OUTPUTS; ++o)
        if (fwrite(nnef_outputs[o].source, sizeof(float), nnef_outputs[o].floats, nnef_out[o]) != nnef_outputs[o].floats)
            return -1;
    return 0;
}

static int parse_u32(const char *text, uint32_t *value)
{
    char *end = NULL;
    unsigned long v = strtoul(text, &end, 10);
    if (!text[0] || *end || v > 0xfffffffful)
        return -1;
    *value = (uint32_t)v;
    return 0;
}

int main(int argc, char **argv)
{
    const char *inputs = NULL, *outputs = NULL, *trace = NULL, *timing = NULL;
    uint32_t vectors = 1, runs = 0, warmup = 10, seed = 0;
    int noise = 0, status = 0;
    for (int a = 1; a < argc; ++a) {
        const char *opt = argv[a];
        const char *val = a + 1 < argc ? argv[a + 1] : NULL;
        if (!val)
            return usage(argv[0]);
        if (!strcmp(opt, "--inputs")) inputs = val;
        else if (!strcmp(opt, "--outputs")) outputs = val;
        else if (!strcmp(opt, "--trace")) trace = val;
        else if (!strcmp(opt, "--timing")) timing = val;
        else if (!strcmp(opt, "--vectors")) { if (parse_u32(val, &vectors) || !vectors) return usage(argv[0]); }
        else if (!strcmp(opt, "--time")) { if (parse_u32(val, &runs)) return usage(argv[0]); }
        else if (!strcmp(opt, "--warmup")) { if (parse_u32(val, &warmup)) return usage(argv[0]); }
        else if (!strcmp(opt, "--noise-seed")) { if (parse_u32(val, &seed)) return usage(argv[0]); noise = 1; }
        else return usage(argv[0]);
        ++a;
    }
    if (!inputs || !outputs || (runs && !timing))
        return usage(argv[0]);
#if !defined(NNEF_TRACE)
    if (trace || noise) {
        fprintf(stderr, "RUN-E013: --trace and --noise-seed need the instrumented build (-DNNEF_TRACE)\n");
        return 2;
    }
#endif
    uint32_t available[NNEF_INPUTS];
    for (int i = 0; i < NNEF_INPUTS; ++i)
        if (!(nnef_in[i] = open_input(inputs, &nnef_inputs[i], vectors, &available[i])))
            return 2;
    for (int o = 0; o < NNEF_OUTPUTS; ++o)
        if (!(nnef_out[o] = open_output(outputs, &nnef_outputs[o], vectors)))
            return 3;

    for (int i = 0; i < NNEF_ITEMS; ++i)   /* items with resources of their own (a GPU item's device memory) */
        if (nnef_items[i].init && nnef_items[i].init() != 0) {
            fprintf(stderr, "RUN-E017: the initialisation of item %s failed\n", nnef_items[i].name);
            return 2;
        }
    nnef_runtime_init(NNEF_ITEMS);
    nnef_noise_configure(noise, seed);
    if (NNEF_ITEMS > 1) {
        pthread_barrier_init(&nnef_start, NULL, NNEF_ITEMS);
        pthread_barrier_init(&nnef_end, NULL, NNEF_ITEMS);
        for (int i = 1; i < NNEF_ITEMS; ++i)
            if (pthread_create(&nnef_threads[i], NULL, worker, &nnef_items[i]) != 0) {
                fprintf(stderr, "RUN-E014: cannot start the thread of item %s\n", nnef_items[i].name);
                return 2;
            }
    }

    for (uint32_t v = 0; v < vectors && !status; ++v) {
        nnef_vector_start(v);
        if (load_vector(v)) {
            status = 2;
            break;
        }
        place_inputs();
        infer();
        if (write_outputs())
            status = 3;
    }

    if (!status && runs) {
        FILE *tf = fopen(timing, "w");
        if (!tf) {
            status = 3;
        } else {
            for (uint32_t r = 0; r < warmup && !status; ++r) {
                if (load_vector(r % vectors)) status = 2;
                place_inputs();
                infer();
            }
            fprintf(tf, "{\"schema_version\": 1, \"runs\": %u, \"warmup\": %u, \"vectors\": %u, \"ns\": [",
                    (unsigned)runs, (unsigned)warmup, (unsigned)vectors);
            for (uint32_t r = 0; r < runs && !status; ++r) {
                if (load_vector(r % vectors)) status = 2;
                place_inputs();
                uint64_t ns = infer();
                fprintf(tf, "%s%llu", r ? ", " : "", (unsigned long long)ns);
            }
            fprintf(tf, "]}\n");
            if (fclose(tf) != 0) status = 3;
        }
    }

    if (NNEF_ITEMS > 1) {
        nnef_stop = 1;
        pthread_barrier_wait(&nnef_start);
        for (int i = 1; i < NNEF_ITEMS; ++i)
            pthread_join(nnef_threads[i], NULL);
        pthread_barrier_destroy(&nnef_start);
        pthread_barrier_destroy(&nnef_end);
    }
    nnef_runtime_destroy();
    for (int i = 0; i < NNEF_INPUTS; ++i)
        fclose(nnef_in[i]);
    for (int o = 0; o < NNEF_OUTPUTS; ++o)
        if (fclose(nnef_out[o]) != 0 && !status)
            status = 3;
    if (trace && !status) {
        if (nnef_trace_write(trace, "shared") != 0) {
            fprintf(stderr, "RUN-E012: cannot write %s\n", trace);
            status = 3;
        }
        for (int i = 0; i < NNEF_ITEMS; ++i)
            if (nnef_items[i].dropped) {
                fprintf(stderr, "RUN-E015: trace buffer of item %s overflowed (%u events dropped)\n",
                        nnef_items[i].name, (unsigned)nnef_items[i].dropped);
                status = 4;
            }
    }
    if (nnef_sync_races) {
        fprintf(stderr, "RUN-E016: %u value(s) read before they were published (barrier schedule race)\n",
                (unsigned)nnef_sync_races);
        status = status ? status : 4;
    }
    return status;
}

/* nnef_cuda_emulate.h -- the host emulation of the CUDA constructs a generated item uses.
 *
 * Compiled with g++ -x c++ -DNNEF_CUDA_EMULATE -ffp-contract=off: __global__/__device__/__host__
 * are empty, device memory is host memory (cudaMalloc = an aligned allocation at initialisation,
 * cudaMemcpy = memcpy), a stream is a token, and a launch runs the kernel body for every
 * (block, thread) of the grid: in order when nnef_emulate_seed is 0, else in an order shuffled
 * by a xorshift generator seeded with it (evidence that no output depends on the order in which
 * the hardware schedules blocks and threads). Nothing here models timing or memory spaces.
 */
#ifndef NNEF_CUDA_EMULATE_H
#define NNEF_CUDA_EMULATE_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline

typedef int cudaError_t;
typedef void *cudaStream_t;
enum { cudaSuccess = 0, cudaErrorMemoryAllocation = 2 };
enum cudaMemcpyKind { cudaMemcpyHostToDevice = 1, cudaMemcpyDeviceToHost = 2, cudaMemcpyDeviceToDevice = 3 };

static inline cudaError_t cudaMalloc(void **p, size_t bytes)
{
    *p = aligned_alloc(256, (bytes + 255) / 256 * 256);
    return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}
static inline cudaError_t cudaFree(void *p) { free(p); return cudaSuccess; }
static inline cudaError_t cudaMemcpy(void *d, const void *s, size_t n, cudaMemcpyKind) { memcpy(d, s, n); return cudaSuccess; }
static inline cudaError_t cudaMemcpyAsync(void *d, const void *s, size_t n, cudaMemcpyKind, cudaStream_t) { memcpy(d, s, n); return cudaSuccess; }
static inline cudaError_t cudaStreamCreate(cudaStream_t *s) { static int token; *s = &token; return cudaSuccess; }
static inline cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
static inline cudaError_t cudaGetLastError(void) { return cudaSuccess; }
static inline const char *cudaGetErrorString(cudaError_t) { return "emulated"; }

/* 0: launches run blocks and threads in order; otherwise the seed of the shuffled order. */
static uint64_t nnef_emulate_seed = 0;

static inline uint64_t nnef_emulate_next(uint64_t *s)
{
    *s ^= *s << 13; *s ^= *s >> 7; *s ^= *s << 17;
    return *s;
}

template <typename Body>
static void nnef_emulate_launch(unsigned blocks, unsigned threads, Body body)
{
    const size_t n = (size_t)blocks * threads;
    if (nnef_emulate_seed == 0) {
        for (unsigned b = 0; b < blocks; ++b)
            for (unsigned t = 0; t < threads; ++t)
                body(b, t);
        return;
    }
    std::vector<uint32_t> order(n);
    for (size_t i = 0; i < n; ++i) order[i] = (uint32_t)i;
    uint64_t s = nnef_emulate_seed;
    for (size_t i = n; i > 1; --i) {               /* Fisher-Yates */
        size_t j = (size_t)(nnef_emulate_next(&s) % i);
        uint32_t tmp = order[i - 1]; order[i - 1] = order[j]; order[j] = tmp;
    }
    nnef_emulate_seed = nnef_emulate_next(&s);    /* a fresh order for the next launch */
    for (size_t i = 0; i < n; ++i)
        body(order[i] / threads, order[i] % threads);
}

#endif /* NNEF_CUDA_EMULATE_H */

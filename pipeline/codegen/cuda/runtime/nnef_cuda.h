/* nnef_cuda.h -- what every generated CUDA item includes (copied by pipeline.codegen.cuda).
 *
 * One source, two builds:
 *   nvcc (the device build): every float multiply, add, subtract, divide and square root is the
 *     correctly rounded intrinsic (__fmul_rn, __fadd_rn, __fsub_rn, __fdiv_rn, __fsqrt_rn), which
 *     nvcc never contracts into a fused multiply-add, whatever --fmad says; --fmad=false and the
 *     PTX/SASS gate (pipeline/codegen/cuda_gate.py) make sure no other float operation is fused.
 *   g++ -x c++ -DNNEF_CUDA_EMULATE -ffp-contract=off (the host emulation): the same macros are the
 *     plain IEEE operators; nnef_cuda_emulate.h supplies the CUDA keywords and runtime calls, and a
 *     launch becomes a loop over every (block, thread), in order or in a seeded shuffled order.
 * A kernel body is a __host__ __device__ function of (block, thread, operands) computing whole
 * output elements, so the device and the emulation execute the very same statements.
 * Selections (relu, max, min, the running maximum) are IEEE comparisons, never a library call.
 */
#ifndef NNEF_CUDA_H
#define NNEF_CUDA_H

#include <math.h>   /* INFINITY and NAN only (an attention mask's -inf among the weights); no libm call */
#include <stdint.h>
#include <string.h>

#if defined(NNEF_CUDA_EMULATE)
#include "nnef_cuda_emulate.h"
#else
#include <cuda_runtime.h>
#endif

#if !defined(__CUDA_ARCH__)   /* the emulation, and nvcc's host pass over __host__ __device__ bodies */
#define NNEF_MUL(a, b) ((a) * (b))
#define NNEF_ADD(a, b) ((a) + (b))
#define NNEF_SUB(a, b) ((a) - (b))
#define NNEF_DIV(a, b) ((a) / (b))
#define NNEF_SQRT(a) __builtin_sqrtf(a)
#else                         /* nvcc's device pass */
#define NNEF_MUL(a, b) __fmul_rn((a), (b))
#define NNEF_ADD(a, b) __fadd_rn((a), (b))
#define NNEF_SUB(a, b) __fsub_rn((a), (b))
#define NNEF_DIV(a, b) __fdiv_rn((a), (b))
#define NNEF_SQRT(a) __fsqrt_rn(a)
#endif

#define NNEF_HD static __host__ __device__ inline

/* The bits of a float and back (the transcendental programs work on them). */
#if defined(__CUDA_ARCH__)
NNEF_HD uint32_t nnef_bits(float f) { return __float_as_uint(f); }
NNEF_HD float nnef_float(uint32_t u) { return __uint_as_float(u); }
#else
NNEF_HD uint32_t nnef_bits(float f) { uint32_t u; memcpy(&u, &f, sizeof u); return u; }
NNEF_HD float nnef_float(uint32_t u) { float f; memcpy(&f, &u, sizeof f); return f; }
#endif

/* Selections of docs/semantics/elementwise.md (NaN propagates, the first operand wins ties). */
NNEF_HD float nnef_max(float x, float y) { return (x > y || x != x) ? x : y; }
NNEF_HD float nnef_min(float x, float y) { return (x < y || x != x) ? x : y; }
NNEF_HD float nnef_relu(float x) { return (x > 0.0f || x != x) ? x : 0.0f; }
/* The running maximum of max_pool and max_reduce: t wins if greater, or if it is the first NaN. */
NNEF_HD float nnef_runmax(float m, float t) { return (t > m || (t != t && m == m)) ? t : m; }

/* One launch of a kernel on the item's stream: the __global__ wrapper on the device, the body for
 * every (block, thread) in the emulation. */
#if defined(NNEF_CUDA_EMULATE)
#define NNEF_LAUNCH(kernel, body, blocks, ...) \
    nnef_emulate_launch((blocks), NNEF_THREADS, [&](unsigned b_, unsigned t_) { body(b_, t_, __VA_ARGS__); })
#else
#define NNEF_LAUNCH(kernel, body, blocks, ...) kernel<<<(blocks), NNEF_THREADS, 0, nnef_stream>>>(__VA_ARGS__)
#endif

/* Abort on a CUDA runtime error: the harness reports it (no silent failure). */
#define NNEF_CUDA_CHECK(call) do { cudaError_t nnef_e_ = (call); if (nnef_e_ != cudaSuccess) return (int)nnef_e_; } while (0)

#endif /* NNEF_CUDA_H */

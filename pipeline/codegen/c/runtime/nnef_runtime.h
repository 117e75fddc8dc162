/*
 * nnef_runtime.h -- the primitives every generated item uses (part of the pipeline's C
 * generator, copied verbatim next to the generated code; docs/codegen.md).
 *
 * 1. Exact scalar primitives with the NaN and signed-zero rules of docs/semantics:
 *    select, max, min, relu, abs, signbit, rint, floor, ceil, sqrt. No libm: bits are
 *    manipulated through memcpy, rint uses the 2^23 add-subtract trick, sqrt is the IEEE
 *    instruction (__builtin_sqrtf with -fno-math-errno). Every choice is a bitwise select
 *    on a mask, never a branch on data.
 * 2. Vectors of NNEF_VL float32 lanes for loops over independent outputs. With GCC/Clang
 *    they are `vector_size` types (SSE/NEON registers for NNEF_VL = 4); with NNEF_PORTABLE
 *    (or another compiler) they are plain C99 structs handled lane by lane. Every lane
 *    operation is the same single IEEE operation as the scalar one, so both builds give the
 *    same bits (a test compares them).
 * 3. Sync variables, step instrumentation and the per-item trace buffers (nnef_runtime.c).
 */
#ifndef NNEF_RUNTIME_H
#define NNEF_RUNTIME_H

#include <math.h> /* INFINITY and NAN only (constant expressions); no libm function is called */
#include <stdint.h>
#include <string.h>

#include "nnef_config.h"

/* Vector types are used where the target has registers of their width: 16 bytes (SSE2,
 * NEON) always, 32 bytes with AVX, 64 bytes with AVX-512; otherwise the portable lane-by-lane
 * form (same bits). */
#if defined(__GNUC__) && !defined(NNEF_PORTABLE) && \
    (NNEF_VL == 4 || (NNEF_VL == 8 && defined(__AVX__)) || (NNEF_VL == 16 && defined(__AVX512F__)))
#define NNEF_VECTOR_EXT 1
#endif
#if defined(__GNUC__)
#define NNEF_ALIGNED(n) __attribute__((aligned(n)))
#define NNEF_INLINE static inline __attribute__((always_inline))
#else
#define NNEF_ALIGNED(n)
#define NNEF_INLINE static inline
#endif
/* A hint that `p` will be read soon (weights streamed from memory; prefetcht0 on x86-64, measured a little
 * faster than the non-temporal hint); no effect on any value. */
#if defined(__GNUC__)
#define NNEF_PREFETCH(p) __builtin_prefetch((p), 0, 3)
#else
#define NNEF_PREFETCH(p) ((void)(p))
#endif

/* ---------------------------------------------------------------- scalar primitives */

/* The 32 bits of a float32 and back (exact reinterpretation). */
NNEF_INLINE uint32_t nnef_bits(float f) { uint32_t u; memcpy(&u, &f, sizeof u); return u; }
NNEF_INLINE float nnef_float(uint32_t u) { float f; memcpy(&f, &u, sizeof f); return f; }

/* All ones if c is non-zero, else zero: the mask of a branch-free select. */
NNEF_INLINE uint32_t nnef_mask(int c) { return (uint32_t)0 - (uint32_t)(c != 0); }

/* select(c, a, b): a where c holds, else b, bit for bit (both operands already computed). */
NNEF_INLINE float nnef_select(int c, float a, float b)
{
    uint32_t m = nnef_mask(c);
    return nnef_float((nnef_bits(a) & m) | (nnef_bits(b) & ~m));
}

#if defined(NNEF_VECTOR_EXT)
/* With vector extensions the scalar selects below run in lane 0 of a 4-lane vector:
 * comparisons produce lane masks and the select is and/andnot/or, all in the floating-point
 * registers (the same operations as the integer-mask form, without moves between register
 * files on every step of a running maximum). */
typedef float nnef_s4f __attribute__((vector_size(16)));
typedef int32_t nnef_s4i __attribute__((vector_size(16)));
NNEF_INLINE nnef_s4f nnef_s4(float x) { nnef_s4f v = {x, 0.0f, 0.0f, 0.0f}; return v; }
NNEF_INLINE float nnef_s4select(nnef_s4i m, nnef_s4f a, nnef_s4f b)
{
    return ((nnef_s4f)(((nnef_s4i)a & m) | ((nnef_s4i)b & ~m)))[0];
}
NNEF_INLINE float nnef_max(float x, float y)
{
    nnef_s4f a = nnef_s4(x), b = nnef_s4(y);
    return nnef_s4select((nnef_s4i)(a > b) | (nnef_s4i)(a != a), a, b);
}
NNEF_INLINE float nnef_min(float x, float y)
{
    nnef_s4f a = nnef_s4(x), b = nnef_s4(y);
    return nnef_s4select((nnef_s4i)(a < b) | (nnef_s4i)(a != a), a, b);
}
NNEF_INLINE float nnef_relu(float x) { return nnef_max(x, 0.0f); }
NNEF_INLINE float nnef_max_update(float t, float m)
{
    nnef_s4f a = nnef_s4(t), b = nnef_s4(m);
    return nnef_s4select(~(nnef_s4i)(a <= b) & (nnef_s4i)(b == b), a, b);
}
NNEF_INLINE float nnef_min_update(float t, float m)
{
    nnef_s4f a = nnef_s4(t), b = nnef_s4(m);
    return nnef_s4select(~(nnef_s4i)(a >= b) & (nnef_s4i)(b == b), a, b);
}
#else
/* max(x, y) = select(x > y or x != x, x, y): NaN propagates, ties give y. */
NNEF_INLINE float nnef_max(float x, float y) { return nnef_select((x > y) | (x != x), x, y); }
/* min(x, y) = select(x < y or x != x, x, y). */
NNEF_INLINE float nnef_min(float x, float y) { return nnef_select((x < y) | (x != x), x, y); }
/* relu(x) = max(x, +0): relu(-0) = +0, relu(NaN) = NaN. */
NNEF_INLINE float nnef_relu(float x) { return nnef_select((x > 0.0f) | (x != x), x, 0.0f); }
/* Running maximum of max_pool / max_reduce: t replaces m if t > m or t is the first NaN. */
NNEF_INLINE float nnef_max_update(float t, float m) { return nnef_select((t > m) | ((t != t) & (m == m)), t, m); }
NNEF_INLINE float nnef_min_update(float t, float m) { return nnef_select((t < m) | ((t != t) & (m == m)), t, m); }
#endif

NNEF_INLINE float nnef_fabs(float x) { return nnef_float(nnef_bits(x) & 0x7fffffffu); }
NNEF_INLINE float nnef_fneg(float x) { return nnef_float(nnef_bits(x) ^ 0x80000000u); }
NNEF_INLINE int nnef_signbit(float x) { return (int)(nnef_bits(x) >> 31); }

/* rint: round to integral, ties to even (IEEE roundToIntegralTiesToEven).
 * For |x| < 2^23, |x| + 2^23 lies in [2^23, 2^24) where the float32 spacing is 1, so the
 * addition rounds |x| to an integer (nearest even) and the subtraction is exact; the sign
 * of x is put back (rint(-0.3) = -0). |x| >= 2^23, infinities and NaN are returned as they
 * are (already integral). */
NNEF_INLINE float nnef_rint(float x)
{
    float a = nnef_fabs(x);
    float t = (a + 0x1p23f) - 0x1p23f;
    float r = nnef_float(nnef_bits(t) | (nnef_bits(x) & 0x80000000u));
    return nnef_select(a < 0x1p23f, r, x);
}
/* floor(x) = rint(x) - 1 where rint rounded up; exact, keeps -0. */
NNEF_INLINE float nnef_floor(float x) { float r = nnef_rint(x); return nnef_select(r > x, r - 1.0f, r); }
/* ceil(x) = -floor(-x) (ceil(-0.7) = -0). */
NNEF_INLINE float nnef_ceil(float x) { return nnef_fneg(nnef_floor(nnef_fneg(x))); }

/* IEEE square root, correctly rounded: one instruction (sqrtss) when compiled with
 * -fno-math-errno, which only drops the errno side effect; no libm call. */
#if defined(__GNUC__)
NNEF_INLINE float nnef_sqrt(float x) { return __builtin_sqrtf(x); }
#else
NNEF_INLINE float nnef_sqrt(float x) { return sqrtf(x); }
#endif

/* sign(x) = select(x > 0, 1, select(x < 0, -1, x)). */
NNEF_INLINE float nnef_sign(float x) { return nnef_select(x > 0.0f, 1.0f, nnef_select(x < 0.0f, -1.0f, x)); }

/* ---------------------------------------------------------------- vectors */

#if defined(NNEF_VECTOR_EXT)
typedef float nnef_vf __attribute__((vector_size(NNEF_VL * 4)));
typedef int32_t nnef_vi __attribute__((vector_size(NNEF_VL * 4)));

NNEF_INLINE nnef_vf nnef_vzero(void) { nnef_vf v = {0}; return v; }
#if NNEF_VL == 4
NNEF_INLINE nnef_vf nnef_vset1(float x) { nnef_vf v = {x, x, x, x}; return v; }
#elif NNEF_VL == 8
NNEF_INLINE nnef_vf nnef_vset1(float x) { nnef_vf v = {x, x, x, x, x, x, x, x}; return v; }
#else
NNEF_INLINE nnef_vf nnef_vset1(float x) { nnef_vf v = {x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x}; return v; }
#endif
NNEF_INLINE nnef_vf nnef_vload(const float *p) { nnef_vf v; memcpy(&v, p, sizeof v); return v; }
NNEF_INLINE void nnef_vstore(float *p, nnef_vf v) { memcpy(p, &v, sizeof v); }
NNEF_INLINE float nnef_vlane(nnef_vf v, int i) { return v[i]; }
NNEF_INLINE nnef_vf nnef_vadd(nnef_vf a, nnef_vf b) { return a + b; }
NNEF_INLINE nnef_vf nnef_vsub(nnef_vf a, nnef_vf b) { return a - b; }
NNEF_INLINE nnef_vf nnef_vmul(nnef_vf a, nnef_vf b) { return a * b; }
NNEF_INLINE nnef_vf nnef_vdiv(nnef_vf a, nnef_vf b) { return a / b; }
NNEF_INLINE nnef_vi nnef_vgt(nnef_vf a, nnef_vf b) { return (nnef_vi)(a > b); }
NNEF_INLINE nnef_vi nnef_vlt(nnef_vf a, nnef_vf b) { return (nnef_vi)(a < b); }
NNEF_INLINE nnef_vi nnef_vge(nnef_vf a, nnef_vf b) { return (nnef_vi)(a >= b); }
NNEF_INLINE nnef_vi nnef_vle(nnef_vf a, nnef_vf b) { return (nnef_vi)(a <= b); }
NNEF_INLINE nnef_vi nnef_vnot(nnef_vi a) { return ~a; }
NNEF_INLINE nnef_vi nnef_veq(nnef_vf a, nnef_vf b) { return (nnef_vi)(a == b); }
NNEF_INLINE nnef_vi nnef_vne(nnef_vf a, nnef_vf b) { return (nnef_vi)(a != b); }
NNEF_INLINE nnef_vi nnef_vand(nnef_vi a, nnef_vi b) { return a & b; }
NNEF_INLINE nnef_vi nnef_vor(nnef_vi a, nnef_vi b) { return a | b; }
NNEF_INLINE nnef_vf nnef_vselect(nnef_vi m, nnef_vf a, nnef_vf b)
{
    return (nnef_vf)(((nnef_vi)a & m) | ((nnef_vi)b & ~m));
}
NNEF_INLINE nnef_vf nnef_vxor_bits(nnef_vf a, int32_t bits, int32_t keep)
{
    return (nnef_vf)(((nnef_vi)a & (nnef_vi)nnef_vset1(nnef_float((uint32_t)keep))) ^ (nnef_vi)nnef_vset1(nnef_float((uint32_t)bits)));
}
NNEF_INLINE nnef_vf nnef_vabs(nnef_vf a) { return nnef_vxor_bits(a, 0, 0x7fffffff); }
NNEF_INLINE nnef_vf nnef_vneg(nnef_vf a) { return nnef_vxor_bits(a, (int32_t)0x80000000u, -1); }
#else
typedef struct { float l[NNEF_VL]; } nnef_vf;
typedef struct { int32_t l[NNEF_VL]; } nnef_vi;

#define NNEF_LANES(expr) for (int i = 0; i < NNEF_VL; ++i) { expr; }
NNEF_INLINE nnef_vf nnef_vzero(void) { nnef_vf v; NNEF_LANES(v.l[i] = 0.0f) return v; }
NNEF_INLINE nnef_vf nnef_vset1(float x) { nnef_vf v; NNEF_LANES(v.l[i] = x) return v; }
NNEF_INLINE nnef_vf nnef_vload(const float *p) { nnef_vf v; memcpy(v.l, p, sizeof v.l); return v; }
NNEF_INLINE void nnef_vstore(float *p, nnef_vf v) { memcpy(p, v.l, sizeof v.l); }
NNEF_INLINE float nnef_vlane(nnef_vf v, int i) { return v.l[i]; }
NNEF_INLINE nnef_vf nnef_vadd(nnef_vf a, nnef_vf b) { nnef_vf r; NNEF_LANES(r.l[i] = a.l[i] + b.l[i]) return r; }
NNEF_INLINE nnef_vf nnef_vsub(nnef_vf a, nnef_vf b) { nnef_vf r; NNEF_LANES(r.l[i] = a.l[i] - b.l[i]) return r; }
NNEF_INLINE nnef_vf nnef_vmul(nnef_vf a, nnef_vf b) { nnef_vf r; NNEF_LANES(r.l[i] = a.l[i] * b.l[i]) return r; }
NNEF_INLINE nnef_vf nnef_vdiv(nnef_vf a, nnef_vf b) { nnef_vf r; NNEF_LANES(r.l[i] = a.l[i] / b.l[i]) return r; }
NNEF_INLINE nnef_vi nnef_vgt(nnef_vf a, nnef_vf b) { nnef_vi r; NNEF_LANES(r.l[i] = -(int32_t)(a.l[i] > b.l[i])) return r; }
NNEF_INLINE nnef_vi nnef_vlt(nnef_vf a, nnef_vf b) { nnef_vi r; NNEF_LANES(r.l[i] = -(int32_t)(a.l[i] < b.l[i])) return r; }
NNEF_INLINE nnef_vi nnef_vge(nnef_vf a, nnef_vf b) { nnef_vi r; NNEF_LANES(r.l[i] = -(int32_t)(a.l[i] >= b.l[i])) return r; }
NNEF_INLINE nnef_vi nnef_vle(nnef_vf a, nnef_vf b) { nnef_vi r; NNEF_LANES(r.l[i] = -(int32_t)(a.l[i] <= b.l[i])) return r; }
NNEF_INLINE nnef_vi nnef_vnot(nnef_vi a) { nnef_vi r; NNEF_LANES(r.l[i] = ~a.l[i]) return r; }
NNEF_INLINE nnef_vi nnef_veq(nnef_vf a, nnef_vf b) { nnef_vi r; NNEF_LANES(r.l[i] = -(int32_t)(a.l[i] == b.l[i])) return r; }
NNEF_INLINE nnef_vi nnef_vne(nnef_vf a, nnef_vf b) { nnef_vi r; NNEF_LANES(r.l[i] = -(int32_t)(a.l[i] != b.l[i])) return r; }
NNEF_INLINE nnef_vi nnef_vand(nnef_vi a, nnef_vi b) { nnef_vi r; NNEF_LANES(r.l[i] = a.l[i] & b.l[i]) return r; }
NNEF_INLINE nnef_vi nnef_vor(nnef_vi a, nnef_vi b) { nnef_vi r; NNEF_LANES(r.l[i] = a.l[i] | b.l[i]) return r; }
NNEF_INLINE nnef_vf nnef_vselect(nnef_vi m, nnef_vf a, nnef_vf b)
{
    nnef_vf r;
    NNEF_LANES(r.l[i] = nnef_float((nnef_bits(a.l[i]) & (uint32_t)m.l[i]) | (nnef_bits(b.l[i]) & ~(uint32_t)m.l[i])))
    return r;
}
NNEF_INLINE nnef_vf nnef_vabs(nnef_vf a) { nnef_vf r; NNEF_LANES(r.l[i] = nnef_fabs(a.l[i])) return r; }
NNEF_INLINE nnef_vf nnef_vneg(nnef_vf a) { nnef_vf r; NNEF_LANES(r.l[i] = nnef_fneg(a.l[i])) return r; }
#endif

/* A vector of NNEF_VL floats read at p, p + s, p + 2s, ... (strided windows). */
#if defined(NNEF_VECTOR_EXT) && NNEF_VL == 4
NNEF_INLINE nnef_vf nnef_vload_strided(const float *p, int s) { nnef_vf v = {p[0], p[s], p[2 * s], p[3 * s]}; return v; }
#elif defined(NNEF_VECTOR_EXT) && NNEF_VL == 8
NNEF_INLINE nnef_vf nnef_vload_strided(const float *p, int s)
{
    nnef_vf v = {p[0], p[s], p[2 * s], p[3 * s], p[4 * s], p[5 * s], p[6 * s], p[7 * s]};
    return v;
}
#elif defined(NNEF_VECTOR_EXT)
NNEF_INLINE nnef_vf nnef_vload_strided(const float *p, int s)
{
    nnef_vf v = {p[0], p[s], p[2 * s], p[3 * s], p[4 * s], p[5 * s], p[6 * s], p[7 * s],
                 p[8 * s], p[9 * s], p[10 * s], p[11 * s], p[12 * s], p[13 * s], p[14 * s], p[15 * s]};
    return v;
}
#else
NNEF_INLINE nnef_vf nnef_vload_strided(const float *p, int s)
{
    nnef_vf v;
    for (int i = 0; i < NNEF_VL; ++i) v.l[i] = p[i * s];
    return v;
}
#endif
/* The even-indexed (odd-indexed) elements of the 2 * NNEF_VL floats at p: stride-2 windows
 * from two contiguous loads. Reads p[0 .. 2 * NNEF_VL - 1] (the generator checks the bound). */
#if defined(NNEF_VECTOR_EXT) && (defined(__clang__) || (defined(__GNUC__) && __GNUC__ >= 5))
#if NNEF_VL == 4
#define NNEF_EVEN_MASK {0, 2, 4, 6}
#define NNEF_ODD_MASK {1, 3, 5, 7}
#elif NNEF_VL == 8
#define NNEF_EVEN_MASK {0, 2, 4, 6, 8, 10, 12, 14}
#define NNEF_ODD_MASK {1, 3, 5, 7, 9, 11, 13, 15}
#else
#define NNEF_EVEN_MASK {0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30}
#define NNEF_ODD_MASK {1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31}
#endif
#if defined(__clang__)
NNEF_INLINE nnef_vf nnef_vload_even(const float *p)
{
    nnef_vf a = nnef_vload(p), b = nnef_vload(p + NNEF_VL);
#if NNEF_VL == 4
    return __builtin_shufflevector(a, b, 0, 2, 4, 6);
#elif NNEF_VL == 8
    return __builtin_shufflevector(a, b, 0, 2, 4, 6, 8, 10, 12, 14);
#else
    return __builtin_shufflevector(a, b, 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
#endif
}
NNEF_INLINE nnef_vf nnef_vload_odd(const float *p)
{
    nnef_vf a = nnef_vload(p), b = nnef_vload(p + NNEF_VL);
#if NNEF_VL == 4
    return __builtin_shufflevector(a, b, 1, 3, 5, 7);
#elif NNEF_VL == 8
    return __builtin_shufflevector(a, b, 1, 3, 5, 7, 9, 11, 13, 15);
#else
    return __builtin_shufflevector(a, b, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
#endif
}
#elif defined(__AVX__) && NNEF_VL == 8 && __GNUC__ >= 12
/* AVX, 8 lanes: gcc turns the 16-to-8 shuffle into two lane-crossing vpermd and a blend (the
 * lane crossings are slow on Zen 2/3); four 4-float loads paired into two registers and one
 * in-lane shuffle (gcc emits vinsertf128 and one vshufps) pick the same elements (the even ones
 * of each 128-bit half are in order). Written with gcc's vector builtins, not <immintrin.h>:
 * that header alone costs about 0.3 s of every translation unit's compile. */
typedef float nnef_v4f __attribute__((vector_size(16)));
typedef int nnef_vi __attribute__((vector_size(32)));
NNEF_INLINE nnef_vf nnef_vload_halves(const float *lo, const float *hi)
{
    nnef_v4f a, b;
    memcpy(&a, lo, sizeof a);
    memcpy(&b, hi, sizeof b);
    return __builtin_shufflevector(a, b, 0, 1, 2, 3, 4, 5, 6, 7);
}
NNEF_INLINE nnef_vf nnef_vload_even(const float *p)
{
    const nnef_vi m = {0, 2, 8, 10, 4, 6, 12, 14};
    return __builtin_shuffle(nnef_vload_halves(p, p + 8), nnef_vload_halves(p + 4, p + 12), m);
}
NNEF_INLINE nnef_vf nnef_vload_odd(const float *p)
{
    const nnef_vi m = {1, 3, 9, 11, 5, 7, 13, 15};
    return __builtin_shuffle(nnef_vload_halves(p, p + 8), nnef_vload_halves(p + 4, p + 12), m);
}
#else
NNEF_INLINE nnef_vf nnef_vload_even(const float *p)
{
    nnef_vi m = NNEF_EVEN_MASK;
    return __builtin_shuffle(nnef_vload(p), nnef_vload(p + NNEF_VL), m);
}
NNEF_INLINE nnef_vf nnef_vload_odd(const float *p)
{
    nnef_vi m = NNEF_ODD_MASK;
    return __builtin_shuffle(nnef_vload(p), nnef_vload(p + NNEF_VL), m);
}
#endif
#else
NNEF_INLINE nnef_vf nnef_vload_even(const float *p) { return nnef_vload_strided(p, 2); }
NNEF_INLINE nnef_vf nnef_vload_odd(const float *p) { return nnef_vload_strided(p + 1, 2); }
#endif

/* Store the first n lanes of v at p (n <= NNEF_VL). */
NNEF_INLINE void nnef_vstore_n(float *p, nnef_vf v, int n)
{
    float t[NNEF_VL];
    nnef_vstore(t, v);
    for (int i = 0; i < n; ++i) p[i] = t[i];
}

/* The vector forms of the scalar primitives above: same operations lane by lane. */
NNEF_INLINE nnef_vf nnef_vmax(nnef_vf x, nnef_vf y) { return nnef_vselect(nnef_vor(nnef_vgt(x, y), nnef_vne(x, x)), x, y); }
NNEF_INLINE nnef_vf nnef_vmin(nnef_vf x, nnef_vf y) { return nnef_vselect(nnef_vor(nnef_vlt(x, y), nnef_vne(x, x)), x, y); }
/* relu: x where x > 0 or x is NaN, else +0. "not (x <= 0)" is exactly that mask (a comparison
 * with NaN is false), and selecting against +0 is an and: two operations per vector. */
NNEF_INLINE nnef_vf nnef_vrelu(nnef_vf x)
{
    nnef_vf z = nnef_vzero();
    return nnef_vselect(nnef_vnot(nnef_vle(x, z)), x, z);
}
/* The running maximum: t replaces m if t > m or t is NaN and m is not, i.e. exactly when
 * "not (t <= m)" and m is not NaN (m NaN keeps m; t NaN and m ordered takes t). */
NNEF_INLINE nnef_vf nnef_vmax_update(nnef_vf t, nnef_vf m)
{
    return nnef_vselect(nnef_vand(nnef_vnot(nnef_vle(t, m)), nnef_veq(m, m)), t, m);
}
NNEF_INLINE nnef_vf nnef_vmin_update(nnef_vf t, nnef_vf m)
{
    return nnef_vselect(nnef_vand(nnef_vnot(nnef_vge(t, m)), nnef_veq(m, m)), t, m);
}

/* Lane-by-lane application of a scalar function (transcendentals, sqrt, rounding). */
#if defined(NNEF_VECTOR_EXT) && NNEF_VL == 4
#define NNEF_VMAP1(name, fn) \
    NNEF_INLINE nnef_vf name(nnef_vf x) { nnef_vf r = {fn(x[0]), fn(x[1]), fn(x[2]), fn(x[3])}; return r; }
#define NNEF_VMAP2(name, fn) \
    NNEF_INLINE nnef_vf name(nnef_vf x, nnef_vf y) \
    { \
        nnef_vf r = {fn(x[0], y[0]), fn(x[1], y[1]), fn(x[2], y[2]), fn(x[3], y[3])}; \
        return r; \
    }
#else
#define NNEF_VMAP1(name, fn) \
    NNEF_INLINE nnef_vf name(nnef_vf x) \
    { \
        float t[NNEF_VL]; \
        nnef_vstore(t, x); \
        for (int i = 0; i < NNEF_VL; ++i) t[i] = fn(t[i]); \
        return nnef_vload(t); \
    }
#define NNEF_VMAP2(name, fn) \
    NNEF_INLINE nnef_vf name(nnef_vf x, nnef_vf y) \
    { \
        float t[NNEF_VL], u[NNEF_VL]; \
        nnef_vstore(t, x); \
        nnef_vstore(u, y); \
        for (int i = 0; i < NNEF_VL; ++i) t[i] = fn(t[i], u[i]); \
        return nnef_vload(t); \
    }
#endif
NNEF_VMAP1(nnef_vsqrt, nnef_sqrt)
#if defined(NNEF_VECTOR_EXT)
/* The integer side of the vector programs (nnef_math.h): int32 lanes as unsigned for the
 * wrapping additions and the logical shifts, conversions lane by lane (cvttps2dq/cvtdq2ps:
 * truncation toward zero, exact int -> float where the programs use it), sign masks. */
typedef uint32_t nnef_vu __attribute__((vector_size(NNEF_VL * 4)));
NNEF_INLINE nnef_vi nnef_viset1(int32_t x) { nnef_vi v = {0}; return v + x; }
NNEF_INLINE nnef_vi nnef_viselect(nnef_vi m, nnef_vi a, nnef_vi b) { return (a & m) | (b & ~m); }
NNEF_INLINE nnef_vi nnef_vsignbit(nnef_vf x) { return (nnef_vi)x < 0; }
NNEF_INLINE nnef_vi nnef_vbits(nnef_vf x) { return (nnef_vi)x; }
NNEF_INLINE nnef_vf nnef_vfrom_bits(nnef_vi x) { return (nnef_vf)x; }
NNEF_INLINE nnef_vi nnef_viadd(nnef_vi a, nnef_vi b) { return (nnef_vi)((nnef_vu)a + (nnef_vu)b); }
NNEF_INLINE nnef_vi nnef_visub(nnef_vi a, nnef_vi b) { return (nnef_vi)((nnef_vu)a - (nnef_vu)b); }
NNEF_INLINE nnef_vi nnef_vshl(nnef_vi a, nnef_vi b) { return (nnef_vi)((nnef_vu)a << (nnef_vu)b); }
NNEF_INLINE nnef_vi nnef_vshr(nnef_vi a, nnef_vi b) { return (nnef_vi)((nnef_vu)a >> (nnef_vu)b); }
#if defined(__clang__) || __GNUC__ >= 9
NNEF_INLINE nnef_vi nnef_vf2i(nnef_vf x) { return __builtin_convertvector(x, nnef_vi); }
NNEF_INLINE nnef_vf nnef_vi2f(nnef_vi x) { return __builtin_convertvector(x, nnef_vf); }
#else
NNEF_INLINE nnef_vi nnef_vf2i(nnef_vf x) { nnef_vi r; for (int i = 0; i < NNEF_VL; ++i) r[i] = (int32_t)x[i]; return r; }
NNEF_INLINE nnef_vf nnef_vi2f(nnef_vi x) { nnef_vf r; for (int i = 0; i < NNEF_VL; ++i) r[i] = (float)x[i]; return r; }
#endif
/* rint, floor, ceil and sign as the scalar forms above, every lane at once (same operations). */
NNEF_INLINE nnef_vf nnef_vrint(nnef_vf x)
{
    nnef_vf a = nnef_vabs(x), big = nnef_vset1(0x1p23f);
    nnef_vf t = (a + big) - big;
    nnef_vf r = (nnef_vf)((nnef_vi)t | ((nnef_vi)x & nnef_viset1((int32_t)0x80000000u)));
    return nnef_vselect(nnef_vlt(a, big), r, x);
}
NNEF_INLINE nnef_vf nnef_vfloor(nnef_vf x)
{
    nnef_vf r = nnef_vrint(x);
    return nnef_vselect(nnef_vgt(r, x), r - nnef_vset1(1.0f), r);
}
NNEF_INLINE nnef_vf nnef_vceil(nnef_vf x) { return nnef_vneg(nnef_vfloor(nnef_vneg(x))); }
NNEF_INLINE nnef_vf nnef_vsign(nnef_vf x)
{
    nnef_vf z = nnef_vzero();
    return nnef_vselect(nnef_vgt(x, z), nnef_vset1(1.0f), nnef_vselect(nnef_vlt(x, z), nnef_vset1(-1.0f), x));
}
#else
NNEF_VMAP1(nnef_vrint, nnef_rint)
NNEF_VMAP1(nnef_vfloor, nnef_floor)
NNEF_VMAP1(nnef_vceil, nnef_ceil)
NNEF_VMAP1(nnef_vsign, nnef_sign)
#endif

/* Sync variables, barriers and step instrumentation: nnef_sync.h (also included by CUDA items). */
#include "nnef_sync.h"

#endif /* NNEF_RUNTIME_H */

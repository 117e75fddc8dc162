/*
 * nnef_eva.h -- the forms of the runtime primitives that Frama-C's EVA analyses (the prove step,
 * docs/prove.md). nnef_runtime.h includes this file instead of its own primitives only when
 * __FRAMAC__ is defined, which Frama-C defines and no compiler does: no compiled bit depends on
 * it. Each form computes the same value as the compiled primitive on every input the analysis
 * admits (no NaN: it runs with -warn-special-float nan, so an operation that could make one is
 * an alarm), and is written so that EVA keeps its precision:
 *
 * 1. Selections are C conditionals on the same conditions, `x != x` written isnan(x) (EVA
 *    evaluates isnan on a value, not `x != x`, whose two operands it reads separately): each
 *    branch keeps the values reduced by its condition, where the mask through the float's bits
 *    leaves EVA nothing (select(c, a in [0,1], b in [-3,2]) came out as [-inf, inf]).
 *    Equivalence with nnef_runtime.h: tests/prove/test_forms.py (the selects on every pair of
 *    22 special and ordinary values, bit by bit; the unary forms on a stride-5 sweep of the
 *    float32 bit patterns).
 * 2. Vectors: one float stands for every lane of an nnef_vf. Every vector operation the items
 *    use acts lane by lane (the same IEEE operation in each lane; no reduction crosses lanes),
 *    so a value bounding every lane of the operands bounds every lane of the result: the
 *    analysed value holds each lane's value. A load reads (and checks) every element the
 *    compiled load reads, the stride-2 loads the 2 * NNEF_VL floats of their two vector loads;
 *    a store writes every lane it writes.
 * 3. sqrt, fabs, floor, ceil are Frama-C's libc functions (their ACSL specifications and EVA's
 *    built-ins: IEEE results, as the primitives); rint has a contract (within 1/2 of x). The
 *    transcendental programs have their contracts in nnef_math.h.
 */
#ifndef NNEF_EVA_H
#define NNEF_EVA_H

#include <math.h>
#include "__fc_builtin.h"

/* ---------------------------------------------------------------- scalar primitives */

NNEF_INLINE uint32_t nnef_bits(float f) { uint32_t u; memcpy(&u, &f, sizeof u); return u; }
NNEF_INLINE float nnef_float(uint32_t u) { float f; memcpy(&f, &u, sizeof f); return f; }
NNEF_INLINE uint32_t nnef_mask(int c) { return (uint32_t)0 - (uint32_t)(c != 0); }
NNEF_INLINE float nnef_select(int c, float a, float b) { return c ? a : b; }
NNEF_INLINE float nnef_max(float x, float y) { return (x > y || isnan(x)) ? x : y; }
NNEF_INLINE float nnef_min(float x, float y) { return (x < y || isnan(x)) ? x : y; }
NNEF_INLINE float nnef_relu(float x) { return (x > 0.0f || isnan(x)) ? x : 0.0f; }
NNEF_INLINE float nnef_max_update(float t, float m) { return (t > m || (isnan(t) && !isnan(m))) ? t : m; }
NNEF_INLINE float nnef_min_update(float t, float m) { return (t < m || (isnan(t) && !isnan(m))) ? t : m; }
NNEF_INLINE float nnef_fabs(float x) { return fabsf(x); }
NNEF_INLINE float nnef_fneg(float x) { return -x; }
NNEF_INLINE int nnef_signbit(float x) { return (int)(nnef_bits(x) >> 31); }
/*@ requires not_nan: !\is_NaN(x);
    assigns \result \from x;
    behavior finite:
      assumes \is_finite(x);
      ensures \is_finite(\result) && \old(x) - 0.5 <= \result <= \old(x) + 0.5;
    behavior infinite:
      assumes !\is_finite(x);
      ensures !\is_finite(\result) && !\is_NaN(\result);
    complete behaviors;
    disjoint behaviors;
*/
float nnef_rint(float x);
NNEF_INLINE float nnef_floor(float x) { return floorf(x); }
NNEF_INLINE float nnef_ceil(float x) { return ceilf(x); }
NNEF_INLINE float nnef_sqrt(float x) { return sqrtf(x); }
NNEF_INLINE float nnef_sign(float x) { return x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : x); }

/* ---------------------------------------------------------------- vectors: one value for every lane */

/* Macros rather than functions: EVA analyses a call at every call site, and the items make
 * hundreds of thousands of these calls per analysis (the inline functions cost branch3 about
 * 40 % of its analysis time). A load reads one element at a lane index the analysis driver
 * sets to every lane at once (nnef_eva_lane in [0, NNEF_VL - 1], nnef_eva_lane2 in
 * [0, 2 * NNEF_VL - 1]): EVA checks every element of the range and joins their values. A store
 * writes each lane. */
extern int nnef_eva_lane;
extern int nnef_eva_lane2;
typedef float nnef_vf;
typedef int32_t nnef_vi;

#define nnef_vzero() 0.0f
#define nnef_vset1(x) ((float)(x))
#define nnef_vload(p) ((p)[nnef_eva_lane])
#define nnef_vload_strided(p, s) ((p)[(s) * nnef_eva_lane])
#define nnef_vload_even(p) ((p)[nnef_eva_lane2])
#define nnef_vload_odd(p) ((p)[nnef_eva_lane2])
#define nnef_vstore(p, v) \
    do { \
        float *const nnef_q_ = (p); \
        const float nnef_v_ = (v); \
        /*@ loop unroll NNEF_VL; */ \
        for (int nnef_i_ = 0; nnef_i_ < NNEF_VL; ++nnef_i_) nnef_q_[nnef_i_] = nnef_v_; \
    } while (0)
NNEF_INLINE void nnef_vstore_n(float *p, nnef_vf v, int n)
{
    /*@ loop unroll NNEF_VL; */
    for (int i = 0; i < n; ++i) p[i] = v;
}
#define nnef_vlane(v, i) ((float)(v))
#define nnef_vadd(a, b) ((a) + (b))
#define nnef_vsub(a, b) ((a) - (b))
#define nnef_vmul(a, b) ((a) * (b))
#define nnef_vdiv(a, b) ((a) / (b))
#define nnef_vgt(a, b) ((a) > (b) ? -1 : 0)
#define nnef_vlt(a, b) ((a) < (b) ? -1 : 0)
#define nnef_vge(a, b) ((a) >= (b) ? -1 : 0)
#define nnef_vle(a, b) ((a) <= (b) ? -1 : 0)
#define nnef_veq(a, b) ((a) == (b) ? -1 : 0)
#define nnef_vne(a, b) ((a) != (b) ? -1 : 0)
#define nnef_vnot(a) (~(a))
#define nnef_vand(a, b) ((a) & (b))
#define nnef_vor(a, b) ((a) | (b))
#define nnef_vselect(m, a, b) ((m) ? (a) : (b))
/* Functions where EVA must reduce a value by the condition (a macro would read the operand twice,
 * and the two reads are not related). */
NNEF_INLINE nnef_vf nnef_vabs(nnef_vf a) { return nnef_fabs(a); }
NNEF_INLINE nnef_vf nnef_vneg(nnef_vf a) { return nnef_fneg(a); }
NNEF_INLINE nnef_vf nnef_vmax(nnef_vf x, nnef_vf y) { return nnef_max(x, y); }
NNEF_INLINE nnef_vf nnef_vmin(nnef_vf x, nnef_vf y) { return nnef_min(x, y); }
NNEF_INLINE nnef_vf nnef_vrelu(nnef_vf x) { return nnef_relu(x); }
NNEF_INLINE nnef_vf nnef_vmax_update(nnef_vf t, nnef_vf m) { return nnef_max_update(t, m); }
NNEF_INLINE nnef_vf nnef_vmin_update(nnef_vf t, nnef_vf m) { return nnef_min_update(t, m); }

#define NNEF_VMAP1(name, fn) NNEF_INLINE nnef_vf name(nnef_vf x) { return fn(x); }
#define NNEF_VMAP2(name, fn) NNEF_INLINE nnef_vf name(nnef_vf x, nnef_vf y) { return fn(x, y); }
NNEF_VMAP1(nnef_vsqrt, nnef_sqrt)
NNEF_VMAP1(nnef_vrint, nnef_rint)
NNEF_VMAP1(nnef_vfloor, nnef_floor)
NNEF_VMAP1(nnef_vceil, nnef_ceil)
NNEF_VMAP1(nnef_vsign, nnef_sign)

#endif /* NNEF_EVA_H */

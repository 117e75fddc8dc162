"""exp, log, tanh, sigmoid, softplus, pow and erf for CUDA items: one statement per step of the
reference's straight-line programs (pipeline.semantics.transcendental.PROGRAMS), the one
deliberate sharing with the reference that docs/codegen.md names (no CUDA math library: a
library expf is not a specification, and `__expf` is an approximation).

Every float operation goes through the macros of nnef_cuda.h (correctly rounded intrinsics on
the device, plain operators in the host emulation); rint and floor use the exact 2^23 trick;
the programs are `__host__ __device__` so the emulation runs the same statements.
"""

from __future__ import annotations

from pipeline.codegen.shared.programs import PRIMITIVES, Spelling, callees_first, render_function
from pipeline.semantics import transcendental as T


# Where CUDA differs from the shared table: every float operation through nnef_cuda.h's macros (correctly
# rounded intrinsics on the device), the bit operations written out (nnef_runtime.h's helpers are C's), selects
# as conditional expressions.
OVERRIDES: dict[str, str] = {
    "add": "NNEF_ADD({0}, {1})",
    "sub": "NNEF_SUB({0}, {1})",
    "mul": "NNEF_MUL({0}, {1})",
    "div": "NNEF_DIV({0}, {1})",
    "neg": "nnef_float(nnef_bits({0}) ^ 0x80000000u)",
    "abs": "nnef_float(nnef_bits({0}) & 0x7fffffffu)",
    "signbit": "((int)(nnef_bits({0}) >> 31))",
    "select_f": "({0} ? {1} : {2})",
    "select_i": "({0} ? {1} : {2})",
}
CUDA_OPS: dict[str, str] = {**PRIMITIVES, **OVERRIDES}

PRELUDE = """/* nnef_cuda_math.h -- generated from pipeline/semantics/transcendental.py (PROGRAMS) by
 * pipeline.codegen.cuda: one statement per step, in the order of transcendental.flatten; see
 * docs/semantics/transcendental.md and docs/codegen-cuda.md. No CUDA math library. */
#ifndef NNEF_CUDA_MATH_H
#define NNEF_CUDA_MATH_H

#include "nnef_cuda.h"

/* rint for |x| < 2^23: (|x| + 2^23) - 2^23 rounds to the nearest even integer (exact); the sign
 * of x is restored; larger values, infinities and NaN are returned as they are. */
NNEF_HD float nnef_rint(float x)
{
    const float a = nnef_float(nnef_bits(x) & 0x7fffffffu);
    const float r = NNEF_SUB(NNEF_ADD(a, 8388608.0f), 8388608.0f);
    const float s = nnef_float(nnef_bits(r) | (nnef_bits(x) & 0x80000000u));
    return (a < 8388608.0f) ? s : x;
}

/* floor(x) = rint(x) - 1 where rint rounded up, else rint(x). */
NNEF_HD float nnef_floor(float x)
{
    const float r = nnef_rint(x);
    return (r > x) ? NNEF_SUB(r, 1.0f) : r;
}
"""


def math_header() -> str:
    """nnef_cuda_math.h: every program, callees first."""
    programs = callees_first([T.PROGRAMS[name] for name in sorted(T.PROGRAMS)])
    functions = [render_function(p, Spelling(CUDA_OPS), "NNEF_HD", notes=False) for p in programs]
    return "\n\n".join([PRELUDE] + functions + ["#endif /* NNEF_CUDA_MATH_H */"]) + "\n"


def unknown_primitives() -> set[str]:
    """Primitives of transcendental.OPS without a CUDA spelling here (a test keeps it empty)."""
    return {op for op in T.OPS if op not in CUDA_OPS and op != "select"}

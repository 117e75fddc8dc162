"""exp, log, tanh, sigmoid, softplus, pow and erf in C, one statement per step of the reference's
straight-line programs (pipeline.semantics.transcendental.PROGRAMS).

The reference evaluates the same steps with NumPy, so emitting each flattened step with
the IEEE meaning of its primitive gives the same bits (tests/codegen/test_programs.py runs
both on hundreds of thousands of inputs). The primitives map to nnef_runtime.h, never to
libm: rint/floor through the exact 2^23 trick, abs/neg/signbit through the bits, selects
through masks; infinities and NaN are built from their bit patterns.
"""

from __future__ import annotations

from pipeline.codegen.c.contracts import CONTRACTS, framac_declaration
from pipeline.codegen.shared.programs import PRIMITIVES, Spelling, callees_first, render_function
from pipeline.semantics import transcendental as T

# The same primitives on NNEF_VL lanes at once (GCC/Clang vector extensions, nnef_runtime.h's
# NNEF_VECTOR_EXT): booleans are lane masks (all ones or zero), which only and/or/not and the
# selects consume (transcendental.OPS gives them no other use), so `not` is a bitwise not.
V_OPS: dict[str, str] = {
    **{op: PRIMITIVES[op] for op in ("add", "sub", "mul", "div", "and", "or", "iand", "ior")},
    "neg": "nnef_vneg({0})",
    "abs": "nnef_vabs({0})",
    "rint": "nnef_vrint({0})",
    "floor": "nnef_vfloor({0})",
    "lt": "nnef_vlt({0}, {1})",
    "gt": "nnef_vgt({0}, {1})",
    "le": "nnef_vle({0}, {1})",
    "ge": "nnef_vge({0}, {1})",
    "eq": "nnef_veq({0}, {1})",
    "ne": "nnef_vne({0}, {1})",
    "signbit": "nnef_vsignbit({0})",
    "not": "nnef_vnot({0})",
    "select_f": "nnef_vselect({0}, {1}, {2})",
    "select_i": "nnef_viselect({0}, {1}, {2})",
    "f2i": "nnef_vf2i({0})",
    "i2f": "nnef_vi2f({0})",
    "bits": "nnef_vbits({0})",
    "from_bits": "nnef_vfrom_bits({0})",
    "iadd": "nnef_viadd({0}, {1})",
    "isub": "nnef_visub({0}, {1})",
    "shl": "nnef_vshl({0}, {1})",
    "shr": "nnef_vshr({0}, {1})",
}

# The scalar functions nnef_<name> and their lane-wise forms nnef_v<name> on nnef_vf.
SCALAR = Spelling(PRIMITIVES)
VECTOR = Spelling(V_OPS, {"f": "nnef_vf", "i": "nnef_vi", "b": "nnef_vi"}, "nnef_v",
                  {"f": "nnef_vset1({0})", "i": "nnef_viset1({0})", "b": "nnef_vset1({0})"}, "{0}, NNEF_VL lanes")

PRELUDE = """/* Generated from pipeline/semantics/transcendental.py (PROGRAMS): one statement per step,
 * in the order of transcendental.flatten; see docs/semantics/transcendental.md. */
#ifndef NNEF_MATH_H
#define NNEF_MATH_H

#include "nnef_runtime.h"

/* select on int32 (the programs' integer selects), branch-free. */
NNEF_INLINE int32_t nnef_iselect(int c, int32_t a, int32_t b)
{
    uint32_t m = nnef_mask(c);
    return (int32_t)(((uint32_t)a & m) | ((uint32_t)b & ~m));
}
"""


def math_header() -> str:
    """nnef_math.h: every program, callees first, plus its vector form: the same steps on vectors
    where the compiler has vector extensions, else the scalar function lane by lane."""
    programs = callees_first([T.PROGRAMS[name] for name in sorted(T.PROGRAMS)])
    parts = [PRELUDE]
    parts += [_scalar(p) for p in programs]
    unary = [p.name for p in programs if len(p.params) == 1]
    binary = [p.name for p in programs if len(p.params) == 2]
    parts.append("#if defined(NNEF_VECTOR_EXT)")
    parts += [render_function(p, VECTOR, qualifier="NNEF_INLINE", notes=False) for p in programs]
    parts.append("#else")
    parts.append("\n".join([f"NNEF_VMAP1(nnef_v{name}, nnef_{name})" for name in unary]
                           + [f"NNEF_VMAP2(nnef_v{name}, nnef_{name})" for name in binary]))
    parts.append("#endif")
    parts.append("#endif /* NNEF_MATH_H */")
    return "\n\n".join(parts) + "\n"


def _scalar(program: T.Program) -> str:
    """The scalar function; for a program with a contract (pipeline/codegen/c/contracts.py), Frama-C
    reads the contract and a prototype instead of the body (__FRAMAC__: no compiler defines it)."""
    body = render_function(program, SCALAR)
    contract = CONTRACTS.get(program.name)
    if contract is None:
        return body
    return f"#if defined(__FRAMAC__)\n{framac_declaration(contract)}\n#else\n{body}\n#endif"


def unknown_primitives() -> set[str]:
    """Primitives of transcendental.OPS this emitter has no C for (a test keeps it empty)."""
    return {op for op in T.OPS if op not in PRIMITIVES and op != "select"}

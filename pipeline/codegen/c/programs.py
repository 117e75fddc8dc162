"""exp, log, tanh, sigmoid, softplus, pow and erf in C, one statement per step of the reference's
straight-line programs (pipeline.semantics.transcendental.PROGRAMS).

The reference evaluates the same steps with NumPy, so emitting each flattened step with
the IEEE meaning of its primitive gives the same bits (tests/codegen/test_programs.py runs
both on hundreds of thousands of inputs). The primitives map to nnef_runtime.h, never to
libm: rint/floor through the exact 2^23 trick, abs/neg/signbit through the bits, selects
through masks; infinities and NaN are built from their bit patterns.
"""

from __future__ import annotations

from pipeline.semantics import transcendental as T

_C_TYPES = {"f": "float", "i": "int32_t", "b": "int"}

# C99 for each primitive of transcendental.OPS, with nnef_runtime.h helpers instead of libm.
C_OPS: dict[str, str] = {
    "add": "({0} + {1})",
    "sub": "({0} - {1})",
    "mul": "({0} * {1})",
    "div": "({0} / {1})",
    "neg": "nnef_fneg({0})",
    "abs": "nnef_fabs({0})",
    "rint": "nnef_rint({0})",
    "floor": "nnef_floor({0})",
    "lt": "({0} < {1})",
    "gt": "({0} > {1})",
    "le": "({0} <= {1})",
    "ge": "({0} >= {1})",
    "eq": "({0} == {1})",
    "ne": "({0} != {1})",
    "signbit": "nnef_signbit({0})",
    "and": "({0} & {1})",
    "or": "({0} | {1})",
    "not": "(!{0})",
    "select_f": "nnef_select({0}, {1}, {2})",
    "select_i": "nnef_iselect({0}, {1}, {2})",
    "f2i": "((int32_t){0})",
    "i2f": "((float){0})",
    "bits": "((int32_t)nnef_bits({0}))",
    "from_bits": "nnef_float((uint32_t){0})",
    "iadd": "({0} + {1})",
    "isub": "({0} - {1})",
    "iand": "({0} & {1})",
    "ior": "({0} | {1})",
    "shl": "((int32_t)((uint32_t){0} << {1}))",
    "shr": "((int32_t)((uint32_t){0} >> {1}))",
}

# The same primitives on NNEF_VL lanes at once (GCC/Clang vector extensions, nnef_runtime.h's
# NNEF_VECTOR_EXT): booleans are lane masks (all ones or zero), which only and/or/not and the
# selects consume (transcendental.OPS gives them no other use), so `not` is a bitwise not.
V_OPS: dict[str, str] = {
    **{op: C_OPS[op] for op in ("add", "sub", "mul", "div", "and", "or", "iand", "ior")},
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
_V_TYPES = {"f": "nnef_vf", "i": "nnef_vi", "b": "nnef_vi"}

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


def _literal(const: T.Const) -> str:
    """An exact C constant: hex floats as written, infinities and NaN from their bits."""
    if const.type == "i":
        return const.literal
    if const.literal.lower() in ("inf", "-inf", "nan"):
        return f"nnef_float({const.bits}u)"
    return f"{const.literal}f"


def callees_first(programs: list[T.Program]) -> list[T.Program]:
    """Callees before callers."""
    done: list[T.Program] = []

    def visit(program: T.Program) -> None:
        if program in done:
            return
        for step in T.flatten(program):
            if step.op == T.CALL:
                visit(T.PROGRAMS[step.args[0]])
        done.append(program)

    for program in programs:
        visit(program)
    return done


def render_function(program: T.Program, ops: dict[str, str] = C_OPS, qualifier: str = "static inline",
                    notes: bool = True, vector: bool = False) -> str:
    """One program as a function `nnef_<name>`: one statement per flattened step, each primitive
    spelled by `ops` (C_OPS here; the CUDA generator passes its own, with `__host__ __device__`).
    With `vector`, the lane-wise form `nnef_v<name>` on nnef_vf, spelled by V_OPS: the same steps
    in the same order on every lane, so each lane gives the scalar function's bits."""
    c_types, prefix = (_V_TYPES, "nnef_v") if vector else (_C_TYPES, "nnef_")
    ops = V_OPS if vector else ops
    types: dict[str, str] = {name: "f" for name in program.params}
    names: dict[str, str] = {name: f"v_{name}" for name in program.params}
    params = ", ".join(f"{c_types['f']} v_{p}" for p in program.params)
    summary = f"{program.summary}, NNEF_VL lanes" if vector else program.summary
    lines = [f"/* {summary} */", f"{qualifier} {c_types['f']} {prefix}{program.name}({params})", "{"]
    for const in program.constants:
        types[const.name] = const.type
        names[const.name] = f"K_{const.name}"
        note = f"  /* {const.note} */" if notes and const.note else ""
        value = _literal(const)
        if vector:
            value = f"nnef_viset1({value})" if const.type == "i" else f"nnef_vset1({value})"
        lines.append(f"    const {c_types[const.type]} K_{const.name} = {value};  /* {const.bits} */{note}")
    for step in T.flatten(program):
        if step.op == T.CALL:
            result_type = "f"
            expr = f"{prefix}{step.args[0]}({', '.join(names[a] for a in step.args[1:])})"
        else:
            spec = T.OPS[step.op]
            result_type = types[step.args[1]] if spec.result == "T" else spec.result
            key = step.op
            if step.op == "select":
                key = "select_i" if result_type == "i" else "select_f"
            expr = ops[key].format(*(names[a] for a in step.args))
        types[step.dest] = result_type
        names[step.dest] = f"v_{step.dest}"
        note = f"  /* {step.note} */" if notes and step.note else ""
        lines.append(f"    const {c_types[result_type]} v_{step.dest} = {expr};{note}")
    lines.append(f"    return {names[program.result]};")
    lines.append("}")
    return "\n".join(lines)


def math_header() -> str:
    """nnef_math.h: every program, callees first, plus its vector form: the same steps on vectors
    where the compiler has vector extensions, else the scalar function lane by lane."""
    programs = callees_first([T.PROGRAMS[name] for name in sorted(T.PROGRAMS)])
    parts = [PRELUDE]
    parts += [render_function(p) for p in programs]
    unary = [p.name for p in programs if len(p.params) == 1]
    binary = [p.name for p in programs if len(p.params) == 2]
    parts.append("#if defined(NNEF_VECTOR_EXT)")
    parts += [render_function(p, qualifier="NNEF_INLINE", notes=False, vector=True) for p in programs]
    parts.append("#else")
    parts.append("\n".join([f"NNEF_VMAP1(nnef_v{name}, nnef_{name})" for name in unary]
                           + [f"NNEF_VMAP2(nnef_v{name}, nnef_{name})" for name in binary]))
    parts.append("#endif")
    parts.append("#endif /* NNEF_MATH_H */")
    return "\n\n".join(parts) + "\n"


def unknown_primitives() -> set[str]:
    """Primitives of transcendental.OPS this emitter has no C for (a test keeps it empty)."""
    return {op for op in T.OPS if op not in C_OPS and op != "select"}

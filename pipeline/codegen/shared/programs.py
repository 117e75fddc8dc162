"""The reference's transcendental programs written out in a C-family language, one statement per step.

pipeline.semantics.transcendental.PROGRAMS are straight-line programs over IEEE primitives; the
reference evaluates their flattened steps with NumPy. A generator that writes each step with the
IEEE meaning of its primitive, in the same order, gives the same bits. How a primitive is spelled is
one table here (PRIMITIVES: C99 with nnef_runtime.h helpers); a target lists only where it differs
(CUDA's correctly rounded intrinsics: pipeline/codegen/cuda/programs.py OVERRIDES; C's vector forms
on NNEF_VL lanes: pipeline/codegen/c/programs.py V_OPS). The statement order, the names and the exact
constants are written here once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from pipeline.semantics import transcendental as T

# The C type of each kind of value of the programs: float, int32 and boolean.
C_TYPES: Mapping[str, str] = {"f": "float", "i": "int32_t", "b": "int"}


# The one table of primitive spellings: C99 for each primitive of transcendental.OPS, with nnef_runtime.h helpers
# instead of libm. Each target differs from it only where it must (CUDA: pipeline/codegen/cuda/programs.py OVERRIDES).
PRIMITIVES: Mapping[str, str] = {
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


@dataclass(frozen=True)
class Spelling:
    """How a target writes the programs: each primitive of transcendental.OPS as a format of its
    operands (select as select_f/select_i), the type of each kind of value, the prefix of the
    functions' names, how a constant's exact literal is wrapped (per kind) and what the comment
    adds to a program's summary."""

    ops: Mapping[str, str]
    types: Mapping[str, str] = field(default_factory=lambda: dict(C_TYPES))
    prefix: str = "nnef_"
    constants: Mapping[str, str] = field(default_factory=dict)
    summary: str = "{0}"


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


def render_function(program: T.Program, spelling: Spelling, qualifier: str = "static inline",
                    notes: bool = True) -> str:
    """One program as a function `<prefix><name>`: one statement per flattened step, each primitive
    written as `spelling` says (C's scalar and NNEF_VL-lane forms, CUDA's `__host__ __device__` one);
    the lane-wise form computes the same steps in the same order on every lane, so each lane gives
    the scalar function's bits."""
    c_types, prefix, ops = spelling.types, spelling.prefix, spelling.ops
    types: dict[str, str] = {name: "f" for name in program.params}
    names: dict[str, str] = {name: f"v_{name}" for name in program.params}
    params = ", ".join(f"{c_types['f']} v_{p}" for p in program.params)
    summary = spelling.summary.format(program.summary)
    lines = [f"/* {summary} */", f"{qualifier} {c_types['f']} {prefix}{program.name}({params})", "{"]
    for const in program.constants:
        types[const.name] = const.type
        names[const.name] = f"K_{const.name}"
        note = f"  /* {const.note} */" if notes and const.note else ""
        value = spelling.constants.get(const.type, "{0}").format(_literal(const))
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

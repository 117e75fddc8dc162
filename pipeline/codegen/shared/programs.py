"""The reference's transcendental programs written out in a C-family language, one statement per step.

pipeline.semantics.transcendental.PROGRAMS are straight-line programs over IEEE primitives; the
reference evaluates their flattened steps with NumPy. A generator that writes each step with the
IEEE meaning of its primitive, in the same order, gives the same bits. How a target spells a
primitive (nnef_runtime.h helpers for C, nnef_cuda.h's correctly rounded intrinsics for CUDA,
vector helpers for C on NNEF_VL lanes) is its own (pipeline/codegen/c/programs.py,
pipeline/codegen/cuda/programs.py); the statement order, the names and the exact constants are
written here once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from pipeline.semantics import transcendental as T

# The C type of each kind of value of the programs: float, int32 and boolean.
C_TYPES: Mapping[str, str] = {"f": "float", "i": "int32_t", "b": "int"}


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

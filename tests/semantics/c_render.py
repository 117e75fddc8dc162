"""Render the transcendental programs as C99 (or CUDA) functions: one statement per step.

This is the executable check that a generator emitting the programs' steps with the
C meanings of `transcendental.OPS` reproduces the NumPy reference bit for bit. It is test
code (the code generators own their emitters), kept deliberately literal.
"""

from __future__ import annotations

from pipeline.semantics import transcendental as T

_C_TYPES = {"f": "float", "i": "int32_t", "b": "int"}

PRELUDE_C = """#include <math.h>
#include <stdint.h>
#include <string.h>
static inline int32_t nnef_float_bits(float f) { int32_t i; memcpy(&i, &f, sizeof i); return i; }
static inline float nnef_bits_float(int32_t i) { float f; memcpy(&f, &i, sizeof f); return f; }
"""

PRELUDE_CUDA = """#include <math.h>
#include <stdint.h>
__device__ static inline int32_t nnef_float_bits(float f) { return __float_as_int(f); }
__device__ static inline float nnef_bits_float(int32_t i) { return __int_as_float(i); }
"""


def _order(programs: list[T.Program]) -> list[T.Program]:
    """Callees before callers."""
    done: list[T.Program] = []

    def visit(p: T.Program) -> None:
        if p in done:
            return
        for step in T.flatten(p):
            if step.op == T.CALL:
                visit(T.PROGRAMS[step.args[0]])
        done.append(p)

    for p in programs:
        visit(p)
    return done


def render_function(program: T.Program, qualifier: str = "static") -> str:
    types: dict[str, str] = {name: "f" for name in program.params}
    names: dict[str, str] = {name: f"v_{name}" for name in program.params}
    lines = [f"{qualifier} float nnef_{program.name}({', '.join(f'float v_{p}' for p in program.params)})", "{"]
    for const in program.constants:
        types[const.name] = const.type
        names[const.name] = f"K_{const.name}"
        lines.append(f"    const {_C_TYPES[const.type]} K_{const.name} = {const.c_literal};  /* {const.bits} */")
    for step in T.flatten(program):
        if step.op == T.CALL:
            rtype = "f"
            expr = f"nnef_{step.args[0]}({', '.join(names[a] for a in step.args[1:])})"
        else:
            spec = T.OPS[step.op]
            rtype = types[step.args[1]] if spec.result == "T" else spec.result
            expr = spec.c.format(*(names[a] for a in step.args))
        types[step.dest] = rtype
        names[step.dest] = f"v_{step.dest}"
        note = f"  /* {step.note} */" if step.note else ""
        lines.append(f"    const {_C_TYPES[rtype]} v_{step.dest} = {expr};{note}")
    lines.append(f"    return {names[program.result]};")
    lines.append("}")
    return "\n".join(lines)


def render(programs: list[T.Program], cuda: bool = False) -> str:
    qualifier = "__device__ static" if cuda else "static"
    parts = [PRELUDE_CUDA if cuda else PRELUDE_C]
    parts += [render_function(p, qualifier) for p in _order(programs)]
    return "\n\n".join(parts) + "\n"


def c_driver(programs: list[T.Program]) -> str:
    """A main(): `prog NAME COUNT` reads COUNT inputs (float32 x arity) on stdin, writes COUNT results."""
    binary = " || ".join(f'!strcmp(argv[1], "{p.name}")' for p in programs if len(p.params) == 2) or "0"
    calls = []
    for p in programs:
        args = "in[i]" if len(p.params) == 1 else "in[2 * i], in[2 * i + 1]"
        calls.append(f'    if (!strcmp(argv[1], "{p.name}")) for (long i = 0; i < n; ++i) out[i] = nnef_{p.name}({args});')
    return f"""#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv)
{{
    if (argc != 3) return 2;
    long n = atol(argv[2]);
    int arity = ({binary}) ? 2 : 1;
    float *in = malloc(sizeof(float) * n * arity), *out = malloc(sizeof(float) * n);
    if (!in || !out || fread(in, sizeof(float), n * arity, stdin) != (size_t)(n * arity)) return 3;
""" + "\n".join(calls) + """
    fwrite(out, sizeof(float), n, stdout);
    return 0;
}
"""

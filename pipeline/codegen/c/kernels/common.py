"""What every kernel emitter shares: operands, the emission context, the registry (and, from
pipeline/codegen/shared/spelling.py, the spelling of literals and names).

A kernel emitter turns one NNEF instruction into the body of one C function. It receives
its operands (tensor shapes, the C expression of each base pointer, and the values of
constant operands known at generation time), writes loops whose evaluation order is the
reference's (docs/semantics), and may ask for generation-time constant arrays (weights in
a vector-friendly layout) and for scratch memory in the arena.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from pipeline.codegen.shared.errors import CodegenError
from pipeline.codegen.shared.spelling import F32, flit, flits, ident, strides  # noqa: F401  (the kernels take them from here)
from pipeline.diagnostics import Location
from pipeline.nnef.graph import Operation


@dataclass
class Operand:
    """A tensor (or literal) operand as a kernel sees it.

    `c` is the C expression of the first element's address (a function parameter, or the
    name of a constant array); a literal has `literal` (float32) and no pointer; `value`
    holds the data of constant operands (variables, constants, literals) so that kernels
    can re-arrange it at generation time; `label` names the variable's tensor file.
    """

    name: str
    shape: tuple[int, ...]
    c: str = ""
    value: np.ndarray | None = field(default=None, repr=False)
    literal: np.float32 | None = None
    label: str | None = None

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def is_literal(self) -> bool:
        return self.literal is not None

    @property
    def is_constant(self) -> bool:
        return self.value is not None


@dataclass
class ConstArray:
    """A generation-time array the kernel needs (a weight in a kernel layout, an index table)."""

    name: str
    values: np.ndarray
    ctype: str                 # "float" or "int"
    comment: str
    source: str | None = None  # the weight label it derives from
    layout: dict[str, Any] = field(default_factory=dict)


class Kernel:
    """The emission context of one instruction (see the module docstring)."""

    def __init__(self, op: Operation, function: str, inputs: dict[str, Any], outputs: list[Operand], lanes: int,
                 const_arrays: dict[str, ConstArray], location: Location) -> None:
        self.op = op
        self.function = function
        self.inputs = inputs
        self.outputs = outputs
        self.lanes = lanes
        self.body: list[str] = []
        self.scratch_floats = 0
        self._arrays = const_arrays
        self.location = location
        self.used_arrays: list[str] = []
        self._level = 1

    # -- writing
    def line(self, text: str = "") -> None:
        self.body.append(("    " * self._level + text) if text else "")

    def comment(self, text: str) -> None:
        text = text.replace("*/", "* /")
        self.line(f"/* {text} */")

    def open(self, header: str) -> None:
        self.line(f"{header} {{" if header else "{")
        self._level += 1

    def close(self) -> None:
        self._level -= 1
        self.line("}")

    def reduce(self, header: str, iterations: int) -> None:
        """Open a loop over the terms of a reduction (`iterations` at most), annotated for Frama-C's
        EVA: `loop unroll` keeps each term apart, where merging the iterations would widen the
        running sum to infinity (docs/prove.md). A comment to the compiler: no bit changes."""
        self.open(f"/*@ loop unroll {max(1, iterations)}; */ {header}")

    # -- resources
    def scratch(self, floats: int) -> str:
        """A scratch region of `floats` floats, live during this instruction only; its C pointer."""
        offset = self.scratch_floats
        self.scratch_floats += -(-floats // 16) * 16
        return f"(scratch + {offset})" if offset else "scratch"

    def const_array(self, key: str, values: np.ndarray, ctype: str, comment: str, source: str | None = None,
                    layout: dict[str, Any] | None = None) -> str:
        """Register (or reuse, if the same key and bits) a constant array; returns its C name."""
        name = ident(key)
        flat = np.ascontiguousarray(values).reshape(-1)
        existing = self._arrays.get(name)
        if existing is not None:
            if existing.values.tobytes() != flat.tobytes():
                raise CodegenError("CODEGEN-E008", f"constant array {name} registered twice with different data",
                                   self.location)
        else:
            self._arrays[name] = ConstArray(name, flat, ctype, comment, source, dict(layout or {}))
        if name not in self.used_arrays:
            self.used_arrays.append(name)
        return name

    def fail(self, message: str, code: str = "CODEGEN-E002") -> CodegenError:
        return CodegenError(code, f"{self.op.name}: {message}", self.location)

    # -- operands
    def operand(self, key: str) -> Operand:
        value = self.inputs[key]
        if not isinstance(value, Operand):
            raise self.fail(f"operand '{key}' must be a single tensor")
        return value

    def operand_list(self, key: str) -> list[Operand]:
        value = self.inputs[key]
        return list(value) if isinstance(value, list) else [value]

    @property
    def out(self) -> Operand:
        return self.outputs[0]


def index_expr(terms: list[tuple[str, int]], constant: int = 0) -> str:
    """`a*3 + b + 7` from (variable, coefficient) pairs, dropping zero terms."""
    parts = []
    for var, coef in terms:
        if coef == 0:
            continue
        parts.append(var if coef == 1 else f"{var} * {coef}")
    if constant or not parts:
        parts.append(str(constant))
    return " + ".join(parts).replace("+ -", "- ")


def pointer(base: str, offset: str) -> str:
    return base if offset == "0" else f"{base} + {offset}"


Emitter = Callable[[Kernel], None]
EMITTERS: dict[str, Emitter] = {}
# Operations whose result shares its operand's storage (no code, no copy).
VIEW_OPERATIONS = frozenset({"reshape", "squeeze", "unsqueeze", "copy"})


def emitter(*names: str) -> Callable[[Emitter], Emitter]:
    """Register the decorated function as the C emitter of each NNEF operation in `names`."""

    def register(fn: Emitter) -> Emitter:
        for name in names:
            if name in EMITTERS:
                raise ValueError(f"operation {name!r} has two C emitters")
            EMITTERS[name] = fn
        return fn

    return register


def attr_float(op: Operation, key: str) -> np.float32:
    """A float attribute rounded once to float32 (the reference's attr_f32)."""
    return F32(op.attribs[key])

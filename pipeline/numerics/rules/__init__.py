"""The rules of every primitive operation, one module per operator family.

A rule has two sides:

* `enclose(op, ins, ctx)`: the operation on double-word balls (pipeline.numerics.doubled), its result
  certainly containing the exact real-number result for every point of the input balls: the
  enclosure of the network's real output (pipeline.numerics.enclosure);
* `linearize(op, ins, ctx) -> Step`: the operation on float64 values at the vector, with what the
  error bound (pipeline.numerics.sensitivity) needs of it: the Jacobian both ways (`vjp`, `jvp`), the
  local rounding of an implementation (`rounding(arithmetic, spread)`: each element's error from its own
  roundings, as a deterministic sum d of the elementary errors' bounds and as q, their root sum of
  squares, plus errors shared by many elements such as a per-channel constant), and the remainder
  of the linearization (`remainder(spread)`: a decision that may flip, a second derivative) given an
  estimate `spread` of each tensor's error.

`RULES[op_type]` holds them; `register` adds one (issue 38's Where and masked Softmax, for instance:
a rule module registers its operators when imported, the module list is `FAMILIES`).
docs/compare.md ("Rules") derives each one.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from pipeline.numerics.arithmetic import Arithmetic
from pipeline.numerics.graph import Graph, Op

Value = Any  # a Ball, or an exact integer array (shape arithmetic)
# a decision is counted as possibly flipping only when the spread passes its margin by more than this (the
# subnormal terms of the roundings give zeros spreads of 1e-43, which change nothing)
NEGLIGIBLE = 2.0 ** -100
Array = np.ndarray


class NoRule(Exception):
    """An operator, attribute or value a rule cannot bound; `code` as pipeline.numerics.bounds' codes."""

    def __init__(self, message: str, code: str = "BOUND-E001") -> None:
        super().__init__(message)
        self.code = code


@dataclass
class Local:
    """Each output element's error from the operation's own roundings: d bounds the sum of the elementary
    errors' magnitudes, q their root sum of squares (both already multiplied by the unit roundoff)."""

    d: Array
    q: Array


@dataclass
class Shared:
    """Errors shared by many elements (a per-channel constant computed once): `coefficient(grads)` maps the
    outputs' cotangents [B, ...] to the cotangent of each shared quantity [B, *k]; d and q are [*k];
    `forward(delta)` maps perturbations of the shared quantities [R, *k] to the output's [R, ...] (the
    simulation that estimates the spreads uses it)."""

    coefficient: Callable[[list[Array | None]], Array]
    d: Array
    q: Array
    forward: Callable[[Array], Array] | None = None


@dataclass
class Rounding:
    """`local` per output; `shared` sources; `shift` per output: errors known with their sign (a lookup table's
    own error at the vector); `inputs`: roundings of an operand inside the operation (softmax's x - max), as if
    the operand had them; `known`: known errors of shared quantities (a folded constant stored in a narrower
    format), as (coefficient, delta, forward) like `Shared`."""

    local: list[Local | None]
    shared: list[Shared] = field(default_factory=list)
    shift: list[Array | None] = field(default_factory=list)
    inputs: list[Local | None] = field(default_factory=list)  # roundings of an input, carried by the Jacobian
    known: list[tuple[Callable[[list[Array | None]], Array], Array, Callable[[Array], Array]]] = \
        field(default_factory=list)


@dataclass
class Context:
    """What a rule may read besides its inputs: the graph (constants, shapes, consumers)."""

    graph: Graph

    @property
    def opset(self) -> int:
        return self.graph.opset

    def constant(self, name: str) -> np.ndarray | None:
        return self.graph.constants.get(name)

    def feeds_only(self, op: Op, op_types: Sequence[str]) -> bool:
        """Whether every reader of op's first output is one of `op_types` (onnxruntime's fusions)."""
        readers = self.graph.consumers.get(op.outputs[0], [])
        return bool(readers) and all(self.graph.ops[i].op_type in op_types for i in readers) and \
            op.outputs[0] not in self.graph.outputs


class Step:
    """A linearized operation at the vector (module docstring). Defaults: no rounding, no remainder."""

    outputs: list[Array]

    def vjp(self, grads: list[Array | None], need: list[bool]) -> list[Array | None]:
        raise NotImplementedError

    def jvp(self, tangents: list[Array | None]) -> list[Array | None]:
        raise NotImplementedError

    def rounding(self, arithmetic: Arithmetic, spread: "Spread") -> Rounding:
        return Rounding([None] * len(self.outputs))

    def remainder(self, spread: "Spread", arithmetic: Arithmetic | None = None) -> list[Array | None]:
        return [None] * len(self.outputs)

    def decisions(self, spread: "Spread") -> tuple[int, int]:
        """(decisions whose margin the spread reaches, decisions): relu, max, clip, kinks."""
        return 0, 0


@dataclass
class Spread:
    """Estimated bounds of each input's and output's error (0 for exact values)."""

    ins: list[Array | None]
    outs: list[Array | None]

    def i(self, k: int) -> Array | float:
        value = self.ins[k] if k < len(self.ins) else None
        return 0.0 if value is None else value

    def o(self, k: int = 0) -> Array | float:
        value = self.outs[k] if k < len(self.outs) else None
        return 0.0 if value is None else value


@dataclass(frozen=True)
class Rule:
    op_type: str
    enclose: Callable[[Op, list[Value], Context], list[Value]]
    linearize: Callable[[Op, list[Array | None], Context], Step]
    # operators whose result is an element (or a copy) of a stored input: exact in a storage format
    exact_in_storage: bool = False
    # whether a storage format stores the operator's constant inputs as they are (BatchNormalization folds them
    # into a scale and a bias first: its rule states their storage itself)
    stores_constants: bool = True


RULES: dict[str, Rule] = {}

FAMILIES = (
    "pipeline.numerics.rules.movement",
    "pipeline.numerics.rules.linear",
    "pipeline.numerics.rules.elementwise",
    "pipeline.numerics.rules.activation",
    "pipeline.numerics.rules.pooling",
    "pipeline.numerics.rules.normalization",
    "pipeline.numerics.rules.upsampling",
)
_loaded = False


def register(rule: Rule) -> Rule:
    if rule.op_type in RULES:
        raise ValueError(f"bound rule for {rule.op_type} registered twice")
    RULES[rule.op_type] = rule
    return rule


def rules() -> dict[str, Rule]:
    global _loaded
    if not _loaded:
        _loaded = True
        for module in FAMILIES:
            importlib.import_module(module)
    return RULES


def rule_of(op: Op) -> Rule:
    found = rules().get(op.op_type)
    if found is None:
        raise NoRule(f"no error-bound rule for {op.op_type} (node '{op.origin}')")
    return found


# --- helpers shared by the families --------------------------------------------------------------------


def unbroadcast(grad: Array, shape: tuple[int, ...]) -> Array:
    """Sum a cotangent [B, *out] over the axes an input of `shape` was broadcast along: [B, *shape]."""
    extra = grad.ndim - 1 - len(shape)
    if extra > 0:
        grad = grad.sum(axis=tuple(range(1, 1 + extra)))
    axes = tuple(1 + i for i, d in enumerate(shape) if d == 1 and grad.shape[1 + i] != 1)
    if axes:
        grad = grad.sum(axis=axes, keepdims=True)
    return grad.reshape((grad.shape[0],) + tuple(shape))


def lift(t: Array | None, ndim: int) -> Array | None:
    """A tangent [R, *s] of an operand broadcast to an output of rank `ndim`: its shape aligned on the right
    ([R, 1, .., *s]), so that NumPy's broadcasting does not align the sample axis with the output's."""
    if t is None:
        return None
    missing = ndim - (t.ndim - 1)
    return t.reshape((t.shape[0],) + (1,) * missing + t.shape[1:]) if missing > 0 else t


def one_rounding(arithmetic: Arithmetic, magnitude: Array) -> Local:
    """One rounding of a result of magnitude at most `magnitude`."""
    d = arithmetic.u * magnitude + arithmetic.tiny
    return Local(d, d)


def plus(*locals_: Local | None) -> Local | None:
    """Independent local errors of one element added: d adds, q adds in quadrature."""
    found = [x for x in locals_ if x is not None]
    if not found:
        return None
    d = sum(x.d for x in found)
    q = np.sqrt(sum(np.square(x.q) for x in found))
    return Local(d, q)


def kink(spread: Array | float, distance: Array, jump: float) -> Array:
    """The remainder of a piecewise-linear function at a kink `distance` away whose slope changes by `jump`:
    the linearization holds unless the error reaches the kink, and then errs by at most jump * the excess."""
    return abs(jump) * np.maximum(np.asarray(spread) - np.abs(distance) * (1.0 - 2.0 ** -40), 0.0)


def as_float(value: Array | None) -> Array | None:
    return None if value is None else np.asarray(value, np.float64)

"""Element-wise arithmetic: Add, Sub, Mul, Div, Pow, Sqrt, Sum, Max, Min, Clip, and Where.

ONNX broadcasts numpy-style (shapes aligned on the RIGHT); NNEF aligns on the LEFT
(trailing unit axes implied). Every operand of lower rank than the result therefore gets
explicit leading unit axes (`ctx.aligned`) before the NNEF operation, after which both
rules agree. A one-value finite constant operand is written as a scalar literal when the
other operand already has the result's shape.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pipeline.export.context import ExportContext
from pipeline.export.onnx_model import Node
from pipeline.export.converters import converter

FLT_MAX = float(np.finfo(np.float32).max)


def _binary(ctx: ExportContext, op: str) -> None:
    out_shape = ctx.out_shape()
    shapes = [ctx.in_shape(0), ctx.in_shape(1)]
    x = ctx.operand(0, out_shape, [shapes[1]])
    y = ctx.operand(1, out_shape, [shapes[0]])
    ctx.emit(ctx.output(), op, x, y)


@converter("Add", versions=(7, 13, 14))
def add(ctx: ExportContext, node: Node) -> None:
    """Add(A, B) -> add(A', B') (A', B': leading unit axes up to the result's rank)."""
    _binary(ctx, "add")


@converter("Sub", versions=(7, 13, 14))
def sub(ctx: ExportContext, node: Node) -> None:
    """Sub(A, B) -> sub(A', B')."""
    _binary(ctx, "sub")


@converter("Mul", versions=(7, 13, 14))
def mul(ctx: ExportContext, node: Node) -> None:
    """Mul(A, B) -> mul(A', B')."""
    _binary(ctx, "mul")


@converter("Div", versions=(7, 13, 14))
def div(ctx: ExportContext, node: Node) -> None:
    """Div(A, B) -> div(A', B')."""
    _binary(ctx, "div")


@converter("Sqrt", versions=(6, 13))
def sqrt(ctx: ExportContext, node: Node) -> None:
    """Sqrt(X) -> sqrt(X) (IEEE square root, correctly rounded: the same bits as any IEEE sqrtf)."""
    ctx.emit(ctx.output(), "sqrt", ctx.input(0))


@converter("Pow", versions=(7, 12, 13, 15))
def pow_(ctx: ExportContext, node: Node) -> None:
    """Pow(X, Y) -> with Y the constant 2: mul(X, X) (x * x, one rounding: the correctly rounded
    square, as torch writes layer norms below opset 17); 3: mul(mul(X, X), X) (what onnxruntime
    computes, measured bit for bit on 10^5 values; not the correctly rounded cube); 1: copy(X); else
    pow(X', Y') (the pow program of docs/semantics/transcendental.md, operands broadcast as Add)."""
    literal = ctx.literal(1)
    if literal in (2.0, 3.0):
        x = ctx.input(0)
        square = ctx.output() if literal == 2.0 else ctx.temp_for("square")
        ctx.emit(square, "mul", x, x)
        if literal == 3.0:
            ctx.emit(ctx.output(), "mul", square, x)
        return
    if literal == 1.0:
        ctx.emit(ctx.output(), "copy", ctx.input(0))
        return
    _binary(ctx, "pow")


def _variadic(ctx: ExportContext, node: Node, op: str) -> None:
    """Fold the inputs left to right: op(op(x0, x1), x2) ...; one input is a copy."""
    count = len(node.inputs)
    if count == 0 or any(not name for name in node.inputs):
        raise ctx.fail("EXPORT-E004", "every input must be present (at least one)")
    out_shape = ctx.out_shape()
    rank = len(out_shape)
    if count == 1:
        ctx.emit(ctx.output(), "copy", ctx.aligned(0, rank))
        return
    acc: Any = ctx.aligned(0, rank)
    for index in range(1, count):
        target = ctx.output() if index == count - 1 else ctx.temp_for(f"{op}{index}")
        ctx.emit(target, op, acc, ctx.aligned(index, rank))
        acc = target


@converter("Sum", versions=(6, 8, 13))
def sum_(ctx: ExportContext, node: Node) -> None:
    """Sum(x0, x1, ...) -> add(add(x0', x1'), x2') ... left to right; Sum(x0) -> copy(x0)."""
    _variadic(ctx, node, "add")


@converter("Max", versions=(6, 8, 12, 13))
def max_(ctx: ExportContext, node: Node) -> None:
    """Max(x0, x1, ...) -> max(max(x0', x1'), x2') ... left to right; Max(x0) -> copy(x0)."""
    _variadic(ctx, node, "max")


@converter("Min", versions=(6, 8, 12, 13))
def min_(ctx: ExportContext, node: Node) -> None:
    """Min(x0, x1, ...) -> min(min(x0', x1'), x2') ... left to right; Min(x0) -> copy(x0)."""
    _variadic(ctx, node, "min")


def _bound(ctx: ExportContext, node: Node, index: int, attr: str, default: float) -> Any:
    """A Clip bound: the attribute (< 11; absent = +-FLT_MAX as ONNX defines), or the
    optional input (>= 11; absent = None, no bound): literal if constant, else the tensor."""
    if (node.since_version or 0) < 11:
        return float(np.float32(node.attr(attr, default)))
    if not ctx.has_input(index):
        return None
    literal = ctx.literal(index)
    if literal is not None:
        return literal
    if ctx.in_shape(index) not in ([], [1]):
        raise ctx.fail("EXPORT-E004", f"Clip bound '{ctx.input_name(index)}' must be a scalar, got {ctx.in_shape(index)}")
    return ctx.input(index)


@converter("Clip", versions=(6, 11, 12, 13), attributes=("min", "max"))
def clip(ctx: ExportContext, node: Node) -> None:
    """Clip(X, min, max) = min(max(X, min), max) ->
    clamp(X, min, max) when both bounds are constants with min <= max (the same function);
    otherwise max(X, min) then min(., max), ONNX's order (min > max gives max everywhere,
    where NNEF clamp would give min); a missing bound (opset >= 11) is no operation at all,
    both missing is copy(X). Clip-6 without attributes clamps to +-FLT_MAX, as ONNX says."""
    low = _bound(ctx, node, 1, "min", -FLT_MAX)
    high = _bound(ctx, node, 2, "max", FLT_MAX)
    x = ctx.input(0)
    if low is None and high is None:
        ctx.emit(ctx.output(), "copy", x)
        return
    if isinstance(low, float) and isinstance(high, float) and low <= high:
        ctx.emit(ctx.output(), "clamp", x, low, high)
        return
    if low is not None:
        target = ctx.output() if high is None else ctx.temp_for("low")
        ctx.emit(target, "max", x, low)
        x = target
    if high is not None:
        ctx.emit(ctx.output(), "min", x, high)


@converter("Where", versions=(9, 16))
def where(ctx: ExportContext, node: Node) -> None:
    """Where(C, X, Y) with C a constant -> select(C', X', Y'): C' a `variable<logical>` with leading unit
    axes up to the result's rank, X', Y' aligned as Add's operands (a one-value finite constant a literal
    when the other value has the result's shape). What torch writes for masked_fill on a registered mask
    buffer (nanoGPT's causal attention: Where(mask == 0, -inf, scores)); with every input constant the
    node is folded instead. A condition computed from data is refused (EXPORT-E008): the generated code
    holds floating-point tensors only, a constant condition is generation-time data."""
    if not ctx.is_constant(0):
        raise ctx.fail("EXPORT-E008", f"the condition '{ctx.input_name(0)}' must be a constant (initializer, "
                       "Constant output or a folded computation of constants): a condition computed from data "
                       "has no NNEF tensor type the code generators hold")
    out_shape = ctx.out_shape()
    rank = len(out_shape)
    shape = ctx.in_shape(0)
    condition = ctx.variable(ctx.input_name(0), [1] * (rank - len(shape)) + shape, logical=True)
    true_value = ctx.operand(1, out_shape, [ctx.in_shape(2)])
    false_value = ctx.operand(2, out_shape, [ctx.in_shape(1)])
    ctx.emit(ctx.output(), "select", condition, true_value, false_value)

"""Gemm and MatMul -> NNEF linear / matmul (+ mul, add where linear cannot say it).

NNEF `linear(input, filter, bias)` is input . filter^T + bias with bias [1, N]: exactly a
Gemm with transA = 0, transB = 1, alpha = 1 and a bias of N values (beta = 1). Every
other Gemm is written out: matmul with explicit transposeA/transposeB (never dropped,
unlike the Khronos converter), then `mul` by alpha, `mul` of C by beta and `add`, each
only when it changes something, with C brought to rank 2 on the left (ONNX broadcasting).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pipeline.export.context import ExportContext
from pipeline.export.onnx_model import Node
from pipeline.export.converters import converter


def _flag(ctx: ExportContext, node: Node, name: str) -> bool:
    value = int(node.attr(name, 0))
    if value not in (0, 1):
        raise ctx.fail("EXPORT-E004", f"{name} = {value} must be 0 or 1")
    return bool(value)


def _f32(value: Any) -> float:
    return float(np.float32(value))


@converter("Gemm", versions=(7, 9, 11, 13), attributes=("alpha", "beta", "transA", "transB"))
def gemm(ctx: ExportContext, node: Node) -> None:
    """Gemm(A, B, C) = alpha * A' B' + beta * C ->
    linear(A, B, C as [1, N] or 0.0) when transA = 0, transB = 1, alpha = 1 and C is absent
    or has N values with beta = 1; otherwise t = matmul(A, B, transposeA = transA,
    transposeB = transB), then mul(t, alpha) if alpha != 1, then add(., C') with
    C' = C (rank 2, leading unit axes) times beta (a folded literal for a one-value
    constant C, else mul(C, beta) if beta != 1)."""
    trans_a, trans_b = _flag(ctx, node, "transA"), _flag(ctx, node, "transB")
    alpha, beta = _f32(node.attr("alpha", 1.0)), _f32(node.attr("beta", 1.0))
    out_shape = ctx.out_shape()
    n = out_shape[1]
    has_c = ctx.has_input(2)
    c_shape = ctx.in_shape(2) if ctx.has_input(2) else None
    row_bias = c_shape in ([n], [1, n]) and beta == 1.0
    if not trans_a and trans_b and alpha == 1.0 and (not has_c or row_bias):
        a, b = ctx.input(0), ctx.input(1)
        bias: Any = ctx.aligned(2, 2) if has_c else 0.0
        ctx.emit(ctx.output(), "linear", a, b, bias)
        return
    a, b = ctx.input(0), ctx.input(1)
    product = ctx.temp_for("matmul") if (alpha != 1.0 or has_c) else ctx.output()
    ctx.emit(product, "matmul", a, b, transposeA=trans_a, transposeB=trans_b)
    if alpha != 1.0:
        scaled = ctx.temp_for("alpha") if has_c else ctx.output()
        ctx.emit(scaled, "mul", product, alpha)
        product = scaled
    if not has_c:
        return
    literal = ctx.literal(2)
    if literal is not None:
        ctx.emit(ctx.output(), "add", product, _f32(np.float32(beta) * np.float32(literal)))
        return
    c = ctx.aligned(2, 2)
    if beta != 1.0:
        scaled_c = ctx.temp_for("beta")
        ctx.emit(scaled_c, "mul", c, beta)
        c = scaled_c
    ctx.emit(ctx.output(), "add", product, c)


@converter("MatMul", versions=(1, 9, 13))
def matmul(ctx: ExportContext, node: Node) -> None:
    """MatMul(A, B) (numpy.matmul semantics) -> matmul(A', B', transposeA = false,
    transposeB = false) where A', B' get the same rank by leading unit axes; a 1-D A
    becomes [1, K] and a 1-D B [K, 1] (unsqueeze, or the constant stored so), and the
    added axis is removed from the result by squeeze."""
    a_shape, b_shape = ctx.in_shape(0), ctx.in_shape(1)
    a_rank = max(len(a_shape), 2)
    b_rank = max(len(b_shape), 2)
    rank = max(a_rank, b_rank)
    a = _operand(ctx, 0, a_shape, rank, vector_axis=0)
    b = _operand(ctx, 1, b_shape, rank, vector_axis=1)
    squeeze = ([rank - 2] if len(a_shape) == 1 else []) + ([rank - 1] if len(b_shape) == 1 else [])
    target = ctx.temp_for("matmul") if squeeze else ctx.output()
    ctx.emit(target, "matmul", a, b, transposeA=False, transposeB=False)
    if squeeze:
        ctx.emit(ctx.output(), "squeeze", target, axes=squeeze)


def _operand(ctx: ExportContext, index: int, shape: list[int], rank: int, vector_axis: int) -> str:
    """Input `index` with `rank` axes: a vector [K] becomes [1, K] (A) or [K, 1] (B), then
    leading unit axes are added."""
    if len(shape) == 1:
        full = [1] * (rank - 2) + ([1, shape[0]] if vector_axis == 0 else [shape[0], 1])
        axes = list(range(rank - 1)) if vector_axis == 0 else list(range(rank - 2)) + [rank - 1]
    else:
        full = [1] * (rank - len(shape)) + shape
        axes = list(range(rank - len(shape)))
    if not axes:
        return ctx.input(index)
    if ctx.is_constant(index):
        return ctx.variable(ctx.input_name(index), full)
    source = ctx.input(index)
    target = ctx.temp(f"{source}_{rank}d")
    ctx.emit(target, "unsqueeze", source, axes=axes)
    return target

"""Activations: Relu, LeakyRelu, PRelu, Sigmoid, Tanh -> the NNEF operations of the same name;
HardSigmoid and HardSwish -> compositions of mul, add and clamp (no NNEF operation of their own)."""

from __future__ import annotations

import numpy as np

from pipeline.export.context import ExportContext
from pipeline.export.onnx_model import Node
from pipeline.export.converters import converter


@converter("Relu", versions=(6, 13, 14))
def relu(ctx: ExportContext, node: Node) -> None:
    """Relu(X) -> relu(X)."""
    ctx.emit(ctx.output(), "relu", ctx.input(0))


@converter("LeakyRelu", versions=(6, 16), attributes=("alpha",))
def leaky_relu(ctx: ExportContext, node: Node) -> None:
    """LeakyRelu(X) -> leaky_relu(X, alpha = alpha) (ONNX default alpha 0.01 written out)."""
    alpha = float(np.float32(node.attr("alpha", 0.01)))
    ctx.emit(ctx.output(), "leaky_relu", ctx.input(0), alpha=alpha)


@converter("PRelu", versions=(7, 9, 16))
def prelu(ctx: ExportContext, node: Node) -> None:
    """PRelu(X, slope) -> prelu(X, slope'), slope' = slope with leading unit axes up to
    X's rank (ONNX broadcasts the slope right-aligned, NNEF left-aligned; a constant slope
    is stored with the longer shape)."""
    rank = len(ctx.in_shape(0))
    ctx.emit(ctx.output(), "prelu", ctx.input(0), ctx.aligned(1, rank))


@converter("Sigmoid", versions=(6, 13))
def sigmoid(ctx: ExportContext, node: Node) -> None:
    """Sigmoid(X) -> sigmoid(X)."""
    ctx.emit(ctx.output(), "sigmoid", ctx.input(0))


@converter("Tanh", versions=(6, 13))
def tanh(ctx: ExportContext, node: Node) -> None:
    """Tanh(X) -> tanh(X)."""
    ctx.emit(ctx.output(), "tanh", ctx.input(0))


def _hard_sigmoid(ctx: ExportContext, alpha: float, beta: float, target: str) -> None:
    """clamp(add(mul(x, alpha), beta), 0.0, 1.0) into `target`: ONNX's max(0, min(1, alpha * x + beta))
    with the same float32 roundings (product, then sum, then the clamp, which is exact)."""
    scaled = ctx.temp_for("alpha_x")
    ctx.emit(scaled, "mul", ctx.input(0), alpha)
    shifted = ctx.temp_for("plus_beta")
    ctx.emit(shifted, "add", scaled, beta)
    ctx.emit(target, "clamp", shifted, 0.0, 1.0)


@converter("HardSigmoid", versions=(6, 22), attributes=("alpha", "beta"))
def hard_sigmoid(ctx: ExportContext, node: Node) -> None:
    """HardSigmoid(X) = max(0, min(1, alpha * X + beta)) -> t = mul(X, alpha); u = add(t, beta);
    y = clamp(u, 0.0, 1.0) (ONNX defaults alpha 0.2, beta 0.5 written out as float32 values)."""
    alpha = float(np.float32(node.attr("alpha", 0.2)))
    beta = float(np.float32(node.attr("beta", 0.5)))
    _hard_sigmoid(ctx, alpha, beta, ctx.output())


@converter("HardSwish", versions=(14, 22))
def hard_swish(ctx: ExportContext, node: Node) -> None:
    """HardSwish(X) = X * HardSigmoid(X; alpha = 1/6, beta = 0.5) (the ONNX-14 definition, alpha
    rounded to float32) -> t = mul(X, alpha); u = add(t, 0.5); h = clamp(u, 0.0, 1.0); y = mul(X, h)."""
    gate = ctx.temp_for("hard_sigmoid")
    _hard_sigmoid(ctx, float(np.float32(1.0 / 6.0)), 0.5, gate)
    ctx.emit(ctx.output(), "mul", ctx.input(0), gate)

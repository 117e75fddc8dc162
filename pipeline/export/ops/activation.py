"""Activations: Relu, LeakyRelu, PRelu, Sigmoid, Tanh -> the NNEF operations of the same name."""

from __future__ import annotations

import numpy as np

from pipeline.export.context import ExportContext
from pipeline.export.onnx_model import Node
from pipeline.export.registry import converter


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

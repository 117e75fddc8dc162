"""Activations: Relu, LeakyRelu, PRelu, Sigmoid, Tanh -> the NNEF operations of the same name;
HardSigmoid and HardSwish -> compositions of mul, add and clamp (no NNEF operation of their own);
Erf -> the operation extension `erf`; Gelu -> its ONNX function body (erf or tanh form)."""

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


@converter("Erf", versions=(9, 13))
def erf(ctx: ExportContext, node: Node) -> None:
    """Erf(X) -> erf(X), the operation extension (the erf program of docs/semantics/transcendental.md,
    declared in the exported document; torch writes GELU's exact form with it below opset 20)."""
    ctx.emit(ctx.output(), "erf", ctx.input(0))


SQRT_TWO = float(np.sqrt(np.float32(2.0)))  # Sqrt(2) in float32, as Gelu's function body computes it
SQRT_TWO_OVER_PI = float(np.sqrt(np.float32(0.63661975)))  # Sqrt(0.63661975) in float32
GELU_C0 = float(np.float32(0.044715))


@converter("Gelu", versions=(20,), attributes=("approximate",))
def gelu(ctx: ExportContext, node: Node) -> None:
    """Gelu(X) -> ONNX's function body operation by operation:
    approximate = 'none': h = mul(X, 0.5); d = div(X, sqrt(2)); e = erf(d); p = add(e, 1.0); Y = mul(h, p);
    approximate = 'tanh': c = mul(mul(X, X), X) (Pow(X, 3) as onnxruntime computes it); t = mul(c, 0.044715);
    s = add(X, t); a = mul(s, sqrt(2 / pi)); u = tanh(a); p = add(u, 1.0); h = mul(X, 0.5); Y = mul(h, p).
    The constants are the function body's float32 values (sqrt(2) and sqrt(0.63661975) rounded to
    float32); `1 + e` and `0.5 * x` are written with the tensor first (IEEE + and * commute)."""
    mode = node.attr("approximate", "none")
    if mode not in ("none", "tanh"):
        raise ctx.fail("EXPORT-E004", f"approximate = '{mode}' (ONNX defines 'none' and 'tanh')")
    x = ctx.input(0)
    half = ctx.temp_for("half_x")
    names = {step: ctx.temp_for(step) for step in ("inner", "phi", "one_plus")}
    if mode == "none":
        ctx.emit(names["inner"], "div", x, SQRT_TWO)
        ctx.emit(names["phi"], "erf", names["inner"])
    else:
        square, cube, scaled, total = (ctx.temp_for(step) for step in ("square", "cube", "c0_cube", "sum"))
        ctx.emit(square, "mul", x, x)
        ctx.emit(cube, "mul", square, x)
        ctx.emit(scaled, "mul", cube, GELU_C0)
        ctx.emit(total, "add", x, scaled)
        ctx.emit(names["inner"], "mul", total, SQRT_TWO_OVER_PI)
        ctx.emit(names["phi"], "tanh", names["inner"])
    ctx.emit(names["one_plus"], "add", names["phi"], 1.0)
    ctx.emit(half, "mul", x, 0.5)
    ctx.emit(ctx.output(), "mul", half, names["one_plus"])

"""Softmax, LogSoftmax, BatchNormalization, LayerNormalization, LRN.

Softmax/LogSoftmax before opset 13 flatten the input to 2-D at `axis` (default 1) and
normalise over everything from `axis` on: NNEF `axes = [axis, ..., rank - 1]` is the same
function. From opset 13 they normalise over the single `axis` (default -1).
"""

from __future__ import annotations

import numpy as np

from pipeline.export.context import ExportContext
from pipeline.export.onnx_model import Node
from pipeline.export.converters import converter


def _softmax_axes(ctx: ExportContext, node: Node) -> list[int]:
    rank = len(ctx.in_shape(0))
    legacy = (node.since_version or 0) < 13
    axis = int(node.attr("axis", 1 if legacy else -1))
    if not -rank <= axis < rank:
        raise ctx.fail("EXPORT-E004", f"axis {axis} out of range for rank {rank}")
    axis %= rank
    return list(range(axis, rank)) if legacy else [axis]


@converter("Softmax", versions=(1, 11, 13), attributes=("axis",))
def softmax(ctx: ExportContext, node: Node) -> None:
    """Softmax(X) -> softmax(X, axes): opset < 13 axes = [axis .. rank-1] (default axis 1,
    the "flatten to 2-D" semantics), opset >= 13 axes = [axis] (default -1)."""
    ctx.emit(ctx.output(), "softmax", ctx.input(0), axes=_softmax_axes(ctx, node))


@converter("LogSoftmax", versions=(1, 11, 13), attributes=("axis",))
def log_softmax(ctx: ExportContext, node: Node) -> None:
    """LogSoftmax(X) -> m = max_reduce(X, axes); d = sub(X, m); e = exp(d);
    s = sum_reduce(e, axes, normalize = false); l = log(s); Y = sub(d, l)
    (x - max - log(sum(exp(x - max))), ONNX's reference formula; axes as Softmax)."""
    axes = _softmax_axes(ctx, node)
    x = ctx.input(0)
    names = {step: ctx.temp_for(step) for step in ("max", "shifted", "exp", "sum", "log")}
    ctx.emit(names["max"], "max_reduce", x, axes=axes)
    ctx.emit(names["shifted"], "sub", x, names["max"])
    ctx.emit(names["exp"], "exp", names["shifted"])
    ctx.emit(names["sum"], "sum_reduce", names["exp"], axes=axes, normalize=False)
    ctx.emit(names["log"], "log", names["sum"])
    ctx.emit(ctx.output(), "sub", names["shifted"], names["log"])


@converter("BatchNormalization", versions=(7, 9, 14, 15), attributes=("epsilon", "momentum", "spatial", "training_mode"))
def batch_normalization(ctx: ExportContext, node: Node) -> None:
    """BatchNormalization(X, scale, B, mean, var), inference ->
    batch_normalization(X, mean', var', B', scale', epsilon = epsilon), each parameter
    with one leading unit axis ([C] -> [1, C], NNEF's channel layout; spatial = 0 at
    opset 7: [C, D...] -> [1, C, D...]). training_mode = 1 and the running-statistics
    outputs are rejected (training); momentum only concerns training."""
    if int(node.attr("training_mode", 0)) != 0:
        raise ctx.fail("EXPORT-E004", "training_mode = 1 is not supported (inference only)")
    for index in range(1, len(node.outputs)):
        if node.has_output(index):
            if ctx.is_used(node.outputs[index]):
                raise ctx.fail("EXPORT-E004", f"output {index} ('{node.outputs[index]}', training statistics) is not supported")
            ctx.drop(index)
    epsilon = float(np.float32(node.attr("epsilon", 1e-5)))
    x_shape = ctx.in_shape(0)
    params = {}
    for index, name in ((1, "scale"), (2, "offset"), (3, "mean"), (4, "variance")):
        shape = ctx.in_shape(index)
        if len(shape) + 1 > len(x_shape) or shape[0] != x_shape[1]:
            raise ctx.fail("EXPORT-E004", f"{name} shape {shape} does not fit input {x_shape}")
        params[name] = ctx.aligned(index, len(shape) + 1)
    ctx.emit(ctx.output(), "batch_normalization", ctx.input(0), params["mean"], params["variance"],
             params["offset"], params["scale"], epsilon=epsilon)


@converter("LRN", versions=(1, 13), attributes=("alpha", "beta", "bias", "size"))
def lrn(ctx: ExportContext, node: Node) -> None:
    """LRN(X) = X / (bias + alpha / size * square_sum)^beta over `size` channels ->
    local_response_normalization(X, size = [1, size, 1, ...], alpha = alpha, beta, bias).
    NNEF's alpha multiplies the *mean* of the squares (box with normalize = true divides
    by the window volume, = size), so ONNX's alpha / size is NNEF's alpha unchanged; the
    window [c - floor((size-1)/2), c + ceil((size-1)/2)] is NNEF's automatic padding."""
    size = int(node.attr("size", 0))
    if size <= 0:
        raise ctx.fail("EXPORT-E004", f"size = {size} must be positive")
    rank = len(ctx.in_shape(0))
    f32 = lambda v: float(np.float32(v))  # noqa: E731 - attribute values as float32
    ctx.emit(ctx.output(), "local_response_normalization", ctx.input(0), size=[1, size] + [1] * (rank - 2),
             alpha=f32(node.attr("alpha", 1e-4)), beta=f32(node.attr("beta", 0.75)), bias=f32(node.attr("bias", 1.0)))


@converter("LayerNormalization", versions=(17,), attributes=("axis", "epsilon", "stash_type"))
def layer_normalization(ctx: ExportContext, node: Node) -> None:
    """LayerNormalization(X, Scale, B) -> ONNX's function body operation by operation over the axes
    A = [axis .. rank - 1] (its Flatten to 2-D and ReduceMean over axis 1 are a reduction over A):
    m = mean_reduce(X, A); q = mul(X, X); mq = mean_reduce(q, A); mm = mul(m, m); v = sub(mq, mm);
    ve = add(v, epsilon); s = sqrt(ve); d = sub(X, m); n = div(d, s); t = mul(n, Scale');
    Y = add(t, B') (no add without B; Scale', B' with leading unit axes up to X's rank). The variance is
    E[x^2] - E[x]^2 as the function body (and onnxruntime) compute it. The optional outputs: Mean is m
    (NNEF keeps the reduced axes as 1, ONNX's shape), InvStdDev = div(1.0, s) (the body's Reciprocal).
    stash_type must be 1 (float32)."""
    if int(node.attr("stash_type", 1)) != 1:
        raise ctx.fail("EXPORT-E004", f"stash_type = {node.attr('stash_type')}: only 1 (float32) is supported")
    rank = len(ctx.in_shape(0))
    axis = int(node.attr("axis", -1))
    if not -rank <= axis < rank:
        raise ctx.fail("EXPORT-E004", f"axis {axis} out of range for rank {rank}")
    axes = list(range(axis % rank, rank))
    epsilon = float(np.float32(node.attr("epsilon", 1e-5)))
    x = ctx.input(0)
    step = {name: ctx.temp_for(name) for name in ("square", "mean_square", "square_mean", "variance",
                                                   "variance_eps", "std", "deviation", "normalized")}
    for index in (1, 2):  # the optional outputs are written only where something reads them
        if node.has_output(index) and not ctx.wanted(index):
            ctx.drop(index)
    step["mean"] = ctx.output(1) if ctx.wanted(1) else ctx.temp_for("mean")
    ctx.emit(step["mean"], "mean_reduce", x, axes=axes)
    ctx.emit(step["square"], "mul", x, x)
    ctx.emit(step["mean_square"], "mean_reduce", step["square"], axes=axes)
    ctx.emit(step["square_mean"], "mul", step["mean"], step["mean"])
    ctx.emit(step["variance"], "sub", step["mean_square"], step["square_mean"])
    ctx.emit(step["variance_eps"], "add", step["variance"], epsilon)
    ctx.emit(step["std"], "sqrt", step["variance_eps"])
    if ctx.wanted(2):
        ctx.emit(ctx.output(2), "div", 1.0, step["std"])
    ctx.emit(step["deviation"], "sub", x, step["mean"])
    ctx.emit(step["normalized"], "div", step["deviation"], step["std"])
    has_bias = ctx.has_input(2)
    scaled = ctx.temp_for("scaled") if has_bias else ctx.output()
    ctx.emit(scaled, "mul", step["normalized"], ctx.aligned(1, rank))
    if has_bias:
        ctx.emit(ctx.output(), "add", scaled, ctx.aligned(2, rank))

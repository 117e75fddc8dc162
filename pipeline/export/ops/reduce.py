"""ReduceMean -> NNEF mean_reduce (+ squeeze when keepdims = 0)."""

from __future__ import annotations

from pipeline.export.context import ExportContext
from pipeline.export.onnx_model import Node
from pipeline.export.converters import converter


@converter("ReduceMean", versions=(1, 11, 13, 18), attributes=("axes", "keepdims", "noop_with_empty_axes"))
def reduce_mean(ctx: ExportContext, node: Node) -> None:
    """ReduceMean(X) -> mean_reduce(X, axes) (NNEF keeps reduced axes as 1), then
    squeeze(axes) if keepdims = 0. axes: attribute before opset 18, input from 18; absent or
    empty means all axes, except with noop_with_empty_axes = 1 (then copy(X))."""
    rank = len(ctx.in_shape(0))
    if (node.since_version or 0) >= 18:
        axes = ctx.ints(1, "axes") if ctx.has_input(1) else []
    else:
        axes = [int(a) for a in node.attr("axes", [])]
    if not axes and int(node.attr("noop_with_empty_axes", 0)):
        ctx.emit(ctx.output(), "copy", ctx.input(0))
        return
    if any(not -rank <= a < rank for a in axes):
        raise ctx.fail("EXPORT-E004", f"axes {axes} out of range for rank {rank}")
    axes = sorted({a % rank for a in axes}) if axes else list(range(rank))
    keep = int(node.attr("keepdims", 1))
    target = ctx.output() if keep else ctx.temp_for("kept")
    ctx.emit(target, "mean_reduce", ctx.input(0), axes=axes)
    if not keep:
        ctx.emit(ctx.output(), "squeeze", target, axes=axes)

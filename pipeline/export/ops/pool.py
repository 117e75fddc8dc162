"""MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool -> NNEF pooling and reductions.

NNEF windows cover every axis, so size/stride/dilation get [1, 1] for batch and channel
and padding (0, 0) there. Borders carry ONNX's meaning of padded positions:

- MaxPool pads with -inf, i.e. padded taps never win: border 'ignore' (never 'constant',
  which would make them zeros and change every window whose inputs are all negative);
- AveragePool count_include_pad = 0 divides by the taps inside the input: 'ignore';
  count_include_pad = 1 divides by the whole window: 'constant' (zeros counted);
- ceil_mode rows (end padding added only to reach ONNX's output extent) are never counted
  by ONNX, even with count_include_pad = 1: then the explicit pads are materialised by an
  NNEF `pad` (zeros, counted) and the pool uses 'ignore' with the ceil-mode rows only.
"""

from __future__ import annotations

from pipeline.export.context import ExportContext
from pipeline.export.onnx_model import Node
from pipeline.export.ops.window import window_attrs
from pipeline.export.converters import converter

POOL_ATTRIBUTES = ("auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads", "strides")


def _kernel(ctx: ExportContext, node: Node, rank: int) -> list[int]:
    kernel = node.attr("kernel_shape")
    if kernel is None or len(kernel) != rank or any(int(k) <= 0 for k in kernel):
        raise ctx.fail("EXPORT-E004", f"kernel_shape {kernel} must hold {rank} positive values")
    return [int(k) for k in kernel]


def _ceil_mode(ctx: ExportContext, node: Node) -> None:
    if int(node.attr("ceil_mode", 0)) not in (0, 1):
        raise ctx.fail("EXPORT-E004", f"ceil_mode = {node.attr('ceil_mode')} must be 0 or 1")


@converter("MaxPool", versions=(1, 8, 10, 11, 12, 22), attributes=POOL_ATTRIBUTES + ("storage_order",))
def max_pool(ctx: ExportContext, node: Node) -> None:
    """MaxPool(X) -> max_pool(X, size = [1, 1] + kernel, border = 'ignore',
    padding = [(0, 0), (0, 0)] + explicit pads (+ ceil-mode end rows), stride = [1, 1] +
    strides, dilation = [1, 1] + dilations). The Indices output is dropped when unused and
    rejected otherwise (NNEF argmax_pool indexes within the window, ONNX within the
    tensor); storage_order only concerns Indices."""
    if node.has_output(1):
        if ctx.is_used(node.outputs[1]):
            raise ctx.fail("EXPORT-E004", "the Indices output of MaxPool is not supported (only the values)")
        ctx.drop(1)
    _ceil_mode(ctx, node)
    x_shape, out_shape = ctx.in_shape(0), ctx.out_shape()
    window = window_attrs(ctx, node, _kernel(ctx, node, len(x_shape) - 2), x_shape[2:], out_shape[2:])
    ctx.emit(ctx.output(), "max_pool", ctx.input(0), size=[1, 1] + window.kernel, border="ignore",
             padding=[(0, 0), (0, 0)] + window.padding.pairs, stride=[1, 1] + window.strides,
             dilation=[1, 1] + window.dilations)


@converter("AveragePool", versions=(7, 10, 11, 19, 22), attributes=POOL_ATTRIBUTES + ("count_include_pad",))
def average_pool(ctx: ExportContext, node: Node) -> None:
    """AveragePool(X) -> avg_pool(X, size = [1, 1] + kernel, border = 'constant' if
    count_include_pad else 'ignore', padding = [(0, 0), (0, 0)] + explicit pads, stride,
    dilation). With count_include_pad = 1 and ceil-mode end rows: pad(X, explicit pads,
    border = 'constant', value = 0.0) then avg_pool(border = 'ignore', padding = the
    ceil-mode rows only), so the zeros of the pads count and the ceil-mode rows do not."""
    _ceil_mode(ctx, node)
    include = int(node.attr("count_include_pad", 0))
    if include not in (0, 1):
        raise ctx.fail("EXPORT-E004", f"count_include_pad = {include} must be 0 or 1")
    x_shape, out_shape = ctx.in_shape(0), ctx.out_shape()
    window = window_attrs(ctx, node, _kernel(ctx, node, len(x_shape) - 2), x_shape[2:], out_shape[2:])
    size, stride, dilation = [1, 1] + window.kernel, [1, 1] + window.strides, [1, 1] + window.dilations
    x = ctx.input(0)
    if include and window.padding.has_extra:
        explicit = [(p, q - extra) for (p, q), extra in zip(window.padding.pairs, window.padding.ceil_extra)]
        padded = ctx.temp_for("padded")
        ctx.emit(padded, "pad", x, padding=[(0, 0), (0, 0)] + explicit, border="constant", value=0.0)
        ctx.emit(ctx.output(), "avg_pool", padded, size=size, border="ignore",
                 padding=[(0, 0), (0, 0)] + [(0, extra) for extra in window.padding.ceil_extra],
                 stride=stride, dilation=dilation)
        return
    ctx.emit(ctx.output(), "avg_pool", x, size=size, border="constant" if include else "ignore",
             padding=[(0, 0), (0, 0)] + window.padding.pairs, stride=stride, dilation=dilation)


@converter("GlobalAveragePool", versions=(1, 22))
def global_average_pool(ctx: ExportContext, node: Node) -> None:
    """GlobalAveragePool(X) -> mean_reduce(X, axes = [2, ..., rank - 1]) (reduced axes kept as 1)."""
    rank = len(ctx.in_shape(0))
    ctx.emit(ctx.output(), "mean_reduce", ctx.input(0), axes=list(range(2, rank)))


@converter("GlobalMaxPool", versions=(1, 22))
def global_max_pool(ctx: ExportContext, node: Node) -> None:
    """GlobalMaxPool(X) -> max_reduce(X, axes = [2, ..., rank - 1]) (reduced axes kept as 1)."""
    rank = len(ctx.in_shape(0))
    ctx.emit(ctx.output(), "max_reduce", ctx.input(0), axes=list(range(2, rank)))

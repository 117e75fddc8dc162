"""Conv and ConvTranspose -> NNEF conv and deconv, every attribute explicit.

Filters keep ONNX's layout, which is NNEF's: conv [M, C/group, k...], deconv
[C, M/group, k...]. A bias [M] is stored as a [1, M] variable (NNEF's bias shape); no
bias is written `bias = 0.0`. Padding is always the explicit pairs ONNX means
(pipeline.export.padding), border 'constant' (zeros: ONNX pads convolutions with 0).
"""

from __future__ import annotations

from typing import Any

from pipeline.export.context import ExportContext
from pipeline.export.onnx_model import Node
from pipeline.export.ops.window import spatial_list, window_attrs
from pipeline.export.padding import AUTO_PAD_MODES, effective
from pipeline.export.converters import converter


def _bias(ctx: ExportContext, index: int, channels: int) -> Any:
    """Bias input `index` as a [1, channels] tensor, or the literal 0.0 when absent."""
    if not ctx.has_input(index):
        return 0.0
    if ctx.in_shape(index) != [channels]:
        raise ctx.fail("EXPORT-E004", f"bias shape {ctx.in_shape(index)} is not [{channels}]")
    return ctx.aligned(index, 2)


def _group(ctx: ExportContext, node: Node) -> int:
    group = int(node.attr("group", 1))
    if group <= 0:
        raise ctx.fail("EXPORT-E004", f"group = {group} must be positive")
    return group


@converter("Conv", versions=(1, 11, 22), attributes=("auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"))
def conv(ctx: ExportContext, node: Node) -> None:
    """Conv(X, W, B) -> conv(X, W, B as [1, M] or 0.0, border = 'constant',
    padding = explicit (begin, end) per spatial axis from pads/auto_pad, stride = strides,
    dilation = dilations, groups = group)."""
    x_shape, w_shape, out_shape = ctx.in_shape(0), ctx.in_shape(1), ctx.out_shape()
    window = window_attrs(ctx, node, w_shape[2:], x_shape[2:], out_shape[2:])
    if window.padding.has_extra:
        raise ctx.fail("EXPORT-E004", f"output shape {out_shape} does not follow from the attributes")
    x, w = ctx.input(0), ctx.input(1)
    bias = _bias(ctx, 2, w_shape[0])
    ctx.emit(ctx.output(), "conv", x, w, bias, border="constant", padding=window.padding.pairs,
             stride=window.strides, dilation=window.dilations, groups=_group(ctx, node))


def _deconv_begin(ctx: ExportContext, node: Node, n: int, k: int, s: int, d: int, out_pad: int,
                  out: int, axis: int) -> int:
    """How many leading rows ONNX crops from the full transposed convolution on one axis.

    With output_shape or SAME_*: total = full - out split as ONNX says (SAME_UPPER: the
    odd unit at the end, otherwise at the start); VALID: 0; else pads[axis].
    """
    full = s * (n - 1) + out_pad + effective(k, d)
    auto_pad = node.attr("auto_pad", "NOTSET")
    if auto_pad not in AUTO_PAD_MODES:
        raise ctx.fail("EXPORT-E004", f"auto_pad '{auto_pad}' is not one of {', '.join(AUTO_PAD_MODES)}")
    if node.attr("output_shape") is not None or auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        total = full - out
        return total // 2 if auto_pad == "SAME_UPPER" else total - total // 2
    if auto_pad == "VALID":
        return 0
    pads = node.attr("pads")
    return int(pads[axis]) if pads is not None else 0


@converter("ConvTranspose", versions=(1, 11, 22),
           attributes=("auto_pad", "dilations", "group", "kernel_shape", "output_padding", "output_shape", "pads", "strides"))
def conv_transpose(ctx: ExportContext, node: Node) -> None:
    """ConvTranspose(X, W, B) -> deconv(X, W, B as [1, M] or 0.0, border = 'constant',
    padding = (begin, end) cropped from the full result, stride, dilation,
    output_shape = the ONNX output shape, groups = group). output_padding and an
    output_shape larger than the full result become extra end rows that receive no
    input term (bias only), exactly as in ONNX; pads come from pads, auto_pad or
    output_shape by ONNX's rules (SAME_UPPER: odd unit at the end)."""
    x_shape, w_shape, out_shape = ctx.in_shape(0), ctx.in_shape(1), ctx.out_shape()
    rank = len(x_shape) - 2
    kernel = w_shape[2:]
    declared = node.attr("kernel_shape")
    if declared is not None and [int(v) for v in declared] != kernel:
        raise ctx.fail("EXPORT-E004", f"kernel_shape {list(declared)} differs from the weights' {kernel}")
    strides = spatial_list(ctx, node, "strides", rank, 1)
    dilations = spatial_list(ctx, node, "dilations", rank, 1)
    output_padding = [int(v) for v in node.attr("output_padding", [0] * rank)]
    padding = []
    for axis in range(rank):
        n, k, s, d, out = x_shape[2 + axis], kernel[axis], strides[axis], dilations[axis], out_shape[2 + axis]
        begin = _deconv_begin(ctx, node, n, k, s, d, output_padding[axis], out, axis)
        if begin < 0:
            raise ctx.fail("EXPORT-E004", f"the output starts before the full transposed convolution (begin padding "
                           f"{begin} on spatial axis {axis}); NNEF padding is non-negative")
        # NNEF requires floor((out + begin + end - e) / s) + 1 == n: the exact end when >= 0;
        # an output longer than the full result (output_padding) gets end 0 and extra rows.
        end_nnef = s * (n - 1) + effective(k, d) - begin - out
        if end_nnef < 0:
            if -end_nnef >= s:
                raise ctx.fail("EXPORT-E004", f"output extent {out} exceeds the full result by {-end_nnef} >= stride {s}")
            end_nnef = 0
        padding.append((begin, end_nnef))
    x, w = ctx.input(0), ctx.input(1)
    group = _group(ctx, node)
    bias = _bias(ctx, 2, w_shape[1] * group)
    ctx.emit(ctx.output(), "deconv", x, w, bias, border="constant", padding=padding, stride=strides,
             dilation=dilations, output_shape=out_shape, groups=group)

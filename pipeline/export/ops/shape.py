"""Data movement: Concat, Split, Slice, Flatten, Reshape, Transpose, Squeeze, Unsqueeze, Pad, Gather.

Parameters that ONNX passes as inputs from some opset on (split sizes, slice bounds,
shapes, axes, pads) must be constants; they are resolved here to the explicit values NNEF
writes: normalised non-negative axes, clamped slice bounds, fully resolved reshape
shapes (no 0, no -1).
"""

from __future__ import annotations

import math

import numpy as np

from pipeline.export.context import ExportContext
from pipeline.export.onnx_model import Node
from pipeline.export.converters import converter


def _axis(ctx: ExportContext, axis: int, rank: int, what: str = "axis") -> int:
    if not -rank <= axis < rank:
        raise ctx.fail("EXPORT-E004", f"{what} {axis} out of range for rank {rank}")
    return axis % rank


@converter("Concat", versions=(4, 11, 13), attributes=("axis",))
def concat(ctx: ExportContext, node: Node) -> None:
    """Concat(x0, x1, ...) -> concat([x0, x1, ...], axis = axis (non-negative))."""
    rank = len(ctx.out_shape())
    axis = _axis(ctx, int(node.attr("axis", 0)), rank)
    values = [ctx.input(i) for i in range(len(node.inputs))]
    ctx.emit(ctx.output(), "concat", values, axis=axis)


@converter("Split", versions=(2, 11, 13, 18), attributes=("axis", "split", "num_outputs"))
def split(ctx: ExportContext, node: Node) -> None:
    """Split(X) -> [y0, y1, ...] = split(X, axis, ratios = the part sizes) (ratios summing
    to the extent are the sizes themselves). Sizes: the `split` attribute (< 13) or input
    (>= 13); else num_outputs (18: ceil-sized parts, the last smaller); else equal parts."""
    shape = ctx.in_shape(0)
    axis = _axis(ctx, int(node.attr("axis", 0)), len(shape))
    extent = shape[axis]
    count = len(node.outputs)
    version = node.since_version or 0
    if version >= 13 and ctx.has_input(1):
        sizes = ctx.ints(1, "split")
    elif version < 13 and node.attr("split") is not None:
        sizes = [int(v) for v in node.attr("split")]
    elif node.attr("num_outputs") is not None:
        parts = int(node.attr("num_outputs"))
        chunk = -(-extent // parts)
        sizes = [chunk] * (parts - 1) + [extent - chunk * (parts - 1)]
    else:
        if extent % count:
            raise ctx.fail("EXPORT-E004", f"extent {extent} cannot be split into {count} equal parts")
        sizes = [extent // count] * count
    if len(sizes) != count or sum(sizes) != extent:
        raise ctx.fail("EXPORT-E004", f"split sizes {sizes} do not cut extent {extent} into {count} outputs")
    if any(s <= 0 for s in sizes):
        raise ctx.fail("EXPORT-E007", f"split sizes {sizes} give an empty output; NNEF extents are positive")
    x = ctx.input(0)
    targets = [ctx.output(i) for i in range(count)]
    ctx.emit(targets, "split", x, axis=axis, ratios=sizes)


def _clamp(value: int, low: int, high: int) -> int:
    return max(low, min(high, value))


@converter("Slice", versions=(1, 10, 11, 13), attributes=("axes", "ends", "starts"))
def slice_(ctx: ExportContext, node: Node) -> None:
    """Slice(X, starts, ends, axes, steps) -> slice(X, axes, begin, end, stride) with
    ONNX's bounds resolved: negative values + extent, then clamped ([0, n] for positive
    steps, [0, n-1] / [-1, n-1] for negative ones; INT_MAX ends included). An end of -1
    ("before the first element", negative steps) is written -(n + 1), which NNEF resolves
    to -1; an empty result is rejected (NNEF extents are positive)."""
    shape = ctx.in_shape(0)
    rank = len(shape)
    if (node.since_version or 0) < 10:
        starts = [int(v) for v in node.attr("starts", [])]
        ends = [int(v) for v in node.attr("ends", [])]
        axes = [int(v) for v in node.attr("axes", list(range(len(starts))))]
        steps = [1] * len(starts)
    else:
        starts, ends = ctx.ints(1, "starts"), ctx.ints(2, "ends")
        axes = ctx.ints(3, "axes") if ctx.has_input(3) else list(range(len(starts)))
        steps = ctx.ints(4, "steps") if ctx.has_input(4) else [1] * len(starts)
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise ctx.fail("EXPORT-E004", f"starts {starts}, ends {ends}, axes {axes}, steps {steps} differ in length")
    axes = [_axis(ctx, a, rank, "slice axis") for a in axes]
    if len(set(axes)) != len(axes) or 0 in steps:
        raise ctx.fail("EXPORT-E004", f"repeated axes {axes} or a zero step {steps}")
    begin, end = [], []
    for axis, first, last, step in zip(axes, starts, ends, steps):
        n = shape[axis]
        first = first + n if first < 0 else first
        last = last + n if last < 0 else last
        if step > 0:
            first, last = _clamp(first, 0, n), _clamp(last, 0, n)
        else:
            first, last = _clamp(first, 0, n - 1), _clamp(last, -1, n - 1)
        if max(0, -(-(last - first) // step)) == 0:
            raise ctx.fail("EXPORT-E007", f"slice {first}:{last}:{step} of axis {axis} (extent {n}) is empty")
        begin.append(first)
        end.append(last if last >= 0 else -(n + 1))
    ctx.emit(ctx.output(), "slice", ctx.input(0), axes=axes, begin=begin, end=end, stride=steps)


def _reshape(ctx: ExportContext, shape: list[int]) -> None:
    ctx.emit(ctx.output(), "reshape", ctx.input(0), shape=shape, axis_start=0, axis_count=-1)


@converter("Flatten", versions=(1, 9, 11, 13, 21, 23, 24, 25), attributes=("axis",))
def flatten(ctx: ExportContext, node: Node) -> None:
    """Flatten(X) -> reshape(X, shape = [d0 * .. * d(axis-1), d(axis) * .. * d(r-1)],
    axis_start = 0, axis_count = -1) (default axis 1; negative axes from opset 11)."""
    shape = ctx.in_shape(0)
    rank = len(shape)
    axis = int(node.attr("axis", 1))
    if not -rank <= axis <= rank:
        raise ctx.fail("EXPORT-E004", f"axis {axis} out of range for rank {rank}")
    axis = axis + rank if axis < 0 else axis
    _reshape(ctx, [math.prod(shape[:axis]), math.prod(shape[axis:])])


@converter("Reshape", versions=(5, 13, 14, 19, 21, 23, 24, 25), attributes=("allowzero",))
def reshape(ctx: ExportContext, node: Node) -> None:
    """Reshape(X, shape) -> reshape(X, shape = the resolved output shape, axis_start = 0,
    axis_count = -1): 0 copies the input extent (allowzero = 0) or is a zero extent
    (allowzero = 1, rejected: empty tensor), one -1 is inferred; written without 0 or -1."""
    in_shape = ctx.in_shape(0)
    requested = ctx.ints(1, "shape")
    allow_zero = int(node.attr("allowzero", 0))
    resolved = []
    for index, extent in enumerate(requested):
        if extent == 0 and not allow_zero:
            if index >= len(in_shape):
                raise ctx.fail("EXPORT-E004", f"shape {requested}: 0 at {index} has no input extent to copy")
            extent = in_shape[index]
        resolved.append(extent)
    if any(e == 0 for e in resolved):
        raise ctx.fail("EXPORT-E007", f"shape {requested} gives an empty tensor")
    if resolved.count(-1) > 1 or any(e < -1 for e in resolved):
        raise ctx.fail("EXPORT-E004", f"shape {requested} is invalid")
    if -1 in resolved:
        known = math.prod(e for e in resolved if e != -1)
        if known == 0 or math.prod(in_shape) % known:
            raise ctx.fail("EXPORT-E004", f"shape {requested} does not fit {in_shape}")
        resolved[resolved.index(-1)] = math.prod(in_shape) // known
    if math.prod(resolved) != math.prod(in_shape):
        raise ctx.fail("EXPORT-E004", f"shape {requested} does not fit {in_shape}")
    _reshape(ctx, resolved)


@converter("Transpose", versions=(1, 13, 21, 23, 24, 25), attributes=("perm",))
def transpose(ctx: ExportContext, node: Node) -> None:
    """Transpose(X) -> transpose(X, axes = perm) (default: the axes reversed)."""
    rank = len(ctx.in_shape(0))
    perm = [int(p) for p in node.attr("perm", list(range(rank))[::-1])]
    if sorted(perm) != list(range(rank)):
        raise ctx.fail("EXPORT-E004", f"perm {perm} is not a permutation of {rank} axes")
    ctx.emit(ctx.output(), "transpose", ctx.input(0), axes=perm)


def _axes_param(ctx: ExportContext, node: Node) -> list[int] | None:
    """Squeeze/Unsqueeze axes: attribute before opset 13, input from 13 (None if absent)."""
    if (node.since_version or 0) >= 13:
        return ctx.ints(1, "axes") if ctx.has_input(1) else None
    value = node.attr("axes")
    return None if value is None else [int(a) for a in value]


@converter("Squeeze", versions=(1, 11, 13, 21, 23, 24, 25), attributes=("axes",))
def squeeze(ctx: ExportContext, node: Node) -> None:
    """Squeeze(X, axes) -> squeeze(X, axes = sorted non-negative axes); no axes: every unit axis."""
    shape = ctx.in_shape(0)
    axes = _axes_param(ctx, node)
    if axes is None:
        axes = [i for i, e in enumerate(shape) if e == 1]
    axes = sorted({_axis(ctx, a, len(shape), "squeeze axis") for a in axes})
    if any(shape[a] != 1 for a in axes):
        raise ctx.fail("EXPORT-E004", f"axes {axes} of shape {shape} are not all of extent 1")
    ctx.emit(ctx.output(), "squeeze", ctx.input(0), axes=axes)


@converter("Unsqueeze", versions=(1, 11, 13, 21, 23, 24, 25), attributes=("axes",))
def unsqueeze(ctx: ExportContext, node: Node) -> None:
    """Unsqueeze(X, axes) -> unsqueeze(X, axes = sorted non-negative output axes)
    (inserting in ascending order puts each unit axis at its output position)."""
    axes = _axes_param(ctx, node)
    if not axes:
        raise ctx.fail("EXPORT-E004", "Unsqueeze needs axes")
    rank = len(ctx.in_shape(0)) + len(axes)
    normalised = sorted({_axis(ctx, a, rank, "unsqueeze axis") for a in axes})
    if len(normalised) != len(axes):
        raise ctx.fail("EXPORT-E004", f"repeated axes {axes}")
    ctx.emit(ctx.output(), "unsqueeze", ctx.input(0), axes=normalised)


PAD_BORDERS = {"constant": "constant", "reflect": "reflect", "edge": "replicate"}


@converter("Pad", versions=(2, 11, 13, 18, 19, 21, 23, 24, 25), attributes=("mode", "pads", "value"))
def pad(ctx: ExportContext, node: Node) -> None:
    """Pad(X, pads, constant_value, axes) -> pad(X, padding = [(begin, end) per axis],
    border = 'constant' | 'reflect' (mirror without the edge, as ONNX) | 'replicate'
    (ONNX 'edge'), value = constant_value or 0.0). 'wrap' and negative pads (cropping)
    are rejected. pads/value are attributes before opset 11, constant inputs from 11;
    the axes input (18) restricts pads to the listed axes."""
    shape = ctx.in_shape(0)
    rank = len(shape)
    mode = node.attr("mode", "constant")
    if mode not in PAD_BORDERS:
        raise ctx.fail("EXPORT-E004", f"mode '{mode}' is not supported (supported: {', '.join(PAD_BORDERS)})")
    if (node.since_version or 0) < 11:
        pads = [int(p) for p in node.attr("pads", [])]
        value = float(node.attr("value", 0.0))
    else:
        pads = ctx.ints(1, "pads")
        value = ctx.scalar_value(2, "constant_value") if ctx.has_input(2) else 0.0
    axes = list(range(rank))
    if ctx.has_input(3):
        axes = [_axis(ctx, a, rank, "pad axis") for a in ctx.ints(3, "axes")]
    if len(pads) != 2 * len(axes):
        raise ctx.fail("EXPORT-E004", f"pads {pads} must hold {2 * len(axes)} values")
    if any(p < 0 for p in pads):
        raise ctx.fail("EXPORT-E004", f"negative pads {pads} (cropping) are not supported")
    padding = [(0, 0)] * rank
    for i, axis in enumerate(axes):
        padding[axis] = (pads[i], pads[i + len(axes)])
    value = float(np.float32(value))
    if not math.isfinite(value):
        raise ctx.fail("EXPORT-E004", f"pad value {value} has no NNEF literal (must be finite)")
    ctx.emit(ctx.output(), "pad", ctx.input(0), padding=padding, border=PAD_BORDERS[mode], value=value)


@converter("Gather", versions=(1, 11, 13), attributes=("axis",))
def gather(ctx: ExportContext, node: Node) -> None:
    """Gather(data, indices) with constant indices on a computed tensor (on constants it is folded) ->
    per index i (negative: + extent) slice(data, axes = [axis], begin = [i], end = [i + 1]); a scalar
    index then squeeze(axes = [axis]); several indices concat([...], axis) of their slices, then
    reshape to the output shape when the indices have more than one axis. Only copies: no arithmetic.
    (Attention's q, k, v = qkv[0], qkv[1], qkv[2] is three scalar Gathers.)"""
    shape = ctx.in_shape(0)
    rank = len(shape)
    axis = _axis(ctx, int(node.attr("axis", 0)), rank)
    value = ctx.constant(1, "indices")
    if value.dtype.kind not in "iu":
        raise ctx.fail("EXPORT-E006", f"indices '{ctx.input_name(1)}' are {value.dtype}; integers expected")
    extent = shape[axis]
    indices = [int(i) for i in value.reshape(-1)]
    if any(not -extent <= i < extent for i in indices):
        raise ctx.fail("EXPORT-E004", f"indices {indices} out of range for axis {axis} of extent {extent}")
    indices = [i % extent for i in indices]
    x = ctx.input(0)
    out_shape = ctx.out_shape()
    if value.ndim == 0:
        part = ctx.temp_for("slice")
        ctx.emit(part, "slice", x, axes=[axis], begin=[indices[0]], end=[indices[0] + 1], stride=[1])
        ctx.emit(ctx.output(), "squeeze", part, axes=[axis])
        return
    parts = []
    for n, i in enumerate(indices):
        part = ctx.temp_for(f"slice{n}")
        ctx.emit(part, "slice", x, axes=[axis], begin=[i], end=[i + 1], stride=[1])
        parts.append(part)
    if value.ndim == 1:
        if len(parts) == 1:
            ctx.emit(ctx.output(), "copy", parts[0])
        else:
            ctx.emit(ctx.output(), "concat", parts, axis=axis)
        return
    joined = parts[0]
    if len(parts) > 1:
        joined = ctx.temp_for("concat")
        ctx.emit(joined, "concat", parts, axis=axis)
    ctx.emit(ctx.output(), "reshape", joined, shape=out_shape, axis_start=0, axis_count=-1)

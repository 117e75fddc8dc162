"""Shape rules: the output shapes of each operation from its input shapes and attributes.

A rule takes the shapes of the tensor parameters (a literal scalar argument has shape
[]; an array-of-tensors parameter gives a list of shapes) and the attribute values, and
returns one shape per result (a list of shapes for an array result). A violated
precondition raises ShapeError with a message naming the parameter; the checker turns it
into finding NNEF-E020 at the instruction.

Broadcasting follows NNEF: shapes are aligned on the LEFT (leading axes) and a missing
trailing extent counts as 1, so a [1, C] bias broadcasts against [N, C, H, W].
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

Shape = list[int]
ShapeRule = Callable[[dict[str, Any], dict[str, Any]], list[Any]]


class ShapeError(ValueError):
    """A shape or attribute precondition of an operation does not hold."""


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise ShapeError(message)


def volume(shape: Sequence[int]) -> int:
    result = 1
    for extent in shape:
        result *= extent
    return result


def _padded(shape: Sequence[int], rank: int) -> Shape:
    return list(shape) + [1] * (rank - len(shape))


def broadcast(x: Sequence[int], y: Sequence[int], what: str = "arguments") -> Shape:
    """The NNEF broadcast of two shapes (left-aligned, trailing 1s implied)."""
    rank = max(len(x), len(y))
    xs, ys = _padded(x, rank), _padded(y, rank)
    _require(
        all(a == b or a == 1 or b == 1 for a, b in zip(xs, ys)),
        f"{what} are not broadcast compatible ({list(x)} vs {list(y)})",
    )
    return [max(a, b) for a, b in zip(xs, ys)]


def _broadcastable_to(small: Sequence[int], big: Sequence[int], what: str) -> None:
    rank = max(len(small), len(big))
    ss, bs = _padded(small, rank), _padded(big, rank)
    _require(
        all(s == b or s == 1 for s, b in zip(ss, bs)),
        f"'{what}' shape {list(small)} cannot be broadcast to {list(big)}",
    )


def _axes_in_range(axes: Sequence[int], rank: int, what: str = "axes") -> None:
    _require(all(0 <= a < rank for a in axes), f"'{what}' must be in range [0, {rank}), found {list(axes)}")
    _require(len(set(axes)) == len(axes), f"'{what}' must not repeat an axis, found {list(axes)}")


def _positive(values: Sequence[int], what: str) -> None:
    _require(all(v > 0 for v in values), f"'{what}' must be positive, found {list(values)}")


def _length(values: Sequence[Any], rank: int, what: str, allow_empty: bool = True) -> None:
    _require(
        (allow_empty and not values) or len(values) == rank,
        f"expected '{what}' of length {rank}, found {list(values)}",
    )


# ------------------------------------------------------------------ sliding windows


def _downsize(input: Sequence[int], size: Sequence[int], padding: Sequence[Any],
              stride: Sequence[int], dilation: Sequence[int]) -> Shape:
    if not padding:  # automatic ("same") padding
        return [(i + s - 1) // s for i, s in zip(input, stride)]
    return [
        (i + p + q - (k - 1) * d - 1) // s + 1
        for i, k, (p, q), s, d in zip(input, size, padding, stride, dilation)
    ]


def _upsize(input: Sequence[int], size: Sequence[int], padding: Sequence[Any],
            stride: Sequence[int], dilation: Sequence[int]) -> Shape:
    if not padding:
        return [i * s for i, s in zip(input, stride)]
    return [
        (i - 1) * s + (k - 1) * d + 1 - p - q
        for i, k, (p, q), s, d in zip(input, size, padding, stride, dilation)
    ]


def _window_common(rank: int, padding: Sequence[Any], stride: Sequence[int],
                   dilation: Sequence[int]) -> tuple[list[int], list[int]]:
    _length(padding, rank, "padding")
    _length(stride, rank, "stride")
    _length(dilation, rank, "dilation")
    _positive(stride, "stride")
    _positive(dilation, "dilation")
    _require(all(p >= 0 and q >= 0 for p, q in padding), f"'padding' must be non-negative, found {list(padding)}")
    return (list(stride) or [1] * rank, list(dilation) or [1] * rank)


def _check_output(shape: Shape) -> Shape:
    _require(all(e > 0 for e in shape), f"output shape {shape} has a non-positive extent (window larger than padded input)")
    return shape


def pool_rule(i: dict[str, Any], a: dict[str, Any], transposed: bool = False) -> list[Any]:
    """box, debox, max_pool, avg_pool, argmax_pool, rms_pool, (de)sample: window over all axes."""
    input, size = i["input"], a["size"]
    rank = len(input)
    _require(len(size) == rank, f"expected 'size' of length {rank} (the input rank), found {list(size)}")
    _positive(size, "size")
    stride, dilation = _window_common(rank, a.get("padding", []), a.get("stride", []), a.get("dilation", []))
    if "index" in i and i["index"] is not None:
        _require(list(i["index"]) == list(input), f"'index' shape {i['index']} does not match 'input' shape {input}")
    output_shape = a.get("output_shape") or []
    if output_shape:
        _require(len(output_shape) == rank, f"expected 'output_shape' of length {rank}, found {list(output_shape)}")
        expected = _downsize(output_shape, size, a.get("padding", []), stride, dilation)
        _require(expected == list(input), f"'output_shape' {list(output_shape)} implies input shape {expected}, found {list(input)}")
        return [list(output_shape)]
    resize = _upsize if transposed else _downsize
    return [_check_output(resize(input, size, a.get("padding", []), stride, dilation))]


def conv_rule(i: dict[str, Any], a: dict[str, Any], transposed: bool = False) -> list[Any]:
    """conv, deconv: batch and channel axes, then spatial windows."""
    input, filter, bias = i["input"], i["filter"], i.get("bias", [])
    rank = len(input)
    _require(rank >= 3, f"'input' must have rank at least 3 (batch, channel, spatial), found {list(input)}")
    _require(len(filter) == rank, f"expected 'filter' of rank {rank}, found {list(filter)}")
    spatial = rank - 2
    stride, dilation = _window_common(spatial, a.get("padding", []), a.get("stride", []), a.get("dilation", []))
    groups = a.get("groups", 1)
    _require(groups >= 0, f"'groups' must be non-negative, found {groups}")
    output_shape = a.get("output_shape") or []
    if groups == 0:
        groups = output_shape[1] if transposed and output_shape else input[1]
    if transposed:
        _require(filter[0] == input[1], f"filter batch ({filter[0]}) does not match input channels ({input[1]})")
    else:
        _require(filter[1] * groups == input[1],
                 f"filter channels ({filter[1]}) times groups ({groups}) does not match input channels ({input[1]})")
    _require(filter[0] % groups == 0, f"'groups' ({groups}) does not divide filter batch ({filter[0]})")
    channels = filter[1] * groups if transposed else filter[0]
    _require(len(bias) <= 2, f"expected 'bias' of rank at most 2, found {list(bias)}")
    if len(bias) == 2:
        _require(bias[0] == 1, f"'bias' batch extent must be 1, found {list(bias)}")
    if bias:
        _require(bias[-1] == channels, f"'bias' channels ({bias[-1]}) does not match output channels ({channels})")
    if output_shape:
        _require(len(output_shape) == rank, f"expected 'output_shape' of length {rank}, found {list(output_shape)}")
        expected = [input[0], filter[0]] + _downsize(output_shape[2:], filter[2:], a.get("padding", []), stride, dilation)
        _require(output_shape[0] == input[0] and output_shape[1] == channels and expected == list(input),
                 f"'output_shape' {list(output_shape)} is incompatible with input {list(input)} and filter {list(filter)}")
        return [list(output_shape)]
    resize = _upsize if transposed else _downsize
    spatial_out = resize(input[2:], filter[2:], a.get("padding", []), stride, dilation)
    return [_check_output([input[0], channels] + spatial_out)]


def separable_conv_rule(i: dict[str, Any], a: dict[str, Any], transposed: bool = False) -> list[Any]:
    plane, point, input = i["plane_filter"], i["point_filter"], i["input"]
    _require(all(x == 1 for x in point[2:]), f"'point_filter' must be 1 in spatial axes, found {list(point)}")
    _require(point[1] == plane[0], f"'point_filter' channels ({point[1]}) do not match 'plane_filter' batch ({plane[0]})")
    _require(plane[1] == 1, f"'plane_filter' channel extent must be 1, found {list(plane)}")
    channels = point[1] if transposed else input[1]
    filter = [point[0], channels] + list(plane[2:])
    return conv_rule({"input": input, "filter": filter, "bias": i.get("bias", [])}, a, transposed)


# ------------------------------------------------------------------ element-wise


def unary_rule(i: dict[str, Any], a: dict[str, Any]) -> list[Any]:
    return [list(next(iter(i.values())))]


def binary_rule(i: dict[str, Any], a: dict[str, Any]) -> list[Any]:
    x, y = list(i.values())[:2]
    return [broadcast(x, y)]


def prelu_rule(i: dict[str, Any], a: dict[str, Any]) -> list[Any]:
    _broadcastable_to(i["alpha"], i["x"], "alpha")
    return [list(i["x"])]


def ternary_rule(i: dict[str, Any], a: dict[str, Any]) -> list[Any]:
    first, second, third = list(i.values())[:3]
    return [broadcast(first, broadcast(second, third))]


# ------------------------------------------------------------------ declarations


def declaration_rule(i: dict[str, Any], a: dict[str, Any]) -> list[Any]:
    shape = list(a["shape"])
    _require(all(e > 0 for e in shape), f"'shape' extents must be positive, found {shape}")
    return [shape]


def constant_rule(i: dict[str, Any], a: dict[str, Any]) -> list[Any]:
    shape = declaration_rule(i, a)[0]
    count = len(a.get("value", []))
    _require(count in (1, volume(shape)),
             f"'value' must hold 1 or {volume(shape)} items (the volume of {shape}), found {count}")
    return [shape]


# ------------------------------------------------------------------ shape operations


def reshape_rule(i: dict[str, Any], a: dict[str, Any]) -> list[Any]:
    input, shape = list(i["input"]), list(a["shape"])
    start, count = a.get("axis_start", 0), a.get("axis_count", -1)
    rank = len(input)
    _require(all(s >= -1 for s in shape), f"'shape' items must be >= -1, found {shape}")
    _require(shape.count(-1) <= 1, f"at most one 'shape' item may be -1, found {shape}")
    _require(0 <= start <= rank, f"'axis_start' must be in range [0, {rank}], found {start}")
    _require(count >= -1, f"'axis_count' must be non-negative or -1, found {count}")
    if count == -1:
        count = rank - start
    end = start + count
    _require(end <= rank, f"'axis_start' + 'axis_count' ({end}) exceeds the input rank {rank}")
    for index, extent in enumerate(shape):
        if extent == 0:
            _require(start + index < rank, f"'shape' item {index} is 0 but the input has no axis {start + index}")
            shape[index] = input[start + index]
    span = input[start:end]
    if -1 in shape:
        known = -volume(shape)
        _require(known > 0 and volume(span) % known == 0,
                 f"volume of 'shape' {list(a['shape'])} does not divide the volume of input axes {span}")
        shape[shape.index(-1)] = volume(span) // known
    else:
        _require(volume(shape) == volume(span),
                 f"volume of 'shape' {shape} ({volume(shape)}) does not equal the volume of input axes {span} ({volume(span)})")
    return [input[:start] + shape + input[end:]]


def transpose_rule(i: dict[str, Any], a: dict[str, Any]) -> list[Any]:
    input, axes = list(i["input"]), list(a["axes"])
    _require(sorted(axes) == list(range(len(axes))), f"'axes' must be a permutation of 0..{len(axes) - 1}, found {axes}")
    _require(len(axes) <= len(input), f"'axes' longer than the input rank {len(input)}")
    return [[input[k] for k in axes] + input[len(axes):]]


def squeeze_rule(i: dict[str, Any], a: dict[str, Any]) -> list[Any]:
    input, axes = list(i["input"]), list(a["axes"])
    _axes_in_range(axes, len(input))
    _require(all(input[k] == 1 for k in axes), f"squeezed axes {axes} of input {input} must have extent 1")
    return [[e for k, e in enumerate(input) if k not in axes]]


def unsqueeze_rule(i: dict[str, Any], a: dict[str, Any]) -> list[Any]:
    output, axes = list(i["input"]), list(a["axes"])
    _axes_in_range(axes, len(output) + len(axes))
    for axis in axes:
        output = output[:axis] + [1] + output[axis:]
    return [output]


def concat_rule(i: dict[str, Any], a: dict[str, Any]) -> list[Any]:
    values, axis = i["values"], a["axis"]
    _require(len(values) > 0, "'values' must not be empty")
    shape = list(values[0])
    rank = len(shape)
    _require(0 <= axis < rank, f"'axis' must be in range [0, {rank}), found {axis}")
    for value in values:
        _require(len(value) == rank and all(value[k] == shape[k] for k in range(rank) if k != axis),
                 f"'values' must agree on every axis but {axis}, found {[list(v) for v in values]}")
    shape[axis] = sum(v[axis] for v in values)
    return [shape]


def split_rule(i: dict[str, Any], a: dict[str, Any]) -> list[Any]:
    value, axis, ratios = list(i["value"]), a["axis"], list(a["ratios"])
    rank = len(value)
    _require(0 <= axis < rank, f"'axis' must be in range [0, {rank}), found {axis}")
    _require(len(ratios) > 0, "'ratios' must not be empty")
    _positive(ratios, "ratios")
    total = sum(ratios)
    _require(value[axis] % total == 0, f"sum of 'ratios' ({total}) does not divide extent {value[axis]} of axis {axis}")
    unit = value[axis] // total
    return [[[unit * r if k == axis else e for k, e in enumerate(value)] for r in ratios]]


def stack_rule(i: dict[str, Any], a: dict[str, Any]) -> list[Any]:
    values, axis = i["values"], a["axis"]
    _require(len(values) > 0, "'values' must not be empty")
    shape = list(values[0])
    _require(0 <= axis <= len(shape), f"'axis' must be in range [0, {len(shape) + 1}), found {axis}")
    _require(all(list(v) == shape for v in values), f"'values' must have identical shapes, found {[list(v) for v in values]}")
    return [shape[:axis] + [len(values)] + shape[axis:]]


def unstack_rule(i: dict[str, Any], a: dict[str, Any]) -> list[Any]:
    value, axis = list(i["value"]), a["axis"]
    _require(0 <= axis < len(value), f"'axis' must be in range [0, {len(value)}), found {axis}")
    return [[value[:axis] + value[axis + 1:] for _ in range(value[axis])]]


def _clamp(x: int, low: int, high: int) -> int:
    return max(low, min(high, x))


def _ceil_div(x: int, y: int) -> int:
    return -((-x) // y)


def slice_rule(i: dict[str, Any], a: dict[str, Any]) -> list[Any]:
    """slice: per axis [begin, end) with stride; negative offsets count from the end.

    As the spec (1.0.5) states: with unit strides, an `end` of 0 means the full extent.
    """
    input = list(i["input"])
    axes, begin, end = list(a["axes"]), list(a["begin"]), list(a["end"])
    stride = list(a.get("stride", [])) or [1] * len(axes)
    rank = len(input)
    _require(len(begin) == len(axes), f"length of 'begin' ({len(begin)}) does not equal length of 'axes' ({len(axes)})")
    _require(len(end) == len(axes), f"length of 'end' ({len(end)}) does not equal length of 'axes' ({len(axes)})")
    _require(len(stride) == len(axes), f"length of 'stride' ({len(stride)}) does not equal length of 'axes' ({len(axes)})")
    _axes_in_range(axes, rank)
    _require(all(s != 0 for s in stride), f"'stride' must be non-zero, found {stride}")
    if all(s == 1 for s in stride):
        end = [input[k] if e == 0 else e for k, e in zip(axes, end)]
    output = list(input)
    for k, first, last, step in zip(axes, begin, end, stride):
        first = _clamp(first + input[k] if first < 0 else first, -1, input[k])
        last = _clamp(last + input[k] if last < 0 else last, -1, input[k])
        valid = (0 <= first <= last) if step > 0 else (last <= first < input[k])
        _require(valid, f"slice range {first}:{last}:{step} on axis {k} (extent {input[k]}) is invalid")
        output[k] = _ceil_div(last - first, step)
    _require(all(e > 0 for e in output), f"slice gives an empty tensor {output}")
    return [output]


def pad_rule(i: dict[str, Any], a: dict[str, Any]) -> list[Any]:
    input, padding = list(i["input"]), list(a["padding"])
    _require(len(padding) == len(input), f"expected 'padding' of length {len(input)}, found {padding}")
    _require(all(p >= 0 and q >= 0 for p, q in padding), f"'padding' must be non-negative, found {padding}")
    return [[p + e + q for e, (p, q) in zip(input, padding)]]


def tile_rule(i: dict[str, Any], a: dict[str, Any]) -> list[Any]:
    input, repeats = list(i["input"]), list(a["repeats"])
    _require(len(repeats) == len(input), f"expected 'repeats' of length {len(input)}, found {repeats}")
    _positive(repeats, "repeats")
    return [[e * r for e, r in zip(input, repeats)]]


def gather_rule(i: dict[str, Any], a: dict[str, Any]) -> list[Any]:
    input, indices, axis = list(i["input"]), list(i["indices"]), a.get("axis", 0)
    _require(0 <= axis < len(input), f"'axis' must be in range [0, {len(input)}), found {axis}")
    return [input[:axis] + indices + input[axis + 1:]]


# ------------------------------------------------------------------ reductions, linear algebra


def reduce_rule(i: dict[str, Any], a: dict[str, Any]) -> list[Any]:
    input, axes = list(i["input"]), list(a["axes"])
    _axes_in_range(axes, len(input))
    return [[1 if k in axes else e for k, e in enumerate(input)]]


def moments_rule(i: dict[str, Any], a: dict[str, Any]) -> list[Any]:
    shape = reduce_rule(i, a)[0]
    return [shape, list(shape)]


def matmul_rule(i: dict[str, Any], a: dict[str, Any]) -> list[Any]:
    A, B = list(i["A"]), list(i["B"])
    _require(len(A) == len(B), f"'A' and 'B' must have the same rank ({A} vs {B})")
    _require(len(A) >= 2, f"rank of 'A' and 'B' must be at least 2, found {A}")
    ta, tb = a.get("transposeA", False), a.get("transposeB", False)
    m, ka = (A[-1], A[-2]) if ta else (A[-2], A[-1])
    kb, n = (B[-1], B[-2]) if tb else (B[-2], B[-1])
    _require(ka == kb, f"inner extents of 'A' and 'B' must agree ({ka} vs {kb})")
    return [broadcast(A[:-2], B[:-2], "batch axes of 'A' and 'B'") + [m, n]]


def linear_rule(i: dict[str, Any], a: dict[str, Any]) -> list[Any]:
    input, filter, bias = list(i["input"]), list(i["filter"]), list(i.get("bias", []))
    _require(len(input) == 2, f"'input' must have rank 2, found {input}")
    _require(len(filter) == 2, f"'filter' must have rank 2, found {filter}")
    _require(input[1] == filter[1], f"input channels ({input[1]}) do not match filter channels ({filter[1]})")
    _require(len(bias) <= 2, f"'bias' must have rank at most 2, found {bias}")
    if len(bias) == 2:
        _require(bias[0] == 1, f"'bias' batch extent must be 1, found {bias}")
    if bias:
        _require(bias[-1] == filter[0], f"'bias' channels ({bias[-1]}) do not match filter batch ({filter[0]})")
    return [[input[0], filter[0]]]


def softmax_rule(i: dict[str, Any], a: dict[str, Any]) -> list[Any]:
    input = list(i["x"])
    _axes_in_range(list(a.get("axes", [1])), len(input))
    return [input]


def normalization_rule(i: dict[str, Any], a: dict[str, Any]) -> list[Any]:
    input = list(i["input"])
    if "axes" in a:
        _axes_in_range(list(a["axes"]), len(input))
    if "size" in a:
        size = list(a["size"])
        _require(len(size) == len(input), f"expected 'size' of length {len(input)}, found {size}")
        _positive(size, "size")
    return [input]


def batch_normalization_rule(i: dict[str, Any], a: dict[str, Any]) -> list[Any]:
    input = list(i["input"])
    _require(a.get("epsilon", 0.0) >= 0, f"'epsilon' must be non-negative, found {a.get('epsilon')}")
    for name in ("mean", "variance", "offset", "scale"):
        _broadcastable_to(i[name], input, name)
    return [input]


def downsample_rule(i: dict[str, Any], a: dict[str, Any]) -> list[Any]:
    input, factor = list(i["input"]), list(a["factor"])
    _require(len(factor) == len(input) - 2, f"expected 'factor' of length {len(input) - 2}, found {factor}")
    _positive(factor, "factor")
    _require(all(e % f == 0 for e, f in zip(input[2:], factor)), f"'factor' {factor} does not divide spatial shape {input[2:]}")
    return [input[:2] + [e // f for e, f in zip(input[2:], factor)]]


def upsample_rule(i: dict[str, Any], a: dict[str, Any]) -> list[Any]:
    input, factor = list(i["input"]), list(a["factor"])
    _require(len(factor) == len(input) - 2, f"expected 'factor' of length {len(input) - 2}, found {factor}")
    _positive(factor, "factor")
    return [input[:2] + [e * f for e, f in zip(input[2:], factor)]]


def roi_rule(i: dict[str, Any], a: dict[str, Any]) -> list[Any]:
    input, rois, index = list(i["input"]), list(i["rois"]), list(i["batch_index"])
    size = list(a["output_size"])
    _require(len(size) == len(input) - 2, f"expected 'output_size' of length {len(input) - 2}, found {size}")
    _positive(size, "output_size")
    _require(len(rois) == 2 and rois[1] == 4, f"'rois' must have shape [N, 4], found {rois}")
    _require(index == [rois[0]], f"'batch_index' must have shape [{rois[0]}], found {index}")
    if "sampling_rate" in a:
        _require(len(a["sampling_rate"]) == len(input) - 2, f"expected 'sampling_rate' of length {len(input) - 2}")
        _positive(a["sampling_rate"], "sampling_rate")
    return [[rois[0], input[1]] + size]


def quantize_rule(i: dict[str, Any], a: dict[str, Any]) -> list[Any]:
    x = list(i["x"])
    for name, shape in i.items():
        if name != "x":
            _broadcastable_to(shape, x, name)
    if "bits" in a:
        _require(a["bits"] > 0, f"'bits' must be positive, found {a['bits']}")
    return [x]


def update_rule(i: dict[str, Any], a: dict[str, Any]) -> list[Any]:
    _require(list(i["value"]) == list(i["variable"]), f"'value' shape {i['value']} does not match 'variable' shape {i['variable']}")
    return [list(i["variable"])]


def copy_n_rule(i: dict[str, Any], a: dict[str, Any]) -> list[Any]:
    _require(a["times"] > 0, f"'times' must be positive, found {a['times']}")
    return [[list(i["x"]) for _ in range(a["times"])]]


def add_n_rule(i: dict[str, Any], a: dict[str, Any]) -> list[Any]:
    values = i["x"]
    _require(len(values) > 0, "'x' must not be empty")
    _require(all(list(v) == list(values[0]) for v in values), f"shapes of 'x' must be identical, found {values}")
    return [list(values[0])]


def send_var_rule(i: dict[str, Any], a: dict[str, Any]) -> list[Any]:
    return [list(i["data"])]


def _transposed(rule: Callable[..., list[Any]]) -> ShapeRule:
    return lambda i, a: rule(i, a, transposed=True)


_UNARY_OPS = (
    "copy neg not rcp exp log sin cos tan asin acos atan sinh cosh tanh asinh acosh atanh "
    "abs sign floor ceil round sqr sqrt rsqr rsqrt log2 sigmoid relu elu selu gelu silu "
    "softabs softplus leaky_relu cast erf"
).split()
_BINARY_OPS = "add sub mul div pow min max lt le gt ge eq ne and or".split()

SHAPE_RULES: dict[str, ShapeRule] = {
    "external": declaration_rule,
    "variable": declaration_rule,
    "constant": constant_rule,
    "variablesync": declaration_rule,
    "send_var": send_var_rule,
    "get_var": send_var_rule,
    **{name: unary_rule for name in _UNARY_OPS},
    **{name: binary_rule for name in _BINARY_OPS},
    "prelu": prelu_rule,
    "select": ternary_rule,
    "clamp": ternary_rule,
    "conv": conv_rule,
    "deconv": _transposed(conv_rule),
    "separable_conv": separable_conv_rule,
    "separable_deconv": _transposed(separable_conv_rule),
    "box": pool_rule,
    "debox": _transposed(pool_rule),
    "sample": pool_rule,
    "desample": _transposed(pool_rule),
    "avg_pool": pool_rule,
    "max_pool": pool_rule,
    "argmax_pool": pool_rule,
    "rms_pool": pool_rule,
    "max_pool_with_index": lambda i, a: pool_rule(i, a) + pool_rule(i, a),
    "sum_reduce": reduce_rule,
    "min_reduce": reduce_rule,
    "max_reduce": reduce_rule,
    "mean_reduce": reduce_rule,
    "argmin_reduce": reduce_rule,
    "argmax_reduce": reduce_rule,
    "any_reduce": reduce_rule,
    "all_reduce": reduce_rule,
    "moments": moments_rule,
    "local_response_normalization": normalization_rule,
    "local_mean_normalization": normalization_rule,
    "local_variance_normalization": normalization_rule,
    "local_contrast_normalization": normalization_rule,
    "l1_normalization": normalization_rule,
    "l2_normalization": normalization_rule,
    "batch_normalization": batch_normalization_rule,
    "nearest_downsample": downsample_rule,
    "area_downsample": downsample_rule,
    "nearest_upsample": upsample_rule,
    "multilinear_upsample": upsample_rule,
    "reshape": reshape_rule,
    "transpose": transpose_rule,
    "squeeze": squeeze_rule,
    "unsqueeze": unsqueeze_rule,
    "stack": stack_rule,
    "unstack": unstack_rule,
    "split": split_rule,
    "concat": concat_rule,
    "slice": slice_rule,
    "tile": tile_rule,
    "pad": pad_rule,
    "gather": gather_rule,
    "matmul": matmul_rule,
    "linear": linear_rule,
    "softmax": softmax_rule,
    "linear_quantize": quantize_rule,
    "logarithmic_quantize": quantize_rule,
    "min_max_linear_quantize": quantize_rule,
    "zero_point_linear_quantize": quantize_rule,
    "avg_roi_pool": roi_rule,
    "max_roi_pool": roi_rule,
    "avg_roi_align": roi_rule,
    "max_roi_align": roi_rule,
    "roi_resample": roi_rule,
    "update": update_rule,
    "copy_n": copy_n_rule,
    "add_n": add_n_rule,
}

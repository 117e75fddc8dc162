"""Shape operations: data movement only, every element copied bit for bit (no arithmetic,
so no order and no rounding). Data is row-major throughout.

reshape    same row-major sequence, new shape on axes [axis_start, axis_start + axis_count);
           a 0 in `shape` copies the input extent, one -1 is inferred
transpose  output axis i is input axis axes[i]; axes beyond len(axes) stay in place
concat     values joined along `axis`, in list order
split      `value` cut along `axis` into parts proportional to `ratios`
slice      per listed axis: indices begin, begin + stride, ... before end; negative
           begin/end count from the end and are clamped to [-1, extent]; with unit
           strides an end of 0 means the extent (NNEF 1.0.5)
squeeze / unsqueeze  remove / insert unit axes (unsqueeze inserts in list order)
stack / unstack      join along / cut along a new / existing axis
tile       input repeated `repeats[i]` times along axis i
pad        border values as in windows.py ('constant' uses `value`)
gather     input elements at `indices` along `axis`
copy_n     `times` copies of x
"""

from __future__ import annotations

import itertools
import math
from typing import Any, Mapping

import numpy as np

from pipeline.semantics.kernels import kernel
from pipeline.semantics.tensors import KernelError, attr_f32, axes_list, generic, int_list, integer, scalar
from pipeline.semantics.windows import border_of, pad as pad_array, padding_list

Inputs = Mapping[str, Any]
Attribs = Mapping[str, Any]


@kernel("reshape")
def reshape(inputs: Inputs, attribs: Attribs, dtype: str | None) -> tuple[np.ndarray]:
    """Row-major reshape of axes [axis_start, axis_start + axis_count)."""
    x = generic(inputs["input"], dtype, "input")
    shape = int_list(attribs["shape"], "shape")
    start = int(attribs.get("axis_start", 0))
    count = int(attribs.get("axis_count", -1))
    if count == -1:
        count = x.ndim - start
    if not 0 <= start <= x.ndim or start + count > x.ndim or count < 0:
        raise KernelError(f"axis_start {start} / axis_count {count} invalid for rank {x.ndim}")
    zero_beyond = any(s == 0 and start + i >= x.ndim for i, s in enumerate(shape))
    if any(s < -1 for s in shape) or shape.count(-1) > 1 or zero_beyond:
        raise KernelError(f"invalid reshape target {shape}")
    new = [x.shape[start + i] if s == 0 else s for i, s in enumerate(shape)]
    volume = math.prod(x.shape[start:start + count])
    known = math.prod(s for s in new if s != -1)
    if -1 in new:
        if known == 0 or volume % known:
            raise KernelError(f"cannot reshape axes {list(x.shape[start:start + count])} to {shape}", "SEM-E005")
        new[new.index(-1)] = volume // known
    elif known != volume:
        raise KernelError(f"cannot reshape axes {list(x.shape[start:start + count])} to {shape}", "SEM-E005")
    return (x.reshape(x.shape[:start] + tuple(new) + x.shape[start + count:]),)


@kernel("transpose")
def transpose(inputs: Inputs, attribs: Attribs, dtype: str | None) -> tuple[np.ndarray]:
    """Axis permutation; trailing axes not named keep their place."""
    x = generic(inputs["input"], dtype, "input")
    axes = int_list(attribs["axes"], "axes")
    if sorted(axes) != list(range(len(axes))) or len(axes) > x.ndim:
        raise KernelError(f"'axes' {axes} is not a permutation of the leading axes of rank {x.ndim}")
    return (np.transpose(x, axes + list(range(len(axes), x.ndim))),)


@kernel("concat")
def concat(inputs: Inputs, attribs: Attribs, dtype: str | None) -> tuple[np.ndarray]:
    """values joined along `axis` in list order."""
    values = [generic(v, dtype, "values") for v in inputs["values"]]
    axis = int(attribs["axis"])
    try:
        return (np.concatenate(values, axis=axis),)
    except (ValueError, np.exceptions.AxisError) as exc:
        raise KernelError(f"cannot concatenate {[list(v.shape) for v in values]} on axis {axis}: {exc}", "SEM-E005") from exc


@kernel("split")
def split(inputs: Inputs, attribs: Attribs, dtype: str | None) -> tuple[list[np.ndarray]]:
    """`value` cut along `axis` into parts proportional to `ratios`, in order."""
    x = generic(inputs["value"], dtype, "value")
    axis = axes_list([attribs["axis"]], x.ndim, "axis")[0]
    ratios = int_list(attribs["ratios"], "ratios")
    total = sum(ratios)
    if not ratios or any(r <= 0 for r in ratios) or x.shape[axis] % total:
        raise KernelError(f"ratios {ratios} do not divide extent {x.shape[axis]} of axis {axis}")
    unit = x.shape[axis] // total
    bounds = list(itertools.accumulate(unit * r for r in ratios))[:-1]
    return (np.split(x, bounds, axis=axis),)


def _clamp(v: int, low: int, high: int) -> int:
    return max(low, min(high, v))


@kernel("slice")
def slice_(inputs: Inputs, attribs: Attribs, dtype: str | None) -> tuple[np.ndarray]:
    """Strided slice per listed axis (NNEF 1.0.5 rules, see module docstring)."""
    x = generic(inputs["input"], dtype, "input")
    axes = axes_list(attribs["axes"], x.ndim)
    begin = int_list(attribs["begin"], "begin")
    end = int_list(attribs["end"], "end")
    stride = int_list(attribs.get("stride", []), "stride") or [1] * len(axes)
    if not len(begin) == len(end) == len(stride) == len(axes) or 0 in stride:
        raise KernelError(f"slice axes {axes}, begin {begin}, end {end}, stride {stride} do not agree")
    if all(s == 1 for s in stride):
        end = [x.shape[a] if e == 0 else e for a, e in zip(axes, end)]
    out = x
    for axis, first, last, step in zip(axes, begin, end, stride):
        n = x.shape[axis]
        first = _clamp(first + n if first < 0 else first, -1, n)
        last = _clamp(last + n if last < 0 else last, -1, n)
        index = np.arange(first, last, step)
        if index.size == 0 or index.min() < 0 or index.max() >= n:
            raise KernelError(f"slice {first}:{last}:{step} of axis {axis} (extent {n}) is empty or out of range")
        out = np.take(out, index, axis=axis)
    return (out,)


@kernel("squeeze")
def squeeze(inputs: Inputs, attribs: Attribs, dtype: str | None) -> tuple[np.ndarray]:
    """Remove the listed unit axes."""
    x = generic(inputs["input"], dtype, "input")
    axes = axes_list(attribs["axes"], x.ndim)
    if any(x.shape[a] != 1 for a in axes):
        raise KernelError(f"squeezed axes {axes} of shape {list(x.shape)} must have extent 1", "SEM-E005")
    return (x.reshape([e for i, e in enumerate(x.shape) if i not in axes]),)


@kernel("unsqueeze")
def unsqueeze(inputs: Inputs, attribs: Attribs, dtype: str | None) -> tuple[np.ndarray]:
    """Insert unit axes at the listed positions, in list order."""
    x = generic(inputs["input"], dtype, "input")
    shape = list(x.shape)
    for axis in int_list(attribs["axes"], "axes"):
        if not 0 <= axis <= len(shape):
            raise KernelError(f"unsqueeze axis {axis} out of range for rank {len(shape)}")
        shape.insert(axis, 1)
    return (x.reshape(shape),)


@kernel("stack")
def stack(inputs: Inputs, attribs: Attribs, dtype: str | None) -> tuple[np.ndarray]:
    """Join equally shaped `values` along a new axis `axis`."""
    values = [generic(v, dtype, "values") for v in inputs["values"]]
    try:
        return (np.stack(values, axis=int(attribs["axis"])),)
    except (ValueError, np.exceptions.AxisError) as exc:
        raise KernelError(f"cannot stack {[list(v.shape) for v in values]}: {exc}", "SEM-E005") from exc


@kernel("unstack")
def unstack(inputs: Inputs, attribs: Attribs, dtype: str | None) -> tuple[list[np.ndarray]]:
    """Cut `value` along `axis` into its slices, in order."""
    x = generic(inputs["value"], dtype, "value")
    axis = axes_list([attribs["axis"]], x.ndim, "axis")[0]
    return ([np.take(x, i, axis=axis) for i in range(x.shape[axis])],)


@kernel("tile")
def tile(inputs: Inputs, attribs: Attribs, dtype: str | None) -> tuple[np.ndarray]:
    """Repeat the input `repeats[i]` times along axis i."""
    x = generic(inputs["input"], dtype, "input")
    repeats = int_list(attribs["repeats"], "repeats")
    if len(repeats) != x.ndim or any(r <= 0 for r in repeats):
        raise KernelError(f"'repeats' {repeats} must have {x.ndim} positive items")
    return (np.tile(x, repeats),)


@kernel("pad")
def pad(inputs: Inputs, attribs: Attribs, dtype: str | None) -> tuple[np.ndarray]:
    """Border values per windows.py; 'constant' fills with `value` (rounded to float32)."""
    x = scalar(inputs["input"], "input")
    border = border_of(attribs, ("constant", "replicate", "reflect", "reflect-even"))
    padding = padding_list(attribs["padding"])
    if len(padding) != x.ndim:
        raise KernelError(f"'padding' {padding} must have {x.ndim} items")
    return (pad_array(x, padding, border, attr_f32(attribs.get("value", 0.0), "value")),)


@kernel("gather")
def gather(inputs: Inputs, attribs: Attribs, dtype: str | None) -> tuple[np.ndarray]:
    """Elements of `input` at `indices` along `axis` (indices must be in range)."""
    x = generic(inputs["input"], dtype, "input")
    indices = integer(inputs["indices"], "indices")
    axis = axes_list([attribs.get("axis", 0)], x.ndim, "axis")[0]
    if indices.size and (indices.min() < 0 or indices.max() >= x.shape[axis]):
        raise KernelError(f"gather indices outside [0, {x.shape[axis]}) on axis {axis}")
    return (np.take(x, indices, axis=axis),)


@kernel("copy_n")
def copy_n(inputs: Inputs, attribs: Attribs, dtype: str | None) -> tuple[list[np.ndarray]]:
    """`times` copies of x (the same values)."""
    x = generic(inputs["x"], dtype, "x")
    return ([x] * int(attribs["times"]),)

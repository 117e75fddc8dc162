"""Sliding-window geometry and border handling, shared by conv, deconv, box and pools.

For one windowed axis with input extent n, window size k, stride s, dilation d and
padding (p, q) (p before, q after):

    padded extent     n + p + q
    output extent     floor((n + p + q - ((k - 1) * d + 1)) / s) + 1
    output i, tap j   reads padded position i * s + j * d, i.e. input position
                      i * s + j * d - p

Empty lists mean the NNEF defaults: stride 1, dilation 1, and automatic padding, which
makes the output extent ceil(n / s) and splits the total padding
max(0, (ceil(n / s) - 1) * s + (k - 1) * d + 1 - n) as p = total // 2, q = total - p
(the extra unit goes at the end; Khronos `_same_padding`).

Borders (values at input positions outside [0, n)):
    constant      the value 0 (pad: the `value` attribute)
    ignore        no value: the position is not part of the window
    replicate     x[clamp(i, 0, n - 1)]
    reflect       mirror without repeating the edge: x[-1] = x[1]  (period 2(n-1))
    reflect-even  mirror repeating the edge:        x[-1] = x[0]  (period 2n)
Padding wider than the input wraps the mirror periodically.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any, Iterator, Mapping, Sequence

import numpy as np

from pipeline.semantics.tensors import KernelError, int_list

BORDERS = ("constant", "ignore", "replicate", "reflect", "reflect-even")


def border_of(attribs: Mapping[str, Any], allowed: Sequence[str] = BORDERS) -> str:
    """The `border` attribute, checked against the modes the operation accepts (SEM-E004)."""
    border = attribs["border"]
    if border not in allowed:
        raise KernelError(f"border '{border}' is not one of {', '.join(allowed)}")
    return str(border)


def padding_list(value: Any) -> list[tuple[int, int]]:
    """The `padding` attribute as (before, after) pairs ([] = automatic)."""
    if not isinstance(value, (list, tuple)):
        raise KernelError(f"attribute 'padding' must be an array of pairs, got {value!r}")
    pairs = []
    for item in value:
        if not isinstance(item, (list, tuple)) or len(item) != 2:
            raise KernelError(f"attribute 'padding' must be an array of (integer, integer), got {value!r}")
        pairs.append((int(item[0]), int(item[1])))
    return pairs


def auto_padding(n: int, k: int, s: int, d: int) -> tuple[int, int]:
    """NNEF automatic padding for one axis: output ceil(n/s), extra unit at the end."""
    out = -(-n // s)
    total = max(0, (out - 1) * s + (k - 1) * d + 1 - n)
    return total // 2, total - total // 2


@dataclass(frozen=True)
class Window:
    """The resolved geometry of a window over some axes (all lists have their length)."""

    in_shape: tuple[int, ...]
    size: tuple[int, ...]
    stride: tuple[int, ...]
    dilation: tuple[int, ...]
    padding: tuple[tuple[int, int], ...]
    out_shape: tuple[int, ...]

    @property
    def padded_shape(self) -> tuple[int, ...]:
        return tuple(n + p + q for n, (p, q) in zip(self.in_shape, self.padding))

    def offsets(self) -> Iterator[tuple[int, ...]]:
        """Window taps in lexicographic (row-major) order: the accumulation order."""
        return itertools.product(*(range(k) for k in self.size))

    def volume(self) -> int:
        return math.prod(self.size)

    def taps(self, offset: Sequence[int]) -> tuple[slice, ...]:
        """Slices of the padded array holding tap `offset` of every output position."""
        return tuple(
            slice(j * d, j * d + (o - 1) * s + 1, s)
            for j, d, s, o in zip(offset, self.dilation, self.stride, self.out_shape)
        )


def resolve(in_shape: Sequence[int], size: Sequence[int], padding: Any, stride: Any, dilation: Any) -> Window:
    """Validate the window attributes against the input and fill the NNEF defaults."""
    # kept per attribute values, told apart by their repr (bool, NumPy integers and ints differ
    # there): the interpreter resolves the same few windows on every run
    key = repr((in_shape, size, padding, stride, dilation))
    window = _WINDOWS.get(key)
    if window is None:
        window = _resolve(in_shape, size, padding, stride, dilation)
        if len(_WINDOWS) < 4096:
            _WINDOWS[key] = window
    return window


_WINDOWS: dict[str, Window] = {}


def _resolve(in_shape: Sequence[int], size: Sequence[int], padding: Any, stride: Any, dilation: Any) -> Window:
    rank = len(in_shape)
    size = [int(k) for k in size]
    stride = int_list(stride, "stride") or [1] * rank
    dilation = int_list(dilation, "dilation") or [1] * rank
    pads = padding_list(padding)
    for name, value in (("size", size), ("stride", stride), ("dilation", dilation)):
        if len(value) != rank:
            raise KernelError(f"'{name}' {value} must have {rank} items")
        if any(v <= 0 for v in value):
            raise KernelError(f"'{name}' {value} must be positive")
    if not pads:
        pads = [auto_padding(n, k, s, d) for n, k, s, d in zip(in_shape, size, stride, dilation)]
    elif len(pads) != rank:
        raise KernelError(f"'padding' {pads} must have {rank} items")
    out = []
    for n, k, s, d, (p, q) in zip(in_shape, size, stride, dilation, pads):
        extent = n + p + q - ((k - 1) * d + 1)
        if extent < 0:
            raise KernelError(f"window of size {k} (dilation {d}) does not fit the padded extent {n + p + q}")
        out.append(extent // s + 1)
    return Window(tuple(in_shape), tuple(size), tuple(stride), tuple(dilation), tuple(pads), tuple(out))


def _source_index(n: int, p: int, q: int, border: str) -> tuple[np.ndarray, np.ndarray]:
    """For each padded position: the input index it reads, and whether it is inside."""
    j = np.arange(-p, n + q, dtype=np.int64)
    inside = (j >= 0) & (j < n)
    if border in ("constant", "ignore"):
        return np.clip(j, 0, n - 1), inside
    if border == "replicate":
        return np.clip(j, 0, n - 1), inside
    if border == "reflect":
        if n == 1:
            return np.zeros_like(j), inside
        period = 2 * (n - 1)
        m = np.mod(j, period)
        return np.where(m < n, m, period - m), inside
    if border == "reflect-even":
        period = 2 * n
        m = np.mod(j, period)
        return np.where(m < n, m, period - 1 - m), inside
    raise KernelError(f"unknown border '{border}'")


def pad(x: np.ndarray, padding: Sequence[tuple[int, int]], border: str, value: Any = 0.0) -> np.ndarray:
    """`x` padded on every axis ((0, 0) for axes not padded; negative amounts crop).

    'constant' and 'ignore' fill with `value` (kernels pass the value that makes the
    padded term vanish, e.g. 0 for sums, -inf for max); the others read input elements.
    """
    if not any(p or q for p, q in padding):
        return x
    if border in ("constant", "ignore") and x.size and all(p >= 0 and q >= 0 for p, q in padding):
        # the same array built directly: `value` everywhere, the input copied inside
        shape = tuple(n + p + q for n, (p, q) in zip(x.shape, padding)) + x.shape[len(padding):]
        out = np.zeros(shape, dtype=x.dtype) if _is_plus_zero(value) else np.full(shape, value, dtype=x.dtype)
        out[tuple(slice(p, p + n) for n, (p, _) in zip(x.shape, padding))] = x
        return out
    out = x
    for axis, (p, q) in enumerate(padding):
        if p == 0 and q == 0:
            continue
        n = out.shape[axis]
        if n == 0:
            raise KernelError("cannot pad an empty axis")
        index, inside = _source_index(n, p, q, border)
        out = np.take(out, index, axis=axis)
        if border in ("constant", "ignore") and not inside.all():
            shape = [1] * out.ndim
            shape[axis] = inside.size
            out = np.where(inside.reshape(shape), out, np.asarray(value, dtype=out.dtype))
    return out


def _is_plus_zero(value: Any) -> bool:
    """value is +0 (np.zeros' bits), not -0."""
    return isinstance(value, (float, np.floating)) and value == 0 and not np.signbit(value)


def inside_mask(shape: Sequence[int], padding: Sequence[tuple[int, int]]) -> np.ndarray:
    """Boolean array of the padded shape: True at positions that are input elements."""
    mask = np.ones((), dtype=bool)
    for n, (p, q) in zip(shape, padding):
        j = np.arange(-p, n + q)
        mask = np.logical_and.outer(mask, (j >= 0) & (j < n)) if mask.ndim else (j >= 0) & (j < n)
    return mask

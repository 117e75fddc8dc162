"""A scalar oracle for the documented evaluation orders (docs/semantics/).

The interpreter vectorises across independent outputs; this module recomputes single
output elements the way the documentation states them and the way generated C computes
them: one float32 operation at a time, in the documented term order, with plain Python
loops. Sampling a few elements of every reducing operation of a real model and comparing
bits is the validator of requirement LLR-SEM-001 (check `semantics.order`): it fails if
the vectorised kernels ever sum in another order than the one written down.

Covered: conv, linear, matmul, box, avg_pool, max_pool, sum_reduce, mean_reduce,
max_reduce, softmax, batch_normalization (borders `constant` and `ignore`). Other
operations are reported as not sampled.
"""

from __future__ import annotations

import itertools
import math
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from pipeline.nnef.graph import Operation, Ref

F32 = np.float32
ZERO = F32(0.0)
Index = tuple[int, ...]


def _value(v: Any, env: Mapping[str, np.ndarray]) -> Any:
    if isinstance(v, Ref):
        return env[v.name]
    if isinstance(v, list):
        return [_value(i, env) for i in v]
    return v


def _aligned(value: Any, rank: int) -> np.ndarray:
    """A parameter aligned NNEF-style (left) to `rank` axes; literals become 0-d arrays."""
    array = np.asarray(value, dtype=F32)
    return array.reshape(array.shape + (1,) * (rank - array.ndim)) if array.ndim else array


def _at(array: np.ndarray, index: Index) -> np.float32:
    """array[index] with NNEF broadcasting (extent-1 axes repeat, missing trailing axes are 1)."""
    if array.ndim == 0:
        return F32(array)
    return F32(array[tuple(i if e > 1 else 0 for i, e in zip(index, array.shape))])


def _tap(x: np.ndarray, position: Sequence[int]) -> np.float32 | None:
    """The input value at `position`, or None for a padded position (skipped taps)."""
    if all(0 <= p < n for p, n in zip(position, x.shape)):
        return F32(x[tuple(position)])
    return None


def conv(x: np.ndarray, w: np.ndarray, b: Any, attribs: Mapping[str, Any], index: Index) -> np.float32:
    """out[n, o, y...] = (+0 + sum over (c, taps) of w * x) + bias; padded taps skipped."""
    n, o, *y = index
    channels = x.shape[1]
    groups = attribs["groups"] or channels
    per_group = channels // groups
    group = o // (w.shape[0] // groups)
    pads = [p for p, _ in attribs["padding"]] or [0] * len(y)
    strides = attribs["stride"] or [1] * len(y)
    dilations = attribs["dilation"] or [1] * len(y)
    acc = ZERO
    for c in range(per_group):
        for taps in itertools.product(*(range(k) for k in w.shape[2:])):
            position = [yi * s + t * d - p for yi, t, s, d, p in zip(y, taps, strides, dilations, pads)]
            value = _tap(x[n, group * per_group + c], position)
            if value is not None:
                acc = F32(acc + F32(w[(o, c, *taps)] * value))
    return F32(acc + _at(_aligned(b, 2), (0, o)))


def linear(x: np.ndarray, w: np.ndarray, b: Any, index: Index) -> np.float32:
    """out[n, o] = (+0 + x[n, 0] * w[o, 0] + ... ) + bias[o]."""
    n, o = index
    acc = ZERO
    for k in range(x.shape[1]):
        acc = F32(acc + F32(x[n, k] * w[o, k]))
    return F32(acc + _at(_aligned(b, 2), (0, o)))


def matmul(a: np.ndarray, b: np.ndarray, attribs: Mapping[str, Any], index: Index) -> np.float32:
    """C[..., m, n] = +0 + A'[..., m, k] * B'[..., k, n], k increasing (batch axes broadcast)."""
    a2 = np.swapaxes(a, -1, -2) if attribs["transposeA"] else a
    b2 = np.swapaxes(b, -1, -2) if attribs["transposeB"] else b
    *batch, m, n = index
    acc = ZERO
    for k in range(a2.shape[-1]):
        left = _at(a2, (*batch, m, k)) if a2.ndim > 2 else F32(a2[m, k])
        right = _at(b2, (*batch, k, n)) if b2.ndim > 2 else F32(b2[k, n])
        acc = F32(acc + F32(left * right))
    return acc


def _window(x: np.ndarray, attribs: Mapping[str, Any], index: Index) -> tuple[list[np.float32 | None], int]:
    """The taps of a pool window in row-major order (None when padded) and the window volume."""
    size = attribs["size"]
    pads = [p for p, _ in attribs["padding"]] or [0] * x.ndim
    strides = attribs["stride"] or [1] * x.ndim
    dilations = attribs["dilation"] or [1] * x.ndim
    taps = []
    for offsets in itertools.product(*(range(k) for k in size)):
        position = [i * s + t * d - p for i, t, s, d, p in zip(index, offsets, strides, dilations, pads)]
        taps.append(_tap(x, position))
    return taps, math.prod(size)


def box(x: np.ndarray, attribs: Mapping[str, Any], index: Index, normalize: bool) -> np.float32:
    """+0 + taps in row-major order; divided once by the volume (constant) or inside count (ignore)."""
    taps, volume = _window(x, attribs, index)
    acc = ZERO
    for value in taps:
        if value is not None:
            acc = F32(acc + value)
    if not normalize:
        return acc
    count = volume if attribs["border"] != "ignore" else max(1, sum(v is not None for v in taps))
    return F32(acc / F32(count))


def max_pool(x: np.ndarray, attribs: Mapping[str, Any], index: Index) -> np.float32:
    """m = -inf; m = t if t > m or (t is NaN and m is not); padding is +0 (constant) or skipped (ignore)."""
    taps, _ = _window(x, attribs, index)
    m = F32(-np.inf)
    for value in taps:
        if value is None:
            if attribs["border"] == "ignore":
                continue
            value = ZERO
        if value > m or (value != value and m == m):
            m = value
    return m


def _reduced_terms(x: np.ndarray, axes: Sequence[int], index: Index) -> list[np.float32]:
    """The terms of one output of a reduction, row-major over the sorted reduced axes."""
    axes = sorted(axes)
    terms = []
    for coords in itertools.product(*(range(x.shape[a]) for a in axes)):
        position = list(index)
        for axis, c in zip(axes, coords):
            position[axis] = c
        terms.append(F32(x[tuple(position)]))
    return terms


def sum_reduce(x: np.ndarray, axes: Sequence[int], index: Index, normalize: bool) -> np.float32:
    terms = _reduced_terms(x, axes, index)
    acc = ZERO
    for t in terms:
        acc = F32(acc + t)
    return F32(acc / F32(len(terms))) if normalize else acc


def max_reduce(x: np.ndarray, axes: Sequence[int], index: Index) -> np.float32:
    m = F32(-np.inf)
    for t in _reduced_terms(x, axes, index):
        if t > m or (t != t and m == m):
            m = t
    return m


def softmax(x: np.ndarray, axes: Sequence[int], index: Index, exp: Callable[[np.ndarray], np.ndarray]) -> np.float32:
    """m = max; e = exp(x - m); s = +0 + e... row-major; y = e / s."""
    m = max_reduce(x, axes, index)
    s = ZERO
    for t in _reduced_terms(x, axes, index):
        s = F32(s + F32(exp(np.array([F32(t - m)], F32))[0]))
    e = F32(exp(np.array([F32(F32(x[index]) - m)], F32))[0])
    return F32(e / s)


def batch_normalization(x: np.ndarray, params: Mapping[str, Any], epsilon: float, index: Index) -> np.float32:
    """offset + ((scale * (input - mean)) / sqrt(variance + epsilon)), five IEEE operations."""
    rank = x.ndim
    mean, variance, offset, scale = (_at(_aligned(params[k], rank), index) for k in ("mean", "variance", "offset", "scale"))
    centred = F32(F32(x[index]) - mean)
    root = F32(np.sqrt(F32(variance + F32(epsilon))))
    return F32(offset + F32(F32(scale * centred) / root))


def element(op: Operation, env: Mapping[str, np.ndarray], index: Index,
            exp: Callable[[np.ndarray], np.ndarray]) -> np.float32 | None:
    """The oracle value of output `index` of `op` (None when the oracle does not cover it)."""
    i = {k: _value(v, env) for k, v in op.inputs.items()}
    a = op.attribs
    name = op.name
    if name in ("conv", "box", "avg_pool", "max_pool") and a.get("border") not in ("constant", "ignore"):
        return None
    if name == "conv":
        return conv(i["input"], i["filter"], i["bias"], a, index)
    if name == "linear":
        return linear(i["input"], i["filter"], i["bias"], index)
    if name == "matmul":
        return matmul(i["A"], i["B"], a, index)
    if name in ("box", "avg_pool"):
        return box(i["input"], a, index, normalize=name == "avg_pool" or a.get("normalize", False))
    if name == "max_pool":
        return max_pool(i["input"], a, index)
    if name in ("sum_reduce", "mean_reduce"):
        return sum_reduce(i["input"], a["axes"], index, normalize=name == "mean_reduce" or a.get("normalize", False))
    if name == "max_reduce":
        return max_reduce(i["input"], a["axes"], index)
    if name == "softmax":
        return softmax(i["x"], a["axes"], index, exp)
    if name == "batch_normalization":
        return batch_normalization(i["input"], i, a["epsilon"], index)
    return None


COVERED = ("conv", "linear", "matmul", "box", "avg_pool", "max_pool", "sum_reduce", "mean_reduce", "max_reduce",
           "softmax", "batch_normalization")

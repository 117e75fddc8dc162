"""Reductions over `axes`: sum, mean, max, min, argmax, argmin, any, all, moments.

The reduced axes are visited in row-major order of their indices (axes sorted
ascending, the last one fastest): term r is the element whose reduced coordinates have
row-major rank r. The output keeps the reduced axes with extent 1.

sum_reduce   acc = +0; acc = acc + x_r for r = 0, 1, ..., R-1; normalize: acc / float(R)
mean_reduce  sum_reduce(normalize = true)
max_reduce   m = -inf; m = t if t > m or (t NaN and m not NaN): the first maximum, the first NaN
min_reduce   m = +inf; same rule with <
argmax_reduce / argmin_reduce: r of the term max_reduce / min_reduce selects (int64)
moments      mean = mean_reduce(x); variance = mean_reduce((x - mean) * (x - mean))
"""

from __future__ import annotations

import math
from typing import Any, Mapping

import numpy as np

from pipeline.semantics.elementwise import first_max_update, first_min_update
from pipeline.semantics.jit import compiled_loops
from pipeline.semantics.kernels import kernel
from pipeline.semantics.tensors import F32, axes_list, logical, scalar

Inputs = Mapping[str, Any]
Attribs = Mapping[str, Any]


def terms(x: np.ndarray, axes: list[int]) -> tuple[np.ndarray, tuple[int, ...]]:
    """x as [kept..., R] with the reduced axes flattened row-major, and the output shape."""
    axes = sorted(axes)
    kept = [a for a in range(x.ndim) if a not in axes]
    moved = np.transpose(x, kept + axes)
    flat = moved.reshape(tuple(x.shape[a] for a in kept) + (math.prod(x.shape[a] for a in axes),))  # -1: not with 0s
    out_shape = tuple(1 if a in axes else x.shape[a] for a in range(x.ndim))
    return flat, out_shape


def ordered_sum(x: np.ndarray, axes: list[int], normalize: bool = False) -> np.ndarray:
    """Sum of the reduced terms in row-major order from +0, then / R if `normalize` (the sums by
    compiled.row_sums when numba is importable: the same loop, the same bits)."""
    flat, out_shape = terms(x, axes)
    loops = compiled_loops()
    if loops is not None and flat.size:
        acc = loops.row_sums(flat.reshape(-1, flat.shape[-1])).reshape(flat.shape[:-1])
    else:
        acc = np.zeros(flat.shape[:-1], dtype=F32)
        for r in range(flat.shape[-1]):
            np.add(acc, flat[..., r], out=acc)
    if normalize:
        acc = acc / F32(flat.shape[-1])
    return np.asarray(acc, dtype=F32).reshape(out_shape)


def ordered_extreme(x: np.ndarray, axes: list[int], largest: bool) -> tuple[np.ndarray, np.ndarray]:
    """Running maximum (or minimum) and the row-major index of the selected term."""
    flat, out_shape = terms(x, axes)
    update_rule = first_max_update if largest else first_min_update
    m = np.full(flat.shape[:-1], F32(-np.inf) if largest else F32(np.inf), dtype=F32)
    idx = np.zeros(flat.shape[:-1], dtype=np.int64)
    for r in range(flat.shape[-1]):
        t = flat[..., r]
        update = update_rule(t, m)
        np.copyto(m, t, where=update)
        idx[update] = r
    return m.reshape(out_shape), idx.reshape(out_shape)


def _input_axes(inputs: Inputs, attribs: Attribs) -> tuple[np.ndarray, list[int]]:
    x = scalar(inputs["input"], "input")
    return x, axes_list(attribs["axes"], x.ndim)


@kernel("sum_reduce")
def sum_reduce(inputs: Inputs, attribs: Attribs, dtype: str | None) -> tuple[np.ndarray]:
    """Row-major sum from +0; divided by the term count if `normalize`."""
    x, axes = _input_axes(inputs, attribs)
    return (ordered_sum(x, axes, bool(attribs.get("normalize", False))),)


@kernel("mean_reduce")
def mean_reduce(inputs: Inputs, attribs: Attribs, dtype: str | None) -> tuple[np.ndarray]:
    """sum_reduce(normalize = true): row-major sum / float32(count)."""
    x, axes = _input_axes(inputs, attribs)
    return (ordered_sum(x, axes, True),)


@kernel("max_reduce")
def max_reduce(inputs: Inputs, attribs: Attribs, dtype: str | None) -> tuple[np.ndarray]:
    """First maximal term (NaN wins), from -inf."""
    x, axes = _input_axes(inputs, attribs)
    return (ordered_extreme(x, axes, True)[0],)


@kernel("min_reduce")
def min_reduce(inputs: Inputs, attribs: Attribs, dtype: str | None) -> tuple[np.ndarray]:
    """First minimal term (NaN wins), from +inf."""
    x, axes = _input_axes(inputs, attribs)
    return (ordered_extreme(x, axes, False)[0],)


@kernel("argmax_reduce")
def argmax_reduce(inputs: Inputs, attribs: Attribs, dtype: str | None) -> tuple[np.ndarray]:
    """Row-major index (over the reduced axes) of the term max_reduce selects."""
    x, axes = _input_axes(inputs, attribs)
    return (ordered_extreme(x, axes, True)[1],)


@kernel("argmin_reduce")
def argmin_reduce(inputs: Inputs, attribs: Attribs, dtype: str | None) -> tuple[np.ndarray]:
    """Row-major index (over the reduced axes) of the term min_reduce selects."""
    x, axes = _input_axes(inputs, attribs)
    return (ordered_extreme(x, axes, False)[1],)


@kernel("any_reduce")
def any_reduce(inputs: Inputs, attribs: Attribs, dtype: str | None) -> tuple[np.ndarray]:
    """Logical or over the reduced axes (exact, order irrelevant)."""
    x = logical(inputs["input"], "input")
    axes = axes_list(attribs["axes"], x.ndim)
    return (np.any(x, axis=tuple(axes), keepdims=True),)


@kernel("all_reduce")
def all_reduce(inputs: Inputs, attribs: Attribs, dtype: str | None) -> tuple[np.ndarray]:
    """Logical and over the reduced axes (exact, order irrelevant)."""
    x = logical(inputs["input"], "input")
    axes = axes_list(attribs["axes"], x.ndim)
    return (np.all(x, axis=tuple(axes), keepdims=True),)


@kernel("moments")
def moments(inputs: Inputs, attribs: Attribs, dtype: str | None) -> tuple[np.ndarray, np.ndarray]:
    """mean = mean_reduce(x); variance = mean_reduce(sqr(x - mean)), as the fragment."""
    x, axes = _input_axes(inputs, attribs)
    mean = ordered_sum(x, axes, True)
    centred = x - mean
    return mean, ordered_sum(centred * centred, axes, True)

"""Normalisations: softmax, batch, local response, L1/L2, local mean/variance/contrast.

Each is the NNEF fragment evaluated as written, with the reductions of reduce.py (row-major
order from +0) and the box of sliding_window.py; `^` is the pow program.

softmax        m = max_reduce(x, axes); e = exp(x - m); y = e / sum_reduce(e, axes)
batch_norm     y = offset + ((scale * (x - mean)) / sqrt(variance + epsilon))
               (the fragment's `offset + scale * (input - mean) / sqrt(...)`: * and / are
               left-associative with equal precedence)
LRN            sigma = bias + alpha * box(x * x, size, normalize = true)  [border constant,
               automatic padding, stride 1: divisor = volume of size]; y = x / pow(sigma, beta)
l1 / l2        sigma = sum_reduce(|x|) / sqrt(sum_reduce(x * x)); y = x / max(sigma + bias, epsilon)
local_mean     y = x - box(x, size, normalize = true)
local_variance sigma = sqrt(box(x * x, size, normalize = true)); y = x / max(sigma + bias, epsilon)
local_contrast local_variance(local_mean(x))
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from pipeline.semantics import transcendental
from pipeline.semantics.elementwise import fmax
from pipeline.semantics.jit import compiled_loops
from pipeline.semantics.linear_algebra import derived
from pipeline.semantics.reduce import ordered_extreme, ordered_sum
from pipeline.semantics.kernels import kernel
from pipeline.semantics.sliding_window import box
from pipeline.semantics.tensors import F32, KernelError, align, attr_f32, axes_list, broadcast_shape, int_list, scalar

Inputs = Mapping[str, Any]
Attribs = Mapping[str, Any]


@kernel("softmax")
def softmax(inputs: Inputs, attribs: Attribs, dtype: str | None) -> tuple[np.ndarray]:
    """e = exp(x - max); y = e / (row-major sum of e), over `axes`."""
    x = scalar(inputs["x"], "x")
    axes = axes_list(attribs["axes"], x.ndim)
    m = ordered_extreme(x, axes, True)[0]
    e = transcendental.exp(x - m)
    return (np.asarray(e / ordered_sum(e, axes), dtype=F32),)


def _parameter(value: Any, x: np.ndarray, what: str) -> np.ndarray:
    """A per-channel parameter ([1, C], [C] or a literal) aligned NNEF-style to x's rank."""
    p = scalar(value, what)
    if p.ndim > x.ndim or broadcast_shape([x.shape, p.shape]) != x.shape:
        raise KernelError(f"'{what}' of shape {list(p.shape)} cannot be broadcast to input {list(x.shape)}", "SEM-E005")
    return align(p, x.ndim)


@kernel("batch_normalization")
def batch_normalization(inputs: Inputs, attribs: Attribs, dtype: str | None) -> tuple[np.ndarray]:
    """offset + ((scale * (input - mean)) / sqrt(variance + epsilon))."""
    x = scalar(inputs["input"], "input")
    loops = compiled_loops()
    if loops is not None and x.ndim >= 2 and x.size and _channel_rows(inputs, x.shape[1]):
        # the common case (parameters [1, C], as exported: the checks below hold), one compiled pass;
        # sqrt(variance + epsilon) kept with a read-only variance (derived: once per graph)
        epsilon = attr_f32(attribs["epsilon"], "epsilon")
        variance = inputs["variance"]
        root = derived(variance, f"root+{epsilon!r}", lambda: np.sqrt(variance.reshape(-1) + epsilon))
        return (loops.batch_normalization(x, *(inputs[k].reshape(-1) for k in ("mean", "scale", "offset")), root),)
    mean = _parameter(inputs["mean"], x, "mean")
    variance = _parameter(inputs["variance"], x, "variance")
    offset = _parameter(inputs["offset"], x, "offset")
    scale = _parameter(inputs["scale"], x, "scale")
    epsilon = attr_f32(attribs["epsilon"], "epsilon")
    params = (mean, scale, offset, variance)
    if loops is not None and x.ndim >= 2 and x.size and all(_per_channel(p, x) for p in params):
        channels = x.shape[1]
        vectors = [_channel_vector(p, channels) for p in params[:3]]
        return (loops.batch_normalization(x, *vectors, np.sqrt(_channel_vector(variance, channels) + epsilon)),)
    y = offset + (scale * (x - mean)) / np.sqrt(variance + epsilon)
    return (np.asarray(y, dtype=F32),)


def _channel_rows(inputs: Inputs, channels: int) -> bool:
    """Every parameter is a float32 array [1, C] (one value per channel)."""
    for key in ("mean", "variance", "offset", "scale"):
        p = inputs[key]
        if not isinstance(p, np.ndarray) or p.dtype != F32 or p.shape != (1, channels):
            return False
    return True


def _channel_vector(p: np.ndarray, channels: int) -> np.ndarray:
    """A per-channel parameter (_per_channel) as [C]."""
    return p.reshape(-1) if p.size == channels else np.full(channels, p.flat[0], dtype=F32)


def _per_channel(p: np.ndarray, x: np.ndarray) -> bool:
    """p (aligned to x) holds one value per channel, or one value: [1, C or 1, 1, ...]."""
    return p.shape[0] == 1 and all(extent == 1 for extent in p.shape[2:])


def _auto_box(x: np.ndarray, size: list[int]) -> np.ndarray:
    """box(x, size, normalize = true) with the fragment defaults: border 'constant',
    automatic padding, stride 1, dilation 1."""
    return box(x, {"size": size, "border": "constant", "padding": [], "stride": [], "dilation": []}, True)


@kernel("local_response_normalization")
def local_response_normalization(inputs: Inputs, attribs: Attribs, dtype: str | None) -> tuple[np.ndarray]:
    """sigma = bias + alpha * box(x*x, size, normalize); y = x / sigma^beta."""
    x = scalar(inputs["input"], "input")
    size = int_list(attribs["size"], "size")
    alpha = attr_f32(attribs["alpha"], "alpha")
    beta = attr_f32(attribs["beta"], "beta")
    bias = attr_f32(attribs["bias"], "bias")
    sigma = bias + alpha * _auto_box(x * x, size)
    return (np.asarray(x / transcendental.pow(sigma, np.full_like(sigma, beta)), dtype=F32),)


def _normalize_by(x: np.ndarray, sigma: np.ndarray, attribs: Attribs) -> np.ndarray:
    bias = attr_f32(attribs["bias"], "bias")
    epsilon = attr_f32(attribs["epsilon"], "epsilon")
    return np.asarray(x / fmax(sigma + bias, np.full_like(sigma, epsilon)), dtype=F32)


@kernel("l1_normalization")
def l1_normalization(inputs: Inputs, attribs: Attribs, dtype: str | None) -> tuple[np.ndarray]:
    """sigma = sum_reduce(|x|); y = x / max(sigma + bias, epsilon)."""
    x = scalar(inputs["input"], "input")
    sigma = ordered_sum(np.abs(x), axes_list(attribs["axes"], x.ndim))
    return (_normalize_by(x, sigma, attribs),)


@kernel("l2_normalization")
def l2_normalization(inputs: Inputs, attribs: Attribs, dtype: str | None) -> tuple[np.ndarray]:
    """sigma = sqrt(sum_reduce(x * x)); y = x / max(sigma + bias, epsilon)."""
    x = scalar(inputs["input"], "input")
    sigma = np.sqrt(ordered_sum(x * x, axes_list(attribs["axes"], x.ndim)))
    return (_normalize_by(x, sigma, attribs),)


def _local_mean(x: np.ndarray, size: list[int]) -> np.ndarray:
    return np.asarray(x - _auto_box(x, size), dtype=F32)


def _local_variance(x: np.ndarray, size: list[int], attribs: Attribs) -> np.ndarray:
    return _normalize_by(x, np.sqrt(_auto_box(x * x, size)), attribs)


@kernel("local_mean_normalization")
def local_mean_normalization(inputs: Inputs, attribs: Attribs, dtype: str | None) -> tuple[np.ndarray]:
    """x - box(x, size, normalize = true)."""
    x = scalar(inputs["input"], "input")
    return (_local_mean(x, int_list(attribs["size"], "size")),)


@kernel("local_variance_normalization")
def local_variance_normalization(inputs: Inputs, attribs: Attribs, dtype: str | None) -> tuple[np.ndarray]:
    """x / max(sqrt(box(x*x, size, normalize = true)) + bias, epsilon)."""
    x = scalar(inputs["input"], "input")
    return (_local_variance(x, int_list(attribs["size"], "size"), attribs),)


@kernel("local_contrast_normalization")
def local_contrast_normalization(inputs: Inputs, attribs: Attribs, dtype: str | None) -> tuple[np.ndarray]:
    """local_variance_normalization(local_mean_normalization(x))."""
    x = scalar(inputs["input"], "input")
    size = int_list(attribs["size"], "size")
    return (_local_variance(_local_mean(x, size), size, attribs),)

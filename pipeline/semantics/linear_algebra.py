"""Matrix products: matmul and linear.

matmul  C[..., m, n] = +0 + A'[..., m, 0] * B'[..., 0, n] + ... + A'[..., m, K-1] * B'[..., K-1, n]
        (A' = A or its transpose over the last two axes, B' likewise), k increasing,
        each product and each sum one float32 rounding; batch axes broadcast (NNEF).
linear  out[n, o] = (+0 + x[n, 0] * w[o, 0] + ... + x[n, K-1] * w[o, K-1]) + bias[o]
        i.e. matmul(input, filter, transposeB = true) + bias, the bias added last.

The products do not depend on each other, so they may be formed all at once; only the
sums are sequential. No BLAS: its blocking and threading change the order.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from pipeline.semantics.registry import kernel
from pipeline.semantics.tensors import F32, KernelError, align, broadcast_shape, scalar

Inputs = Mapping[str, Any]
Attribs = Mapping[str, Any]

# Above this many products, form them one k at a time instead of all at once (memory).
_ALL_PRODUCTS_LIMIT = 1 << 22


def ordered_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a[..., M, K] @ b[..., K, N], summing over k in increasing order from +0."""
    k_dim = a.shape[-1]
    if b.shape[-2] != k_dim:
        raise KernelError(f"inner dimensions differ: {list(a.shape)} x {list(b.shape)}", "SEM-E005")
    shape = broadcast_shape([a.shape[:-2], b.shape[:-2]]) + (a.shape[-2], b.shape[-1])
    acc = np.zeros(shape, dtype=F32)
    if acc.size * k_dim <= _ALL_PRODUCTS_LIMIT:
        products = a[..., :, None, :] * np.swapaxes(b, -1, -2)[..., None, :, :]  # [..., M, N, K]
        for k in range(k_dim):
            np.add(acc, products[..., k], out=acc)
    else:
        term = np.empty_like(acc)
        for k in range(k_dim):
            np.multiply(a[..., :, k:k + 1], b[..., k:k + 1, :], out=term)
            np.add(acc, term, out=acc)
    return acc


@kernel("matmul")
def matmul(inputs: Inputs, attribs: Attribs, dtype: str | None) -> tuple[np.ndarray]:
    """C = A' B', k increasing, from +0."""
    a = scalar(inputs["A"], "A")
    b = scalar(inputs["B"], "B")
    if a.ndim < 2 or a.ndim != b.ndim:
        raise KernelError(f"matmul needs operands of equal rank >= 2, got {list(a.shape)} and {list(b.shape)}", "SEM-E005")
    if attribs["transposeA"]:
        a = np.swapaxes(a, -1, -2)
    if attribs["transposeB"]:
        b = np.swapaxes(b, -1, -2)
    return (ordered_matmul(a, b),)


@kernel("linear")
def linear(inputs: Inputs, attribs: Attribs, dtype: str | None) -> tuple[np.ndarray]:
    """out = (sum over k increasing of input[n, k] * filter[o, k]) + bias, bias last."""
    x = scalar(inputs["input"], "input")
    w = scalar(inputs["filter"], "filter")
    if x.ndim != 2 or w.ndim != 2 or x.shape[1] != w.shape[1]:
        raise KernelError(f"linear needs input [N, K] and filter [O, K], got {list(x.shape)} and {list(w.shape)}", "SEM-E005")
    acc = ordered_matmul(x, w.T)
    b = scalar(inputs["bias"], "bias")
    if broadcast_shape([acc.shape, b.shape]) != acc.shape:
        raise KernelError(f"bias of shape {list(b.shape)} does not fit output {list(acc.shape)}", "SEM-E005")
    return (np.asarray(acc + align(b, 2), dtype=F32),)

"""Matrix products: matmul and linear.

matmul  C[..., m, n] = +0 + A'[..., m, 0] * B'[..., 0, n] + ... + A'[..., m, K-1] * B'[..., K-1, n]
        (A' = A or its transpose over the last two axes, B' likewise), k increasing,
        each product and each sum one float32 rounding; batch axes broadcast (NNEF).
linear  out[n, o] = (+0 + x[n, 0] * w[o, 0] + ... + x[n, K-1] * w[o, K-1]) + bias[o]
        i.e. matmul(input, filter, transposeB = true) + bias, the bias added last.

The products do not depend on each other, so they may be formed all at once; only the
sums are sequential. No BLAS: its blocking and threading change the order.

`ordered_dot` is the one loop that every conv, linear and 2-D matmul runs. With numba it is
compiled.py's loop (per output tile, k increasing, `acc = acc + a * b`); without, the NumPy
loop here: for a block of outputs small enough to stay in cache, the products of a run of
consecutive k are formed by one multiply, then added to the block's accumulators one k after
the other. Blocking and tiling only choose which outputs are computed together; each output
still sees its terms in increasing k, from +0, one rounding per product and per sum, so both
give the same bits (a NaN made from two NaNs may take either's sign: unspecified).
"""

from __future__ import annotations

import weakref
from typing import Any, Callable, Mapping

import numpy as np

from pipeline.semantics.jit import compiled_loops
from pipeline.semantics.kernels import kernel
from pipeline.semantics.tensors import F32, KernelError, align, broadcast_shape, scalar

ZERO = F32(0.0)

Inputs = Mapping[str, Any]
Attribs = Mapping[str, Any]

# Above this many products, form them one k at a time instead of all at once (memory).
_ALL_PRODUCTS_LIMIT = 1 << 22
# ordered_dot's block sizes, in float32 elements: the accumulators of one block of outputs
# (at most INNER_BLOCK along the axis held innermost), and the products formed by one
# multiply (a run of k for that block). They only choose which outputs are computed
# together, never the order of a sum: speed only.
ACC_BLOCK = 1 << 15
INNER_BLOCK = 1 << 10
PRODUCT_BLOCK = 1 << 17
# NumPy buffer size (elements) while ordered_dot runs, when its innermost axis is at least this long.
UNBUFFERED = 256


def _ranges(extent: int, step: int) -> list[slice]:
    return [slice(i, min(i + step, extent)) for i in range(0, extent, step)]


def _output_blocks(groups: int, outer: int, inner: int) -> list[tuple[slice, slice, slice]]:
    """(group, outer, inner) slices tiling a [G, outer, inner] output, about ACC_BLOCK each."""
    inner_step = min(inner, INNER_BLOCK)
    outer_step = max(1, min(outer, ACC_BLOCK // inner_step))
    group_step = max(1, ACC_BLOCK // (inner_step * outer_step))
    return [(g, o, i) for g in _ranges(groups, group_step) for o in _ranges(outer, outer_step)
            for i in _ranges(inner, inner_step)]


def ordered_dot(a: np.ndarray, b: np.ndarray, skip: np.ndarray | None = None) -> np.ndarray:
    """out[g, m, n] = +0 + a[0, g, m] * b[0, g, n] + a[1, g, m] * b[1, g, n] + ... + a[K-1, g, m] * b[K-1, g, n].

    a: [K, G, M], b: [K, G, N] float32; k increasing, each product and each sum one float32
    rounding (the product is `a * b`, a first). `skip` ([K, N] bool, optional): the term
    (k, g, m, n) is left out where skip[k, n] (conv's padded taps under non-finite weights).
    Run by the compiled loops of `compiled.py` when numba is importable (and NNCERT_NO_JIT
    is not set), else by `numpy_ordered_dot`: the same bits either way (tested).
    """
    k_dim, groups, m_dim = a.shape
    n_dim = b.shape[2]
    if b.shape[:2] != (k_dim, groups):
        raise KernelError(f"inner dimensions differ: {list(a.shape)} x {list(b.shape)}", "SEM-E005")
    if groups * m_dim * n_dim == 0:
        return np.zeros((groups, m_dim, n_dim), dtype=F32)
    loops = compiled_loops()
    if loops is not None:
        return loops.ordered_dot(a, b, skip)
    return numpy_ordered_dot(a, b, skip)


def numpy_ordered_dot(a: np.ndarray, b: np.ndarray, skip: np.ndarray | None = None) -> np.ndarray:
    """ordered_dot in NumPy (the fallback without numba; a, b, skip as there, G * M * N > 0).

    The outputs are computed in blocks (see ACC_BLOCK); for each block the products of a run
    of k are formed by one multiply, then added to the block in increasing k. The result is
    [G, M, N]; when N < M it is held as [G, N, M] while computed (the longer axis innermost,
    for speed), which changes no value.
    """
    groups, m_dim, n_dim = a.shape[1], a.shape[2], b.shape[2]
    transposed = n_dim < m_dim
    acc = np.empty((groups, n_dim, m_dim) if transposed else (groups, m_dim, n_dim), dtype=F32)
    # NumPy's iterator copies broadcast operands through a buffer when the innermost axis is
    # shorter than its buffer size; a long innermost axis runs faster unbuffered.
    saved = np.getbufsize()
    if min(acc.shape[2], INNER_BLOCK) >= UNBUFFERED:
        np.setbufsize(UNBUFFERED)
    try:
        for gs, outer, inner in _output_blocks(*acc.shape):
            ms, ns = (inner, outer) if transposed else (outer, inner)
            acc[gs, outer, inner] = _dot_block(a[:, gs, ms], b[:, gs, ns], None if skip is None else skip[:, ns],
                                               transposed)
    finally:
        np.setbufsize(saved)
    return np.ascontiguousarray(acc.transpose(0, 2, 1)) if transposed else acc


def _dot_block(a: np.ndarray, b: np.ndarray, skip: np.ndarray | None, transposed: bool) -> np.ndarray:
    """One block of ordered_dot: a [K, g, m], b [K, g, n] -> [g, m, n] (or [g, n, m] if transposed)."""
    k_dim, groups, m_dim = a.shape
    n_dim = b.shape[2]
    block = np.zeros((groups, n_dim, m_dim) if transposed else (groups, m_dim, n_dim), dtype=F32)  # from +0
    flat = block.reshape(-1)
    run = max(1, PRODUCT_BLOCK // block.size)
    products = np.empty((run, block.size), dtype=F32)
    for k0 in range(0, k_dim, run):
        k1 = min(k0 + run, k_dim)
        terms = products[:k1 - k0].reshape((k1 - k0,) + block.shape)
        if transposed:  # terms[k, g, n, m] = a[k, g, m] * b[k, g, n]
            np.multiply(a[k0:k1, :, None, :], b[k0:k1, :, :, None], out=terms)
        else:  # terms[k, g, m, n] = a[k, g, m] * b[k, g, n]
            np.multiply(a[k0:k1, :, :, None], b[k0:k1, :, None, :], out=terms)
        if skip is not None:
            mask = skip[k0:k1]
            np.copyto(terms, ZERO, where=mask[:, None, :, None] if transposed else mask[:, None, None, :])
        for term in products[:k1 - k0]:  # k0, k0 + 1, ..., k1 - 1: the order of the sum
            flat += term
    return block


_KEPT: dict[tuple[int, str], tuple[weakref.ref, np.ndarray]] = {}


def derived(source: np.ndarray, name: str, make: Callable[[], np.ndarray]) -> np.ndarray:
    """make(), an array computed from `source` alone (`name` says which), kept per source.

    Speed only: a filter is rearranged (or checked) once per graph, not once per run. The result
    is kept (weakly, dropped with `source`) only when `source` is read-only and owns its data, as
    the variables of load_variables are: such an array cannot change, so the kept result is
    always that of its current content. For any other array make() runs every time.
    """
    if source.flags.writeable or source.base is not None:
        return make()
    key = (id(source), name)
    kept = _KEPT.get(key)
    if kept is not None and kept[0]() is source:
        return kept[1]
    result = make()
    result.setflags(write=False)
    _KEPT[key] = (weakref.ref(source, lambda _, key=key: _KEPT.pop(key, None)), result)
    return result


def laid_out(source: np.ndarray, view: np.ndarray, layout: str) -> np.ndarray:
    """np.ascontiguousarray(view), `view` being a rearrangement (`layout` names it) of `source`,
    kept per read-only source (derived)."""
    return derived(source, layout, lambda: np.ascontiguousarray(view))


def ordered_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a[..., M, K] @ b[..., K, N], summing over k in increasing order from +0."""
    k_dim = a.shape[-1]
    if b.shape[-2] != k_dim:
        raise KernelError(f"inner dimensions differ: {list(a.shape)} x {list(b.shape)}", "SEM-E005")
    if a.ndim == 2 and b.ndim == 2:
        return ordered_dot(a.T[:, None, :], b[:, None, :])[0]
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
    acc = ordered_dot(x.T[:, None, :], laid_out(w, w.T, "k,o")[:, None, :])[0]
    b = scalar(inputs["bias"], "bias")
    if broadcast_shape([acc.shape, b.shape]) != acc.shape:
        raise KernelError(f"bias of shape {list(b.shape)} does not fit output {list(acc.shape)}", "SEM-E005")
    return (np.asarray(acc + align(b, 2), dtype=F32),)

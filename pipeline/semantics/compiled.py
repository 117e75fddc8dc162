"""The interpreter's hot loops compiled by numba, each the documented order written as a plain loop.

ordered_dot (conv, linear, 2-D matmul: linear_algebra.ordered_dot's sums)

    out[g, m, n] = +0 + a[0, g, m] * b[0, g, n] + a[1, g, m] * b[1, g, n] + ... + a[K-1, g, m] * b[K-1, g, n]

and what the profiles showed next: conv read in place from its padded input or its stride
phases (conv_wide: ordered_dot's sums, no gathered columns), conv's zero padding and per-channel
bias, the sums of the reductions (row_sums), relu (a select) and batch_normalization with
per-channel parameters (one pass instead of five).

Per output, the accumulator starts at +0 and receives its terms in increasing k, each product
`a * b` and each `+` one float32 rounding. The loops say exactly that: `acc = acc + w * x`
with float32 operands, k the outer loop of every tile, or four terms per pass written out
left to right, `(((acc + w0 * x0) + w1 * x1) + w2 * x2) + w3 * x3` (the same roundings in the
same order, a quarter of the tile's loads and stores). They are compiled without fastmath and
without parallel, so LLVM may neither contract `acc + w * x` into a fused multiply-add nor
reassociate a sum (tests/semantics/test_compiled.py checks the machine code for FMA
instructions, and the bits against the NumPy code). LLVM may swap the operands of a `+` or
`*`, which only changes which NaN's sign survives when both operands are NaN (unspecified).

Tiling only chooses which outputs are computed together: a tile of ROWS x COLUMNS accumulators
stays in L1 while k runs over the whole sum, and the vectorizer computes neighbouring
accumulators of one tile row at once (independent sums, never two terms of one sum). The longer
of M and N is the tile row (`_dot_rows` when N >= M, `_dot_columns` holding out transposed
otherwise), which changes no value.

This module imports numba when imported; jit.compiled_loops imports it on first use, so
listing doit tasks never pays for numba. numba caches the compiled code (`cache=True`) in this
folder's __pycache__ (outside artifacts/, never read by a step, skipped by the doit source
lists: machine code for these functions, keyed by numba on this file and the CPU).
"""

from __future__ import annotations

import functools

import numpy as np
from numba import njit, types

F32 = np.float32
# Accumulators of one tile (16 KiB): speed only, never the order of a sum.
ROWS = 16
COLUMNS = 256
# Terms added to an accumulator per pass over a tile: acc = (((acc + t0) + t1) + t2) + t3, each
# `+` and `*` rounded in turn (the order of the sum), a quarter of the tile's loads and stores.
UNROLL = 4

# One compiled signature: C-contiguous inputs (read-only: weights of load_variables are), a
# writable output. A writable input array converts to the read-only type.
_IN = types.Array(types.float32, 3, "C", readonly=True)
_SIGNATURE = types.void(_IN, _IN, types.Array(types.boolean, 2, "C", readonly=True), types.float32[:, :, ::1])


@njit(_SIGNATURE, cache=True, nogil=True)
def _dot_rows(a, b, skip, out):  # pragma: no cover - compiled; run through ordered_dot
    """out[g, m, n] for a [K, G, M], b [K, G, N]; skip [K, N] (or [0, 0]: no term skipped)."""
    k_dim, groups, m_dim = a.shape
    n_dim = b.shape[2]
    masked = skip.shape[0] > 0
    acc = np.empty((ROWS, COLUMNS), dtype=F32)
    for g in range(groups):
        for n0 in range(0, n_dim, COLUMNS):
            nt = min(COLUMNS, n_dim - n0)
            for m0 in range(0, m_dim, ROWS):
                mt = min(ROWS, m_dim - m0)
                for m in range(mt):                        # the tile's accumulators: out[g, m0 + m, n0 + n]
                    row = acc[m]
                    for n in range(nt):
                        row[n] = F32(0.0)                  # from +0
                k = 0
                while not masked and k + UNROLL <= k_dim:  # four terms per pass, each in its turn
                    x0, x1, x2, x3 = b[k, g, n0:n0 + nt], b[k + 1, g, n0:n0 + nt], b[k + 2, g, n0:n0 + nt], \
                        b[k + 3, g, n0:n0 + nt]
                    for m in range(mt):
                        w0, w1, w2, w3 = a[k, g, m0 + m], a[k + 1, g, m0 + m], a[k + 2, g, m0 + m], a[k + 3, g, m0 + m]
                        row = acc[m]
                        for n in range(nt):
                            row[n] = (((row[n] + w0 * x0[n]) + w1 * x1[n]) + w2 * x2[n]) + w3 * x3[n]
                    k += UNROLL
                while k < k_dim:                           # k increasing: the order of every sum
                    x = b[k, g, n0:n0 + nt]
                    for m in range(mt):
                        w = a[k, g, m0 + m]
                        row = acc[m]
                        if masked:
                            s = skip[k, n0:n0 + nt]
                            for n in range(nt):
                                if not s[n]:               # a padded tap: no term
                                    row[n] = row[n] + w * x[n]
                        else:
                            for n in range(nt):
                                row[n] = row[n] + w * x[n]
                    k += 1
                for m in range(mt):
                    o = out[g, m0 + m, n0:n0 + nt]
                    row = acc[m]
                    for n in range(nt):
                        o[n] = row[n]


@njit(_SIGNATURE, cache=True, nogil=True)
def _dot_columns(a, b, skip, out_t):  # pragma: no cover - compiled; run through ordered_dot
    """out_t[g, n, m] = out[g, m, n] for a [K, G, M], b [K, G, N]: the same sums, M innermost."""
    k_dim, groups, m_dim = a.shape
    n_dim = b.shape[2]
    masked = skip.shape[0] > 0
    acc = np.empty((ROWS, COLUMNS), dtype=F32)
    for g in range(groups):
        for m0 in range(0, m_dim, COLUMNS):
            mt = min(COLUMNS, m_dim - m0)
            for n0 in range(0, n_dim, ROWS):
                nt = min(ROWS, n_dim - n0)
                for n in range(nt):                        # the tile's accumulators: out[g, m0 + m, n0 + n]
                    row = acc[n]
                    for m in range(mt):
                        row[m] = F32(0.0)                  # from +0
                k = 0
                while not masked and k + UNROLL <= k_dim:  # four terms per pass, each in its turn
                    w0, w1, w2, w3 = a[k, g, m0:m0 + mt], a[k + 1, g, m0:m0 + mt], a[k + 2, g, m0:m0 + mt], \
                        a[k + 3, g, m0:m0 + mt]
                    for n in range(nt):
                        x0, x1, x2, x3 = b[k, g, n0 + n], b[k + 1, g, n0 + n], b[k + 2, g, n0 + n], b[k + 3, g, n0 + n]
                        row = acc[n]
                        for m in range(mt):
                            row[m] = (((row[m] + w0[m] * x0) + w1[m] * x1) + w2[m] * x2) + w3[m] * x3
                    k += UNROLL
                while k < k_dim:                           # k increasing: the order of every sum
                    w = a[k, g, m0:m0 + mt]
                    for n in range(nt):
                        if masked and skip[k, n0 + n]:
                            continue                       # a padded tap: no term
                        x = b[k, g, n0 + n]
                        row = acc[n]
                        for m in range(mt):
                            row[m] = row[m] + w[m] * x
                    k += 1
                for n in range(nt):
                    o = out_t[g, n0 + n, m0:m0 + mt]
                    row = acc[n]
                    for m in range(mt):
                        o[m] = row[m]


@njit(types.void(types.Array(types.float32, 4, "C", readonly=True), _IN,
                 types.Array(types.int64, 2, "C", readonly=True), types.int64, types.float32[:, :, :, ::1]),
      cache=True, nogil=True)
def _conv_wide(xq, a, taps, n_dim, out):  # pragma: no cover - compiled; run through conv_wide
    """out[n, g, o, p] = +0 + sum over k increasing of a[k, g, o] * xq[n, g, taps[k, 0], taps[k, 1] + p], p < n_dim.

    conv on flattened planes xq (conv_wide: the padded input, or its stride phases) where the
    inputs of term k for consecutive output positions are consecutive: ordered_dot's loop
    (_dot_rows) with each term's run of inputs read in place, nothing gathered."""
    n_batch, groups = xq.shape[0], xq.shape[1]
    k_dim, m_dim = a.shape[0], a.shape[2]
    acc = np.empty((ROWS, COLUMNS), dtype=F32)
    for b in range(n_batch):
        for g in range(groups):
            for n0 in range(0, n_dim, COLUMNS):
                nt = min(COLUMNS, n_dim - n0)
                for m0 in range(0, m_dim, ROWS):
                    mt = min(ROWS, m_dim - m0)
                    for m in range(mt):                    # the tile's accumulators: out[b, g, m0 + m, n0 + n]
                        row = acc[m]
                        for n in range(nt):
                            row[n] = F32(0.0)              # from +0
                    k = 0
                    while k + UNROLL <= k_dim:             # four terms per pass, each in its turn
                        s0, s1, s2, s3 = taps[k, 1] + n0, taps[k + 1, 1] + n0, taps[k + 2, 1] + n0, taps[k + 3, 1] + n0
                        x0, x1 = xq[b, g, taps[k, 0], s0:s0 + nt], xq[b, g, taps[k + 1, 0], s1:s1 + nt]
                        x2, x3 = xq[b, g, taps[k + 2, 0], s2:s2 + nt], xq[b, g, taps[k + 3, 0], s3:s3 + nt]
                        for m in range(mt):
                            w0, w1, w2, w3 = a[k, g, m0 + m], a[k + 1, g, m0 + m], a[k + 2, g, m0 + m], \
                                a[k + 3, g, m0 + m]
                            row = acc[m]
                            for n in range(nt):
                                row[n] = (((row[n] + w0 * x0[n]) + w1 * x1[n]) + w2 * x2[n]) + w3 * x3[n]
                        k += UNROLL
                    while k < k_dim:                       # k increasing: the order of every sum
                        start = taps[k, 1] + n0
                        x = xq[b, g, taps[k, 0], start:start + nt]
                        for m in range(mt):
                            w = a[k, g, m0 + m]
                            row = acc[m]
                            for n in range(nt):
                                row[n] = row[n] + w * x[n]
                        k += 1
                    for m in range(mt):
                        o = out[b, g, m0 + m, n0:n0 + nt]
                        row = acc[m]
                        for n in range(nt):
                            o[n] = row[n]


@njit(types.void(types.Array(types.float32, 1, "C", readonly=True), types.float32[::1]), cache=True, nogil=True)
def _relu(x, out):  # pragma: no cover - compiled; run through relu
    """out = relu(x) element by element: x where x > 0 or x is NaN (its bits), else +0."""
    for i in range(x.size):
        v = x[i]
        out[i] = v if v > F32(0.0) or v != v else F32(0.0)


@njit(types.void(types.Array(types.float32, 2, "C", readonly=True), types.float32[::1]), cache=True, nogil=True)
def _row_sums(x, out):  # pragma: no cover - compiled; run through row_sums
    """out[i] = +0 + x[i, 0] + x[i, 1] + ... + x[i, R-1], r increasing (reduce.ordered_sum's order)."""
    for i in range(x.shape[0]):
        acc = F32(0.0)
        row = x[i]
        for r in range(x.shape[1]):
            acc = acc + row[r]
        out[i] = acc


@njit(types.void(types.Array(types.float32, 3, "C", readonly=True), types.int64, types.int64,
                 types.float32[:, :, ::1]), cache=True, nogil=True)
def _zero_padded(x, top, left, out):  # pragma: no cover - compiled; run through zero_padded
    """out[p] = x[p] placed at (top, left), +0 elsewhere, for each plane p (windows.pad with 'constant' 0)."""
    h, w = x.shape[1], x.shape[2]
    for p in range(x.shape[0]):
        flat = out[p].reshape(-1)
        for i in range(flat.shape[0]):
            flat[i] = F32(0.0)
        for y in range(h):
            src = x[p, y]
            row = out[p, top + y, left:left + w]
            for i in range(w):
                row[i] = src[i]


@njit(types.void(types.Array(types.float32, 4, "A", readonly=True), types.Array(types.float32, 1, "C", readonly=True),
                 types.float32[:, :, :, ::1]), cache=True, nogil=True)
def _channel_bias(acc, bias, out):  # pragma: no cover - compiled; run through channel_bias
    """out[n, c, y, x] = acc[n, c, y, x] + bias[c]: one float32 addition each (conv's bias, added last)."""
    for n in range(acc.shape[0]):
        for c in range(acc.shape[1]):
            b = bias[c]
            for y in range(acc.shape[2]):
                src = acc[n, c, y]
                dst = out[n, c, y]
                for x in range(acc.shape[3]):
                    dst[x] = src[x] + b


@njit(types.void(types.Array(types.float32, 3, "C", readonly=True), types.UniTuple(types.int64, 6),
                 types.float32[:, :, ::1], types.int64[:, :, ::1]), cache=True, nogil=True)
def _running_max(xp, geometry, out, index):  # pragma: no cover - compiled; run through running_max
    """sliding_window.running_max over (ky, kx) windows of each padded plane: m = -inf, j = 0; for each
    tap t (index ky*kw + kx, row-major): if t > m or (t is NaN and m is not): m = t, j = index.
    A row of outputs at a time, taps outer: the same taps in the same order for each output."""
    kh, kw, sy, sx, dy, dx = geometry
    ow = out.shape[2]
    for p in range(xp.shape[0]):
        for y in range(out.shape[1]):
            m = out[p, y]
            j = index[p, y]
            for x in range(ow):
                m[x] = F32(-np.inf)
                j[x] = 0
            for ky in range(kh):
                row = xp[p, y * sy + ky * dy]
                for kx in range(kw):
                    t = row[kx * dx:kx * dx + (ow - 1) * sx + 1:sx]
                    tap = ky * kw + kx
                    for x in range(ow):
                        v = t[x]
                        u = (v > m[x]) | ((v != v) & (m[x] == m[x]))  # the first maximum, the first NaN
                        m[x] = v if u else m[x]
                        j[x] = tap if u else j[x]


_VECTOR = types.Array(types.float32, 1, "C", readonly=True)


@njit(types.void(types.Array(types.float32, 3, "C", readonly=True), _VECTOR, _VECTOR, _VECTOR, _VECTOR,
                 types.float32[:, :, ::1]), cache=True, nogil=True)
def _batch_normalization(x, mean, scale, offset, root, out):  # pragma: no cover - compiled
    """out[n, c, i] = offset[c] + ((scale[c] * (x[n, c, i] - mean[c])) / root[c]), root = sqrt(variance + epsilon)."""
    for n in range(x.shape[0]):
        for c in range(x.shape[1]):
            m, s, o, r = mean[c], scale[c], offset[c], root[c]
            src = x[n, c]
            dst = out[n, c]
            for i in range(x.shape[2]):
                dst[i] = o + (s * (src[i] - m)) / r


_NO_SKIP = np.zeros((0, 0), dtype=bool)


def ordered_dot(a: np.ndarray, b: np.ndarray, skip: np.ndarray | None = None) -> np.ndarray:
    """linear_algebra.ordered_dot (same arguments, same bits), by the compiled loops.

    a [K, G, M], b [K, G, N] float32 with K, G equal and G * M * N > 0 (the caller checks);
    skip [K, N] bool or None. Returns out [G, M, N]."""
    k_dim, groups, m_dim = a.shape
    n_dim = b.shape[2]
    a = np.ascontiguousarray(a, dtype=F32)
    b = np.ascontiguousarray(b, dtype=F32)
    mask = _NO_SKIP if skip is None else np.ascontiguousarray(skip, dtype=bool)
    if n_dim >= m_dim:
        out = np.empty((groups, m_dim, n_dim), dtype=F32)
        _dot_rows(a, b, mask, out)
        return out
    out_t = np.empty((groups, n_dim, m_dim), dtype=F32)
    _dot_columns(a, b, mask, out_t)
    return np.ascontiguousarray(out_t.transpose(0, 2, 1))


def conv_wide(xg: np.ndarray, weights: np.ndarray, size: tuple[int, ...], stride: int, dilation: tuple[int, ...],
              out_shape: tuple[int, ...]) -> np.ndarray:
    """conv without bias, two spatial axes, the same stride s on both, read directly from the padded
    input xg [N, G, Cg, Hp, Wp] (no columns): weights a[(c, ky, kx), g, o] as ordered_dot's ->
    [N, G, Og, OH, OW] (a strided view), the sums of ordered_dot(weights, conv_columns(xg)), in the same order.

    Output (y, x) is position p = y*Wq + x of rows Wq long (the p with x >= OW are computed, not
    used). Stride 1: Wq = Wp and term (c, ky, kx) reads plane c at p + ky*dy*Wp + kx*dx. Stride s:
    the input split into its s*s phases (rows and columns i with i % s = r), each Hq x Wq (Hp, Wp
    rounded up to multiples of s with +0 never read by an output); tap (ky, kx) reads phase
    ((ky*dy) % s, (kx*dx) % s) of channel c at p + ((ky*dy) // s)*Wq + (kx*dx) // s: input row
    y*s + ky*dy is phase row y + (ky*dy) // s. Either way the reads of one term are consecutive."""
    n_batch, groups, cg, hp, wp = xg.shape
    oh, ow = out_shape
    hq, wq = -(-hp // stride), -(-wp // stride)
    xg = np.ascontiguousarray(xg, dtype=F32)
    if stride > 1:
        whole = np.zeros((n_batch, groups, cg, hq * stride, wq * stride), dtype=F32)
        whole[..., :hp, :wp] = xg
        xg = np.ascontiguousarray(whole.reshape(n_batch, groups, cg, hq, stride, wq, stride)
                                  .transpose(0, 1, 2, 4, 6, 3, 5))  # [N, G, Cg, s, s, Hq, Wq]
    wide = np.empty((n_batch, groups, weights.shape[2], oh * wq), dtype=F32)
    _conv_wide(xg.reshape(n_batch, groups, -1, hq * wq), np.ascontiguousarray(weights, dtype=F32),
               _wide_taps(cg, *size, *dilation, stride, wq), (oh - 1) * wq + ow, wide)
    return wide.reshape(n_batch, groups, -1, oh, wq)[..., :ow]  # a view: the caller's bias copies it


@functools.lru_cache(maxsize=256)
def _wide_taps(cg: int, kh: int, kw: int, dy: int, dx: int, stride: int, wq: int) -> np.ndarray:
    """conv_wide's (plane, offset) of each term k = (c, ky, kx), kept per geometry."""
    c, ky, kx = np.meshgrid(np.arange(cg), np.arange(kh) * dy, np.arange(kw) * dx, indexing="ij")
    plane = (c * stride + ky % stride) * stride + kx % stride
    table = np.stack([plane.reshape(-1), ((ky // stride) * wq + kx // stride).reshape(-1)], axis=1).astype(np.int64)
    table.setflags(write=False)
    return table


def zero_padded(x: np.ndarray, padding: tuple[tuple[int, int], tuple[int, int]]) -> np.ndarray:
    """windows.pad(x, [(0, 0), (0, 0), *padding], 'constant', +0) for x [N, C, H, W], padding >= 0."""
    (top, bottom), (left, right) = padding
    n, c, h, w = x.shape
    out = np.empty((n * c, h + top + bottom, w + left + right), dtype=F32)
    _zero_padded(np.ascontiguousarray(x, dtype=F32).reshape(n * c, h, w), top, left, out)
    return out.reshape(n, c, h + top + bottom, w + left + right)


def channel_bias(acc: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """acc [N, C, H, W] (any strides) + bias [C] per channel, a new C-contiguous array."""
    out = np.empty(acc.shape, dtype=F32)
    _channel_bias(acc, np.ascontiguousarray(bias, dtype=F32), out)
    return out


def running_max(xp: np.ndarray, size: tuple[int, int], stride: tuple[int, int], dilation: tuple[int, int],
                out_shape: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """sliding_window.running_max for windows over the last two axes of xp [..., Hp, Wp] (padded):
    the maximum ([..., OH, OW]) and its tap index, the same rule and order."""
    lead = xp.shape[:-2]
    planes = np.ascontiguousarray(xp, dtype=F32).reshape((-1,) + xp.shape[-2:])
    out = np.empty((planes.shape[0],) + tuple(out_shape), dtype=F32)
    index = np.empty(out.shape, dtype=np.int64)
    _running_max(planes, (*size, *stride, *dilation), out, index)
    return out.reshape(lead + tuple(out_shape)), index.reshape(lead + tuple(out_shape))


def row_sums(x: np.ndarray) -> np.ndarray:
    """reduce.ordered_sum's sums of x [rows, R] (each row from +0, terms in increasing r) -> [rows]."""
    out = np.empty(x.shape[0], dtype=F32)
    _row_sums(np.ascontiguousarray(x, dtype=F32), out)
    return out


def relu(x: np.ndarray) -> np.ndarray:
    """activation.relu's select(x > 0 or x is NaN, x, +0), one compiled pass (the same bits)."""
    flat = np.ascontiguousarray(x, dtype=F32).reshape(-1)
    out = np.empty_like(flat)
    _relu(flat, out)
    return out.reshape(x.shape)


def batch_normalization(x: np.ndarray, mean: np.ndarray, scale: np.ndarray, offset: np.ndarray,
                        root: np.ndarray) -> np.ndarray:
    """normalization.batch_normalization for per-channel parameters ([C] each, root = sqrt(variance
    + epsilon) computed by the caller), one compiled pass: the same four float32 operations per element."""
    n_batch, channels = x.shape[:2]
    flat = np.ascontiguousarray(x, dtype=F32).reshape(n_batch, channels, -1)
    out = np.empty_like(flat)
    _batch_normalization(flat, *(np.ascontiguousarray(p, dtype=F32) for p in (mean, scale, offset, root)), out)
    return out.reshape(x.shape)

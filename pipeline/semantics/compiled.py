"""ordered_dot as compiled loops (numba): the sums of linear_algebra.ordered_dot, written as the loop they are.

    out[g, m, n] = +0 + a[0, g, m] * b[0, g, n] + a[1, g, m] * b[1, g, n] + ... + a[K-1, g, m] * b[K-1, g, n]

Per output, the accumulator starts at +0 and receives its terms in increasing k, each product
`a * b` (a first) and each `+` one float32 rounding. The loops below say exactly that: `acc =
acc + w * x` with float32 operands, k the outer loop of every tile. They are compiled by numba
without fastmath and without parallel, so LLVM may neither contract `acc + w * x` into a fused
multiply-add nor reassociate a sum (no `contract`/`reassoc` flags: tests/semantics/test_compiled.py
checks the machine code for FMA instructions and the bits against the NumPy loop).

Tiling only chooses which outputs are computed together: a tile of ROWS x COLUMNS accumulators
stays in L1 while k runs over the whole sum, and the vectorizer computes neighbouring
accumulators of one tile row at once (independent sums, never two terms of one sum). The longer
of M and N is the tile row (`_dot_rows` when N >= M, `_dot_columns` holding out transposed
otherwise), which changes no value.

This module imports numba when imported; linear_algebra imports it only when ordered_dot first
runs, so listing doit tasks never pays for numba. Compiled code is cached by numba
(`cache=True`) in this folder's __pycache__ (outside artifacts/, never read by a step: only
machine code for these functions, keyed by numba on this file and the CPU).
"""

from __future__ import annotations

import numpy as np
from numba import njit, types

F32 = np.float32
# Accumulators of one tile (16 KiB): speed only, never the order of a sum.
ROWS = 8
COLUMNS = 512

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
                for k in range(k_dim):                     # k increasing: the order of every sum
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
                for k in range(k_dim):                     # k increasing: the order of every sum
                    w = a[k, g, m0:m0 + mt]
                    for n in range(nt):
                        if masked and skip[k, n0 + n]:
                            continue                       # a padded tap: no term
                        x = b[k, g, n0 + n]
                        row = acc[n]
                        for m in range(mt):
                            row[m] = row[m] + w[m] * x
                for n in range(nt):
                    o = out_t[g, n0 + n, m0:m0 + mt]
                    row = acc[n]
                    for m in range(mt):
                        o[m] = row[m]


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

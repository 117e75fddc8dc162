"""Matrix products of double-word balls at BLAS speed: Ozaki's error-free splitting.

`matmul(w, x)` encloses w @ x (np.matmul's broadcasting) where x is a Ball and w exact doubles or a
Ball. The double parts are split into slices whose products, and every sum of n of them, are exact
in float64, so that BLAS computes them without error in whatever order it adds (Ozaki, Ogita, Oishi,
Rump, "Error-free transformations of matrix multiplication by using fast routines of matrix
multiplication and its applications", Numer. Algorithms 59, 2012):

* each row of w (each column of x) is scaled by the power of two 2^e above its largest magnitude,
  and peeled with Rump's ExtractScalar, q = fl((sigma + p) - sigma), sigma = 2^(e + 53 - beta):
  q is a multiple of 2^(e - beta), |q| <= 2^e + 2^(e - beta), and p - q is exact with
  |p - q| <= 2^(e - beta) (Rump, Ogita, Oishi, SIAM J. Sci. Comput. 31(1), 2008, Lemma 3.3);
* with beta = floor((51 - ceil(log2 n)) / 2), every product of two slices is a multiple of the
  unit 2^(e_w + e_x - 2 beta) of at most (2^beta + 1)^2 units, and n of them add up to less than
  2^53 units: every partial sum is exact, in any order, with or without fused multiply-add;
* at most `SLICES` slices per operand (about 80 bits below the row's or column's largest
  magnitude); what is left, the low words, the radii and any product whose unit would be
  subnormal are bounded in the radius with |.| products rounded up (gamma_(n + 2)).

The exact slice products are added in double-word arithmetic (doubled.add), each addition's
relative error under DW_ERROR of the sum of the magnitudes.
"""

from __future__ import annotations

import contextlib
import math
from typing import Iterator

import numpy as np

from pipeline.numerics.doubled import DW_ERROR, TINY, U, Ball, fast_two_sum, two_sum, up, up_sum

SLICES = 4
_MIN_EXPONENT = -1022 + 2 * 53  # a slice below 2^this is left in the radius (its products could be subnormal)


@contextlib.contextmanager
def single_thread() -> Iterator[None]:
    """BLAS on one thread while the enclosure and the bound run: the exact products do not depend on it, but
    the bound's float64 sums would vary in their last bits with the thread count (artifacts must not), and on
    a machine shared by other jobs OpenBLAS's threads spent ten times the CPU for the same product
    (resnet8's enclosure: 0.65 s of CPU per vector against 0.067 s on one thread)."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        yield


def mm(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """np.matmul(a, b), with the shapes this package multiplies laid out as one BLAS product per stack: a 2-D
    a against a stack of b (the stack folded into b's columns), and the grouped convolution's [G, M, K] @
    [N, G, K, P] (numpy's broadcasting matmul is several times slower on them)."""
    if a.ndim == 2 and b.ndim > 2:
        k, p = b.shape[-2:]
        lead = b.shape[:-2]
        flat = np.moveaxis(b, -2, 0).reshape(k, -1)
        out = (a @ flat).reshape((a.shape[0],) + lead + (p,))
        return np.moveaxis(out, 0, -2)
    if a.ndim == 3 and b.ndim == 4 and b.shape[1] == a.shape[0]:
        n, g, k, p = b.shape
        flat = b.transpose(1, 2, 0, 3).reshape(g, k, n * p)
        return np.matmul(a, flat).reshape(g, a.shape[1], n, p).transpose(2, 0, 1, 3)
    return np.matmul(a, b)


def _beta(n: int) -> int:
    return max(1, (51 - math.ceil(math.log2(max(n, 2)))) // 2)


def _slices(a: np.ndarray, axis: int, beta: int) -> tuple[list[np.ndarray], np.ndarray]:
    """Slices of `a` along `axis` (the reduced axis: per row of w, per column of x) and the rest."""
    mu = np.max(np.abs(a), axis=axis, keepdims=True) if a.size else np.zeros(a.shape)
    _, e = np.frexp(mu)  # mu < 2^e (0 for a zero row)
    e = e.astype(np.int64)
    parts: list[np.ndarray] = []
    rest = a
    for _ in range(SLICES):
        if not np.any(rest) or int(np.max(np.where(mu > 0, e, _MIN_EXPONENT))) - beta < _MIN_EXPONENT:
            break
        sigma = np.ldexp(1.0, np.maximum(e + 53 - beta, _MIN_EXPONENT))
        q = (rest + sigma) - sigma
        rest = rest - q
        parts.append(q)
        e = e - beta
    return parts, rest


def _accumulate(terms: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Double-word sum of exact float64 arrays, largest first; the rounding bound DW_ERROR * k * sum |t|."""
    hi = terms[0]
    lo = np.zeros(np.shape(hi))
    mag = np.abs(terms[0])
    for t in terms[1:]:
        sh, sl = two_sum(hi, t)
        hi, lo = fast_two_sum(sh, sl + lo)
        mag = mag + np.abs(t)
    return hi, lo, DW_ERROR * len(terms) * mag


def _exact_products(w: np.ndarray, x: np.ndarray, n: int) -> tuple[list[np.ndarray], np.ndarray]:
    """The exact products of the slices of w (rows) and x (columns), and a bound on what the slices leave."""
    beta = _beta(n)
    ws, w_rest = _slices(w, -1, beta)
    xs, x_rest = _slices(x, -2, beta)
    products = [mm(a, b) for a in ws for b in xs]
    left = np.zeros(())
    if np.any(w_rest):
        left = left + mm(np.abs(w_rest), np.abs(x))
    if np.any(x_rest):
        left = left + mm(np.abs(w), np.abs(x_rest))
    return products, up_sum(left, n)


def matmul(w: np.ndarray | Ball, x: Ball) -> Ball:
    """An enclosure of w @ x for every point of the balls (module docstring)."""
    if not isinstance(w, Ball):
        w = Ball(np.asarray(w, np.float64), np.zeros(np.shape(w)), np.zeros(np.shape(w)))
    n = x.hi.shape[-2]
    products, left = _exact_products(w.hi, x.hi, n)
    out_shape = np.broadcast_shapes(w.hi.shape[:-1] + (1,), x.hi.shape[:-2] + (1, x.hi.shape[-1]))
    if not products:
        products = [np.zeros(out_shape)]
    # the low words: w.hi @ x.lo + w.lo @ x.hi in float64 (their rounding gamma_n |.| |.|), w.lo @ x.lo bounded
    cross = [mm(w.hi, x.lo)] if np.any(x.lo) else []
    cross_mag = mm(np.abs(w.hi), np.abs(x.lo)) if cross else np.zeros(())
    if np.any(w.lo):
        cross.append(mm(w.lo, x.hi))
        cross_mag = cross_mag + mm(np.abs(w.lo), np.abs(x.hi)) + mm(np.abs(w.lo), np.abs(x.lo))
    order = sorted(range(len(products)), key=lambda i: -float(np.max(np.abs(products[i]), initial=0.0)))
    hi, lo, rounding = _accumulate([products[i] for i in order] + cross)
    nu = (n + 2) * U
    radius = rounding + 2.0 * nu / (1.0 - nu) * cross_mag + left
    if np.any(x.rad):
        radius = radius + mm(np.abs(w.hi) + np.abs(w.lo) + w.rad, x.rad)
    if np.any(w.rad):
        radius = radius + mm(w.rad, np.abs(x.hi) + np.abs(x.lo))
    radius = up_sum(np.broadcast_to(radius, hi.shape), n) + TINY
    hi, lo = np.broadcast_to(hi, out_shape).copy(), np.broadcast_to(lo, out_shape).copy()
    return Ball(hi, lo, up(np.broadcast_to(radius, out_shape)))


def reduce_sum(x: Ball, axes: tuple[int, ...]) -> Ball:
    """The sum over `axes` (kept as size 1), as a product with a row of ones: exact slices again."""
    axes = tuple(sorted(a % x.hi.ndim for a in axes))
    keep = [a for a in range(x.hi.ndim) if a not in axes]
    perm = keep + list(axes)
    moved = x.map(lambda a: np.transpose(a, perm))
    lead = moved.hi.shape[:len(keep)]
    n = int(np.prod([x.hi.shape[a] for a in axes])) if axes else 1
    column = moved.map(lambda a: a.reshape(*lead, n, 1))
    total = matmul(np.ones((1, n)), column)
    shape = [1 if a in axes else d for a, d in enumerate(x.hi.shape)]
    return total.map(lambda a: a.reshape(shape))

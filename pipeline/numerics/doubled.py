"""Double-word balls: NumPy arrays that certainly contain real numbers, to about 2^-100 relative.

A `Ball` is three float64 arrays (hi, lo, rad): the set {hi + lo + e : |e| <= rad}. hi + lo is a
double-word number (Dekker; |lo| <= ulp(hi) / 2 after every operation here), rad a radius rounded
up. Every operation returns a ball that contains the exact result of the operation on every
point of its operands' balls:

* the double-word algorithms are the classical error-free ones (Knuth's TwoSum, Dekker's
  Fast2Sum and TwoProd with Veltkamp's split, as NumPy has no fused multiply-add), and their
  relative errors have published bounds: addition (Joldes, Muller, Popescu, ACM TOMS 44(2), 2017,
  "AccurateDWPlusDW") 3u^2, multiplication ("DWTimesDW1") and the product by a double ("DWTimesFP1")
  under 7u^2, division ("DWDivDW2") 15u^2 + 56u^3, with u = 2^-53. The radius adds `DW_ERROR` =
  64 u^2 of the result's magnitude for every operation, at least twice each bound;
* radii are computed in float64 with round to nearest and then inflated (`up`): a sum of n
  non-negative terms computed in any order is at least (1 - gamma_n) times the exact one, so a
  relative 2^-40 covers every sum of fewer than 2^12 terms, `up_sum` the longer ones;
* underflow: every operation adds `TINY` = 2^-960 absolute (TwoProd and TwoSum are exact only
  without underflow; no activation of a network comes near 2^-900);
* comparisons (relu, max) decide only when the balls are disjoint; overlapping balls give their
  hull, whose midpoint is then only double precision (rare: two values equal to 1e-30).

Why not python-flint's arb for everything: its matrix product takes 30 to 70 M multiply-adds per
second here, and every element crosses the Python boundary; the products of `products.py` on
these balls run at BLAS speed (docs/compare.md, "The enclosure"). Transcendental functions and
per-channel constants use arb (`to_arb`, `from_arb`), element by element.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

U = 2.0 ** -53
DW_ERROR = 64.0 * U * U
TINY = 2.0 ** -960
SPLITTER = 134217729.0  # 2^27 + 1, Veltkamp's split of a double into two 26-bit halves
_INFLATE = 1.0 + 2.0 ** -40


def up(x: np.ndarray | float) -> np.ndarray:
    """A radius computed with round to nearest from a few non-negative terms, rounded up."""
    return np.asarray(x, np.float64) * _INFLATE + TINY


def up_sum(x: np.ndarray, terms: int) -> np.ndarray:
    """A sum of `terms` non-negative products computed in any order (BLAS), rounded up: gamma_(terms + 2)."""
    nu = (terms + 2) * 2.0 ** -52
    return np.asarray(x, np.float64) * (1.0 + 2.0 * nu) + TINY * (terms + 1)


def two_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def fast_two_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """|a| >= |b| (or a == 0)."""
    s = a + b
    return s, b - (s - a)


def _split(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    c = SPLITTER * a
    hi = c - (c - a)
    return hi, a - hi


def two_prod(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    p = a * b
    ah, al = _split(a)
    bh, bl = _split(b)
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


@dataclass
class Ball:
    """hi + lo + [-rad, rad], element by element (module docstring)."""

    hi: np.ndarray
    lo: np.ndarray
    rad: np.ndarray

    @property
    def shape(self) -> tuple[int, ...]:
        return self.hi.shape

    @property
    def mag(self) -> np.ndarray:
        """An upper bound of |x| on the ball (a float64 number)."""
        return up(np.abs(self.hi) + np.abs(self.lo) + self.rad)

    def mid(self) -> np.ndarray:
        """The double closest to the midpoint (what the bound linearizes at)."""
        return self.hi + self.lo

    def width(self) -> np.ndarray:
        """The radius: every point of the ball is within it of the double-word midpoint hi + lo."""
        return self.rad

    def mid_error(self) -> np.ndarray:
        """A bound on the distance from mid() (a double) to any point of the ball."""
        return up(self.rad + np.abs((self.hi - (self.hi + self.lo)) + self.lo))

    def map(self, fn) -> "Ball":
        """The same data movement on the three arrays (reshape, transpose, take, pad with exact 0)."""
        return Ball(fn(self.hi), fn(self.lo), fn(self.rad))

    def distance(self, value: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(lower, upper) bounds of |value - x| over the points x of the ball: `value` (a float32 or float64
        result) is at least `lower` and at most `upper` from the exact number the ball contains."""
        v = np.asarray(value, np.float64)
        d_hi, d_lo = two_sum(v, -self.hi)
        d_hi, d_lo = fast_two_sum(d_hi, d_lo - self.lo)
        centre = np.abs(d_hi + d_lo)
        slack = up(np.abs((d_hi - (d_hi + d_lo)) + d_lo) + 4 * U * U * np.abs(d_hi))
        upper = up(centre + slack + self.rad)
        lower = np.maximum((centre - slack - self.rad) * (1.0 - 2.0 ** -40), 0.0)
        return lower, upper


def exact(values: np.ndarray) -> Ball:
    """Numbers known exactly as doubles (float32 weights and inputs, float64 constants)."""
    hi = np.asarray(values, np.float64)
    return Ball(hi.copy(), np.zeros_like(hi), np.zeros_like(hi))


def _normalized(hi: np.ndarray, lo: np.ndarray, rad: np.ndarray) -> Ball:
    h, l = fast_two_sum(hi, lo)
    return Ball(h, l, rad)


def add(x: Ball, y: Ball) -> Ball:
    """AccurateDWPlusDW (broadcasting)."""
    sh, sl = two_sum(x.hi, y.hi)
    th, tl = two_sum(x.lo, y.lo)
    vh, vl = fast_two_sum(sh, sl + th)
    zh, zl = fast_two_sum(vh, tl + vl)
    rad = up(x.rad + y.rad + DW_ERROR * np.abs(zh) + TINY)
    return Ball(zh, zl, rad)


def neg(x: Ball) -> Ball:
    return Ball(-x.hi, -x.lo, x.rad.copy())


def sub(x: Ball, y: Ball) -> Ball:
    return add(x, neg(y))


def mul(x: Ball, y: Ball) -> Ball:
    """DWTimesDW1; the radius |x| rad_y + |y| rad_x + rad_x rad_y plus the rounding."""
    ch, cl1 = two_prod(x.hi, y.hi)
    cl3 = cl1 + (x.hi * y.lo + x.lo * y.hi)
    zh, zl = fast_two_sum(ch, cl3)
    xm = np.abs(x.hi) + np.abs(x.lo)
    ym = np.abs(y.hi) + np.abs(y.lo)
    rad = up(xm * y.rad + ym * x.rad + x.rad * y.rad + DW_ERROR * np.abs(zh) + TINY)
    return Ball(zh, zl, rad)


def scale(x: Ball, c: np.ndarray) -> Ball:
    """x times exact doubles c (DWTimesFP1)."""
    c = np.asarray(c, np.float64)
    ch, cl1 = two_prod(x.hi, c)
    th, tl1 = fast_two_sum(ch, x.lo * c)
    zh, zl = fast_two_sum(th, tl1 + cl1)
    rad = up(np.abs(c) * x.rad + DW_ERROR * np.abs(zh) + TINY)
    return Ball(zh, zl, rad)


def div(x: Ball, y: Ball) -> Ball:
    """DWDivDW2 on the midpoints; the radius of x / y over both balls: (|x| rad_y + |y| rad_x) / (|y| (|y| - rad_y)),
    infinite where y's ball reaches 0."""
    th = x.hi / y.hi
    rh, rl1 = two_prod(y.hi, th)
    rh, rl = fast_two_sum(rh, y.lo * th + rl1)
    ph = x.hi - rh
    dl = x.lo - rl
    d = ph + dl
    zh, zl = fast_two_sum(th, d / y.hi)
    ym = np.abs(y.hi) - np.abs(y.lo)
    low = ym * (1.0 - 2.0 ** -50) - y.rad
    xm = np.abs(x.hi) + np.abs(x.lo)
    with np.errstate(divide="ignore", invalid="ignore"):
        spread = np.where(low > 0, (xm * y.rad + (ym + y.rad) * x.rad) / (ym * low), np.inf)
    rad = up(spread + DW_ERROR * np.abs(zh) + TINY)
    return Ball(zh, zl, rad)


def bounds(x: Ball) -> tuple[np.ndarray, np.ndarray]:
    """Float64 (lower, upper) endpoints, rounded outward."""
    centre = x.hi + x.lo
    slack = up(np.abs((x.hi - centre) + x.lo) + x.rad + 4 * U * np.abs(centre))
    return centre - slack, centre + slack


def hull(lower: np.ndarray, upper: np.ndarray) -> Ball:
    """The ball of an interval given by float64 endpoints (double precision midpoint)."""
    centre = 0.5 * lower + 0.5 * upper
    rad = up(np.maximum(upper - centre, centre - lower) + 4 * U * np.abs(centre))
    return Ball(centre, np.zeros_like(centre), rad)


def _certainly_greater(x: Ball, y: Ball) -> np.ndarray:
    """x > y on every pair of points of the balls."""
    d = (x.hi - y.hi)
    margin = up(np.abs(x.lo) + np.abs(y.lo) + x.rad + y.rad + 4 * U * np.abs(d))
    return d > margin


def _same(x: Ball, y: Ball) -> np.ndarray:
    return (x.hi == y.hi) & (x.lo == y.lo) & (x.rad == 0) & (y.rad == 0)


def _larger_mid(x: Ball, y: Ball) -> np.ndarray:
    return (x.hi > y.hi) | ((x.hi == y.hi) & (x.lo >= y.lo))


def _centred_on(centre: Ball, others: list[Ball]) -> Ball:
    """The ball at `centre`'s midpoint containing every point of `others` (a distance bounded in
    double-word arithmetic): where overlapping balls hold the maximum, it is one of them, within this."""
    radius = centre.rad
    for other in others:
        d = sub(other, Ball(centre.hi, centre.lo, np.zeros_like(centre.rad)))
        radius = np.maximum(radius, up(np.abs(d.hi) + np.abs(d.lo) + d.rad))
    return Ball(centre.hi, centre.lo, radius)


def maximum(x: Ball, y: Ball) -> Ball:
    """max(x, y): the larger ball where they are disjoint (or the same exact number); where they overlap, the
    ball at the larger midpoint wide enough for both (double-word precise, unlike a hull of float64 ends)."""
    x, y = _broadcast(x, y)
    gt, lt = _certainly_greater(x, y) | _same(x, y), _certainly_greater(y, x)
    out = _select(gt, x, y)
    undecided = ~(gt | lt)
    if undecided.any():
        centre = _select(_larger_mid(x, y), x, y)
        out = _select(undecided, _centred_on(centre, [x, y]), out)
    return out


def minimum(x: Ball, y: Ball) -> Ball:
    return neg(maximum(neg(x), neg(y)))


def relu(x: Ball) -> Ball:
    return maximum(x, exact(np.zeros(x.shape)))


def sign_decided(x: Ball) -> np.ndarray:
    """+1 / -1 where the whole ball is positive / negative, 0 where it contains 0."""
    zero = exact(np.zeros(x.shape))
    return np.where(_certainly_greater(x, zero), 1, np.where(_certainly_greater(zero, x), -1, 0))


def _broadcast(x: Ball, y: Ball) -> tuple[Ball, Ball]:
    shape = np.broadcast_shapes(x.shape, y.shape)
    return (x.map(lambda a: np.broadcast_to(a, shape)), y.map(lambda a: np.broadcast_to(a, shape)))


def _select(mask: np.ndarray, x: Ball, y: Ball) -> Ball:
    return Ball(np.where(mask, x.hi, y.hi), np.where(mask, x.lo, y.lo), np.where(mask, x.rad, y.rad))


def select(mask: np.ndarray, x: Ball, y: Ball) -> Ball:
    """Element by element: x where `mask` (a decided condition), else y."""
    x, y = _broadcast(x, y)
    return _select(np.broadcast_to(mask, x.shape), x, y)


def concatenate(parts: list[Ball], axis: int) -> Ball:
    return Ball(*(np.concatenate([getattr(p, k) for p in parts], axis) for k in ("hi", "lo", "rad")))


def stack(parts: list[Ball], axis: int = 0) -> Ball:
    return Ball(*(np.stack([getattr(p, k) for p in parts], axis) for k in ("hi", "lo", "rad")))


# --- arb (python-flint) for transcendental functions and per-channel constants ----------------------

PRECISION = 160  # bits of the arb evaluations (their results are rounded back to double-word balls)


def _flint():
    import flint

    flint.ctx.prec = PRECISION
    return flint


def to_arb(x: Ball) -> np.ndarray:
    """An object array of arb balls containing x."""
    flint = _flint()
    arb = flint.arb
    hi, lo, rad = (np.asarray(a, np.float64).ravel() for a in (x.hi, x.lo, x.rad))
    out = np.empty(hi.size, dtype=object)
    for i in range(hi.size):
        value = arb(float(hi[i])) + arb(float(lo[i]))
        r = float(rad[i])
        out[i] = value + arb(0, r) if r else value
    return out.reshape(x.shape)


def from_arb(values: np.ndarray) -> Ball:
    """The double-word ball of each arb ball (midpoint to about 2^-106, the radius rounded up)."""
    flint = _flint()
    arb = flint.arb
    flat = np.asarray(values, dtype=object).ravel()
    hi = np.empty(flat.size)
    lo = np.empty(flat.size)
    rad = np.empty(flat.size)
    for i, value in enumerate(flat):
        if not value.is_finite():
            hi[i], lo[i], rad[i] = 0.0, 0.0, np.inf
            continue
        mid = value.mid()
        h = float(mid)
        rest = mid - arb(h)
        l_ = float(rest)
        tail = abs(rest - arb(l_))
        hi[i], lo[i] = h, l_
        rad[i] = _float_up((value.rad() + tail).upper())
    shape = np.shape(values)
    h, l_ = fast_two_sum(hi, lo)
    return Ball(h.reshape(shape), l_.reshape(shape), up(rad.reshape(shape)))


def _float_up(value) -> float:
    """The smallest double at least the exact arb number `value`."""
    arb = _flint().arb
    f = float(value)
    if not arb(f) >= value:
        f = float(np.nextafter(f, np.inf))
    return f


def apply_arb(x: Ball, fn) -> Ball:
    """fn (an arb -> arb function) on every element: rigorous, one Python call per element."""
    values = to_arb(x)
    flat = values.ravel()
    out = np.empty(flat.size, dtype=object)
    for i, value in enumerate(flat):
        out[i] = fn(value)
    return from_arb(out.reshape(values.shape))


def constant_arb(values: np.ndarray) -> np.ndarray:
    """Exact doubles as arb balls (for per-channel constants computed in arb)."""
    return to_arb(exact(values))

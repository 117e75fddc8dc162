"""Issue 41: double-word balls and Ozaki products contain the exact results, checked in exact rational
arithmetic (Python's fractions: nobody here wrote it), with radii at the 2^-100 level the enclosure needs."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from pipeline.numerics import doubled as D
from pipeline.numerics import products


def _fractions(ball: D.Ball) -> np.ndarray:
    return np.vectorize(lambda h, l: Fraction(float(h)) + Fraction(float(l)), otypes=[object])(ball.hi, ball.lo)


def _inside(ball: D.Ball, exact: np.ndarray, relative: float) -> None:
    mid = _fractions(ball)
    for m, e, r, h in zip(mid.ravel(), np.asarray(exact, dtype=object).ravel(), ball.rad.ravel(), ball.hi.ravel()):
        gap = abs(m - e)
        assert gap <= Fraction(float(r)), (float(gap), float(r))
        assert float(r) <= relative * max(abs(float(h)), 1e-300) + 1e-290, (float(r), float(h))


def _ball(rng: np.random.Generator, shape: tuple[int, ...], spread: int = 20) -> D.Ball:
    """Double-word numbers with full low words and exponents over 2^-spread .. 2^spread."""
    hi = rng.standard_normal(shape) * np.exp2(rng.integers(-spread, spread, shape))
    lo = hi * rng.uniform(-2.0 ** -54, 2.0 ** -54, shape)
    hi, lo = D.fast_two_sum(hi, lo)
    return D.Ball(hi, lo, np.zeros(shape))


@pytest.mark.parametrize("seed", range(3))
def test_add_mul_div_scale_contain_the_exact_result(seed: int) -> None:
    rng = np.random.default_rng(seed)
    x, y = _ball(rng, (40,)), _ball(rng, (40,))
    fx, fy = _fractions(x), _fractions(y)
    _inside(D.add(x, y), fx + fy, 2.0 ** -95 * 2.0 ** 40)  # cancellation: relative to the operands, not the sum
    _inside(D.mul(x, y), fx * fy, 2.0 ** -98)
    _inside(D.div(x, y), fx / fy, 2.0 ** -97)
    c = rng.standard_normal(40).astype(np.float32).astype(np.float64)
    _inside(D.scale(x, c), fx * np.vectorize(Fraction, otypes=[object])(c), 2.0 ** -98)


def test_a_radius_propagates_and_a_divisor_reaching_zero_is_infinite() -> None:
    x = D.Ball(np.array([1.0, 1.0]), np.zeros(2), np.array([1e-20, 1e-20]))
    y = D.Ball(np.array([3.0, 1e-25]), np.zeros(2), np.array([0.0, 1e-20]))
    q = D.div(x, y)
    assert q.rad[0] >= 1e-20 / 3 and np.isinf(q.rad[1])
    s = D.add(x, D.neg(x))
    assert s.hi[0] == 0.0 and s.rad[0] >= 2e-20


def test_max_relu_decide_when_disjoint_and_take_the_hull_otherwise() -> None:
    a = D.Ball(np.array([1.0, 2.0, -1.0, 0.0]), np.zeros(4), np.array([0.0, 0.5, 0.0, 0.0]))
    b = D.Ball(np.array([2.0, 2.2, -3.0, 0.0]), np.zeros(4), np.array([0.0, 0.0, 0.0, 0.0]))
    m = D.maximum(a, b)
    assert m.hi[0] == 2.0 and m.rad[0] == 0 and m.hi[2] == -1.0 and m.rad[3] == 0  # decided, and the same exact 0
    low, high = D.bounds(m)
    assert low[1] <= 2.2 and high[1] >= 2.5  # overlapping: the hull of [1.5, 2.5] and 2.2 from above 2.2
    r = D.relu(D.Ball(np.array([-1.0, 1e-30, 3.0]), np.zeros(3), np.array([0.0, 1e-29, 0.0])))
    assert r.hi[0] == 0 and r.rad[0] == 0 and r.hi[2] == 3.0
    low, high = D.bounds(r)
    assert low[1] <= 0.0 <= high[1] and high[1] >= 1.1e-29


def test_distance_brackets_the_true_distance() -> None:
    rng = np.random.default_rng(4)
    x = _ball(rng, (30,), 4)
    x = D.Ball(x.hi, x.lo, np.full(30, 1e-25))
    value = (x.hi * (1 + rng.uniform(-1e-6, 1e-6, 30))).astype(np.float32).astype(np.float64)
    lower, upper = x.distance(value)
    exact = np.abs(np.vectorize(Fraction, otypes=[object])(value) - _fractions(x))
    for lo, hi, e in zip(lower, upper, exact):
        assert Fraction(float(lo)) <= e + Fraction(1, 10 ** 24) and e <= Fraction(float(hi)) + Fraction(1, 10 ** 24)
        assert hi - lo <= 2.1e-25 + 1e-11 * hi  # the bracket: the ball plus 2^-40 relative (radii rounded up)


def test_arb_round_trip_is_rigorous() -> None:
    flint = D._flint()
    x = D.Ball(np.array([0.1, -2.5]), np.array([1e-18, 0.0]), np.array([0.0, 1e-30]))
    values = D.to_arb(x)
    assert values[0].contains(flint.arb(0.1) + flint.arb(1e-18))
    y = D.apply_arb(x, lambda a: a.exp())
    for k in range(2):
        exact = (flint.arb(float(x.hi[k])) + flint.arb(float(x.lo[k]))).exp()
        back = flint.arb(float(y.hi[k])) + flint.arb(float(y.lo[k])) + flint.arb(0, float(y.rad[k]))
        assert back.contains(exact)
    assert y.rad[0] < 1e-28


def _exact_matmul(w: np.ndarray, x: D.Ball) -> np.ndarray:
    fw = np.vectorize(Fraction, otypes=[object])(w)
    return fw @ _fractions(x)


@pytest.mark.parametrize("seed", range(3))
def test_ozaki_products_are_exact_to_the_radius(seed: int) -> None:
    """float32 weights over 2^-30 .. 2^5 (rows of very different magnitudes), double-word activations, zeros."""
    rng = np.random.default_rng(seed)
    w = (rng.standard_normal((5, 37)) * np.exp2(rng.integers(-30, 5, (5, 37)))).astype(np.float32).astype(np.float64)
    w[2, :] = 0.0
    x = _ball(rng, (37, 6), 10)
    x.hi[:, 3] = 0.0
    x.lo[:, 3] = 0.0
    got = products.matmul(w, x)
    exact = _exact_matmul(w, x)
    magnitude = np.abs(w) @ (np.abs(x.hi) + np.abs(x.lo))
    mid = _fractions(got)
    for m, e, r, g in zip(mid.ravel(), exact.ravel(), got.rad.ravel(), magnitude.ravel()):
        assert abs(m - e) <= Fraction(float(r))
        assert float(r) <= 2.0 ** -95 * g + 1e-280


def test_products_of_two_balls_and_batched_shapes() -> None:
    rng = np.random.default_rng(9)
    a, b = _ball(rng, (2, 3, 4), 5), _ball(rng, (2, 4, 5), 5)
    a = D.Ball(a.hi, a.lo, np.full(a.shape, 1e-22))
    got = products.matmul(a, b)
    for k in range(2):
        exact = _fractions(D.Ball(a.hi[k], a.lo[k], a.rad[k])) @ _fractions(D.Ball(b.hi[k], b.lo[k], b.rad[k]))
        mid = _fractions(D.Ball(got.hi[k], got.lo[k], got.rad[k]))
        spread = np.abs(b.hi[k]).sum(axis=0) * 1e-22
        for m, e, r, s in zip(mid.ravel(), exact.ravel(), got.rad[k].ravel(), np.broadcast_to(spread, (3, 5)).ravel()):
            assert abs(m - e) <= Fraction(float(r)) and float(r) >= s
    total = products.reduce_sum(b, (1,))
    assert total.shape == (2, 1, 5)

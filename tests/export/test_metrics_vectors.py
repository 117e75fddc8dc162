"""pipeline.numerics.metrics (ULP on the monotonic line, NaN, signed zero) and
pipeline.numerics.vectors (the one rule for drawing validation inputs)."""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.numerics.metrics import UNORDERED, ErrorAccumulator, compare_arrays, ordered_int, ulp_distance, within_tolerance
from pipeline.numerics.vectors import Distribution, InputSpec, draw_vectors, iter_vectors

F32 = np.float32


def test_ordered_int_is_monotonic_and_merges_zeros() -> None:
    values = np.array([-np.inf, -3.0, -1e-45, -0.0, 0.0, 1e-45, 1.0, np.inf], dtype=F32)
    line = ordered_int(values)
    assert line[3] == line[4] == 0
    assert all(np.diff(np.delete(line, 3)) > 0)


def test_ulp_distance() -> None:
    one = F32(1.0)
    assert ulp_distance(np.array([one]), np.array([np.nextafter(one, F32(2))]))[0] == 1
    assert ulp_distance(np.array([F32(-0.0)]), np.array([F32(0.0)]))[0] == 0
    assert ulp_distance(np.array([F32(1e-45)]), np.array([F32(-1e-45)]))[0] == 2
    assert ulp_distance(np.array([np.nan], F32), np.array([np.nan], F32))[0] == 0
    assert ulp_distance(np.array([np.nan], F32), np.array([1.0], F32))[0] == UNORDERED
    big = ulp_distance(np.array([np.inf], F32), np.array([-np.inf], F32))[0]
    assert big == 2 * 0x7F800000 < UNORDERED


def test_compare_arrays_measures() -> None:
    stats = compare_arrays(np.array([1.0, 2.0, 0.0, 4.0], F32), np.array([1.0, 2.5, 0.0, 3.0], F32))
    assert stats.max_abs_error == 1.0 and stats.mean_abs_error == pytest.approx(0.375)
    assert stats.max_rel_error == pytest.approx(1 / 3)
    assert stats.worst["index"] == [3] and stats.exact_elements == 2
    assert within_tolerance(stats, 1.0)[0] and not within_tolerance(stats, 0.5)[0]
    assert not within_tolerance(stats, 1.0, max_rel_error=0.1)[0]


def test_nan_mismatch_fails_any_tolerance() -> None:
    stats = compare_arrays(np.array([np.nan, 1.0], F32), np.array([0.0, 1.0], F32))
    assert stats.nan_mismatches == 1 and stats.max_ulp == UNORDERED
    verdict, reason = within_tolerance(stats, 1e9)
    assert not verdict and "NaN" in reason
    assert stats.to_json()["worst"]["actual"] == "nan"


def test_accumulator_over_vectors_keeps_the_worst() -> None:
    acc = ErrorAccumulator()
    acc.add(np.array([1.0], F32), np.array([1.5], F32), vector=0)
    acc.add(np.array([1.0], F32), np.array([3.0], F32), vector=1)
    acc.add(np.array([1.0], F32), np.array([1.25], F32), vector=2)
    stats = acc.stats()
    assert stats.max_abs_error == 2.0 and stats.worst["vector"] == 1 and stats.elements == 3
    with pytest.raises(ValueError):
        acc.add(np.zeros(2, F32), np.zeros(3, F32))


def test_infinities() -> None:
    stats = compare_arrays(np.array([np.inf, 1.0], F32), np.array([np.inf, np.inf], F32))
    assert stats.max_abs_error == np.inf and stats.to_json()["max_abs_error"] == "inf"


def _spec(name: str, shape: tuple[int, ...], low: float = 0.0, high: float = 1.0) -> InputSpec:
    return InputSpec(name, shape, Distribution("uniform", low, high))


def test_vector_rule_one_input_matches_a_single_draw() -> None:
    """For one input the rule is the stream of rng.uniform(low, high, (count, *shape))
    (what models/_tools/measure.py draws)."""
    vectors = draw_vectors({"x": _spec("x", (2, 3), -1.0, 2.0)}, 4, 1234)
    bulk = np.random.default_rng(1234).uniform(-1.0, 2.0, (4, 2, 3)).astype(F32)
    assert all(np.array_equal(v["x"], bulk[i]) for i, v in enumerate(vectors))
    assert all(v["x"].dtype == F32 for v in vectors)


def test_vector_rule_inputs_in_name_order_vector_after_vector() -> None:
    specs = [_spec("b", (2,)), _spec("a", (3,))]
    vectors = list(iter_vectors(specs, 2, 7))
    rng = np.random.default_rng(7)
    expected = []
    for _ in range(2):
        a = rng.uniform(0.0, 1.0, (3,)).astype(F32)
        b = rng.uniform(0.0, 1.0, (2,)).astype(F32)
        expected.append({"a": a, "b": b})
    for got, want in zip(vectors, expected):
        assert np.array_equal(got["a"], want["a"]) and np.array_equal(got["b"], want["b"])

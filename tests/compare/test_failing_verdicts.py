"""Issue 42: the defects a surviving mutant of the numeric verdict stood for, each planted and seen red.

A model with one good and one diverging output, a relative tolerance exceeded while the absolute one
holds, the report figures of a failing comparison (per-output verdict, the first element beyond the
tolerance, the mean over every vector), NaN against a NaN of the other sign, and a one-vector
validation, which cannot tell a constant output from a working one.
"""

from __future__ import annotations

import numpy as np

from pipeline.compare.numeric import compare, first_exceeding
from pipeline.numerics.metrics import ErrorAccumulator, within_tolerance
from pipeline.numerics.tolerance import discriminating, spread


def _two_outputs() -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Expected outputs `a` and `b`; the actual `a` matches, the actual `b` diverges at vector 1, element 2."""
    expected = {"a": np.arange(6, dtype=np.float32).reshape(2, 3), "b": np.ones((2, 3), np.float32)}
    actual = {"a": expected["a"].copy(), "b": expected["b"].copy()}
    actual["b"][1, 2] = 5.0
    return actual, expected


def test_one_diverging_output_of_two_fails_the_comparison_in_both_modes() -> None:
    actual, expected = _two_outputs()
    for result in (compare(actual, expected, exact=True), compare(actual, expected, max_abs_error=1e-3)):
        assert [o.passed for o in result.outputs] == [True, False]
        assert not result.passed                          # all outputs, not any
        assert result.first_failure().name == "b"
        verdicts = {o["output"]: o["verdict"] for o in result.to_json()["outputs"]}
        assert verdicts == {"a": "pass", "b": "fail"}


def test_the_failing_output_s_report_names_the_first_element_beyond_the_tolerance() -> None:
    e = np.zeros((3, 4), np.float32)
    a = e.copy()
    a[0, 3] = 1e-4          # the first divergence, within the tolerance
    a[1, 2] = 0.5           # the first element beyond it
    a[2, 0] = 0.75          # the largest, later
    out = compare({"y": a}, {"y": e}, max_abs_error=1e-3).outputs[0]
    first = first_exceeding("y", a, e, 1e-3)
    assert (first.vector, first.flat_index, first.index) == (1, 2, [2])
    assert not out.passed and "first element beyond the tolerance: output y, vector 1, element [2]" in out.reason
    report = out.to_json()
    assert report["verdict"] == "fail" and report["reason"] == out.reason
    assert report["first_divergence"]["vector"] == 0 and report["first_divergence"]["index"] == [3]
    assert report["max_abs_error"] == 0.75 and report["worst"]["vector"] == 2


def test_a_relative_tolerance_is_applied_when_the_absolute_one_holds() -> None:
    e = np.array([[100.0, 2.0]], np.float32)
    a = np.array([[100.0, 2.1]], np.float32)   # 0.1 absolute, 5 % relative
    assert compare({"y": a}, {"y": e}, max_abs_error=1.0).passed
    failed = compare({"y": a}, {"y": e}, max_abs_error=1.0, max_rel_error=0.01)
    assert not failed.passed and "max relative error" in failed.outputs[0].reason
    assert compare({"y": a}, {"y": e}, max_abs_error=1.0, max_rel_error=0.06).passed
    stats = failed.outputs[0].stats
    assert not within_tolerance(stats, None, 0.01)[0] and within_tolerance(stats, None, None)[0]


def test_the_mean_abs_error_is_over_every_vector_not_the_last() -> None:
    e = np.zeros((3, 2), np.float32)
    a = np.array([[0.5, 0.5], [0.25, 0.25], [0.0, 0.0]], np.float32)   # the last vector is exact
    result = compare({"y": a}, {"y": e}, max_abs_error=1.0)
    assert result.outputs[0].stats.mean_abs_error == 0.25
    assert result.measured()["mean_abs_error"] == 0.25
    accumulator = ErrorAccumulator()
    for v in range(3):
        accumulator.add(a[v], e[v], vector=v)
    assert accumulator.stats().mean_abs_error == 0.25 and accumulator.stats().elements == 6


def test_nan_against_a_nan_of_the_other_sign_agrees_and_against_a_number_fails() -> None:
    positive = np.array([[np.nan, 1.0]], np.float32)
    negative = positive.copy()
    negative.view(np.uint32)[0, 0] = 0xFFC00000   # -NaN
    exact = compare({"y": negative}, {"y": positive}, exact=True)
    assert exact.passed and exact.outputs[0].bit_identical and exact.measured()["max_ulp"] == 0
    assert exact.outputs[0].signed_zero_mismatches == 0 and exact.measured()["nan_mismatches"] == 0
    assert compare({"y": negative}, {"y": positive}, max_abs_error=0.0).passed
    number = np.array([[0.0, 1.0]], np.float32)
    for kwargs in ({"exact": True}, {"max_abs_error": 1e9}):
        result = compare({"y": number}, {"y": negative}, **kwargs)
        assert not result.passed and result.to_json()["outputs"][0]["verdict"] == "fail"
    assert first_exceeding("y", number, negative, 1e9).index == [0]


def test_a_one_vector_validation_does_not_discriminate() -> None:
    one = np.array([[0.0, 10.0, -3.0]])
    assert spread(one) == 0.0
    assert not discriminating(spread(one), 1e-6)[0]
    assert "a constant output would pass" in discriminating(spread(one), 1e-6)[1]
    two = np.array([[0.0, 10.0, -3.0], [0.5, 10.0, -5.0]])
    assert spread(two) == 2.0 and discriminating(spread(two), 1.0)[0]
    assert not discriminating(spread(two), 2.0)[0]      # equal to the tolerance: not more than it


def test_the_tolerance_rule_s_figures_as_reported() -> None:
    from pipeline.numerics.tolerance import effective_tolerance

    rule = effective_tolerance(1e-5, float("inf"), 2e-6)
    assert rule.to_json() == {"effective_max_abs_error": 1e-5, "limit_max_abs_error": 1e-5,
                              "computed_max_abs_error": "inf", "measured_rounding_max_abs_error": 2e-6,
                              "basis": "deploy.yaml limit", "justified": True, "reason": rule.reason}
    assert effective_tolerance(1e-5, None).reason == ("no computed bound (not evaluated); rounding not measured "
                                                       "against the exact result")
    assert effective_tolerance(1e-5, None, None, "no rule for Foo").reason.startswith("no computed bound (no rule for Foo)")


def test_the_rule_when_even_the_measured_rounding_exceeds_the_limit() -> None:
    from pipeline.numerics.tolerance import effective_tolerance

    rule = effective_tolerance(1e-6, 1e-3, 4e-6)
    assert (rule.effective, rule.limit, rule.computed, rule.measured_rounding, rule.basis, rule.justified) == \
        (1e-6, 1e-6, 1e-3, 4e-6, "deploy.yaml limit", False)
    assert "(4.000e-06) exceeds it too" in rule.reason and "of at least 4.0e-06 would be justified" in rule.reason


def test_bound_discrimination_at_its_boundary() -> None:
    from pipeline.numerics.tolerance import bound_discrimination

    assert bound_discrimination(100 * 1e-8, 1e-8, 1e-6) == (True, "")          # exactly 100 times: discriminates
    assert not bound_discrimination(100.5 * 1e-8, 1e-8, 1e-6)[0]
    tiny = 2.0 ** -149                                                            # nothing measured, magnitude 0
    assert bound_discrimination(100 * tiny, 0.0, 0.0) == (True, "")
    assert not bound_discrimination(101 * tiny, 0.0, 0.0)[0]


def test_the_error_measures_as_reported() -> None:
    from pipeline.numerics.metrics import UNORDERED, compare_arrays

    stats = compare_arrays(np.array([np.nan, 1.0, 2.0], np.float32), np.array([0.0, 1.0, 2.5], np.float32))
    assert UNORDERED == 2 ** 32 and stats.max_ulp == 2 ** 32 and stats.nan_mismatches == 1
    assert stats.to_json() == {"elements": 3, "exact_elements": 1, "max_abs_error": 0.5, "mean_abs_error": 0.25,
                               "max_rel_error": 0.2, "max_ulp": 2 ** 32, "nan_mismatches": 1,
                               "worst": {"vector": None, "index": [0], "actual": "nan", "expected": 0.0,
                                         "nan_mismatch": True}}


def test_the_worst_element_is_the_first_of_equal_errors_and_expected_values_are_float32() -> None:
    accumulator = ErrorAccumulator()
    for v in range(3):
        accumulator.add(np.array([1.0, 0.5], np.float32), np.array([1.0, 0.0], np.float32), vector=v)
    assert accumulator.stats().worst["vector"] == 0 and accumulator.stats().worst["index"] == [1]
    # a float64 expected value is compared as the float32 it rounds to (the outputs are float32)
    exact = ErrorAccumulator()
    exact.add(np.array([0.1], np.float32), np.array([0.1], np.float64))
    assert exact.stats().max_abs_error == 0.0 and exact.stats().exact_elements == 1


def test_the_report_of_a_failing_comparison_field_by_field() -> None:
    e = np.array([[1.0, 2.0], [4.0, -8.0]], np.float32)
    a = e.copy()
    a[1, 1] = np.nan
    result = compare({"y": a}, {"y": e}, max_abs_error=1e-3)
    assert not result.passed
    report = result.to_json()
    assert report["summary"] == {"outputs": 1, "vectors": 2, "max_abs_error": 0.0, "mean_abs_error": 0.0,
                                 "max_rel_error": 0.0, "max_ulp": 2 ** 32, "nan_mismatches": 1, "bit_identical": False,
                                 "top1_agreement": 0.5}      # argmax takes the NaN of vector 1 as its maximum
    assert report["outputs"][0]["first_divergence"] == {
        "output": "y", "vector": 1, "flat_index": 1, "index": [1], "actual": "nan", "expected": -8.0,
        "actual_bits": "0x7fc00000", "expected_bits": "0xc1000000", "ulp": 2 ** 32}
    assert result.outputs[0].divergence.describe() == \
        "output y, vector 1, element [1] (flat 1): nan (0x7fc00000) vs -8.0 (0xc1000000), 4294967296 ULP"
    assert report["outputs"][0]["top1_agreement"] == 1 and report["outputs"][0]["top1_vectors"] == 2


def test_the_first_element_beyond_the_tolerance_on_values_away_from_zero() -> None:
    e = np.array([[1.0, -3.0, 5.0]], np.float32)
    a = np.array([[1.0, -3.0005, 5.5]], np.float32)     # within 1e-3, then beyond
    first = first_exceeding("y", a, e, 1e-3)
    assert first.index == [2] and first.actual == np.float32(5.5) and first.expected == 5.0
    assert first_exceeding("y", a, e, 1.0) is None
    assert first_exceeding("y", np.array([[np.inf, 2.0]], np.float32), np.array([[np.inf, 2.0]], np.float32), 0.0) is None


def test_top1_takes_the_first_maximum_per_vector() -> None:
    from pipeline.compare.numeric import top1

    e = np.array([[0.0, 1.0, 1.0], [3.0, 2.0, 1.0]], np.float32)
    assert top1(np.array([[0.0, 1.0, 0.5], [1.0, 2.0, 1.0]], np.float32), e) == (1, 2)
    assert top1(e.reshape(2, 3, 1), e.reshape(2, 3, 1)) == (2, 2)


def test_a_comparison_of_no_outputs_measures_nothing_and_fails_nothing() -> None:
    from pipeline.compare.numeric import Comparison

    assert Comparison().measured() == {"outputs": 0, "vectors": 0, "max_abs_error": 0.0, "mean_abs_error": 0.0,
                                       "max_rel_error": 0.0, "max_ulp": 0, "nan_mismatches": 0, "bit_identical": True,
                                       "top1_agreement": 1.0}
    assert Comparison().first_failure() is None


def test_within_tolerance_names_the_bound_and_where_it_was_worst() -> None:
    accumulator = ErrorAccumulator()
    accumulator.add(np.array([1.0, 2.0, 3.0], np.float32), np.array([1.0, 2.0, 3.0], np.float32), vector=0)
    accumulator.add(np.array([1.0, 2.0, 1.5], np.float32), np.array([1.0, 2.0, 1.0], np.float32), vector=1)
    stats = accumulator.stats()
    assert within_tolerance(stats, 1.0) == (True, "")
    assert within_tolerance(stats, 1e-3) == (False, "max abs error 0.5 exceeds 0.001 (vector 1, element [2]: 1.5 vs "
                                                    "reference 1.0)")
    assert within_tolerance(stats, None, 0.1) == (False, "max relative error 0.5 exceeds 0.1")
    assert within_tolerance(stats, max_ulp=0)[1] == "max ULP distance 4194304 exceeds 0"
    assert within_tolerance(stats, max_ulp=4194304) == (True, "")


def test_a_justified_tolerance_reports_the_deploy_limit_it_fits_under() -> None:
    from pipeline.numerics.tolerance import effective_tolerance

    rule = effective_tolerance(1e-5, 2e-6)
    assert rule.justified and rule.limit == 1e-5 and rule.to_json()["limit_max_abs_error"] == 1e-5


def test_spread_is_measured_in_float64_and_is_zero_for_an_output_without_elements() -> None:
    values = np.array([[1.0], [2.0 ** 25]], np.float32)     # 2**25 - 1 is not a float32: float32 would say 2**25
    assert spread(values) == 2.0 ** 25 - 1
    assert spread(np.zeros((3, 0), np.float32)) == 0.0

"""Issue 42: the export step's verdicts from a validation report (pipeline/export/checks.py), on planted reports.

Two outputs, one of them wrong in the way each check exists to catch: beyond the tolerance (export.numeric),
an unjustified tolerance (export.tolerance), farther from the exact result (the enclosure) than its bound
(export.bound_*), constant across the vectors (export.discriminating); and a NaN or infinite parameter
(export.finite_parameters). Each check fails on the one bad output and passes without it.
"""

from __future__ import annotations

import numpy as np

from pipeline.export.checks import (BOUND_ONNXRUNTIME, BOUND_REFERENCE, DISCRIMINATING, NUMERIC, TOLERANCE,
                                    bound_results, discriminating_result, first_non_finite, numeric_result,
                                    tolerance_result)
from pipeline.export.validate import OutputResult, ValidationReport, ValidationSettings
from pipeline.ledger.checks import Verdict
from pipeline.numerics.metrics import compare_arrays
from pipeline.numerics.tolerance import effective_tolerance
from pipeline.project.deploy import Tolerance

GOOD, BAD = "good", "bad"


def _output(name: str, error: float, **fields) -> OutputResult:  # type: ignore[no-untyped-def]
    stats = compare_arrays(np.array([[1.0, 2.0]], np.float32), np.array([[1.0, 2.0 + error]], np.float32))
    passed = error <= 1e-5
    return OutputResult(name, f"t_{name}", [1, 2], stats, passed, "" if passed else f"output {name}: beyond", **fields)


def _report(outputs: list[OutputResult], vectors: int = 4, yardstick: dict | None = None) -> ValidationReport:  # type: ignore[type-arg]
    settings = ValidationSettings({}, vectors, 7, Tolerance(1e-5, 1e-3), "models/m/deploy.yaml")
    return ValidationReport("m", settings, {"runtime": "onnxruntime", "version": "1"}, outputs, {}, {},
                            enclosure=yardstick if yardstick is not None else {"vectors": 2, "bound": {"unavailable": ""}})


def test_export_numeric_fails_on_the_one_output_beyond_the_tolerance() -> None:
    passing = numeric_result("m", _report([_output(GOOD, 0.0), _output(BAD, 0.0)]), [], [])
    assert passing.check_id == NUMERIC and passing.verdict is Verdict.PASS and passing.reason == ""
    failing = numeric_result("m", _report([_output(GOOD, 0.0), _output(BAD, 0.5)]), ["r"], ["w"])
    assert failing.verdict is Verdict.FAIL and failing.reason == "output bad: beyond"
    assert failing.measured["bad.max_abs_error"] == 0.5 and failing.measured["good.max_abs_error"] == 0.0
    assert failing.measured["bad.nan_mismatches"] == 0 and failing.measured["vectors"] == 4
    assert failing.measured["tolerance_max_abs_error"] == 1e-5 and failing.measured["tolerance_max_rel_error"] == 1e-3
    assert (failing.read, failing.written) == (["r"], ["w"])


def test_export_tolerance_fails_on_the_one_unjustified_output_and_is_not_run_without_a_yardstick() -> None:
    justified = effective_tolerance(1e-5, 2e-6)
    unjustified = effective_tolerance(1e-5, 1e-3, 1e-4)
    assert justified.justified and not unjustified.justified
    report = _report([_output(GOOD, 0.0, tolerance=justified), _output(BAD, 0.0, tolerance=unjustified)])
    failing = tolerance_result("m", report, [], [])
    assert failing.check_id == TOLERANCE and failing.verdict is Verdict.FAIL
    assert failing.reason.startswith("output 'bad': computed bound 1.000e-03 exceeds") and "'good'" not in failing.reason
    assert failing.measured["bad.justified"] is False and failing.measured["good.effective_max_abs_error"] == 2e-6
    passing = tolerance_result("m", _report([_output(GOOD, 0.0, tolerance=justified)]), [], [])
    assert passing.verdict is Verdict.PASS and passing.reason.startswith("output 'good': computed bound")
    for yardstick, why in (({"unavailable": "onnx.reference refused Foo", "vectors": 2}, "onnx.reference refused Foo"),
                           ({"vectors": 0}, "no vector")):
        not_run = tolerance_result("m", _report(report.outputs, yardstick=yardstick), [], [])
        assert not_run.verdict is Verdict.NOT_RUN and not_run.reason == f"no enclosure of the exact result: {why}"


def test_export_bounds_fail_on_the_side_farther_than_its_bound() -> None:
    over = {"reference_over_bound": 0, "reference_to_bound": 0.5, "onnxruntime_over_bound": 3,
            "onnxruntime_to_bound": 2.5, "reference_max_abs": 1e-7}
    report = _report([_output(GOOD, 0.0, enclosure={"reference_over_bound": 0, "onnxruntime_over_bound": 0}),
                      _output(BAD, 0.0, enclosure=over)])
    reference, onnxruntime = bound_results("m", report, [], [])
    assert (reference.check_id, reference.verdict) == (BOUND_REFERENCE, Verdict.PASS)
    assert (onnxruntime.check_id, onnxruntime.verdict) == (BOUND_ONNXRUNTIME, Verdict.FAIL)
    assert onnxruntime.reason == ("output 'bad': 3 elements farther from the exact result than the bound "
                                  "(worst distance/bound 2.5)")
    assert reference.measured == {"vectors": 2, "bound_vectors": 0, "good.over_bound": 0, "bad.over_bound": 0, "bad.to_bound": 0.5,
                                  "bad.max_abs": 1e-7}
    unavailable = _report(report.outputs, yardstick={"vectors": 2, "bound": {"unavailable": "no rule for Foo"}})
    assert [r.verdict for r in bound_results("m", unavailable, [], [])] == [Verdict.NOT_RUN] * 2
    assert bound_results("m", unavailable, [], [])[1].reason == "no computed bound: no rule for Foo"
    for yardstick, why in (({"vectors": 0, "bound": {"unavailable": ""}}, "no vector"),
                           ({"unavailable": "x", "vectors": 2}, "x")):
        found = bound_results("m", _report(report.outputs, yardstick=yardstick), ["r"], ["w"])
        assert [(r.verdict, r.reason, r.read, r.written) for r in found] == \
            [(Verdict.NOT_RUN, f"no enclosure of the exact result: {why}", ["r"], ["w"])] * 2
    found = bound_results("m", unavailable, ["r"], ["w"])
    assert [(r.check_id, r.read, r.written, r.measured["vectors"]) for r in found] == \
        [(BOUND_REFERENCE, ["r"], ["w"], 2), (BOUND_ONNXRUNTIME, ["r"], ["w"], 2)]


def test_export_discriminating_fails_on_the_one_constant_output_and_needs_two_vectors() -> None:
    constant = _output(BAD, 0.0, spread=0.0, discriminating=False,
                       discriminating_reason="output bad: a constant output would pass this validation")
    varied = _output(GOOD, 0.0, spread=0.5, tolerance=effective_tolerance(1e-5, 2e-6))
    failing = discriminating_result("m", _report([varied, constant]), [], [])
    assert failing.check_id == DISCRIMINATING and failing.verdict is Verdict.FAIL
    assert failing.reason == "output bad: a constant output would pass this validation"
    assert failing.measured == {"vectors": 4, "good.spread": 0.5, "good.tolerance": 2e-6, "bad.spread": 0.0,
                                "bad.tolerance": None}
    assert discriminating_result("m", _report([varied]), [], []).verdict is Verdict.PASS
    one = discriminating_result("m", _report([varied], vectors=1), [], [])
    assert one.verdict is Verdict.NOT_RUN and one.reason == "fewer than two validation vectors"
    assert discriminating_result("m", _report([varied], vectors=2), [], []).verdict is Verdict.PASS


def test_the_first_non_finite_parameter_in_name_then_c_order() -> None:
    w = np.zeros((2, 3), np.float32)
    w[1, 0], w[1, 2] = np.inf, np.nan
    found = first_non_finite({"z": np.array([np.nan]), "w": w, "i": np.array([1, 2])})
    assert found[:2] == ("w", (1, 0)) and found[2] == np.inf
    assert first_non_finite({"w": np.zeros(3), "e": np.zeros((0,), np.float32), "i": np.arange(3)}) is None
    assert first_non_finite({"n": np.array([-np.inf])})[0] == "n"

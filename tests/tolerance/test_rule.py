"""The one tolerance rule (pipeline.numerics.tolerance), the export checks built on it, and compare's use of it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest

from pipeline.compare.numeric import compare
from pipeline.export.checks import bound_results, discriminating_result, tolerance_result
from pipeline.export import export_model
from pipeline.export.validate import default_settings, validate_export
from pipeline.numerics.tolerance import discriminating, effective_tolerance, spread
from tests.export import helpers as H


def test_computed_bound_tighter_than_the_limit_is_applied() -> None:
    rule = effective_tolerance(1e-4, 3e-6, 1e-7)
    assert rule.effective == 3e-6 and rule.basis == "computed bound" and rule.justified


def test_limit_applies_when_the_bound_is_looser_and_measured_rounding_fits() -> None:
    rule = effective_tolerance(1e-5, 0.4, 1.1e-6)
    assert rule.effective == 1e-5 and rule.basis == "deploy.yaml limit" and rule.justified
    assert "exceeds the deploy.yaml limit" in rule.reason and "measured rounding" in rule.reason


def test_limit_below_the_measured_rounding_is_not_justified() -> None:
    rule = effective_tolerance(1e-5, 0.4, 4.0e-5)
    assert not rule.justified and "cannot meet this limit" in rule.reason


def test_no_bound_and_no_enclosure_is_not_justified() -> None:
    rule = effective_tolerance(1e-5, None, None, "no error-bound rule for Erf")
    assert rule.effective == 1e-5 and not rule.justified and "Erf" in rule.reason


def test_spread_and_discrimination() -> None:
    values = np.array([[1.0, 2.0], [1.0, 2.5], [1.0, 1.0]])
    assert spread(values) == pytest.approx(1.5)
    assert discriminating(1.5, 1e-5)[0]
    ok, why = discriminating(spread(np.ones((5, 3))), 1e-5)
    assert not ok and "constant output would pass" in why


def _validate(model: onnx.ModelProto, tmp_path: Path, limit: float = 1e-5):
    path = tmp_path / "m.onnx"
    onnx.save(model, str(path))
    export_model(model, tmp_path / "export")
    settings = default_settings({"x": [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]},
                                vectors=8)
    settings = settings.__class__(settings.inputs, settings.vectors, settings.seed,
                                  settings.tolerance.__class__(limit, None), settings.source)
    return validate_export(path, tmp_path / "export", settings, "m")


def test_a_constant_output_fails_the_discriminating_check(tmp_path: Path) -> None:
    model = H.make_model([H.node("Gemm", ["x", "w", "b"], ["y"], transB=1)], {"x": [1, 6]}, {"y": [1, 3]},
                         {"w": np.zeros((3, 6), np.float32), "b": np.array([0.5, -1.0, 2.0], np.float32)})
    report = _validate(model, tmp_path)
    assert report.passed, "the numbers agree: only the discrimination check can tell"
    result = discriminating_result("m", report, [], [])
    assert result.verdict.value == "fail" and "constant output" in result.reason


def test_a_small_network_is_validated_with_its_computed_bound(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    model = H.make_model([H.node("Gemm", ["x", "w", "b"], ["g"], transB=1), H.node("Relu", ["g"], ["y"])],
                         {"x": [1, 6]}, {"y": [1, 3]},
                         {"w": rng.normal(0, 1, (3, 6)).astype(np.float32), "b": np.zeros(3, np.float32)})
    report = _validate(model, tmp_path, limit=1e-3)
    [output] = report.outputs
    assert output.tolerance is not None and output.tolerance.basis == "computed bound"
    assert output.tolerance.effective < 1e-5 and output.passed
    assert {r.verdict.value for r in bound_results("m", report, [], [])} == {"pass"}
    assert tolerance_result("m", report, [], []).verdict.value == "pass"
    assert discriminating_result("m", report, [], []).verdict.value == "pass"
    document = report.to_json()
    json.dumps(document, allow_nan=False)
    assert document["enclosure"]["vectors"] == 8 and document["enclosure"]["bound"]["vectors"] == 3
    assert document["outputs"][0]["enclosure"]["reference_over_bound"] == 0


def test_an_operator_without_a_bound_rule_makes_the_bound_checks_not_run(tmp_path: Path) -> None:
    """Every exported operator has a rule since issue 15; ConvTranspose's output_shape has none."""
    model = H.make_model([H.node("Gemm", ["x", "w", "b"], ["g"], transB=1),
                          H.node("Reshape", ["g", "shape"], ["g4"]),
                          H.node("ConvTranspose", ["g4", "wt"], ["l4"], kernel_shape=[1, 1], output_shape=[1, 1]),
                          H.node("Flatten", ["l4"], ["y"], axis=1)],
                         {"x": [1, 6]}, {"y": [1, 3]},
                         {"w": np.ones((3, 6), np.float32), "b": np.zeros(3, np.float32),
                          "shape": np.array([1, 3, 1, 1], np.int64), "wt": np.ones((3, 3, 1, 1), np.float32)})
    report = _validate(model, tmp_path)
    results = bound_results("m", report, [], [])
    assert {r.verdict.value for r in results} == {"not run"} and all("ConvTranspose" in r.reason for r in results)
    assert (report.outputs[0].tolerance.basis == "deploy.yaml limit"
            and "ConvTranspose" in report.outputs[0].tolerance.reason)


def test_a_bound_refused_on_one_vector_is_not_used_at_all(tmp_path: Path) -> None:
    """LRN whose denominator may reach 0 (bias 0, an input vector of zeros): refused at run time (BOUND-E002),
    after an earlier vector had bounds; the validation keeps none of them."""
    model = H.make_model([H.node("Reshape", ["x", "shape"], ["x4"]),
                          H.node("LRN", ["x4"], ["l4"], size=3, alpha=1.0, beta=0.75, bias=0.0),
                          H.node("Flatten", ["l4"], ["y"], axis=1)],
                         {"x": [1, 3]}, {"y": [1, 3]}, {"shape": np.array([1, 3, 1, 1], np.int64)})
    from pipeline.export.bounds import BoundRun

    collector = BoundRun(model, {"y": "y"})
    x = np.array([[1.0, 2.0, 3.0]], np.float32)
    y = H.run_ort(model, {"x": x})["y"]
    collector.add({"x": x}, {"y": y}, {"y": y})
    assert "computed_tolerance" in collector.measures["y"]
    zero = np.zeros((1, 3), np.float32)
    collector.add({"x": zero}, {"y": zero}, {"y": zero})
    assert "BOUND-E002" in (collector.bound_unavailable + collector.unavailable)
    assert not any("bound" in k or k == "computed_tolerance" for k in collector.measures["y"])


def test_compare_applies_a_per_output_tolerance() -> None:
    a = {"y": np.zeros((2, 3), np.float32), "z": np.zeros((2, 3), np.float32)}
    e = {"y": np.full((2, 3), 1e-4, np.float32), "z": np.full((2, 3), 1e-4, np.float32)}
    result = compare(a, e, max_abs_error=1e-3, max_abs_errors={"y": 1e-5})
    assert [o.passed for o in result.outputs] == [False, True]


def test_a_measured_rounding_above_the_bound_vectors_bound_is_applied() -> None:
    """The bound is computed on the first vectors, the rounding measured on more: where a later vector's rounding
    is larger than the bound vectors' bound (still under the limit), the tolerance is that measured rounding."""
    rule = effective_tolerance(1e-5, 3.0e-6, 3.9e-6)
    assert rule.effective == 3.9e-6 and rule.basis == "computed bound" and rule.justified
    assert "is larger and is applied" in rule.reason
    rule = effective_tolerance(1e-5, 3.0e-6, 4.0e-5)  # beyond the limit: the limit's path, not justified
    assert rule.effective == 1e-5 and not rule.justified


def test_a_looser_bound_without_measured_rounding_still_reports_the_bound() -> None:
    """The rule falls back to the limit, unjustified, and the record keeps the computed bound it rejected (the
    figure a reviewer needs to see how far off it was)."""
    rule = effective_tolerance(1e-5, 0.4, None)
    assert rule.effective == 1e-5 and not rule.justified and rule.computed == 0.4
    assert rule.to_json()["computed_max_abs_error"] == 0.4 and rule.to_json()["measured_rounding_max_abs_error"] is None

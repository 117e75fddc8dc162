"""The error bound is used only while it discriminates (pipeline.numerics.tolerance.bound_discrimination,
pipeline.export.bounds.BoundRun): a bound more than 100 times the measured distance to the exact result, or not
finite, is reported as not discriminating with its figures, no further vector computes it, nothing non-finite
reaches JSON, and the bound checks say `not run`."""

from __future__ import annotations

import json

import numpy as np
import pytest

from pipeline.export.bounds import BoundRun
from pipeline.export.checks import bound_results
from pipeline.numerics.arithmetic import REFERENCE
from pipeline.numerics.sensitivity import BoundUnavailable, Sensitivity
from pipeline.numerics.tolerance import DISCRIMINATION_RATIO, bound_discrimination
from tests.export import helpers as H


def test_the_rule() -> None:
    assert bound_discrimination(5e-7, 1e-8, 1e-3)[0]                 # 50 x
    telling, why = bound_discrimination(2e-6, 1e-8, 1e-3)            # 200 x
    assert not telling and "200 times" in why and f"{DISCRIMINATION_RATIO:g} times" in why
    assert not bound_discrimination(float("inf"), 1e-8, 1.0)[0]
    assert not bound_discrimination(float("nan"), 1e-8, 1.0)[0]
    # an output exact on the vectors (distance 0) still takes a bound of a few roundings of its magnitude
    assert bound_discrimination(3 * 2.0 ** -24 * 4.0, 0.0, 4.0)[0]
    assert not bound_discrimination(200 * 2.0 ** -24 * 4.0, 0.0, 4.0)[0]


def _exact_but_cancelling(n: int = 256):
    """Integer weights +-1000, 1001 and inputs from {1, 2}: every float32 sum is exact (the measured error is 0),
    while the terms' magnitudes, which any order may meet, are a million times the result."""
    w = np.empty((n, 2), np.float32)
    w[0::2], w[1::2] = 1000.0, -1000.0
    w[0, :] = 1001.0
    return H.make_model([H.node("MatMul", ["x", "w"], ["y"])], {"x": [1, n]}, {"y": [1, 2]}, {"w": w})


def _add(run: BoundRun, model, x: np.ndarray) -> None:
    y = H.run_ort(model, {"x": x})["y"]
    run.add({"x": x}, {"y": y}, {"y": y})


def test_a_bound_far_above_the_measured_error_is_dropped_with_its_figures() -> None:
    model = _exact_but_cancelling()
    run = BoundRun(model, {"y": "y"})
    rng = np.random.default_rng(0)
    for _ in range(4):
        x = np.ones((1, 256), np.float32)
        x[0, 1::2] = rng.integers(1, 3, 128)
        x[0, 0::2] = x[0, 1::2]
        _add(run, model, x)
    described = run.describe()
    assert run.vectors == 4 and run.bound_vectors == 1 and run.bounds is None
    assert described["bound"]["discriminating"] is False
    figures = described["bound"]["not_discriminating"]["y.reference"]
    assert figures["figure"] > DISCRIMINATION_RATIO * max(figures["measured"], 2.0 ** -24)
    assert "not discriminating" in run.bound_unavailable and "judged on 1 vector(s)" in run.bound_unavailable
    assert "computed_tolerance" not in run.measures["y"] and "reference_bound_max" in run.measures["y"]
    json.dumps(described, allow_nan=False)
    rule = run.tolerance("y", 1e-3)
    assert rule.computed is None and rule.basis == "deploy.yaml limit" and "not discriminating" in rule.reason


def _cancelling():
    """y = sigmoid(1 / ((x + 1e8) - 1e8)): the denominator's spread (float32 rounding of 1e8) exceeds its value."""
    nodes = [H.node("Add", ["x", "big"], ["a"]), H.node("Sub", ["a", "big"], ["d"]),
             H.node("Div", ["one", "d"], ["q"]), H.node("Sigmoid", ["q"], ["y"])]
    return H.make_model(nodes, {"x": [1, 4]}, {"y": [1, 4]},
                        {"big": np.array(1e8, np.float32), "one": np.array(1.0, np.float32)})


def test_a_denominator_whose_error_may_reach_zero_refuses_the_bound() -> None:
    with pytest.raises(BoundUnavailable) as error:
        Sensitivity(_cancelling(), [REFERENCE]).run({"x": np.full((1, 4), 0.5, np.float32)})
    assert error.value.code == "BOUND-E002" and "Div" in str(error.value)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_a_refused_bound_never_reaches_json_and_the_bound_checks_are_not_run(tmp_path) -> None:
    model = _cancelling()
    run = BoundRun(model, {"y": "y"})
    _add(run, model, np.full((1, 4), 0.5, np.float32))
    assert run.bounds is None and "BOUND-E002" in run.bound_unavailable
    json.dumps(run.describe(), allow_nan=False)
    json.dumps(run.summary("y"), allow_nan=False)

    from pipeline.export import export_model
    from pipeline.export.validate import default_settings, validate_export

    path = tmp_path / "model.onnx"
    import onnx

    onnx.save(model, str(path))
    export_model(path, tmp_path / "out")
    report = validate_export(path, tmp_path / "out", default_settings({"x": [1, 4]}, vectors=3))
    json.dumps(report.to_json(), allow_nan=False)
    results = bound_results("m", report, [], [])
    assert {r.verdict.value for r in results} == {"not run"} and all("BOUND-E002" in r.reason for r in results)


def test_an_enclosure_too_wide_or_unavailable_gives_way_to_the_float64_yardstick(monkeypatch) -> None:
    """Where the double-word enclosure is wider than WIDTH_SHARE of the distance it measures (a network deeper than
    its ~100 bits carry, efficientnet_b0) or not finite, the float64 yardstick's value is the measure from that
    vector on, said so in the record; the bounds keep being checked against it."""
    import pipeline.export.bounds as B

    model = H.make_model([H.node("MatMul", ["x", "w"], ["h"]), H.node("Relu", ["h"], ["y"])], {"x": [1, 8]},
                         {"y": [1, 4]}, {"w": np.random.default_rng(1).standard_normal((8, 4)).astype(np.float32)})
    rng = np.random.default_rng(2)
    vectors = [rng.uniform(-1, 1, (1, 8)).astype(np.float32) for _ in range(3)]
    exact = BoundRun(model, {"y": "y"})
    for x in vectors:
        _add(exact, model, x)
    assert exact.describe()["measure"] == "the enclosure" and not exact.fallback
    monkeypatch.setattr(B, "WIDTH_SHARE", 0.0)  # every enclosure too wide
    run = BoundRun(model, {"y": "y"})
    for x in vectors:
        _add(run, model, x)
    described = run.describe()
    assert "yardstick" in described["measure"] and "from vector 0" in described["measure"]
    assert run.enclosure is None and run.vectors == 3 and not run.unavailable
    # the float64 value is within 1e-15 of the exact one here: the same measures, the bound checks kept
    for key in ("reference_max_abs", "onnxruntime_max_abs", "onnxruntime_bound_max"):
        assert run.measures["y"][key] == pytest.approx(exact.measures["y"][key], rel=1e-6, abs=1e-15)
    assert run.measures["y"]["onnxruntime_over_bound"] == 0
    json.dumps(described, allow_nan=False)

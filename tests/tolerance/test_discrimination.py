"""Issue 29: the error bound is computed only while it discriminates (pipeline.numerics.tolerance.bound_discrimination,
pipeline.export.validate._YardstickRun): a bound more than 100 times the measured distance to the float64
yardstick, or not finite, is reported as not discriminating with its figures after the vector that shows
it, no further vector computes it, nothing non-finite reaches JSON, and the bound checks say `not run`."""

from __future__ import annotations

import json

import numpy as np
import pytest

from pipeline.numerics.errorbound import NOT_FINITE, REFERENCE, BoundUnavailable, ErrorBound
from pipeline.export.checks import bound_results
from pipeline.export.validate import _YardstickRun
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


def _deep(layers: int = 6, width: int = 32, seed: int = 3):
    """Gemm + Relu layers with zero-mean weights: the worst-case bound (sum |w| |x|) is far above the
    rounding actually seen (the signs do not conspire)."""
    rng = np.random.default_rng(seed)
    nodes, weights, x = [], {}, "x"
    for i in range(layers):
        weights[f"w{i}"] = (rng.standard_normal((width, width)) / np.sqrt(width)).astype(np.float32)
        weights[f"b{i}"] = np.zeros(width, np.float32)
        nodes += [H.node("Gemm", [x, f"w{i}", f"b{i}"], [f"g{i}"], transB=1), H.node("Relu", [f"g{i}"], [f"r{i}"])]
        x = f"r{i}"
    nodes[-1] = H.node("Relu", [f"g{layers - 1}"], ["y"])
    return H.make_model(nodes, {"x": [1, width]}, {"y": [1, width]}, weights)


def _add(run: _YardstickRun, model, x: np.ndarray) -> None:
    y = H.run_ort(model, {"x": x})["y"]
    run.add({"x": x}, {"y": y}, {"y": y})


def test_a_loose_bound_is_computed_on_one_vector_then_dropped_with_its_figures() -> None:
    model = _deep()
    run = _YardstickRun(model, {"y": "y"})
    rng = np.random.default_rng(0)
    for _ in range(4):
        _add(run, model, rng.uniform(-1, 1, (1, 32)).astype(np.float32))
    described = run.describe()
    assert run.vectors == 4 and run.bound_vectors == 1 and run.bounds is None
    assert described["bound"]["discriminating"] is False
    figures = described["bound"]["not_discriminating"]["y.reference"]
    assert figures["figure"] > DISCRIMINATION_RATIO * figures["measured"]
    assert "not discriminating" in run.bound_unavailable and "judged on 1 vector(s)" in run.bound_unavailable
    assert "computed_tolerance" not in run.measures["y"] and "reference_bound_max" in run.measures["y"]
    json.dumps(described, allow_nan=False)
    rule = run.tolerance("y", 1e-3)
    assert rule.computed is None and rule.basis == "deploy.yaml limit" and "not discriminating" in rule.reason


def _cancelling():
    """y = 1 / ((x + 1e8) - 1e8): the denominator's bound (float32 rounding of 1e8) exceeds its value,
    so the quotient's bound is infinite."""
    nodes = [H.node("Add", ["x", "big"], ["a"]), H.node("Sub", ["a", "big"], ["d"]),
             H.node("Div", ["one", "d"], ["q"]), H.node("Sigmoid", ["q"], ["y"])]
    return H.make_model(nodes, {"x": [1, 4]}, {"y": [1, 4]},
                        {"big": np.array(1e8, np.float32), "one": np.array(1.0, np.float32)})


def test_a_non_finite_bound_stops_the_pass_at_its_node() -> None:
    with pytest.raises(BoundUnavailable) as error:
        ErrorBound(_cancelling(), REFERENCE).run({"x": np.full((1, 4), 0.5, np.float32)})
    assert error.value.code == NOT_FINITE and "'q'" in str(error.value) and "Div" in str(error.value)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the float64 yardstick's 1 / 0.5 is fine; float32's is not
def test_a_non_finite_bound_never_reaches_json_and_the_bound_checks_are_not_run(tmp_path) -> None:
    model = _cancelling()
    run = _YardstickRun(model, {"y": "y"})
    _add(run, model, np.full((1, 4), 0.5, np.float32))
    assert run.bounds is None and "BOUND-E005" in run.bound_unavailable and "not discriminating" in run.bound_unavailable
    described = run.describe()
    json.dumps(described, allow_nan=False)
    json.dumps(run.summary("y"), allow_nan=False)
    assert described["bound"]["discriminating"] is False

    from pipeline.export import export_model
    from pipeline.export.validate import default_settings, validate_export

    path = tmp_path / "model.onnx"
    import onnx

    onnx.save(model, str(path))
    export_model(path, tmp_path / "out")
    report = validate_export(path, tmp_path / "out", default_settings({"x": [1, 4]}, vectors=3))
    json.dumps(report.to_json(), allow_nan=False)
    results = bound_results("m", report, [], [])
    assert {r.verdict.value for r in results} == {"not run"} and all("not discriminating" in r.reason for r in results)

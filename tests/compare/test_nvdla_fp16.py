"""A deployment's stated FP16 requirement (deploy.yaml `fp16`): measured, judged, justified by onnxruntime on the
float16 conversion of the model (issue 29)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from pipeline.compare import nvdla_fp16
from pipeline.compare.nvdla_bound import judge


def test_measure_takes_the_worst_element_and_the_argmax_agreement():
    exact = [{"y": np.array([1.0, 2.0, 4.0])}, {"y": np.array([3.0, 0.0, 1.0])}]
    got = {"y": np.array([[1.0, 2.5, 4.0], [2.0, 0.5, 2.5]])}
    m = nvdla_fp16.measure(got, exact)
    assert (m.max_abs_error, m.max_rel_error, m.top1_agreement) == (1.5, 1.5, 0.5)


def test_a_limit_is_met_and_justified_or_the_judgement_says_which_it_is_not():
    dla = nvdla_fp16.Fp16Measure(2e-3, 0.1, 1.0)
    ok, clause, doc = nvdla_fp16.judge({"max_abs_error": 1e-2, "top1_agreement": 1.0}, dla,
                                       nvdla_fp16.Fp16Measure(4e-4, 0.01, 1.0))
    assert ok and "max_abs_error at most 0.01: 0.002 (met), justified" in clause
    assert doc["limits"]["top1_agreement"] == {"limit": 1.0, "dla": 1.0, "independent_fp16": 1.0, "met": True,
                                               "justified": True}
    ok, clause, _ = nvdla_fp16.judge({"max_abs_error": 1e-4}, dla, nvdla_fp16.Fp16Measure(4e-4, 0.01, 1.0))
    assert not ok and "(not met), not justified: the independent FP16 evaluation reaches only 0.0004" in clause


def _model() -> onnx.ModelProto:
    rng = np.random.default_rng(3)
    graph = helper.make_graph(
        [helper.make_node("Gemm", ["x", "w", "b"], ["h"], transB=1), helper.make_node("Relu", ["h"], ["r"]),
         helper.make_node("Gemm", ["r", "w2", "b2"], ["y"], transB=1)], "m",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 5])],
        [onnx.numpy_helper.from_array(rng.normal(size=s).astype(np.float32), n)
         for n, s in (("w", (32, 16)), ("b", (32,)), ("w2", (5, 32)), ("b2", (5,)))])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def test_the_independent_fp16_evaluation_is_onnxruntime_on_the_float16_model():
    model = _model()
    x = np.random.default_rng(0).uniform(-1, 1, (6, 1, 16)).astype(np.float32)
    half = nvdla_fp16.independent_fp16(model, {"x": x})["y"]
    w, b = (onnx.numpy_helper.to_array(i) for i in model.graph.initializer[:2])
    w2, b2 = (onnx.numpy_helper.to_array(i) for i in model.graph.initializer[2:])
    exact = np.stack([np.maximum(v @ w.T.astype(np.float64) + b, 0) @ w2.T + b2 for v in x])
    error = np.abs(half - exact).max()
    assert 0 < error < 0.05  # FP16 rounding, not float32's


@pytest.mark.parametrize("limit, passed", [(5e-2, True), (1e-6, False)])
def test_the_nvdla_judgement_carries_the_deployment_requirement(limit, passed):
    model = _model()
    x = np.random.default_rng(1).uniform(-1, 1, (4, 1, 16)).astype(np.float32)
    outputs = nvdla_fp16.independent_fp16(model, {"x": x})  # an FP16 implementation's outputs as the "DLA"'s
    result = judge(model, {"x": x}, outputs, 1e-2, requirement={"max_abs_error": limit, "top1_agreement": 1.0})
    assert result.requirement is not None and result.passed is passed
    assert result.to_json()["deployment_requirement"]["limits"]["max_abs_error"]["limit"] == limit

"""HLR-NUM-004's FP16 bound (pipeline.numerics.sensitivity with the NVDLA arithmetic, judged by
pipeline.compare.nvdla_bound).

Sound: the emulator's `ideal` outputs and the NVDLA hardware model's own dumps (ONNC
single_layer_test, nobody here wrote them) lie within the bound of the exact value on every
golden case with a bound rule (LRN has none: BOUND-E004, and the absolute parameter applies).
Able to fail: the same output moved by a few FP16 ulps on its largest-magnitude element, and an
evaluation that rounds its sums to FP16 (a rounding the arithmetic does not allow), are caught.
The shipped `dla` deployments are judged in tests/codegen/test_models.py (every vector).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from pipeline.compare.nvdla_bound import ABSOLUTE, BOUND, describe, judge
from pipeline.execute.nvdla.golden import read_dimg, read_pgm
from tests.codegen.nvdla_cases import golden_cases, loadable_of

TOLERANCE = 1.0e-2


@lru_cache(maxsize=None)
def _case(path: Path) -> tuple[onnx.ModelProto, dict[str, np.ndarray], dict[str, np.ndarray], dict[str, np.ndarray]]:
    """(model, inputs, emulated outputs, hardware-model outputs), ONNX names, a batch of one vector."""
    from pipeline.execute.nvdla.emulator import emulate

    data, _content, _debug, legal = loadable_of(path)
    model = onnx.load(str(path))
    (nnef_in, shape), = legal.inputs.items()
    x = read_pgm(path.with_suffix(".pgm")).reshape(shape).astype(np.float32)
    emulated = emulate(data, {nnef_in: x})[legal.outputs[0]]
    golden = read_dimg(path.with_suffix(".dimg"))
    initializers = {t.name for t in model.graph.initializer}
    onnx_in = next(i.name for i in model.graph.input if i.name not in initializers)
    onnx_out = model.graph.output[0].name
    return (model, {onnx_in: x[None]}, {onnx_out: emulated.astype(np.float32)[None]},
            {onnx_out: golden.astype(np.float32)[None]})


CASES = golden_cases()


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_the_emulator_and_the_hardware_model_lie_within_the_fp16_bound(path):
    model, inputs, emulated, golden = _case(path)
    for outputs in (emulated, golden):
        judged = judge(model, inputs, outputs, TOLERANCE)
        if path.parent.name == "LRN":
            assert judged.basis == ABSOLUTE and "BOUND-E004" in judged.why and "lookup table" in judged.why
            continue
        assert judged.basis == BOUND, judged.why
        assert judged.passed and judged.max_ratio <= 1.0, describe(judged)


def _largest_output_case() -> Path:
    """The golden case (with a bound) whose output has the largest magnitude."""
    return max((p for p in CASES if p.parent.name != "LRN"),
               key=lambda p: float(np.abs(next(iter(_case(p)[2].values()))).max()))


def test_a_few_fp16_ulps_on_a_large_output_fail_the_bound():
    path = _largest_output_case()
    model, inputs, emulated, _golden = _case(path)
    (name, out), = emulated.items()
    judged = judge(model, inputs, emulated, TOLERANCE)
    assert judged.passed
    flat = out.reshape(-1).astype(np.float16)
    at = int(np.argmax(np.abs(flat)))
    assert abs(float(flat[at])) >= 64.0, (path.stem, float(flat[at]))
    moved = flat.copy()
    bits = moved.view(np.uint16)
    bits[at] += 4  # 4 FP16 ulps away from zero
    judged = judge(model, inputs, {name: moved.astype(np.float32).reshape(out.shape)}, TOLERANCE)
    assert not judged.passed and judged.first_beyond["index"][-1] >= 0, describe(judged)
    assert judged.first_beyond["error"] > judged.first_beyond["bound"]
    assert judged.first_beyond["error"] > TOLERANCE  # large magnitude: the absolute 1e-2 is below one ulp here


def _dot_model(n: int) -> onnx.ModelProto:
    """y = x W with a long positive dot product (n terms): where FP16 sums would stagnate."""
    w = np.full((n, 2), 0.75, np.float32)
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "dot",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, n])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2])],
                              [numpy_helper.from_array(w, "w")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def _fp16_storage_matmul(x: np.ndarray, w: np.ndarray, accumulate: type) -> np.ndarray:
    """FP16 operands, products summed in order in `accumulate`, the result stored in FP16."""
    xs, ws = x.astype(np.float16).astype(np.float32), w.astype(np.float16).astype(np.float32)
    out = np.zeros((x.shape[0], w.shape[1]), accumulate)
    for k in range(x.shape[1]):
        out = (out + (xs[:, k:k + 1] * ws[k]).astype(accumulate)).astype(accumulate)
    return out.astype(np.float16).astype(np.float32)


def test_a_rounding_the_arithmetic_does_not_allow_is_caught():
    n = 4096
    model = _dot_model(n)
    x = np.random.default_rng(3).uniform(0.5, 1.0, (1, 1, n)).astype(np.float32)
    w = numpy_helper.to_array(model.graph.initializer[0])
    inputs = {"x": x}
    allowed = judge(model, inputs, {"y": _fp16_storage_matmul(x[0], w, np.float32)[None]}, TOLERANCE)
    assert allowed.basis == BOUND and allowed.passed, describe(allowed)
    planted = judge(model, inputs, {"y": _fp16_storage_matmul(x[0], w, np.float16)[None]}, TOLERANCE)
    assert not planted.passed and planted.first_beyond["error"] > planted.first_beyond["bound"], describe(planted)


def test_a_bound_that_does_not_discriminate_gives_way_to_the_absolute_tolerance():
    """Over vectors whose outputs barely differ, a bound above their spread would pass a constant output:
    the absolute parameter applies to that output, and the judgement says why; over spread-out vectors
    the bound applies."""
    model = _dot_model(64)
    w = numpy_helper.to_array(model.graph.initializer[0])
    rng = np.random.default_rng(5)
    for low, basis in ((0.0099, ABSOLUTE), (-100.0, BOUND)):
        x = np.full((3, 1, 64), 0.01, np.float32)
        x[:, 0, 0] = rng.uniform(low, 0.0101, 3)
        outputs = np.stack([_fp16_storage_matmul(v, w, np.float32) for v in x])
        judged = judge(model, {"x": x}, {"y": outputs}, TOLERANCE)
        assert judged.passed and judged.outputs["y"]["basis"] == basis, describe(judged)
        if basis == ABSOLUTE:
            assert "does not discriminate" in judged.outputs["y"]["why"] and judged.max_bound > judged.outputs["y"]["spread"]

"""Issue 15: C code for transposed convolution. ONNX ConvTranspose models (onnx.helper, seeded
shapes and weights) through export -> C -> build -> run: 0 ULP against the reference
semantics, and the reference within tolerance of onnxruntime and onnx.reference (neither
written here)."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from tests.codegen import cghelpers as H

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from tests.export.helpers import run_ort, run_reference  # noqa: E402

# name: (input shape, weight shape [C, O/g, k..], bias, attributes)
CASES = {
    "stride2_pad1_outpad1": ((1, 3, 5, 6), (3, 4, 3, 3), True,
                             {"strides": [2, 2], "pads": [1, 1, 1, 1], "output_padding": [1, 1]}),
    "groups2_dilation2_asym": ((2, 4, 4, 5), (4, 3, 3, 2), True,
                               {"strides": [2, 1], "pads": [0, 1, 1, 0], "dilations": [2, 2], "group": 2}),
    "depthwise_stride3": ((1, 6, 4, 4), (6, 1, 2, 3), False, {"strides": [3, 2], "group": 6}),
    "one_d_no_bias": ((1, 3, 9), (3, 2, 4), False, {"strides": [3], "pads": [2, 1]}),
    "same_upper": ((1, 2, 5, 5), (2, 3, 3, 3), True, {"strides": [2, 2], "auto_pad": "SAME_UPPER"}),
    "output_shape": ((1, 2, 4, 4), (2, 2, 3, 3), True, {"strides": [2, 2], "output_shape": [9, 9]}),
}


def _model(case: str) -> onnx.ModelProto:
    x_shape, w_shape, with_bias, attrs = CASES[case]
    rng = np.random.default_rng(sorted(CASES).index(case))
    groups = attrs.get("group", 1)
    inits = [numpy_helper.from_array(rng.normal(0, 0.5, w_shape).astype(np.float32), "w")]
    inputs = ["x", "w"]
    if with_bias:
        inits.append(numpy_helper.from_array(rng.normal(0, 0.5, (w_shape[1] * groups,)).astype(np.float32), "b"))
        inputs.append("b")
    node = helper.make_node("ConvTranspose", inputs, ["y"], name="y", kernel_shape=list(w_shape[2:]), **attrs)
    graph = helper.make_graph([node], case, [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                              [helper.make_empty_tensor_value_info("y")], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=10)
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    model.graph.output[0].CopyFrom(inferred.graph.output[0])
    return model


@pytest.mark.parametrize("case", sorted(CASES))
def test_conv_transpose_c_bit_exact_and_close_to_onnxruntime(case, tmp_path):
    if not shutil.which("gcc"):
        pytest.skip("gcc is not installed")
    model = _model(case)
    rng = np.random.default_rng(99)
    x = rng.uniform(-2, 2, (4,) + CASES[case][0]).astype(np.float32)
    x[0].reshape(-1)[:3] = [0.0, -0.0, 1e-40]
    expected = H.exported_c_bit_exact(model, "deconv", x, tmp_path, case)
    for v in range(x.shape[0]):
        ort = run_ort(model, {"x": x[v]})["y"]
        assert ort.shape == expected[v].shape
        np.testing.assert_allclose(expected[v], ort, rtol=1e-5, atol=1e-5, err_msg=f"{case} vs onnxruntime")
        if CASES[case][3].get("group", 1) == 1:  # onnx 1.23's reference ConvTranspose slices grouped weights wrongly
            ref = run_reference(model, {"x": x[v]})["y"]
            np.testing.assert_allclose(expected[v], ref, rtol=1e-5, atol=1e-5, err_msg=f"{case} vs onnx.reference")

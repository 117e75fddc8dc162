"""Issue 15: Resize mode 'linear' (ONNX models from onnx.helper) through export -> C -> build ->
run: 0 ULP against the reference semantics, and within a few ulp of onnxruntime and
onnx.reference (neither written here)."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from tests.codegen import cghelpers as H

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from tests.export.helpers import run_ort, run_reference  # noqa: E402

# name: (input shape, scales, coordinate_transformation_mode)
CASES = {
    "torch_bilinear_x2": ((1, 3, 5, 7), [1, 1, 2, 2], "pytorch_half_pixel"),
    "half_pixel_x3x1": ((2, 2, 4, 3), [1, 1, 3, 1], "half_pixel"),
    "align_corners_x2x3": ((1, 2, 5, 4), [1, 1, 2, 3], "align_corners"),
    "linear_1d_x4": ((1, 2, 7), [1, 1, 4], "half_pixel"),
}


def _model(case: str) -> onnx.ModelProto:
    shape, scales, mode = CASES[case]
    node = helper.make_node("Resize", ["x", "", "scales"], ["y"], name="y", mode="linear",
                            coordinate_transformation_mode=mode)
    out = [d * int(s) for d, s in zip(shape, scales)]
    graph = helper.make_graph([node], case, [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, out)],
                              [numpy_helper.from_array(np.array(scales, np.float32), "scales")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=10)


@pytest.mark.parametrize("case", sorted(CASES))
def test_resize_linear_c_bit_exact_and_close_to_onnxruntime(case, tmp_path):
    if not shutil.which("gcc"):
        pytest.skip("gcc is not installed")
    model = _model(case)
    rng = np.random.default_rng(sorted(CASES).index(case))
    x = rng.uniform(-2, 2, (4,) + CASES[case][0]).astype(np.float32)
    x[0].reshape(-1)[:3] = [0.0, -0.0, 1e-40]
    expected = H.exported_c_bit_exact(model, "multilinear_upsample", x, tmp_path, case)
    for v in range(x.shape[0]):
        for theirs in (run_ort(model, {"x": x[v]})["y"], run_reference(model, {"x": x[v]})["y"]):
            assert theirs.shape == expected[v].shape
            np.testing.assert_allclose(expected[v], theirs, rtol=1e-6, atol=1e-6, err_msg=case)

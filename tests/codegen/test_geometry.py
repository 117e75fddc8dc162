"""The generator's window geometry against onnx.reference, which nobody here wrote.

For a 1-D convolution whose filter is one-hot at tap j, output i is the input element at
i * s + j * d - p (0 outside the input). onnx.reference computes that from its own
reading of strides, dilations, explicit pads and auto_pad SAME_UPPER (the NNEF automatic
padding: output ceil(n / s), the odd unit after); the generator's geometry must predict
every output element and the output extent.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

from pipeline.codegen.shared.geometry import same_padding, window_geometry


def _onnx_conv(n: int, k: int, s: int, d: int, tap: int, pads: tuple[int, int] | None) -> np.ndarray:
    attrs = {"strides": [s], "dilations": [d], "kernel_shape": [k]}
    if pads is None:
        attrs["auto_pad"] = "SAME_UPPER"
    else:
        attrs["pads"] = list(pads)
    node = helper.make_node("Conv", ["x", "w"], ["y"], **attrs)
    weight = np.zeros((1, 1, k), np.float32)
    weight[0, 0, tap] = 1.0
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, n])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [onnx.numpy_helper.from_array(weight, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=10)
    x = np.arange(1, n + 1, dtype=np.float32).reshape(1, 1, n)
    return ReferenceEvaluator(model).run(None, {"x": x})[0].reshape(-1)


def _cases() -> list[tuple[int, int, int, int, tuple[int, int] | None]]:
    rng = np.random.default_rng(7)
    cases = []
    while len(cases) < 60:
        n, k, s, d = int(rng.integers(1, 14)), int(rng.integers(1, 5)), int(rng.integers(1, 4)), int(rng.integers(1, 4))
        if (k - 1) * d + 1 > n + 6:
            continue
        explicit = bool(rng.integers(2))
        pads = (int(rng.integers(0, 3)), int(rng.integers(0, 3))) if explicit else None
        if pads is not None and n + sum(pads) < (k - 1) * d + 1:
            continue
        cases.append((n, k, s, d, pads))
    return cases


@pytest.mark.parametrize("n,k,s,d,pads", _cases())
def test_geometry_matches_onnx_reference(n: int, k: int, s: int, d: int, pads: tuple[int, int] | None) -> None:
    geometry = window_geometry([n], [k], [] if pads is None else [list(pads)], [s], [d])
    (p, _), = geometry.padding
    for tap in range(k):
        onnx_out = _onnx_conv(n, k, s, d, tap, pads)
        assert onnx_out.shape == (geometry.out_shape[0],)
        predicted = [float(i * s + tap * d - p + 1) if 0 <= i * s + tap * d - p < n else 0.0
                     for i in range(geometry.out_shape[0])]
        assert onnx_out.tolist() == predicted, (n, k, s, d, pads, tap)


def test_defaults_and_refusals() -> None:
    geometry = window_geometry([5, 7], [3, 3], [], [], [])
    assert geometry.stride == (1, 1) and geometry.dilation == (1, 1) and geometry.out_shape == (5, 7)
    assert geometry.padding == ((1, 1), (1, 1)) and same_padding(4, 2, 2, 1) == (0, 0)
    assert same_padding(6, 3, 2, 1) == (0, 1)  # odd total: the extra unit after
    with pytest.raises(ValueError):
        window_geometry([2], [5], [[0, 0]], [], [])
    with pytest.raises(ValueError):
        window_geometry([4], [2], [], [0], [])

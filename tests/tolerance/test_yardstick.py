"""The float64 yardstick (onnx.reference in double on a float64 copy of the model): its rewrites compute what
onnx.reference and onnxruntime compute. Since issue 41 it is the enclosure's independent cross-check (and the
value the NVDLA judgement falls back on where the enclosure has no rule), no longer the measure itself."""

from __future__ import annotations

import numpy as np
import onnx
import pytest

from pipeline.numerics.enclosure import Enclosure
from pipeline.numerics.yardstick import Yardstick
from tests.export import helpers as H


def test_yardstick_batchnorm_is_the_inference_formula() -> None:
    """onnx.reference alone computes opset-13 BatchNormalization with batch statistics; the yardstick does not."""
    rng = np.random.default_rng(5)
    p = {k: rng.uniform(0.5, 2.0, 3).astype(np.float32) for k in ("s", "o", "m", "v")}
    model = H.make_model([H.node("BatchNormalization", ["x", "s", "o", "m", "v"], ["y"], epsilon=1e-3)],
                         {"x": [2, 3, 4, 4]}, {"y": [2, 3, 4, 4]}, p)
    x = rng.normal(0, 1, (2, 3, 4, 4)).astype(np.float32)
    got = Yardstick(model).run({"x": x})["y"]
    c = lambda k: p[k].astype(np.float64).reshape(1, 3, 1, 1)  # noqa: E731
    expected = (x - c("m")) / np.sqrt(c("v") + np.float64(np.float32(1e-3))) * c("s") + c("o")
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, expected, rtol=1e-14, atol=1e-14)


def test_yardstick_lrn_and_grouped_conv_transpose_are_right() -> None:
    """Against onnxruntime (float32, within 1e-5): onnx.reference 1.23 alone gets both wrong."""
    from onnx.reference import ReferenceEvaluator

    rng = np.random.default_rng(11)
    model = H.make_model([H.node("LRN", ["x"], ["n"], size=5, alpha=0.3, beta=0.6, bias=1.2),
                          H.node("ConvTranspose", ["n", "w", "b"], ["y"], kernel_shape=[2, 2], strides=[2, 1], group=3)],
                         {"x": [2, 6, 3, 4]}, {"y": None},
                         {"w": rng.normal(0, 0.5, (6, 2, 2, 2)).astype(np.float32),
                          "b": rng.normal(0, 0.1, 6).astype(np.float32)})
    feeds = H.random_inputs(model, 11)
    exact = Yardstick(model).run(feeds)["y"]
    np.testing.assert_allclose(exact, H.run_ort(model, feeds)["y"], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(exact, Enclosure(model).run(feeds)["y"].mid(), rtol=1e-12, atol=1e-12)
    lrn_only = H.make_model([model.graph.node[0]], {"x": [2, 6, 3, 4]}, {"n": None})
    plain = ReferenceEvaluator(lrn_only).run(None, feeds)[0]
    assert not np.allclose(plain, H.run_ort(lrn_only, feeds)["n"], rtol=1e-3), "onnx.reference's LRN was fixed"


POOLS = [("MaxPool", dict(kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1])),
         ("MaxPool", dict(kernel_shape=[2, 2], strides=[2, 2])),
         ("MaxPool", dict(kernel_shape=[3, 2], strides=[2, 1], pads=[1, 0, 0, 1], dilations=[1, 2])),
         ("AveragePool", dict(kernel_shape=[2, 2], strides=[2, 2])),
         ("AveragePool", dict(kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1])),
         ("AveragePool", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], count_include_pad=1)),
         ("AveragePool", dict(kernel_shape=[3, 2], strides=[2, 1], pads=[0, 1, 1, 0]))]


@pytest.mark.parametrize("op,attrs", POOLS)
def test_yardstick_pool_rewrite_agrees_with_onnx_reference_and_onnxruntime(op: str, attrs: dict) -> None:
    """The pools the yardstick rewrites for speed (Pad, strided Slices, Max or Sum / count) compute what
    onnx.reference's own pool computes in float64 (max exactly, averages to the last bits) and what
    onnxruntime computes in float32; the rewrite really happens."""
    from onnx.reference import ReferenceEvaluator
    import onnxruntime as ort

    from pipeline.numerics.yardstick import float64_model

    rng = np.random.default_rng(11)
    model = H.make_model([H.node(op, ["x"], ["y"], **attrs)], {"x": [2, 3, 9, 8]}, {"y": None})
    x = rng.normal(0, 1, (2, 3, 9, 8)).astype(np.float32)
    x[1, 2, 4, 4] = -np.inf   # finite vectors otherwise (NaN: see the module docstring of pipeline/numerics/yardstick.py)
    rewritten = float64_model(model)
    assert op not in [n.op_type for n in rewritten.graph.node] and "Slice" in [n.op_type for n in rewritten.graph.node]
    got = Yardstick(model).run({"x": x})["y"]
    plain = onnx.ModelProto()
    plain.CopyFrom(rewritten)
    del plain.graph.node[:]
    plain.graph.node.extend([H.node(op, ["x"], ["y"], **attrs)])
    del plain.graph.initializer[:]
    expected = ReferenceEvaluator(plain).run(None, {"x": x.astype(np.float64)})[0]
    assert got.shape == expected.shape and got.dtype == np.float64
    if op == "MaxPool":
        assert np.array_equal(got, expected)
    else:
        np.testing.assert_allclose(got, expected, rtol=1e-15, atol=1e-15)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(got, session.run(None, {"x": x})[0], rtol=1e-6, atol=1e-6)


CONVS = [dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
         dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
         dict(kernel_shape=[1, 1]),
         dict(kernel_shape=[3, 2], strides=[2, 1], pads=[1, 0, 0, 1], dilations=[1, 2]),
         dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=3),          # depthwise (3 channels, 6 outputs)
         dict(kernel_shape=[5, 5], strides=[1, 2], pads=[2, 2, 2, 2])]


@pytest.mark.parametrize("attrs", CONVS)
@pytest.mark.parametrize("bias", [True, False])
def test_yardstick_conv_rewrite_agrees_with_onnx_reference_and_onnxruntime(attrs: dict, bias: bool) -> None:
    """The convolutions the yardstick rewrites for speed (Pad, per tap a strided Slice and a grouped
    MatMul, Sum, bias) compute what onnx.reference's own Conv computes in float64 (to the last bits)
    and what onnxruntime computes in float32; the rewrite really happens."""
    from onnx import numpy_helper
    from onnx.reference import ReferenceEvaluator
    import onnxruntime as ort

    from pipeline.numerics.yardstick import float64_model

    rng = np.random.default_rng(12)
    groups = attrs.get("group", 1)
    kh, kw = attrs["kernel_shape"]
    weight = rng.normal(0, 0.3, (6, 3 // groups, kh, kw)).astype(np.float32)
    inits = [numpy_helper.from_array(weight, "w")] + ([numpy_helper.from_array(rng.normal(0, 1, 6).astype(np.float32), "b")]
                                                      if bias else [])
    node = H.node("Conv", ["x", "w"] + (["b"] if bias else []), ["y"], **attrs)
    model = H.make_model([node], {"x": [2, 3, 9, 8]}, {"y": None})
    model.graph.initializer.extend(inits)
    x = rng.normal(0, 1, (2, 3, 9, 8)).astype(np.float32)
    rewritten = float64_model(model)
    assert "Conv" not in [n.op_type for n in rewritten.graph.node] and "MatMul" in [n.op_type for n in rewritten.graph.node]
    got = Yardstick(model).run({"x": x})["y"]
    plain = onnx.ModelProto()
    plain.CopyFrom(rewritten)
    del plain.graph.node[:]
    plain.graph.node.extend([node])
    expected = ReferenceEvaluator(plain).run(None, {"x": x.astype(np.float64)})[0]
    assert got.shape == expected.shape and got.dtype == np.float64
    np.testing.assert_allclose(got, expected, rtol=1e-13, atol=1e-13)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(got, session.run(None, {"x": x})[0], rtol=1e-5, atol=1e-5)

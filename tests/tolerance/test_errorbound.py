"""The computed forward error bound holds on seeded random networks, against things nobody here wrote.

Each network is built with onnx.helper, exported and run by our float32 reference semantics
(pipeline.semantics on the NNEF) and by onnxruntime; both must lie within their bound of the
float64 yardstick (onnx.reference in double). The bound pass's own float64 values must agree
with the yardstick (two float64 evaluations written by different people).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest

from pipeline.numerics.errorbound import ONNXRUNTIME, REFERENCE, U, BoundUnavailable, ErrorBound, gamma
from pipeline.export import export_model
from pipeline.numerics.yardstick import Yardstick
from tests.export import helpers as H

SEEDS = range(3)


def _dense_chain(seed: int) -> onnx.ModelProto:
    rng = np.random.default_rng(seed)
    sizes = [64, 48, 32, 10]
    nodes, init, x = [], {}, "x"
    for i, (m, n) in enumerate(zip(sizes, sizes[1:])):
        init[f"w{i}"] = rng.normal(0, 1 / np.sqrt(m), (n, m)).astype(np.float32)
        init[f"b{i}"] = rng.normal(0, 0.1, n).astype(np.float32)
        nodes.append(H.node("Gemm", [x, f"w{i}", f"b{i}"], [f"g{i}"], transB=1))
        nodes.append(H.node("Relu" if i % 2 == 0 else "Tanh", [f"g{i}"], [f"a{i}"]))
        x = f"a{i}"
    nodes.append(H.node("Softmax", [x], ["y"], axis=1))
    return H.make_model(nodes, {"x": [1, 64]}, {"y": [1, 10]}, init)


def _conv_net(seed: int) -> onnx.ModelProto:
    rng = np.random.default_rng(seed)
    init = {"w1": rng.normal(0, 0.4, (8, 3, 3, 3)).astype(np.float32), "b1": rng.normal(0, 0.1, 8).astype(np.float32),
            "w2": rng.normal(0, 0.2, (8, 8, 3, 3)).astype(np.float32),
            "s": rng.uniform(0.5, 1.5, 8).astype(np.float32), "o": rng.normal(0, 0.1, 8).astype(np.float32),
            "m": rng.normal(0, 0.1, 8).astype(np.float32), "v": rng.uniform(0.5, 2, 8).astype(np.float32),
            "wd": rng.normal(0, 0.3, (8, 1, 3, 3)).astype(np.float32),
            "wf": rng.normal(0, 0.3, (5, 8)).astype(np.float32), "bf": rng.normal(0, 0.1, 5).astype(np.float32)}
    nodes = [H.node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
             H.node("Relu", ["c1"], ["r1"]),
             H.node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
             H.node("Conv", ["p1", "w2"], ["c2"], pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
             H.node("BatchNormalization", ["c2", "s", "o", "m", "v"], ["n2"], epsilon=1e-5),
             H.node("Conv", ["n2", "wd"], ["d2"], pads=[1, 1, 1, 1], kernel_shape=[3, 3], group=8),
             H.node("Add", ["d2", "p1"], ["a2"]),
             H.node("Sigmoid", ["a2"], ["g2"]),
             H.node("Mul", ["a2", "g2"], ["silu"]),
             H.node("AveragePool", ["silu"], ["ap"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1]),
             H.node("GlobalAveragePool", ["ap"], ["gap"]),
             H.node("Flatten", ["gap"], ["f"], axis=1),
             H.node("Gemm", ["f", "wf", "bf"], ["y"], transB=1)]
    return H.make_model(nodes, {"x": [1, 3, 12, 12]}, {"y": [1, 5]}, init)


def _cancelling(seed: int) -> onnx.ModelProto:
    """Sums of large terms that cancel: the result is small, the rounding of the terms is not."""
    rng = np.random.default_rng(seed)
    half = rng.uniform(100, 1000, (4, 32)).astype(np.float32)
    w = np.concatenate([half, -half], axis=1) * rng.uniform(0.999, 1.001, (4, 64)).astype(np.float32)
    return H.make_model([H.node("MatMul", ["x", "w"], ["y"])], {"x": [1, 64]}, {"y": [1, 4]},
                        {"w": np.ascontiguousarray(w.T, dtype=np.float32)})


def _check(model: onnx.ModelProto, directory: Path, seed: int, low: float, high: float) -> dict[str, float]:
    export = export_model(model, directory)
    yard = Yardstick(model)
    ours_bound, ort_bound = ErrorBound(model, REFERENCE), ErrorBound(model, ONNXRUNTIME)
    ratios = {"ours": 0.0, "ort": 0.0}
    for v in range(4):
        feeds = H.random_inputs(model, seed * 10 + v, low, high)
        exact = yard.run(feeds)
        ours, ort = H.run_nnef(export, directory, feeds), H.run_ort(model, feeds)
        b_ours, b_ort = ours_bound.run(feeds), ort_bound.run(feeds)
        for name, y in exact.items():
            np.testing.assert_allclose(b_ours[name].v, y, rtol=1e-12, atol=1e-12)
            for side, got, bound in (("ours", ours[name], b_ours[name].e), ("ort", ort[name], b_ort[name].e)):
                distance = np.abs(np.asarray(got, np.float64) - y)
                assert np.all(distance <= bound), (side, float((distance / bound).max()))
                ratios[side] = max(ratios[side], float((distance / bound).max()))
    return ratios


@pytest.mark.parametrize("seed", SEEDS)
def test_bound_holds_on_dense_chains(tmp_path: Path, seed: int) -> None:
    _check(_dense_chain(seed), tmp_path, seed, -2.0, 2.0)


@pytest.mark.parametrize("seed", SEEDS)
def test_bound_holds_on_convolutional_networks(tmp_path: Path, seed: int) -> None:
    _check(_conv_net(seed), tmp_path, seed, 0.0, 1.0)


@pytest.mark.parametrize("seed", SEEDS)
def test_bound_holds_on_cancelling_sums(tmp_path: Path, seed: int) -> None:
    ratios = _check(_cancelling(seed), tmp_path, seed, 0.5, 1.0)
    assert ratios["ours"] > 1e-3, "cancellation makes the rounding visible: the bound is not vacuous here"


def test_bound_is_tight_for_a_sum_that_rounds_every_time(tmp_path: Path) -> None:
    """1 + u + u + ... in the reference's documented order: each + u is a tie, rounded to even (back to 1).

    The error is (n - 1) u; the bound gamma_(n+1) (1 + (n - 1) u) is about (n + 1) u: within 10 %.
    """
    n = 64
    model = H.make_model([H.node("MatMul", ["x", "w"], ["y"])], {"x": [1, n]}, {"y": [1, 1]},
                         {"w": np.ones((n, 1), np.float32)})
    feeds = {"x": np.array([[1.0] + [U] * (n - 1)], np.float32)}
    export = export_model(model, tmp_path)
    ours = H.run_nnef(export, tmp_path, feeds)["y"]
    exact = Yardstick(model).run(feeds)["y"]
    bound = ErrorBound(model, REFERENCE).run(feeds)["y"].e
    assert exact[0, 0] == 1.0 + (n - 1) * U and ours[0, 0] == 1.0
    error = abs(float(ours[0, 0]) - exact[0, 0])
    assert error <= bound[0, 0] and error / bound[0, 0] > 0.9, (error, bound[0, 0])
    assert bound[0, 0] == pytest.approx(gamma(n) * (1.0 + (n - 1) * U), rel=1e-6)


def test_unsupported_operator_is_named() -> None:
    model = H.make_model([H.node("Hardmax", ["x"], ["y"])], {"x": [1, 4]}, {"y": [1, 4]})
    with pytest.raises(BoundUnavailable, match="Hardmax"):
        ErrorBound(model, REFERENCE)


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


def _assorted(seed: int) -> onnx.ModelProto:
    """Pad, Slice, Split, Max, Min, Sum, PRelu, GlobalMaxPool, ReduceMean, LeakyRelu, Concat, Transpose."""
    rng = np.random.default_rng(seed)
    init = {"w": rng.normal(0, 0.5, (6, 4, 3, 3)).astype(np.float32), "pads": np.array([0, 0, 1, 1, 0, 0, 1, 1]),
            "st": np.array([0, 1]), "en": np.array([3, 7]), "ax": np.array([1, 3]),
            "slope": rng.uniform(0.05, 0.3, (1, 6, 1, 1)).astype(np.float32), "rm": np.array([2, 3])}
    nodes = [H.node("Pad", ["x", "pads"], ["p"], mode="constant"),
             H.node("Conv", ["p", "w"], ["c"], kernel_shape=[3, 3]),
             H.node("PRelu", ["c", "slope"], ["r"]),
             H.node("Split", ["r"], ["s0", "s1"], axis=1),
             H.node("Max", ["s0", "s1"], ["mx"]), H.node("Min", ["s0", "s1"], ["mn"]),
             H.node("Sum", ["mx", "mn", "s0"], ["sm"]),
             H.node("LeakyRelu", ["sm"], ["lk"], alpha=0.1),
             H.node("Slice", ["lk", "st", "en", "ax"], ["sl"]),
             H.node("GlobalMaxPool", ["sl"], ["gm"]),
             H.node("ReduceMean", ["lk"], ["rmean"], axes=[2, 3], keepdims=1),
             H.node("Concat", ["gm", "rmean"], ["cc"], axis=1),
             H.node("Transpose", ["cc"], ["y"], perm=[0, 2, 3, 1])]
    return H.make_model(nodes, {"x": [1, 4, 8, 8]}, {"y": None}, init)


@pytest.mark.parametrize("seed", SEEDS)
def test_bound_holds_on_assorted_operators(tmp_path: Path, seed: int) -> None:
    _check(_assorted(seed), tmp_path, seed, -1.0, 1.0)


@pytest.mark.parametrize("seed", SEEDS)
def test_onnxruntime_within_bound_on_hard_activations(seed: int) -> None:
    """HardSigmoid and HardSwish (opset 14), onnxruntime against the yardstick."""
    rng = np.random.default_rng(seed)
    model = H.make_model([H.node("MatMul", ["x", "w"], ["m"]), H.node("HardSwish", ["m"], ["h"]),
                          H.node("HardSigmoid", ["h"], ["y"], alpha=0.3, beta=0.4)],
                         {"x": [1, 32]}, {"y": [1, 16]}, {"w": rng.normal(0, 1, (32, 16)).astype(np.float32)}, opset=14)
    feeds = H.random_inputs(model, seed, -3.0, 3.0)
    exact = Yardstick(model).run(feeds)["y"]
    bound = ErrorBound(model, ONNXRUNTIME).run(feeds)["y"]
    # onnx.reference spells HardSwish's alpha 1/6 as a float32 constant; the bound pass uses 1/6 exactly.
    np.testing.assert_allclose(bound.v, exact, rtol=1e-7, atol=1e-12)
    assert np.all(np.abs(H.run_ort(model, feeds)["y"].astype(np.float64) - exact) <= bound.e)


def test_shape_arithmetic_is_exact_and_the_bound_holds_through_it() -> None:
    """Shape -> Gather -> Div (int64) -> Unsqueeze -> Concat -> Reshape, as torch exports a channel shuffle."""
    rng = np.random.default_rng(7)
    model = H.make_model([
        H.node("MatMul", ["x", "w"], ["m"]),
        H.node("Shape", ["m"], ["s"]), H.node("Gather", ["s", "i1"], ["c"], axis=0),
        H.node("Div", ["c", "two"], ["half"]), H.node("Unsqueeze", ["half", "ax0"], ["h1"]),
        H.node("Concat", ["one", "two1", "h1"], ["shape"], axis=0),
        H.node("Reshape", ["m", "shape"], ["r"]), H.node("Transpose", ["r"], ["y"], perm=[0, 2, 1])],
        {"x": [1, 8]}, {"y": [1, 4, 2]},
        {"w": rng.normal(0, 1, (8, 8)).astype(np.float32), "i1": np.array(1, np.int64), "two": np.array(2, np.int64),
         "ax0": np.array([0], np.int64), "one": np.array([1], np.int64), "two1": np.array([2], np.int64)})
    feeds = H.random_inputs(model, 7)
    exact = Yardstick(model).run(feeds)["y"]
    bound = ErrorBound(model, ONNXRUNTIME).run(feeds)["y"]
    np.testing.assert_allclose(bound.v, exact, rtol=1e-12, atol=1e-12)
    assert np.all(np.abs(H.run_ort(model, feeds)["y"].astype(np.float64) - exact) <= bound.e)


def _decoder(seed: int, mode: str) -> onnx.ModelProto:
    """ConvTranspose (strides, pads, output_padding, groups, depthwise), LRN, Resize (linear or nearest,
    whole factors), LogSoftmax: the issue-15 operators whose bound rules came last (the yardstick
    rewrites LRN and grouped ConvTranspose, which onnx.reference 1.23 gets wrong)."""
    rng = np.random.default_rng(seed)
    init = {"wt": rng.normal(0, 0.4, (4, 3, 3, 3)).astype(np.float32), "bt": rng.normal(0, 0.1, 6).astype(np.float32),
            "wg": rng.normal(0, 0.4, (6, 1, 2, 2)).astype(np.float32),
            "scales": np.array([1, 1, 2, 3], np.float32), "sizes": np.array([1, 6, 42, 25], np.int64),
            "wf": rng.normal(0, 0.3, (6, 7)).astype(np.float32)}
    linear = {"mode": "linear", "coordinate_transformation_mode": mode} if mode != "nearest" else {"mode": "nearest"}
    nodes = [H.node("ConvTranspose", ["x", "wt", "bt"], ["t"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 0, 1, 1],
                    output_padding=[1, 0], group=2),
             H.node("Relu", ["t"], ["r"]),
             H.node("LRN", ["r"], ["n"], size=3, alpha=0.2, beta=0.75, bias=1.5),
             H.node("Resize", ["n", "", "scales"], ["u"], **linear),
             H.node("ConvTranspose", ["u", "wg"], ["g"], kernel_shape=[2, 2], strides=[1, 1], group=6),
             H.node("Resize", ["g", "", "", "sizes"], ["v"], **linear),
             H.node("Transpose", ["v"], ["tv"], perm=[0, 2, 3, 1]),
             H.node("MatMul", ["tv", "wf"], ["m"]),
             H.node("LogSoftmax", ["m"], ["y"], axis=-1)]
    return H.make_model(nodes, {"x": [1, 4, 5, 4]}, {"y": None}, init)


@pytest.mark.parametrize("seed", SEEDS[:2])
@pytest.mark.parametrize("mode", ["half_pixel", "align_corners", "nearest"])
def test_bound_holds_on_conv_transpose_lrn_resize_log_softmax(tmp_path: Path, seed: int, mode: str) -> None:
    _check(_decoder(seed, mode), tmp_path, seed, -1.0, 1.0)


def test_lrn_near_zero_denominator_and_conv_transpose_output_shape_are_unavailable() -> None:
    model = H.make_model([H.node("LRN", ["x"], ["y"], size=3, alpha=1.0, beta=0.75, bias=0.0)], {"x": [1, 4, 2, 2]},
                         {"y": [1, 4, 2, 2]})
    with pytest.raises(BoundUnavailable, match="LRN"):
        ErrorBound(model, REFERENCE).run({"x": np.zeros((1, 4, 2, 2), np.float32)})
    model = H.make_model([H.node("ConvTranspose", ["x", "w"], ["y"], kernel_shape=[2, 2], output_shape=[5, 5],
                                 strides=[2, 2])], {"x": [1, 1, 2, 2]}, {"y": None}, {"w": np.ones((1, 1, 2, 2), np.float32)})
    with pytest.raises(BoundUnavailable, match="output_shape"):
        ErrorBound(model, REFERENCE).run({"x": np.ones((1, 1, 2, 2), np.float32)})


def test_grouped_conv_transpose_value_and_bound_against_onnxruntime() -> None:
    """Grouped ConvTranspose, where onnx.reference fails: the bound pass's float64 value against
    onnxruntime's float32 result, which must lie within onnxruntime's bound of it."""
    rng = np.random.default_rng(3)
    model = H.make_model([H.node("ConvTranspose", ["x", "w", "b"], ["y"], kernel_shape=[3, 2], strides=[2, 3],
                                 pads=[1, 0, 0, 1], dilations=[1, 2], output_padding=[1, 2], group=3)],
                         {"x": [1, 6, 4, 5]}, {"y": None},
                         {"w": rng.normal(0, 0.5, (6, 2, 3, 2)).astype(np.float32),
                          "b": rng.normal(0, 0.1, 6).astype(np.float32)})
    feeds = H.random_inputs(model, 3)
    got = H.run_ort(model, feeds)["y"].astype(np.float64)
    bound = ErrorBound(model, ONNXRUNTIME).run(feeds)["y"]
    assert bound.v.shape == got.shape
    assert np.all(np.abs(got - bound.v) <= bound.e) and float(np.abs(got - bound.v).max()) > 0


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
    np.testing.assert_allclose(exact, ErrorBound(model, REFERENCE).run(feeds)["y"].v, rtol=1e-12, atol=1e-12)
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

"""Operator versions and attribute variants against onnxruntime: Softmax/LogSoftmax (opset 11
"flatten" vs 13 single axis), Clip (6 / 11 / 13, missing bounds, min > max), Split (2, 11,
13, 18), Slice (1 vs 10+, negative and INT_MAX bounds, steps), Squeeze/Unsqueeze (attribute
vs input), ReduceMean (13 vs 18), Pad (2 / 11 / 18, modes), BatchNormalization (7 ..
15), Dropout, Flatten, Reshape, Transpose, Concat, LRN, activations, element-wise
broadcasting (ONNX right-aligned vs NNEF left-aligned), Constant."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest


from tests.export.helpers import check_against_ort, make_model, node, operations, run_nnef

from pipeline.export import export_model

INT_MAX = np.iinfo(np.int64).max
I64 = np.int64


def i64(*values: int) -> np.ndarray:
    return np.array(values, dtype=I64)


# ---------------------------------------------------------------- Softmax / LogSoftmax

@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
@pytest.mark.parametrize("opset,axis", [(11, None), (11, 1), (11, 2), (11, -2), (13, None), (13, 1), (13, 0)])
def test_softmax_semantics_by_opset(tmp_path: Path, op: str, opset: int, axis: int | None) -> None:
    attrs = {} if axis is None else {"axis": axis}
    model = make_model([node(op, ["x"], ["y"], **attrs)], {"x": [2, 3, 4]}, {"y": None}, opset=opset)
    export = check_against_ort(model, tmp_path / "e", atol=2e-6)
    reduce_op = next(o for o in export.graph.operations if o.name in ("softmax", "max_reduce"))
    rank_axis = (1 if opset < 13 else -1) if axis is None else axis
    rank_axis %= 3
    expected = list(range(rank_axis, 3)) if opset < 13 else [rank_axis]
    assert reduce_op.attribs["axes"] == expected


def test_softmax_opset_11_and_13_differ_on_rank_3(tmp_path: Path) -> None:
    """The same node means different functions at opsets 11 and 13 (default axis too)."""
    texts = []
    for opset in (11, 13):
        model = make_model([node("Softmax", ["x"], ["y"], axis=1)], {"x": [2, 3, 4]}, {"y": None}, opset=opset)
        texts.append(check_against_ort(model, tmp_path / f"s{opset}").text)
    assert "axes = [1, 2]" in texts[0] and "axes = [1]" in texts[1]


def test_log_softmax_large_values(tmp_path: Path) -> None:
    model = make_model([node("LogSoftmax", ["x"], ["y"])], {"x": [2, 4]}, {"y": None})
    feeds = {"x": np.array([[0, 1, 2, 3], [10000, 10001, 10002, 10003]], dtype=np.float32)}
    check_against_ort(model, tmp_path / "e", feeds, atol=1e-5)


# ---------------------------------------------------------------- Clip

@pytest.mark.parametrize("attrs", [dict(min=-0.5, max=0.75), dict(min=-1.0), dict(max=0.0), dict()])
def test_clip_6_attributes(tmp_path: Path, attrs: dict) -> None:
    model = make_model([node("Clip", ["x"], ["y"], **attrs)], {"x": [3, 4]}, {"y": None}, opset=6 + 1)
    check_against_ort(model, tmp_path / "e", atol=0.0, rtol=0.0)


@pytest.mark.parametrize("opset", [11, 12, 13])
@pytest.mark.parametrize("bounds", [(-0.5, 0.75), (None, 0.5), (-0.25, None), (None, None), (1.0, -1.0)])
def test_clip_inputs(tmp_path: Path, opset: int, bounds: tuple) -> None:
    names, inits = ["x"], {}
    for name, value in zip(("lo", "hi"), bounds):
        if value is None:
            names.append("")
        else:
            names.append(name)
            inits[name] = np.array(value, dtype=np.float32)
    while names and names[-1] == "":
        names.pop()
    model = make_model([node("Clip", names, ["y"])], {"x": [3, 4]}, {"y": None}, inits, opset=opset)
    export = check_against_ort(model, tmp_path / "e", atol=0.0, rtol=0.0)
    ops = operations(export)
    if bounds == (1.0, -1.0):
        assert ops == ["max", "min"]  # ONNX: min > max gives max everywhere; clamp would give min
    elif None not in bounds:
        assert ops == ["clamp"]


def test_clip_with_computed_bounds(tmp_path: Path) -> None:
    model = make_model([node("Clip", ["x", "lo", "hi"], ["y"])], {"x": [5], "lo": [], "hi": []}, {"y": None})
    feeds = {"x": np.linspace(-2, 2, 5, dtype=np.float32), "lo": np.array(-1, np.float32), "hi": np.array(0.5, np.float32)}
    check_against_ort(model, tmp_path / "e", feeds, atol=0.0, rtol=0.0)


# ---------------------------------------------------------------- Split

def _split_model(opset: int, outputs: int, **kw: object):
    inputs = ["x"]
    inits = {}
    if "split_input" in kw:
        inputs.append("split")
        inits["split"] = i64(*kw.pop("split_input"))  # type: ignore[misc]
    return make_model([node("Split", inputs, [f"y{i}" for i in range(outputs)], **kw)], {"x": [2, 7, 3]},
                      {f"y{i}": None for i in range(outputs)}, inits, opset=opset)


@pytest.mark.parametrize("opset,outputs,kw", [
    (7, 2, dict(axis=1, split=[3, 4])),
    (11, 3, dict(axis=-2, split=[1, 2, 4])),
    (13, 2, dict(axis=1, split_input=[5, 2])),
    (18, 3, dict(axis=1, num_outputs=3)),
    (18, 2, dict(axis=1, split_input=[6, 1])),
])
def test_split_versions(tmp_path: Path, opset: int, outputs: int, kw: dict) -> None:
    check_against_ort(_split_model(opset, outputs, **kw), tmp_path / "e", atol=0.0, rtol=0.0)


def test_split_equal_parts(tmp_path: Path) -> None:
    model = make_model([node("Split", ["x"], ["a", "b"], axis=2)], {"x": [1, 2, 6]}, {"a": None, "b": None}, opset=13)
    export = check_against_ort(model, tmp_path / "e", atol=0.0, rtol=0.0)
    assert "[a, b] = split(x, axis = 2, ratios = [3, 3]);" in export.text


# ---------------------------------------------------------------- Slice

@pytest.mark.parametrize("starts,ends,axes,steps", [
    ([1, 0], [3, -1], [0, 2], None),
    ([-3], [INT_MAX], [1], None),
    ([4, 9], [0, -INT_MAX], [0, 1], [-1, -2]),
    ([0, 1, 2], [5, 10, 5], [0, 1, 2], [2, 3, 2]),
    ([-1], [-INT_MAX], [-1], [-1]),
    ([20], [-20], [1], [-3]),
])
def test_slice_bounds(tmp_path: Path, starts: list, ends: list, axes: list, steps: list | None) -> None:
    inits = {"starts": i64(*starts), "ends": i64(*ends), "axes": i64(*axes)}
    inputs = ["x", "starts", "ends", "axes"]
    if steps is not None:
        inits["steps"] = i64(*steps)
        inputs.append("steps")
    model = make_model([node("Slice", inputs, ["y"])], {"x": [5, 10, 6]}, {"y": None}, inits)
    check_against_ort(model, tmp_path / "e", atol=0.0, rtol=0.0)


def test_slice_opset_7_attributes(tmp_path: Path) -> None:
    model = make_model([node("Slice", ["x"], ["y"], starts=[1, -4], ends=[1000, -1], axes=[0, 1])],
                       {"x": [4, 6]}, {"y": None}, opset=7)
    check_against_ort(model, tmp_path / "e", atol=0.0, rtol=0.0)


# ---------------------------------------------------------------- Squeeze / Unsqueeze / Flatten / Reshape / Transpose

@pytest.mark.parametrize("opset", [7, 11, 13, 21])
def test_squeeze_unsqueeze_by_opset(tmp_path: Path, opset: int) -> None:
    if opset >= 13:
        nodes = [node("Squeeze", ["x", "sq"], ["s"]), node("Unsqueeze", ["s", "un"], ["y"])]
        inits = {"sq": i64(0, -2), "un": i64(-1, 1)}
    else:
        axes_s = [0, -2] if opset >= 11 else [0, 2]
        axes_u = [-1, 1] if opset >= 11 else [3, 1]
        nodes = [node("Squeeze", ["x"], ["s"], axes=axes_s), node("Unsqueeze", ["s"], ["y"], axes=axes_u)]
        inits = {}
    model = make_model(nodes, {"x": [1, 3, 1, 4]}, {"y": None}, inits, opset=opset)
    export = check_against_ort(model, tmp_path / "e", atol=0.0, rtol=0.0)
    assert "squeeze(x, axes = [0, 2])" in export.text and "unsqueeze(s, axes = [1, 3])" in export.text


def test_squeeze_without_axes(tmp_path: Path) -> None:
    model = make_model([node("Squeeze", ["x"], ["y"])], {"x": [1, 3, 1, 4]}, {"y": None})
    check_against_ort(model, tmp_path / "e", atol=0.0, rtol=0.0)


@pytest.mark.parametrize("opset,axis", [(7, 0), (9, 2), (11, -1), (13, 3), (21, -4)])
def test_flatten(tmp_path: Path, opset: int, axis: int) -> None:
    model = make_model([node("Flatten", ["x"], ["y"], axis=axis)], {"x": [2, 3, 4, 5]}, {"y": None}, opset=opset)
    check_against_ort(model, tmp_path / "e", atol=0.0, rtol=0.0)


@pytest.mark.parametrize("shape,allowzero", [([0, -1], 0), ([4, 0, -1], 0), ([-1], 0), ([2, 3, 20], 1), ([0, 0, 5, 4], 0)])
def test_reshape_special_values(tmp_path: Path, shape: list, allowzero: int) -> None:
    model = make_model([node("Reshape", ["x", "shape"], ["y"], allowzero=allowzero)], {"x": [2, 3, 4, 5]}, {"y": None},
                       {"shape": i64(*shape)}, opset=14)
    export = check_against_ort(model, tmp_path / "e", atol=0.0, rtol=0.0)
    reshape = next(o for o in export.graph.operations if o.name == "reshape")
    assert all(e > 0 for e in reshape.attribs["shape"])


@pytest.mark.parametrize("perm", [None, [0, 2, 1, 3], [3, 0, 1, 2]])
def test_transpose(tmp_path: Path, perm: list | None) -> None:
    attrs = {} if perm is None else {"perm": perm}
    model = make_model([node("Transpose", ["x"], ["y"], **attrs)], {"x": [2, 3, 4, 5]}, {"y": None})
    check_against_ort(model, tmp_path / "e", atol=0.0, rtol=0.0)


@pytest.mark.parametrize("opset", [7, 11, 13])
def test_concat_with_constant_and_negative_axis(tmp_path: Path, opset: int) -> None:
    axis = -1 if opset >= 11 else 2
    model = make_model([node("Concat", ["x", "c"], ["y"], axis=axis)], {"x": [2, 3, 4]}, {"y": None},
                       {"c": np.ones((2, 3, 2), np.float32)}, opset=opset)
    check_against_ort(model, tmp_path / "e", atol=0.0, rtol=0.0)


# ---------------------------------------------------------------- ReduceMean, Pad

@pytest.mark.parametrize("opset,axes,keepdims", [(11, [1], 1), (13, [-1, 0], 0), (13, None, 1), (18, [1, 2], 0),
                                                 (18, None, 0)])
def test_reduce_mean(tmp_path: Path, opset: int, axes: list | None, keepdims: int) -> None:
    inits, inputs, attrs = {}, ["x"], {"keepdims": keepdims}
    if axes is not None:
        if opset >= 18:
            inits["axes"] = i64(*axes)
            inputs.append("axes")
        else:
            attrs["axes"] = axes
    model = make_model([node("ReduceMean", inputs, ["y"], **attrs)], {"x": [2, 3, 4]}, {"y": None}, inits, opset=opset)
    check_against_ort(model, tmp_path / "e")


def test_reduce_mean_noop_with_empty_axes(tmp_path: Path) -> None:
    model = make_model([node("ReduceMean", ["x"], ["y"], noop_with_empty_axes=1)], {"x": [2, 3]}, {"y": None}, opset=18)
    assert operations(check_against_ort(model, tmp_path / "e")) == ["copy"]


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge"])
@pytest.mark.parametrize("opset", [7, 11, 13, 18])
def test_pad(tmp_path: Path, mode: str, opset: int) -> None:
    pads = [0, 1, 2, 0, 2, 1]
    if opset < 11:
        model = make_model([node("Pad", ["x"], ["y"], mode=mode, pads=pads, value=1.5)], {"x": [2, 3, 4]}, {"y": None},
                           opset=opset)
    elif opset < 18:
        model = make_model([node("Pad", ["x", "pads", "v"], ["y"], mode=mode)], {"x": [2, 3, 4]}, {"y": None},
                           {"pads": i64(*pads), "v": np.array(-2.5, np.float32)}, opset=opset)
    else:
        model = make_model([node("Pad", ["x", "pads", "v", "axes"], ["y"], mode=mode)], {"x": [2, 3, 4]}, {"y": None},
                           {"pads": i64(1, 2, 2, 1), "v": np.array(0.25, np.float32), "axes": i64(-1, 1)}, opset=opset)
    export = check_against_ort(model, tmp_path / "e", atol=0.0, rtol=0.0)
    assert {"constant": "'constant'", "reflect": "'reflect'", "edge": "'replicate'"}[mode] in export.text


# ---------------------------------------------------------------- BatchNormalization, Dropout, LRN

@pytest.mark.parametrize("opset", [7, 9, 14, 15])
def test_batch_normalization_versions(tmp_path: Path, opset: int) -> None:
    rng = np.random.default_rng(4)
    c = 3
    inits = {"scale": rng.uniform(0.5, 2, c), "bias": rng.normal(size=c), "mean": rng.normal(size=c),
             "var": rng.uniform(0.1, 1, c)}
    inits = {k: v.astype(np.float32) for k, v in inits.items()}
    model = make_model([node("BatchNormalization", ["x", "scale", "bias", "mean", "var"], ["y"], epsilon=1e-3)],
                       {"x": [2, c, 4, 5]}, {"y": None}, inits, opset=opset)
    export = check_against_ort(model, tmp_path / "e", atol=2e-6)
    assert "batch_normalization(x, mean, var, bias, scale, epsilon = 0.001)" in export.text


def test_batch_normalization_with_computed_parameters(tmp_path: Path) -> None:
    model = make_model([node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"])],
                       {"x": [1, 2, 3], "s": [2], "b": [2], "m": [2], "v": [2]}, {"y": None}, opset=15)
    feeds = {"x": np.ones((1, 2, 3), np.float32), "s": np.array([1, 2], np.float32), "b": np.array([0, 1], np.float32),
             "m": np.array([0.5, 0], np.float32), "v": np.array([1, 4], np.float32)}
    check_against_ort(model, tmp_path / "e", feeds)


@pytest.mark.parametrize("opset", [7, 10, 12, 13, 22])
def test_dropout_is_identity_in_inference(tmp_path: Path, opset: int) -> None:
    model = make_model([node("Dropout", ["x"], ["y"])], {"x": [2, 3]}, {"y": None}, opset=opset)
    assert operations(check_against_ort(model, tmp_path / "e", atol=0.0, rtol=0.0)) == ["copy"]


@pytest.mark.parametrize("size", [1, 3, 5])
def test_lrn(tmp_path: Path, size: int) -> None:
    model = make_model([node("LRN", ["x"], ["y"], size=size, alpha=2e-3, beta=0.6, bias=1.5)], {"x": [1, 6, 3, 3]},
                       {"y": None})
    check_against_ort(model, tmp_path / "e", atol=1e-6, rtol=1e-5)


def _lrn_spec(x: np.ndarray, size: int, alpha: float, beta: float, bias: float) -> np.ndarray:
    """The ONNX operator spec's formula, in float64 (not onnx.reference: its LRN loops over
    the batch axis instead of the channels, onnx 1.23.2)."""
    x64 = x.astype(np.float64)
    out = np.empty_like(x64)
    channels = x.shape[1]
    for c in range(channels):
        lo, hi = max(0, c - (size - 1) // 2), min(channels - 1, c + -(-(size - 1) // 2))
        square_sum = (x64[:, lo:hi + 1] ** 2).sum(axis=1)
        out[:, c] = x64[:, c] / (bias + alpha / size * square_sum) ** beta
    return out


@pytest.mark.parametrize("size", [2, 4])
def test_lrn_even_sizes_against_the_spec_formula(tmp_path: Path, size: int) -> None:
    """onnxruntime implements odd sizes only: the asymmetric window of an even size is
    checked against the spec's formula [c - floor((size-1)/2), c + ceil((size-1)/2)]."""
    model = make_model([node("LRN", ["x"], ["y"], size=size, alpha=2e-3, beta=0.6, bias=1.5)], {"x": [2, 6, 3, 3]},
                       {"y": None})
    x = np.random.default_rng(3).normal(size=(2, 6, 3, 3)).astype(np.float32)
    export = export_model(model, tmp_path / "e")
    ours = run_nnef(export, tmp_path / "e", {"x": x})["y"]
    np.testing.assert_allclose(ours, _lrn_spec(x, size, 2e-3, 0.6, 1.5), rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- activations and element-wise broadcasting

@pytest.mark.parametrize("op,attrs,opset", [("Relu", {}, 6 + 1), ("Relu", {}, 14), ("LeakyRelu", {}, 7),
                                            ("LeakyRelu", {"alpha": 0.2}, 16), ("Sigmoid", {}, 13), ("Tanh", {}, 7),
                                            ("Identity", {}, 13)])
def test_activations(tmp_path: Path, op: str, attrs: dict, opset: int) -> None:
    model = make_model([node(op, ["x"], ["y"], **attrs)], {"x": [2, 3, 4]}, {"y": None}, opset=opset)
    check_against_ort(model, tmp_path / "e", atol=1e-6)


@pytest.mark.parametrize("slope_shape", [[3, 1, 1], [1], [5], [1, 3, 4, 5]])
def test_prelu_slope_broadcasting(tmp_path: Path, slope_shape: list) -> None:
    slope = np.random.default_rng(0).uniform(0, 0.5, slope_shape).astype(np.float32)
    model = make_model([node("PRelu", ["x", "slope"], ["y"])], {"x": [2, 3, 4, 5]}, {"y": None}, {"slope": slope})
    check_against_ort(model, tmp_path / "e", atol=0.0, rtol=0.0)


@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div"])
@pytest.mark.parametrize("a_shape,b_shape", [([2, 3, 4], [4]), ([4], [2, 3, 4]), ([2, 1, 4], [3, 1]),
                                             ([3, 4], [2, 1, 1]), ([2, 3], [])])
def test_binary_broadcasting_right_aligned(tmp_path: Path, op: str, a_shape: list, b_shape: list) -> None:
    """ONNX aligns on the right: [2, 3, 4] + [4] adds along the last axis (NNEF would align
    [4] with the first axis and fail or, with equal extents, compute something else)."""
    model = make_model([node(op, ["a", "b"], ["y"])], {"a": a_shape, "b": b_shape}, {"y": None}, opset=14)
    rng = np.random.default_rng(9)
    feeds = {"a": rng.uniform(0.5, 2, a_shape).astype(np.float32), "b": rng.uniform(0.5, 2, b_shape).astype(np.float32)}
    check_against_ort(model, tmp_path / "e", feeds, atol=0.0, rtol=0.0)


def test_square_broadcast_goes_to_the_right_axis(tmp_path: Path) -> None:
    """[3, 3] + [3]: NNEF's left alignment would add b along rows, ONNX adds along columns."""
    model = make_model([node("Add", ["a", "b"], ["y"])], {"a": [3, 3]}, {"y": None},
                       {"b": np.array([1, 10, 100], np.float32)})
    export = check_against_ort(model, tmp_path / "e", {"a": np.zeros((3, 3), np.float32)}, atol=0.0, rtol=0.0)
    assert "variable<scalar>(shape = [1, 3], label = 'b')" in export.text


def test_scalar_constant_becomes_a_literal(tmp_path: Path) -> None:
    model = make_model([node("Mul", ["x", "two"], ["y"])], {"x": [2, 3]}, {"y": None}, {"two": np.array(2.0, np.float32)},
                       opset=7)
    export = check_against_ort(model, tmp_path / "e", atol=0.0, rtol=0.0)
    assert "y = mul(x, 2.0);" in export.text


@pytest.mark.parametrize("op", ["Sum", "Max", "Min"])
@pytest.mark.parametrize("opset", [7, 8, 13])
def test_variadic_with_broadcasting(tmp_path: Path, op: str, opset: int) -> None:
    shapes = {"a": [2, 3, 4], "b": [2, 3, 4], "c": [2, 3, 4]} if opset < 8 else {"a": [2, 3, 4], "b": [4], "c": [3, 1]}
    model = make_model([node(op, ["a", "b", "c"], ["y"])], shapes, {"y": None}, opset=opset)
    check_against_ort(model, tmp_path / "e", atol=0.0, rtol=0.0)


def test_variadic_single_input_is_a_copy(tmp_path: Path) -> None:
    model = make_model([node("Max", ["a"], ["y"])], {"a": [3]}, {"y": None})
    assert operations(check_against_ort(model, tmp_path / "e")) == ["copy"]


# ---------------------------------------------------------------- Constant

@pytest.mark.parametrize("attr,value", [("value_float", 1.5), ("value_floats", [1.0, -2.0, 3.0, 4.0]), ("value", None)])
def test_constant_as_data(tmp_path: Path, attr: str, value: object) -> None:
    from onnx import numpy_helper

    if value is None:
        value = numpy_helper.from_array(np.arange(4, dtype=np.float32).reshape(1, 4), "k")
    nodes = [node("Constant", [], ["k"], **{attr: value}), node("Add", ["x", "k"], ["y"])]
    model = make_model(nodes, {"x": [2, 4]}, {"y": None}, opset=13)
    export = check_against_ort(model, tmp_path / "e", atol=0.0, rtol=0.0)
    constant_node = export.provenance["nodes"][0]
    assert constant_node["op_type"] == "Constant"
    if attr != "value_float":
        assert constant_node["nnef_operations"] == ["variable"]


def test_constant_ints_as_reshape_shape(tmp_path: Path) -> None:
    nodes = [node("Constant", [], ["shape"], value_ints=[3, -1]), node("Reshape", ["x", "shape"], ["y"])]
    model = make_model(nodes, {"x": [2, 3, 2]}, {"y": None}, opset=13)
    export = check_against_ort(model, tmp_path / "e", atol=0.0, rtol=0.0)
    assert export.provenance["nodes"][1]["parameters"] == ["shape"]
    assert export.provenance["nodes"][0]["nnef_lines"] == []


def test_batch_normalization_7_non_spatial(tmp_path: Path) -> None:
    """spatial = 0 (opset 7): per-element statistics [C, H, W], stored as [1, C, H, W]."""
    rng = np.random.default_rng(0)
    inits = {k: rng.uniform(0.5, 1.5, (3, 2, 2)).astype(np.float32) for k in ("s", "b", "m", "v")}
    model = make_model([node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], spatial=0)], {"x": [2, 3, 2, 2]},
                       {"y": None}, inits, opset=7)
    export = check_against_ort(model, tmp_path / "e", atol=2e-6)
    assert "variable<scalar>(shape = [1, 3, 2, 2], label = 'm')" in export.text

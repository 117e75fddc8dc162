"""Issue 15, operators real networks use: HardSigmoid, HardSwish, static shape computations
folded at export. Every result against onnxruntime and onnx.reference (not our code)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper

from tests.export.helpers import check_against_ort, make_model, node, operations, random_inputs, run_nnef, run_reference

from pipeline.export import ExportError, export_model

SPECIALS = np.array([-3.0, 3.0, -2.5, 2.5, 0.0, -0.0, 1e-30, -6.0, 6.0, 2.999999, -2.999999], np.float32)


def _feeds(shape: list[int], seed: int) -> dict[str, np.ndarray]:
    """Uniform on [-5, 5] (both clamp bounds are crossed) with the kinks and zeros planted."""
    value = np.random.default_rng(seed).uniform(-5.0, 5.0, shape).astype(np.float32)
    flat = value.reshape(-1)
    flat[:SPECIALS.size] = SPECIALS
    return {"x": value}


@pytest.mark.parametrize("attrs", [{}, {"alpha": 0.25, "beta": 0.4}, {"alpha": 1.0 / 6.0, "beta": 0.5}])
@pytest.mark.parametrize("opset", [13, 22])
def test_hard_sigmoid(tmp_path: Path, attrs: dict, opset: int) -> None:
    model = make_model([node("HardSigmoid", ["x"], ["y"], **attrs)], {"x": [2, 3, 5, 4]}, {"y": [2, 3, 5, 4]},
                       opset=opset)
    feeds = _feeds([2, 3, 5, 4], opset)
    export = check_against_ort(model, tmp_path / "ort", feeds, atol=1e-7, rtol=1e-6)
    check_against_ort(model, tmp_path / "ref", feeds, atol=0.0, rtol=0.0, reference=True)  # onnx.reference: exact
    assert operations(export) == ["mul", "add", "clamp"]


@pytest.mark.parametrize("opset", [14, 22])
def test_hard_swish(tmp_path: Path, opset: int) -> None:
    model = make_model([node("HardSwish", ["x"], ["y"])], {"x": [1, 4, 6, 6]}, {"y": [1, 4, 6, 6]}, opset=opset)
    feeds = _feeds([1, 4, 6, 6], opset)
    export = check_against_ort(model, tmp_path / "ort", feeds, atol=1e-6, rtol=1e-6)
    check_against_ort(model, tmp_path / "ref", feeds, atol=1e-6, rtol=1e-6, reference=True)
    assert operations(export) == ["mul", "add", "clamp", "mul"]
    ours = run_nnef(export, tmp_path / "ort", feeds)["y"]
    x = feeds["x"]
    expected = x * np.clip(x * np.float32(1.0 / 6.0) + np.float32(0.5), np.float32(0), np.float32(1))  # ONNX-14, float32
    assert np.array_equal(ours.view(np.uint32), expected.view(np.uint32))


def test_hard_swish_before_opset_14_is_not_an_operator(tmp_path: Path) -> None:
    model = make_model([node("Relu", ["x"], ["y"])], {"x": [2]}, {"y": [2]}, opset=13)
    model.graph.node[0].op_type = "HardSwish"
    with pytest.raises(ExportError):
        export_model(model, tmp_path / "out")


def _channel_shuffle(groups: int = 2) -> tuple:
    """torch's channel_shuffle at opset 13 (shufflenet_v2): the shape read back from the data
    and rebuilt with Gather / Unsqueeze / Div / Concat before each Reshape."""
    shape = [1, 8, 3, 5]
    i64 = lambda name, values: helper.make_tensor(name, TensorProto.INT64, [len(values)] if isinstance(values, list) else [], values if isinstance(values, list) else [values])  # noqa: E731
    nodes = [
        node("Relu", ["x"], ["r"]),
        node("Shape", ["r"], ["s"]),
        helper.make_node("Constant", [], ["i0"], name="i0", value=i64("i0", 0)),
        helper.make_node("Constant", [], ["i1"], name="i1", value=i64("i1", 1)),
        helper.make_node("Constant", [], ["i2"], name="i2", value=i64("i2", 2)),
        helper.make_node("Constant", [], ["i3"], name="i3", value=i64("i3", 3)),
        helper.make_node("Constant", [], ["g"], name="g", value=i64("g", groups)),
        helper.make_node("Constant", [], ["ax0"], name="ax0", value=i64("ax0", [0])),
        helper.make_node("Constant", [], ["minus1"], name="minus1", value=i64("minus1", [-1])),
        node("Gather", ["s", "i0"], ["n"], axis=0),
        node("Gather", ["s", "i1"], ["c"], axis=0),
        node("Gather", ["s", "i2"], ["h"], axis=0),
        node("Gather", ["s", "i3"], ["w"], axis=0),
        node("Div", ["c", "g"], ["cpg"]),
        node("Unsqueeze", ["n", "ax0"], ["n1"]),
        node("Unsqueeze", ["g", "ax0"], ["g1"]),
        node("Unsqueeze", ["cpg", "ax0"], ["cpg1"]),
        node("Unsqueeze", ["h", "ax0"], ["h1"]),
        node("Unsqueeze", ["w", "ax0"], ["w1"]),
        node("Concat", ["n1", "g1", "cpg1", "h1", "w1"], ["shape5"], axis=0),
        node("Reshape", ["r", "shape5"], ["grouped"]),
        node("Transpose", ["grouped"], ["swapped"], perm=[0, 2, 1, 3, 4]),
        node("Concat", ["n1", "minus1", "h1", "w1"], ["shape4"], axis=0),
        node("Cast", ["shape4"], ["shape4i"], to=TensorProto.INT64),
        node("Reshape", ["swapped", "shape4i"], ["y"]),
    ]
    return make_model(nodes, {"x": shape}, {"y": shape}, opset=13), shape


def test_channel_shuffle_shape_chain_is_folded(tmp_path: Path) -> None:
    model, shape = _channel_shuffle()
    feeds = random_inputs(model, seed=3)
    export = check_against_ort(model, tmp_path / "ort", feeds, atol=0.0, rtol=0.0)  # data movement only: exact
    check_against_ort(model, tmp_path / "ref", feeds, atol=0.0, rtol=0.0, reference=True)
    assert operations(export) == ["relu", "reshape", "transpose", "reshape"]
    assert "[1, 2, 4, 3, 5]" in export.text and "variable" not in export.text


def test_folded_float_constant_becomes_a_variable(tmp_path: Path) -> None:
    """ConstantOfShape(Shape(x)) used as data: folded to a float constant, then an NNEF variable."""
    nodes = [node("Shape", ["x"], ["s"]),
             node("ConstantOfShape", ["s"], ["ones"], value=helper.make_tensor("v", TensorProto.FLOAT, [1], [1.5])),
             node("Mul", ["x", "ones"], ["y"])]
    model = make_model(nodes, {"x": [2, 3]}, {"y": [2, 3]}, opset=13)
    export = check_against_ort(model, tmp_path / "ort")
    assert operations(export) == ["mul"] and "variable<scalar>(shape = [2, 3]" in export.text


def test_float_arithmetic_on_constants_is_folded(tmp_path: Path) -> None:
    """Issue 29: constant float arithmetic is folded too (evaluated in float32 by onnx.reference, the
    bits onnxruntime computes): only the data path keeps statements."""
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    model = make_model([node("Add", ["a", "b"], ["c"]), node("Mul", ["x", "c"], ["y"])], {"x": [2, 3]}, {"y": [2, 3]},
                       initializers={"a": a, "b": a + 1})
    export = check_against_ort(model, tmp_path / "ort")
    assert operations(export) == ["mul"]


def test_gather_of_activations_is_converted_and_only_the_blocker_named(tmp_path: Path) -> None:
    """Gather of activations with constant indices is data movement (issue 29: slices, no longer refused);
    the Hardmax after it is the one blocker the refusal names."""
    nodes = [node("Gather", ["x", "idx"], ["g"], axis=1), node("Hardmax", ["g"], ["y"])]
    model = make_model(nodes, {"x": [2, 3]}, {"y": [2, 2]}, initializers={"idx": np.array([0, 2], np.int64)})
    with pytest.raises(ExportError) as info:
        export_model(model, tmp_path / "out")
    assert info.value.code == "EXPORT-E003"
    assert "1 unsupported operator: Hardmax at node 'y'" in str(info.value) and "Gather at" not in str(info.value)


def test_onnx_reference_agrees_on_the_folded_chain(tmp_path: Path) -> None:
    model, _ = _channel_shuffle(groups=4)
    feeds = random_inputs(model, seed=5)
    export = export_model(model, tmp_path / "out")
    ours = run_nnef(export, tmp_path / "out", feeds)["y"]
    assert np.array_equal(ours, run_reference(model, feeds)["y"])


def test_folded_nodes_are_traced_in_provenance(tmp_path: Path) -> None:
    """The trace check (HLR-EXP-003) accepts a folded node without NNEF line because provenance
    records what it folded to; the values are onnx.reference's."""
    from pipeline.export.checks import _trace_problems

    model, _ = _channel_shuffle()
    import onnx

    onnx.save(model, tmp_path / "model.onnx")
    export = export_model(model, tmp_path / "out")
    nodes = {n["name"]: n for n in export.provenance["nodes"]}
    assert nodes["s"]["folded"] == {"s": {"dtype": "int64", "shape": [4], "values": [1, 8, 3, 5]}}
    assert nodes["shape5"]["folded"]["shape5"]["values"] == [1, 2, 4, 3, 5]
    assert "folded" not in nodes["r"] and nodes["r"]["nnef_lines"]
    problems, _ = _trace_problems(tmp_path / "out", tmp_path / "model.onnx")
    assert problems == []


def _resize(opset: int, scales: list[float] | None, sizes: list[int] | None, shape=(1, 2, 3, 4), **attrs):
    inits: dict[str, np.ndarray] = {}
    inputs = ["x"]
    if opset < 11:
        inits["scales"] = np.array(scales, np.float32)
        inputs.append("scales")
    else:
        inputs += ["roi" if opset == 11 else "", "scales" if scales is not None else ""]
        if opset == 11:  # roi is a required input of Resize-11
            inits["roi"] = np.zeros(0, np.float32)
        if scales is not None:
            inits["scales"] = np.array(scales, np.float32)
        if sizes is not None:
            inits["sizes"] = np.array(sizes, np.int64)
            inputs.append("sizes")
    return make_model([node("Resize", inputs, ["y"], **attrs)], {"x": list(shape)}, {"y": None},
                      initializers=inits, opset=opset)


RESIZE_CASES = {
    # torch nn.Upsample(scale_factor=2, mode='nearest') / F.interpolate, opset 11 .. 13
    "torch_upsample": (13, [1, 1, 2, 2], None, {"mode": "nearest", "coordinate_transformation_mode": "asymmetric",
                                                 "nearest_mode": "floor", "cubic_coeff_a": -0.75}),
    "resize10": (10, [1, 1, 2, 3], None, {"mode": "nearest"}),
    "half_pixel_sizes": (19, None, [1, 2, 9, 8], {"mode": "nearest", "coordinate_transformation_mode": "half_pixel",
                                                   "nearest_mode": "round_prefer_ceil"}),
    "pytorch_half_pixel": (13, [1, 1, 3, 1], None, {"mode": "nearest",
                                                     "coordinate_transformation_mode": "pytorch_half_pixel"}),
    "tf_nn": (11, [1, 1, 2, 2], None, {"mode": "nearest", "coordinate_transformation_mode": "tf_half_pixel_for_nn",
                                        "nearest_mode": "floor"}),
}


@pytest.mark.parametrize("case", sorted(RESIZE_CASES))
def test_resize_nearest_whole_factors(tmp_path: Path, case: str) -> None:
    opset, scales, sizes, attrs = RESIZE_CASES[case]
    model = _resize(opset, scales, sizes, **attrs)
    feeds = random_inputs(model, seed=7)
    export = check_against_ort(model, tmp_path / "ort", feeds, atol=0.0, rtol=0.0)  # copies: exact
    if case not in ("resize10", "tf_nn"):  # onnx 1.23's reference runs neither Resize-10 nor tf_half_pixel_for_nn
        check_against_ort(model, tmp_path / "ref", feeds, atol=0.0, rtol=0.0, reference=True)
    assert operations(export) == ["nearest_upsample"]


@pytest.mark.parametrize("attrs, scales, fragment", [
    ({"mode": "cubic"}, [1, 1, 2, 2], "mode = 'cubic'"),
    ({"mode": "linear", "coordinate_transformation_mode": "asymmetric"}, [1, 1, 2, 2],
     "coordinate_transformation_mode = 'asymmetric' with mode = 'linear'"),
    ({"mode": "linear", "coordinate_transformation_mode": "tf_crop_and_resize"}, [1, 1, 2, 2],
     "coordinate_transformation_mode = 'tf_crop_and_resize' with mode = 'linear'"),
    ({"mode": "linear"}, [1, 1, 1.5, 2], "whole factor"),  # non-integer scale: NNEF factors are integers
    ({"mode": "linear", "coordinate_transformation_mode": "align_corners"}, [1, 1, 2.5, 2.5], "whole factor"),
    ({"mode": "linear"}, [1, 1, 0.5, 1], "whole factor"),
    ({"mode": "nearest", "coordinate_transformation_mode": "align_corners"}, [1, 1, 2, 2],
     "coordinate_transformation_mode = 'align_corners'"),
    ({"mode": "nearest", "coordinate_transformation_mode": "asymmetric", "nearest_mode": "round_prefer_floor"},
     [1, 1, 2, 2], "nearest_mode = 'round_prefer_floor'"),
    ({"mode": "nearest", "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"}, [1, 1, 1.5, 2],
     "whole factor"),
    ({"mode": "nearest", "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"}, [1, 1, 0.5, 1],
     "whole factor"),
])
def test_resize_other_combinations_are_refused_naming_the_attribute(tmp_path: Path, attrs, scales, fragment) -> None:
    model = _resize(13, scales, None, shape=(1, 2, 4, 4), **attrs)
    with pytest.raises(ExportError) as info:
        export_model(model, tmp_path / "out")
    assert info.value.code == "EXPORT-E004" and fragment in str(info.value), str(info.value)


# Resize mode 'linear' -> multilinear_upsample; (opset, scales, sizes, shape, attributes, method)
LINEAR_CASES = {
    # torch F.interpolate(mode='bilinear', align_corners=False) at opset 11..13
    "torch_bilinear": (13, [1, 1, 2, 2], None, (1, 2, 3, 4),
                       {"mode": "linear", "coordinate_transformation_mode": "pytorch_half_pixel"}, "symmetric"),
    # torch F.interpolate(mode='bilinear', align_corners=True)
    "torch_align_corners": (13, [1, 1, 2, 2], None, (1, 2, 3, 4),
                            {"mode": "linear", "coordinate_transformation_mode": "align_corners"}, "aligned"),
    "half_pixel_odd_sizes": (19, None, [2, 3, 15, 14], (2, 3, 5, 7), {"mode": "linear"}, "symmetric"),
    "half_pixel_scale3_1": (13, [1, 1, 3, 1], None, (1, 2, 5, 3), {"mode": "linear"}, "symmetric"),
    "aligned_odd_sizes": (18, None, [1, 2, 21, 12], (1, 2, 7, 3),
                          {"mode": "linear", "coordinate_transformation_mode": "align_corners"}, "aligned"),
    "linear_1d": (13, [1, 1, 4], None, (1, 3, 5), {"mode": "linear"}, "symmetric"),
    "aligned_from_1": (13, [1, 1, 2, 3], None, (1, 1, 1, 1),
                       {"mode": "linear", "coordinate_transformation_mode": "align_corners"}, "aligned"),
}


@pytest.mark.parametrize("case", sorted(LINEAR_CASES))
def test_resize_linear_whole_factors(tmp_path: Path, case: str) -> None:
    """Interpolation weights are rounded differently by each implementation: within a few ulp of
    onnxruntime and of onnx.reference; the Khronos parser reads the export back."""
    opset, scales, sizes, shape, attrs, method = LINEAR_CASES[case]
    model = _resize(opset, scales, sizes, shape=shape, **attrs)
    feeds = random_inputs(model, seed=11)
    export = check_against_ort(model, tmp_path / "ort", feeds, atol=1e-6, rtol=1e-6)
    check_against_ort(model, tmp_path / "ref", feeds, atol=1e-6, rtol=1e-6, reference=True)
    assert operations(export) == ["multilinear_upsample"]
    op = [o for o in export.graph.operations if o.name == "multilinear_upsample"][0]
    assert op.attribs["method"] == method and op.attribs["border"] == "replicate"

"""NVDLA legalization in the split step: rewrites recorded and checked, refusals before anything is written."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from pipeline.export import convert
from pipeline.semantics.interpreter import interpret
from pipeline.split.errors import SplitError
from pipeline.split.exported import load_exported
from pipeline.split.nvdla_legalize import LegalOp, check_legalized, legalize
from pipeline.split.step import split_to_directory
from tests.split.split_helpers import spec_text, with_tensors, write_spec


def _model(nodes, inits, in_shape, out_shape, opset=13):
    graph = helper.make_graph(nodes, "m", [helper.make_tensor_value_info("x", TensorProto.FLOAT, in_shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)],
                              [onnx.numpy_helper.from_array(v.astype(np.float32), k) for k, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _legal(model):
    exported = convert(model)
    return exported, legalize(exported.graph, exported.variables, text=exported.text)


def _env(exported, shape, seed=0):
    x = np.random.default_rng(seed).uniform(-1, 1, shape).astype(np.float32)
    return interpret(exported.graph, {"x": x}, exported.variables, keep=True)


def test_rewrites_are_recorded_with_rule_before_after_and_line_and_check_against_the_reference():
    rng = np.random.default_rng(1)
    model = _model([
        helper.make_node("Conv", ["x", "w"], ["c"], group=2),
        helper.make_node("BatchNormalization", ["c", "s", "b", "m", "v"], ["n"]),
        helper.make_node("Clip", ["n", "lo", "hi"], ["k"]),
        helper.make_node("GlobalAveragePool", ["k"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"]),
        helper.make_node("Gemm", ["f", "W", "B"], ["y"], transB=1),
    ], {"w": rng.normal(size=(4, 1, 3, 3)), "s": rng.uniform(0.5, 2, 4), "b": rng.normal(size=4),
        "m": rng.normal(size=4), "v": rng.uniform(0.5, 2, 4), "lo": np.array(-0.5), "hi": np.array(0.5),
        "W": rng.normal(size=(3, 4)), "B": rng.normal(size=3)}, [1, 2, 6, 6], [1, 3])
    exported, legal = _legal(model)
    rules = [r.rule for r in legal.rewrites]
    for rule in ("grouped-conv-to-dense", "batch-normalization-to-sdp-scale-bias", "clamp-to-max-min",
                 "global-average-pool-to-average-pool", "linear-to-1x1-conv"):
        assert rule in rules
    assert all(r.line > 0 and r.before and r.after for r in legal.rewrites)
    assert [op.kind for op in legal.ops] == ["conv", "scale_bias", "eltwise", "eltwise", "pool", "reshape", "conv"]
    check_legalized(legal, _env(exported, [1, 2, 6, 6]))


def test_a_wrong_rewrite_is_caught_by_the_reference_check():
    rng = np.random.default_rng(2)
    model = _model([helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"])],
                   {"s": rng.uniform(0.5, 2, 3), "b": rng.normal(size=3), "m": rng.normal(size=3),
                    "v": rng.uniform(0.5, 2, 3)}, [1, 3, 4, 4], [1, 3, 4, 4])
    exported, legal = _legal(model)
    op: LegalOp = legal.ops[0]
    op.consts["bias"] = op.consts["bias"] + np.float32(0.01)
    with pytest.raises(SplitError) as caught:
        check_legalized(legal, _env(exported, [1, 3, 4, 4]))
    assert caught.value.code == "SPLIT-E103" and "batch-normalization-to-sdp-scale-bias" in caught.value.message


@pytest.mark.parametrize("node, inits, out, expect", [
    (helper.make_node("Conv", ["x", "w"], ["y"]), {"w": np.ones((1, 1, 33, 1))}, [1, 1, 8, 4],
     "kernel size 33 outside the limit 1-32"),
    (helper.make_node("Conv", ["x", "w"], ["y"], strides=[9, 1]), {"w": np.ones((1, 1, 1, 1))}, [1, 1, 5, 4],
     "stride 9 outside the limit 1-8"),
    (helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[9, 1]), {}, [1, 1, 32, 4],
     "pooling kernel 9 outside the limit 1-8"),
    (helper.make_node("LogSoftmax", ["x"], ["y"], axis=1), {}, [1, 1, 40, 4],
     "no NVDLA unit or fallback implements it"),
])
def test_unsupported_operations_and_exceeded_limits_are_refused_naming_operation_line_limit_configuration(
        node, inits, out, expect):
    model = _model([node], inits, [1, 1, 40, 4], out)
    with pytest.raises(SplitError) as caught:
        _legal(model)
    error = caught.value
    assert error.code == "SPLIT-E101" and expect in error.message and "(nv_full)" in error.message
    assert f"NNEF line {error.location.line}" in error.message and error.location.line > 0


GRAPH = """version 1.0;

graph g( input ) -> ( out )
{
    input = external<scalar>(shape = [1, 2, 8, 8]);
    w1 = variable<scalar>(shape = [4, 2, 3, 3], label = 'w1');
    b1 = variable<scalar>(shape = [1, 4], label = 'b1');
    c1 = conv(input, w1, b1, border = 'constant', padding = [(1, 1), (1, 1)], stride = [1, 1], dilation = [1, 1], groups = 1);
    r1 = relu(c1);
    p1 = max_pool(r1, size = [1, 1, 2, 2], border = 'ignore', padding = [(0, 0), (0, 0), (0, 0), (0, 0)], stride = [1, 1, 2, 2], dilation = [1, 1, 1, 1]);
    s1 = exp(p1);
    out = tanh(s1);
}
"""


def _split(tmp_path: Path, allocation: str):
    with_tensors(GRAPH, tmp_path / "export")
    exported = load_exported(tmp_path / "export")
    spec = write_spec(tmp_path, spec_text("g", {"input": [1, 2, 8, 8]}, f"""  dla:
    items: [{{name: CPU0, target: cpu}}, {{name: DLA0, target: nvdla}}]
    default_item: CPU0
    allocation:
      DLA0: [{allocation}]
    sync: event
"""))
    return split_to_directory(exported, spec, tmp_path / "split", vectors=1)


def test_a_legal_nvdla_item_splits(tmp_path: Path):
    outcomes = _split(tmp_path, "c1, r1, p1")
    assert (tmp_path / "split" / "dla" / "plan.json").is_file() and outcomes[0].name == "dla"
    record = json.loads((tmp_path / "split" / "dla" / "DLA0.nvdla-legalization.json").read_text())
    assert [(op["kind"], op["nnef_line"]) for op in record["operations"]] == [("conv", 8), ("relu", 9), ("pool", 10)]
    assert record["configuration"] == "nv_full" and record["rewrites"] == []


def test_an_nvdla_item_with_an_unsupported_operation_is_refused_when_split_and_nothing_is_written(tmp_path: Path):
    with pytest.raises(SplitError) as caught:
        _split(tmp_path, "c1, r1, p1, s1")
    assert caught.value.code == "SPLIT-E101" and "'exp' at NNEF line 11" in caught.value.message
    assert "(nv_full)" in caught.value.message
    assert not (tmp_path / "split").exists()


def test_a_convolution_beyond_the_convolution_buffer_is_split_along_input_channels_and_still_emulates():
    from pipeline.codegen.nvdla.mapping import map_program
    from pipeline.codegen.nvdla.validate import validate_loadable
    from pipeline.codegen.nvdla.writer import write_loadable
    from pipeline.execute.nvdla.emulator import emulate
    from pipeline.split import nvdla_cbuf

    rng = np.random.default_rng(5)
    weight = rng.integers(-2, 3, size=(16, 2048, 3, 3)).astype(np.float32) / 4  # 589,824 bytes in FP16
    model = _model([helper.make_node("Conv", ["x", "w", "b"], ["y"], pads=[1, 1, 1, 1])],
                   {"w": weight, "b": rng.integers(-4, 4, 16).astype(np.float32)}, [1, 2048, 3, 3], [1, 16, 3, 3])
    # one group of 16 kernels over 2048 channels needs 18 banks: no allocation of nv_full's 16 fits
    assert nvdla_cbuf.allocate(2048, 3, 3, 16, 3, 3) is None
    exported, legal = _legal(model)
    assert [op.kind for op in legal.ops] == ["conv", "conv", "eltwise"]
    assert [op.attrs.get("in_channels") for op in legal.ops if op.kind == "conv"] == [(0, 1696), (1696, 2048)]
    assert [r.rule for r in legal.rewrites] == ["conv-split-input-channels"]
    x = rng.integers(0, 4, size=(1, 2048, 3, 3)).astype(np.float32)
    env = interpret(exported.graph, {"x": x}, exported.variables, keep=True)
    check_legalized(legal, env)
    data, _, _ = write_loadable(map_program(legal))
    assert validate_loadable(data) == []
    out = emulate(data, {"x": x})["y"].astype(np.float32)
    # small integers and quarters: every partial sum is exact in FP16, so the split changes nothing
    assert np.array_equal(out.reshape(-1), env["y"].reshape(-1))


def test_a_convolution_whose_input_exceeds_the_buffer_is_split_into_bands_of_rows_and_still_emulates():
    from pipeline.codegen.nvdla.mapping import map_program
    from pipeline.codegen.nvdla.validate import validate_loadable
    from pipeline.codegen.nvdla.writer import write_loadable
    from pipeline.execute.nvdla.emulator import emulate

    rng = np.random.default_rng(7)
    weight = rng.integers(-2, 3, size=(8, 3, 3, 3)).astype(np.float32) / 4
    model = _model([helper.make_node("Conv", ["x", "w", "b"], ["y"], pads=[1, 1, 1, 1], strides=[2, 1])],
                   {"w": weight, "b": rng.integers(-3, 3, 8).astype(np.float32)}, [1, 3, 300, 200], [1, 8, 150, 200])
    exported, legal = _legal(model)
    # 3 channels of width 200: 50 entries a row, 300 rows = 59 banks; 37 output rows (74 input rows) fit 15 banks
    assert [op.attrs["rows"] for op in legal.ops] == [(0, 37, 0, 74), (37, 74, 73, 148), (74, 111, 147, 222),
                                                      (111, 148, 221, 296), (148, 150, 295, 300)]
    assert [op.attrs["padding"][0] for op in legal.ops] == [(1, 0), (0, 0), (0, 0), (0, 0), (0, 0)]
    assert [r.rule for r in legal.rewrites] == ["conv-split-rows"]
    x = rng.integers(0, 4, size=(1, 3, 300, 200)).astype(np.float32)
    env = interpret(exported.graph, {"x": x}, exported.variables, keep=True)
    check_legalized(legal, env)
    data, _, _ = write_loadable(map_program(legal))
    assert validate_loadable(data) == []
    assert np.array_equal(emulate(data, {"x": x})["y"].astype(np.float32).reshape(-1), env["y"].reshape(-1))


def test_a_convolution_neither_rows_nor_channels_make_fit_is_refused():
    model = _model([helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1])], {"w": np.ones((4, 64, 3, 3))},
                   [1, 64, 64, 4096], [1, 4, 64, 4096])
    with pytest.raises(SplitError) as caught:
        _legal(model)
    assert "exceed the 16 banks of the convolution buffer, and neither its rows nor its input channels split" in \
        caught.value.message


def test_every_operation_the_item_cannot_run_is_named_with_its_limit_and_the_supported_set():
    model = _model([helper.make_node("MaxPool", ["x"], ["p"], kernel_shape=[9, 1]),
                    helper.make_node("LogSoftmax", ["p"], ["y"], axis=1)], {}, [1, 1, 40, 4], [1, 1, 32, 4])
    with pytest.raises(SplitError) as caught:
        _legal(model)
    message = caught.value.message
    assert message.startswith("7 operations cannot run on NVDLA (nv_full): 'max_pool' at NNEF line")
    assert "pooling kernel 9 outside the limit 1-8" in message and "'exp' at NNEF line" in message
    assert "max_reduce over axes [1] (PDP pools over H and W only)" in message
    assert "An nvdla item runs: conv" in message and caught.value.location.line > 0


def test_a_pooling_output_wider_than_the_pdp_line_buffer_is_refused():
    """A 3-high window at stride 1 keeps 4 lines: the PDP holds 32 FP16 columns in one pass (engine-ast/PDPNode.cpp
    calculateMaxWidth); NVIDIA's compiler would split the width, which is not built."""
    model = _model([helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1])], {},
                   [1, 1, 4, 40], [1, 1, 4, 40])
    with pytest.raises(SplitError) as caught:
        _legal(model)
    assert "a pooling output 40 wide beyond the 32 the PDP's line buffer holds" in caught.value.message

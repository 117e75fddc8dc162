"""The NVDLA emulator on loadables of small models whose values are exact in FP16 (small integers, quarters):
every unit's geometry (strides, padding, dilation, pooling windows, unaligned channel counts, per-layer,
per-channel and per-point SDP operands) must then give the FP16 of the float32 reference bit for bit, in both
emulator modes (the hardware's block floating point and FP17 lose nothing on such values)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from pipeline.codegen.nvdla.mapping import map_program
from pipeline.codegen.nvdla.validate import validate_loadable
from pipeline.codegen.nvdla.writer import write_loadable
from pipeline.execute.nvdla.emulator import emulate
from pipeline.export import convert
from pipeline.semantics.interpreter import interpret
from pipeline.split.nvdla_legalize import legalize

RNG = np.random.default_rng(11)


def _ints(*shape, low=-3, high=4):
    return RNG.integers(low, high, size=shape).astype(np.float32)


def _model(nodes, inits, in_shape, out_shape):
    graph = helper.make_graph(nodes, "m", [helper.make_tensor_value_info("x", TensorProto.FLOAT, in_shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)],
                              [onnx.numpy_helper.from_array(np.asarray(v, np.float32), k) for k, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


CASES = {
    "conv-stride-pad-dilation-bias": (
        [helper.make_node("Conv", ["x", "w", "b"], ["y"], strides=[2, 1], pads=[1, 2, 0, 1], dilations=[2, 1])],
        {"w": _ints(6, 3, 3, 2), "b": _ints(6)}, [1, 3, 9, 7], [1, 6, 3, 9]),
    "maxpool-stride-pad": (
        [helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[3, 2], strides=[2, 2], pads=[1, 0, 1, 1])],
        {}, [1, 18, 7, 6], [1, 18, 4, 3]),
    "avgpool-stride": (
        [helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[2, 2], strides=[2, 2])],
        {}, [1, 5, 6, 6], [1, 5, 3, 3]),
    "conv-clip-relu": (
        [helper.make_node("Conv", ["x", "w"], ["c"]), helper.make_node("Clip", ["c", "lo", "hi"], ["k"]),
         helper.make_node("Relu", ["k"], ["y"])],
        {"w": _ints(4, 2, 1, 1), "lo": np.array(-2.0), "hi": np.array(3.0)}, [1, 2, 5, 5], [1, 4, 5, 5]),
    "concat-unaligned-channels": (
        [helper.make_node("Conv", ["x", "w1"], ["a"]), helper.make_node("Conv", ["x", "w2"], ["b"]),
         helper.make_node("Conv", ["x", "w3"], ["c"]), helper.make_node("Concat", ["a", "b", "c"], ["y"], axis=1)],
        {"w1": _ints(5, 3, 1, 1), "w2": _ints(20, 3, 1, 1), "w3": _ints(7, 3, 1, 1)}, [1, 3, 4, 3], [1, 32, 4, 3]),
    "mul-per-channel-add-per-point": (
        [helper.make_node("Mul", ["x", "m"], ["p"]), helper.make_node("Add", ["p", "a"], ["y"])],
        {"m": _ints(1, 17, 1, 1), "a": _ints(1, 17, 3, 2)}, [1, 17, 3, 2], [1, 17, 3, 2]),
    "leaky-relu-identity": (
        [helper.make_node("LeakyRelu", ["x"], ["l"], alpha=0.25), helper.make_node("Identity", ["l"], ["y"])],
        {}, [1, 3, 4, 4], [1, 3, 4, 4]),
    "prelu-per-channel": (
        [helper.make_node("PRelu", ["x", "s"], ["y"])], {"s": np.array([0.5, 0.25, 2.0]).reshape(3, 1, 1)},
        [1, 3, 2, 5], [1, 3, 2, 5]),
    "sub-div-constants": (
        [helper.make_node("Sub", ["x", "c"], ["d"]), helper.make_node("Div", ["d", "q"], ["y"])],
        {"c": _ints(1, 4, 1, 1), "q": np.array([2.0, 4.0, 0.5, 1.0]).reshape(1, 4, 1, 1)}, [1, 4, 3, 3], [1, 4, 3, 3]),
    "max-of-two-convs-global-max-pool": (
        [helper.make_node("Conv", ["x", "w1"], ["a"]), helper.make_node("Conv", ["x", "w2"], ["b"]),
         helper.make_node("Max", ["a", "b"], ["m"]), helper.make_node("GlobalMaxPool", ["m"], ["y"])],
        {"w1": _ints(3, 2, 1, 1), "w2": _ints(3, 2, 1, 1)}, [1, 2, 5, 4], [1, 3, 1, 1]),
    "transpose-channels": (
        [helper.make_node("Reshape", ["x", "s1"], ["r"]), helper.make_node("Transpose", ["r"], ["t"], perm=[0, 2, 1, 3]),
         helper.make_node("Reshape", ["t", "s2"], ["y"])],
        {"s1": np.array([1, 2, 3, 4]), "s2": np.array([1, 6, 2, 2])}, [1, 6, 2, 2], [1, 6, 2, 2]),
}


@pytest.mark.parametrize("mode", ["ideal", "hw-approx"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_emulated_loadable_equals_the_fp16_of_the_reference(name, mode):
    nodes, inits, in_shape, out_shape = CASES[name]
    if name == "transpose-channels":  # Reshape's shape inputs are int64
        graph = helper.make_graph(nodes, "m", [helper.make_tensor_value_info("x", TensorProto.FLOAT, in_shape)],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)],
                                  [onnx.numpy_helper.from_array(v.astype(np.int64), k) for k, v in inits.items()])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    else:
        model = _model(nodes, inits, in_shape, out_shape)
    exported = convert(model)
    legal = legalize(exported.graph, exported.variables, text=exported.text)
    data, _, _ = write_loadable(map_program(legal))
    assert validate_loadable(data) == []
    x = _ints(*in_shape)
    want = interpret(exported.graph, {"x": x}, exported.variables)["y"]
    got = emulate(data, {"x": x}, mode)["y"].reshape(-1)
    want = want.reshape(-1).astype(np.float16)
    if mode == "hw-approx":  # an exact cancellation keeps the data's sign there (-0 where IEEE gives +0: sdp_add)
        assert np.array_equal(got, want) and np.array_equal(got[got != 0].view(np.uint16), want[want != 0].view(np.uint16))
        return
    assert np.array_equal(got.view(np.uint16), want.view(np.uint16))


def test_softmax_runs_on_nvidia_s_emulator_layout_within_fp16():
    model = _model([helper.make_node("Softmax", ["x"], ["y"], axis=1)], {}, [1, 10], [1, 10])
    exported = convert(model)
    legal = legalize(exported.graph, exported.variables, text=exported.text)
    data, content, debug = write_loadable(map_program(legal))
    assert [row["unit"] for row in debug] == ["EMU"] and validate_loadable(data) == []
    names = sorted(b["name"] for b in content["blobs"])
    assert names == ["task-0-addr0", "task-0-op_buf_list", "task-0-op_list"]  # emu_interface.h's three blobs
    x = RNG.normal(size=(1, 10)).astype(np.float16).astype(np.float32)  # the input surface holds FP16
    want = interpret(exported.graph, {"x": x}, exported.variables)["y"].reshape(-1)
    got = emulate(data, {"x": x})["y"].astype(np.float32).reshape(-1)
    assert np.max(np.abs(got - want)) <= 2 ** -11 * np.max(np.abs(want))


@pytest.mark.parametrize("shape, axis", [([1, 10, 2, 3], 1), ([1, 4, 5], 2)])
def test_softmax_nvidia_s_emulator_cannot_run_is_refused_at_legalization(shape, axis):
    from pipeline.split.errors import SplitError

    exported = convert(_model([helper.make_node("Softmax", ["x"], ["y"], axis=axis)], {}, shape, shape))
    with pytest.raises(SplitError) as caught:
        legalize(exported.graph, exported.variables, text=exported.text)
    assert caught.value.code == "SPLIT-E101" and "channels of a 1 x C" in caught.value.message


@pytest.mark.parametrize("fn", ["Sigmoid", "Tanh"])
def test_sigmoid_and_tanh_run_on_the_sdp_lookup_table_within_a_few_fp16_ulps(fn):
    model = _model([helper.make_node(fn, ["x"], ["y"])], {}, [1, 3, 40, 40], [1, 3, 40, 40])
    exported = convert(model)
    legal = legalize(exported.graph, exported.variables, text=exported.text)
    data, _, debug = write_loadable(map_program(legal))
    assert [row["unit"] for row in debug] == ["SDP"] and validate_loadable(data) == []
    x = np.linspace(-20, 20, 4800, dtype=np.float32).astype(np.float16).astype(np.float32).reshape(1, 3, 40, 40)
    want = interpret(exported.graph, {"x": x}, exported.variables)["y"]
    # half an FP16 ulp of a sample (2.4e-4) + linear interpolation between samples 1/8 (sigmoid: 1.9e-4) or 1/32
    # (tanh: 9.4e-5) apart + half an ulp of the output (2.4e-4); tanh is flat beyond +-4 (1 - tanh(4) = 6.7e-4);
    # hw-approx adds the FP17 roundings of the interpolation (sdp_y_inp.cpp). Measured: 5.4e-4 / 7.0e-4 (sigmoid),
    # 4.9e-4 / 6.5e-4 (tanh).
    for mode, bound in (("ideal", 6.5e-4), ("hw-approx", 8e-4)):
        got = emulate(data, {"x": x}, mode)["y"].astype(np.float32).reshape(want.shape)
        assert np.max(np.abs(got - want)) <= bound

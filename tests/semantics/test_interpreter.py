"""The interpreter: graph execution, binding, errors with codes and locations, keep mode,
the tensor-file loader, the `interpret` command, and LeNet-5 timing."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest


from tests.semantics.semantics_helpers import F32, one, rand, same_bits

from pipeline.diagnostics import PipelineError, Span
from pipeline.nnef.graph import Graph, Operation, Ref, TensorInfo
from pipeline.semantics import interpret, load_variables, lookup, supported_operations

RNG = np.random.default_rng(41)

LENET = """version 1.0;

graph lenet( input ) -> ( output )
{
    input = external<scalar>(shape = [1, 1, 32, 32]);
    w1 = variable<scalar>(shape = [6, 1, 5, 5], label = 'w1');
    b1 = variable<scalar>(shape = [1, 6], label = 'b1');
    c1 = conv(input, w1, b1, border = 'constant', padding = [(0, 0), (0, 0)], stride = [1, 1], dilation = [1, 1], groups = 1);
    r1 = relu(c1);
    p1 = max_pool(r1, size = [1, 1, 2, 2], border = 'ignore', padding = [(0, 0), (0, 0), (0, 0), (0, 0)], stride = [1, 1, 2, 2], dilation = [1, 1, 1, 1]);
    w2 = variable<scalar>(shape = [16, 6, 5, 5], label = 'w2');
    b2 = variable<scalar>(shape = [1, 16], label = 'b2');
    c2 = conv(p1, w2, b2, border = 'constant', padding = [(0, 0), (0, 0)], stride = [1, 1], dilation = [1, 1], groups = 1);
    r2 = relu(c2);
    p2 = max_pool(r2, size = [1, 1, 2, 2], border = 'ignore', padding = [(0, 0), (0, 0), (0, 0), (0, 0)], stride = [1, 1, 2, 2], dilation = [1, 1, 1, 1]);
    f = reshape(p2, shape = [1, 400], axis_start = 0, axis_count = -1);
    w3 = variable<scalar>(shape = [120, 400], label = 'w3');
    b3 = variable<scalar>(shape = [1, 120], label = 'b3');
    l3 = linear(f, w3, b3);
    r3 = relu(l3);
    w4 = variable<scalar>(shape = [84, 120], label = 'w4');
    b4 = variable<scalar>(shape = [1, 84], label = 'b4');
    l4 = linear(r3, w4, b4);
    r4 = relu(l4);
    w5 = variable<scalar>(shape = [10, 84], label = 'w5');
    b5 = variable<scalar>(shape = [1, 10], label = 'b5');
    l5 = linear(r4, w5, b5);
    output = softmax(l5, axes = [1]);
}
"""

LENET_SHAPES = {"w1": [6, 1, 5, 5], "b1": [1, 6], "w2": [16, 6, 5, 5], "b2": [1, 16], "w3": [120, 400],
                "b3": [1, 120], "w4": [84, 120], "b4": [1, 84], "w5": [10, 84], "b5": [1, 10]}


def lenet_graph() -> Graph:
    from pipeline.nnef.checker import check_text

    report = check_text(LENET, "lenet.nnef", profile="standard")
    assert report.ok, [str(f) for f in report.findings]
    return report.graphs[0]


def lenet_weights() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(7)
    return {k: (rng.standard_normal(s) * 0.2).astype(F32) for k, s in LENET_SHAPES.items()}


def _op(name, inputs, attribs, outputs, dtype=None, line=1):
    return Operation(name, inputs, attribs, outputs, dtype, Span("g.nnef", line, 5))


def small_graph() -> Graph:
    """x -> y = relu(x * 2.0 + w); z = sum_reduce(y)."""
    ops = [
        _op("external", {}, {"shape": [2, 3]}, {"output": Ref("x")}, "scalar", 1),
        _op("variable", {}, {"shape": [1, 3], "label": "layer/w"}, {"output": Ref("w")}, "scalar", 2),
        _op("mul", {"x": Ref("x"), "y": 2.0}, {}, {"z": Ref("t")}, None, 3),
        _op("add", {"x": Ref("t"), "y": Ref("w")}, {}, {"z": Ref("u")}, None, 4),
        _op("relu", {"x": Ref("u")}, {}, {"y": Ref("y")}, None, 5),
        _op("sum_reduce", {"input": Ref("y")}, {"axes": [1], "normalize": False}, {"output": Ref("z")}, None, 6),
    ]
    tensors = {n: TensorInfo(n, "scalar", s) for n, s in
               (("x", [2, 3]), ("w", [1, 3]), ("t", [2, 3]), ("u", [2, 3]), ("y", [2, 3]), ("z", [2, 1]))}
    return Graph("small", ["x"], ["y", "z"], ops, tensors)


def test_small_graph_outputs_and_keep():
    x, w = rand(RNG, 2, 3), rand(RNG, 1, 3)
    out = interpret(small_graph(), {"x": x}, {"layer/w": w})
    assert set(out) == {"y", "z"}
    expected_y = np.where((x * F32(2) + w) > 0, x * F32(2) + w, F32(0))
    assert same_bits(out["y"], expected_y)
    assert same_bits(out["z"], one("sum_reduce", {"input": expected_y}, axes=[1], normalize=False))
    everything = interpret(small_graph(), {"x": x}, {"w": w}, keep=True)  # variables by tensor name too
    assert {"x", "w", "t", "u", "y", "z"} <= set(everything)


def test_errors_carry_codes_and_locations():
    graph = small_graph()
    x = rand(RNG, 2, 3)
    with pytest.raises(PipelineError) as info:
        interpret(graph, {}, {"layer/w": rand(RNG, 1, 3)})
    assert info.value.code == "SEM-E002" and str(info.value.location) == "g.nnef:1:5"
    with pytest.raises(PipelineError) as info:
        interpret(graph, {"x": x.astype(np.float64)}, {"layer/w": rand(RNG, 1, 3)})
    assert info.value.code == "SEM-E003"
    with pytest.raises(PipelineError) as info:
        interpret(graph, {"x": rand(RNG, 3, 2)}, {"layer/w": rand(RNG, 1, 3)})
    assert info.value.code == "SEM-E003"
    graph.operations[4] = _op("frobnicate", {"x": Ref("u")}, {}, {"y": Ref("y")}, None, 5)
    with pytest.raises(PipelineError) as info:
        interpret(graph, {"x": x}, {"layer/w": rand(RNG, 1, 3)})
    assert info.value.code == "SEM-E001" and "frobnicate" in info.value.message and str(info.value.location) == "g.nnef:5:5"


def test_result_shape_disagreement_and_kernel_errors_are_located():
    graph = small_graph()
    graph.tensors["z"] = TensorInfo("z", "scalar", [2])
    with pytest.raises(PipelineError) as info:
        interpret(graph, {"x": rand(RNG, 2, 3)}, {"layer/w": rand(RNG, 1, 3)})
    assert info.value.code == "SEM-E006" and str(info.value.location) == "g.nnef:6:5"
    graph = small_graph()
    graph.operations[5].attribs["axes"] = [5]
    with pytest.raises(PipelineError) as info:
        interpret(graph, {"x": rand(RNG, 2, 3)}, {"layer/w": rand(RNG, 1, 3)})
    assert info.value.code == "SEM-E004" and str(info.value.location) == "g.nnef:6:5"
    assert info.value.message.startswith("sum_reduce:")


def test_registry():
    names = supported_operations()
    from pipeline.nnef.catalogue import EXECUTABLE

    assert set(EXECUTABLE) <= set(names), sorted(set(EXECUTABLE) - set(names))
    for name in names:
        if name not in ("external", "variable"):
            assert lookup(name).__doc__, f"kernel of {name} has no docstring"
    with pytest.raises(PipelineError) as info:
        lookup("nope", Span("f.nnef", 3, 4))
    assert info.value.code == "SEM-E001" and str(info.value.location) == "f.nnef:3:4"


def test_lenet_through_the_checker_and_tensor_files(tmp_path):
    from pipeline.nnef.tensorfile import write_tensor

    graph = lenet_graph()
    weights = lenet_weights()
    for label, value in weights.items():
        write_tensor(tmp_path / f"{label}.dat", value)
    loaded = load_variables(graph, tmp_path)
    assert all(same_bits(loaded[k], weights[k]) for k in weights)
    x = rand(RNG, 1, 1, 32, 32)
    out = interpret(graph, {"input": x}, loaded)["output"]
    assert out.shape == (1, 10) and out.dtype == np.float32
    assert abs(float(out.astype(np.float64).sum()) - 1.0) < 1e-6
    (tmp_path / "w5.dat").unlink()
    with pytest.raises(PipelineError) as info:
        load_variables(graph, tmp_path)
    assert info.value.code == "SEM-E007"


def test_lenet_against_onnxruntime():
    """The whole network against an ONNX model of it (tolerance: float32 error of the
    reduction chain, far below the values' scale)."""
    import onnx
    from onnx import helper, numpy_helper

    import onnxruntime

    w = lenet_weights()
    init = [numpy_helper.from_array(w[k].reshape(-1) if k.startswith("b") else w[k], k) for k in w]
    nodes = [
        helper.make_node("Conv", ["input", "w1", "b1"], ["c1"]), helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p1", "w2", "b2"], ["c2"]), helper.make_node("Relu", ["c2"], ["r2"]),
        helper.make_node("MaxPool", ["r2"], ["p2"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Flatten", ["p2"], ["f"]),
        helper.make_node("Gemm", ["f", "w3", "b3"], ["l3"], transB=1), helper.make_node("Relu", ["l3"], ["r3"]),
        helper.make_node("Gemm", ["r3", "w4", "b4"], ["l4"], transB=1), helper.make_node("Relu", ["l4"], ["r4"]),
        helper.make_node("Gemm", ["r4", "w5", "b5"], ["l5"], transB=1),
        helper.make_node("Softmax", ["l5"], ["output"], axis=1),
    ]
    graph = helper.make_graph(nodes, "lenet", [helper.make_tensor_value_info("input", onnx.TensorProto.FLOAT, [1, 1, 32, 32])],
                              [helper.make_tensor_value_info("output", onnx.TensorProto.FLOAT, [1, 10])], init)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=10)
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    ours_graph = lenet_graph()
    for seed in range(3):
        x = np.random.default_rng(seed).standard_normal((1, 1, 32, 32)).astype(F32)
        ours = interpret(ours_graph, {"input": x}, w)["output"]
        theirs = session.run(None, {"input": x})[0]
        assert np.allclose(ours, theirs, rtol=1e-4, atol=1e-6)


def test_lenet_interpretation_time():
    graph, weights = lenet_graph(), lenet_weights()
    x = rand(RNG, 1, 1, 32, 32)
    interpret(graph, {"input": x}, weights)
    best = min(_timed(lambda: interpret(graph, {"input": x}, weights)) for _ in range(5))
    assert best < 0.05, f"LeNet-5 took {best * 1e3:.1f} ms"


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _interpret_cli(argv: list[str]) -> int:
    """The `interpret` sub-command alone (other steps' commands are not needed here)."""
    import argparse

    from pipeline.semantics import command

    parser = argparse.ArgumentParser()
    command.register(parser.add_subparsers())
    args = parser.parse_args(argv)
    return int(args.func(args))


def test_interpret_command_is_registered():
    from pipeline.cli import COMMAND_MODULES

    assert "pipeline.semantics.command" in COMMAND_MODULES


def test_interpret_command(tmp_path, capsys):
    from pipeline.nnef.tensorfile import read_tensor, write_tensor

    main = _interpret_cli

    model = tmp_path / "lenet"
    model.mkdir()
    (model / "graph.nnef").write_text(LENET)
    for label, value in lenet_weights().items():
        write_tensor(model / f"{label}.dat", value)
    x = rand(RNG, 1, 1, 32, 32)
    write_tensor(tmp_path / "x.dat", x)
    out = tmp_path / "out"
    assert main(["interpret", str(model), "--input", f"input={tmp_path / 'x.dat'}", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "output: float32 [1, 10]" in printed
    summary = json.loads((out / "summary.json").read_text())
    assert summary["schema_version"] == 1 and summary["given_inputs"] == ["input"]
    expected = interpret(lenet_graph(), {"input": x}, lenet_weights())["output"]
    assert same_bits(read_tensor(out / "outputs" / "output.dat"), expected)
    # seeded inputs are reproducible
    assert main(["interpret", str(model), "--seed", "3", "--out", str(tmp_path / "a")]) == 0
    assert main(["interpret", str(model), "--seed", "3", "--out", str(tmp_path / "b")]) == 0
    assert (tmp_path / "a" / "summary.json").read_bytes() == (tmp_path / "b" / "summary.json").read_bytes()
    assert main(["interpret", str(model), "--input", "nosuch=x.dat"]) == 2
    assert main(["interpret", str(tmp_path / "missing")]) == 2

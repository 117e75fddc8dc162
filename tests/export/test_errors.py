"""Rejections (HLR-EXP-002): the code, the node, op type, opset and supported list, and
nothing written; output-directory handling; the CLI's exit codes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper


from tests.export.helpers import make_model, node, value_info

from pipeline.cli import main
from pipeline.export import ExportError, export_model, supported_operators
from pipeline.export.errors import CODES


def _expect(model: onnx.ModelProto, tmp_path: Path, code: str, *fragments: str) -> ExportError:
    target = tmp_path / "out"
    with pytest.raises(ExportError) as info:
        export_model(model, target)
    assert info.value.code == code, str(info.value)
    for fragment in fragments:
        assert fragment in str(info.value), (fragment, str(info.value))
    assert not target.exists()
    assert list(tmp_path.iterdir()) == [], "nothing may be written"
    return info.value


def test_unsupported_operator_names_node_op_opset_and_supported_list(tmp_path: Path) -> None:
    model = make_model([node("Relu", ["x"], ["r"]), helper.make_node("Hardmax", ["r"], ["y"], name="my_hardmax")],
                       {"x": [2, 3]}, {"y": [2, 3]}, opset=13)
    error = _expect(model, tmp_path, "EXPORT-E003", "node 'my_hardmax'", "op type Hardmax", "opset 13")
    assert f"supported operators: {', '.join(supported_operators())}" in str(error)
    assert error.location.element == "node 'my_hardmax'" and str(error.location) == "node 'my_hardmax'"


def test_every_unsupported_operator_is_reported_at_once(tmp_path: Path) -> None:
    """Issue 15: one EXPORT-E003 lists each unsupported node (op type, name, index), not only the first."""
    model = make_model([helper.make_node("Hardmax", ["x"], ["a"], name="first_hardmax"), node("Relu", ["a"], ["b"]),
                        helper.make_node("Cos", ["b"], ["c"], name="the_cos"),
                        helper.make_node("Hardmax", ["c"], ["y"], name="second_hardmax")],
                       {"x": [2, 3]}, {"y": [2, 3]}, opset=13)
    error = _expect(model, tmp_path, "EXPORT-E003", "3 unsupported operators",
                    "Hardmax at node 'first_hardmax' (index 0)", "Cos at node 'the_cos' (index 2)",
                    "Hardmax at node 'second_hardmax' (index 3)")
    assert error.location.element == "node 'first_hardmax'"
    assert "Relu at" not in str(error)


def test_unsupported_domain(tmp_path: Path) -> None:
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="r", domain="com.example")], "g",
                              [value_info("x", [2])], [value_info("y", [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("com.example", 1)],
                              ir_version=10)
    _expect(model, tmp_path, "EXPORT-E003", "domain 'com.example'")


def test_unnamed_node_is_named_by_index(tmp_path: Path) -> None:
    model = make_model([helper.make_node("Cos", ["x"], ["y"])], {"x": [2]}, {"y": [2]}, opset=13)
    _expect(model, tmp_path, "EXPORT-E003", "node '#0 (Cos)'")


def test_dynamic_input_shape(tmp_path: Path) -> None:
    model = make_model([node("Relu", ["x"], ["y"])], {"x": ["batch", 3]}, {"y": ["batch", 3]})
    _expect(model, tmp_path, "EXPORT-E005", "graph input 'x'", "[?, 3]")


def test_unknown_rank_input(tmp_path: Path) -> None:
    graph = helper.make_graph([node("Relu", ["x"], ["y"])], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, None)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=10)
    _expect(model, tmp_path, "EXPORT-E005")


@pytest.mark.parametrize("elem_type", [TensorProto.INT32, TensorProto.DOUBLE, TensorProto.FLOAT16])
def test_non_float32_input(tmp_path: Path, elem_type: int) -> None:
    graph = helper.make_graph([node("Relu", ["x"], ["y"])], "g", [value_info("x", [2], elem_type)],
                              [value_info("y", [2], elem_type)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)], ir_version=10)
    _expect(model, tmp_path, "EXPORT-E006", "graph input 'x'")


def test_non_float32_initializer_used_as_data(tmp_path: Path) -> None:
    model = make_model([node("Add", ["x", "k"], ["y"])], {"x": [2]}, {"y": [2]}, {"k": np.ones(2, np.float64)}, opset=13)
    with pytest.raises(ExportError) as info:
        export_model(model, tmp_path / "out")
    assert info.value.code in ("EXPORT-E006", "EXPORT-E009")  # onnx shape inference may catch the type first
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("op,attrs,message", [
    ("Pad", {"mode": "wrap"}, "mode 'wrap'"),
    ("MaxPool", {"kernel_shape": [2, 2], "storage_order": 0, "unknown_attr": 1}, "unknown_attr"),
])
def test_unsupported_attribute_values(tmp_path: Path, op: str, attrs: dict, message: str) -> None:
    inputs = ["x", "pads"] if op == "Pad" else ["x"]
    inits = {"pads": np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64)} if op == "Pad" else {}
    n = helper.make_node(op, inputs, ["y"], name="n1", **attrs)
    graph = helper.make_graph([n], "g", [value_info("x", [1, 1, 4, 4])], [helper.make_empty_tensor_value_info("y")],
                              [onnx.numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)], ir_version=10)
    with pytest.raises(ExportError) as info:
        export_model(model, tmp_path / "out")
    assert info.value.code in ("EXPORT-E004", "EXPORT-E001"), str(info.value)
    if info.value.code == "EXPORT-E004":
        assert message in str(info.value) and "node 'n1'" in str(info.value)


def test_training_batchnorm_rejected(tmp_path: Path) -> None:
    c = np.ones(2, np.float32)
    model = make_model([node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y", "rm", "rv"], training_mode=1)],
                       {"x": [2, 2, 3]}, {"y": None, "rm": None, "rv": None}, {"s": c, "b": c, "m": c, "v": c}, opset=15)
    _expect(model, tmp_path, "EXPORT-E004", "training_mode")


def test_used_maxpool_indices_rejected(tmp_path: Path) -> None:
    model = make_model([helper.make_node("MaxPool", ["x"], ["y", "i"], name="pool", kernel_shape=[2, 2])],
                       {"x": [1, 1, 4, 4]}, {"y": None})
    model.graph.output.append(helper.make_tensor_value_info("i", TensorProto.INT64, [1, 1, 3, 3]))
    _expect(model, tmp_path, "EXPORT-E004", "Indices")


def test_parameter_input_must_be_constant(tmp_path: Path) -> None:
    model = make_model([node("Reshape", ["x", "shape"], ["y"])], {"x": [2, 3]}, {"y": [3, 2]})
    model.graph.input.append(value_info("shape", [2], TensorProto.INT64))
    with pytest.raises(ExportError) as info:
        export_model(model, tmp_path / "out")
    assert info.value.code in ("EXPORT-E006", "EXPORT-E008")


def test_opset_out_of_range(tmp_path: Path) -> None:
    model = make_model([node("Relu", ["x"], ["y"])], {"x": [2]}, {"y": [2]}, opset=6)
    _expect(model, tmp_path, "EXPORT-E002", "opset 6")


def test_zero_size_tensor(tmp_path: Path) -> None:
    model = make_model([node("Relu", ["x"], ["y"])], {"x": [0, 3]}, {"y": [0, 3]})
    _expect(model, tmp_path, "EXPORT-E007")


def test_unreadable_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not a protobuf at all")
    with pytest.raises(ExportError) as info:
        export_model(bad, tmp_path / "out")
    assert info.value.code == "EXPORT-E001"
    assert not (tmp_path / "out").exists()


def test_every_code_is_documented() -> None:
    doc = (Path(__file__).parents[2] / "docs" / "export.md").read_text(encoding="utf-8")
    for code, meaning in CODES.items():
        assert f"| {code} |" in doc, code


# ---------------------------------------------------------------- output directory

def test_non_empty_foreign_directory_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "mine"
    target.mkdir()
    (target / "notes.txt").write_text("precious")
    model = make_model([node("Relu", ["x"], ["y"])], {"x": [2]}, {"y": [2]})
    with pytest.raises(ExportError) as info:
        export_model(model, target)
    assert info.value.code == "EXPORT-E010"
    assert (target / "notes.txt").read_text() == "precious"


def test_previous_export_is_replaced_whole(tmp_path: Path) -> None:
    target = tmp_path / "out"
    first = make_model([node("Add", ["x", "k1"], ["y"])], {"x": [2]}, {"y": [2]}, {"k1": np.ones(2, np.float32)})
    second = make_model([node("Add", ["x", "k2"], ["y"])], {"x": [2]}, {"y": [2]}, {"k2": np.ones(2, np.float32)})
    export_model(first, target)
    assert (target / "k1.dat").is_file()
    export_model(second, target)
    assert sorted(p.name for p in target.iterdir()) == ["graph.nnef", "k2.dat", "provenance.json"]
    assert [p.name for p in tmp_path.iterdir()] == ["out"], "no staging directory left behind"


# ---------------------------------------------------------------- command line

def test_cli_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = make_model([node("Relu", ["x"], ["y"])], {"x": [1, 4]}, {"y": [1, 4]})
    bad = make_model([helper.make_node("Hardmax", ["x"], ["y"], name="e")], {"x": [1, 4]}, {"y": [1, 4]})
    onnx.save(good, tmp_path / "good.onnx")
    onnx.save(bad, tmp_path / "bad.onnx")
    assert main(["export", str(tmp_path / "good.onnx"), str(tmp_path / "g"), "--vectors", "3"]) == 0
    out = capsys.readouterr().out
    assert "max abs" in out and "pass" in out
    assert (tmp_path / "g" / "validation.json").is_file()
    assert main(["export", str(tmp_path / "bad.onnx"), str(tmp_path / "b")]) == 2
    err = capsys.readouterr().err
    assert "EXPORT-E003" in err and "node 'e'" in err and "opset 13" in err
    assert not (tmp_path / "b").exists()
    assert main(["export", str(tmp_path / "good.onnx"), str(tmp_path / "n"), "--no-validate"]) == 0
    assert not (tmp_path / "n" / "validation.json").exists()


def test_cli_validation_failure_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A tolerance of 0 on an operation that rounds differently from onnxruntime fails."""
    model = make_model([node("Softmax", ["x"], ["y"])], {"x": [1, 64]}, {"y": [1, 64]})
    onnx.save(model, tmp_path / "m.onnx")
    spec = tmp_path / "deploy.yaml"
    spec.write_text(
        "schema_version: 1\nmodel: m\ninputs:\n  x: {shape: [1, 64], distribution: {kind: uniform, low: -8.0, high: 8.0}}\n"
        "validation: {vectors: 20, seed: 3, tolerance: {max_abs_error: 0.0, max_rel_error: null}}\n"
        "deployments:\n  single: {items: [{name: CPU0, target: cpu}], default_item: CPU0, sync: event}\n"
        "met: {runs: 10, budget_us: 100.0}\n")
    code = main(["export", str(tmp_path / "m.onnx"), str(tmp_path / "o"), "--deploy", str(spec)])
    out = capsys.readouterr().out
    assert code == 1, out
    assert "FAIL" in out


def test_cli_bad_deploy_spec_exits_2_and_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = make_model([node("Relu", ["x"], ["y"])], {"x": [1, 4]}, {"y": [1, 4]})
    onnx.save(model, tmp_path / "m.onnx")
    spec = tmp_path / "deploy.yaml"
    spec.write_text("schema_version: 1\nmodel: m\n")
    assert main(["export", str(tmp_path / "m.onnx"), str(tmp_path / "o"), "--deploy", str(spec)]) == 2
    assert "DEPLOY-E002" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()

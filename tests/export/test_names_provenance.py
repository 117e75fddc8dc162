"""Traceability (HLR-EXP-003): sanitised NNEF names, deterministic collision resolution,
provenance.json, and byte-identical re-export."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
from onnx import helper


from tests.export.helpers import check_against_ort, make_model

from pipeline.export import convert, export_model
from pipeline.export.names import KEYWORDS, NameTable, sanitize

ROOT = Path(__file__).parents[2]


@pytest.mark.parametrize("name,expected", [
    ("/conv1/Conv_output_0", "conv1_conv_output_0"),
    ("conv1.weight", "conv1_weight"),
    ("X", "x"),
    ("1", "t_1"),
    ("", "t"),
    ("::", "t"),
    ("graph", "graph_"),
    ("tensor", "tensor_"),
    ("relu", "relu"),
    ("a--b", "a_b"),
    ("Ünïcode", "n_code"),
])
def test_sanitize(name: str, expected: str) -> None:
    assert sanitize(name) == expected


def test_every_keyword_is_escaped() -> None:
    assert all(sanitize(k) == k + "_" for k in KEYWORDS)


def test_collisions_get_suffixes_in_order() -> None:
    table = NameTable()
    assert [table.reserve(n) for n in ("a.b", "a_b", "A_B", "a_b_1", "a.b")] == ["a_b", "a_b_1", "a_b_2", "a_b_1_1", "a_b"]
    assert table.fresh("a_b") == "a_b_3"


def _collision_model():
    nodes = [helper.make_node("Relu", ["In.put"], ["Out"], name="first"),
             helper.make_node("Add", ["Out", "out"], ["OUT"], name="second"),
             helper.make_node("Sigmoid", ["OUT"], ["1x"], name="third")]
    return make_model(nodes, {"In.put": [2, 3]}, {"1x": [2, 3]}, {"out": np.full((3,), 0.5, np.float32)})


def test_collisions_in_a_model(tmp_path: Path) -> None:
    export = check_against_ort(_collision_model(), tmp_path / "e")
    # 'out' (the initializer) is stored as [1, 3] for the broadcast: it is in tensor_files, not in tensors.
    assert export.provenance["tensors"] == {"1x": "t_1x", "In.put": "in_put", "OUT": "out_2", "Out": "out"}
    assert export.provenance["tensor_files"][0]["onnx_tensor"] == "out"
    text = export.text
    assert "out = relu(in_put);" in text
    assert "out_1 = variable<scalar>(shape = [1, 3], label = 'out_1');" in text
    assert "out_2 = add(out, out_1);" in text
    assert "t_1x = sigmoid(out_2);" in text
    assert export.provenance["outputs"] == [{"onnx": "1x", "nnef": "t_1x", "shape": [2, 3]}]


def test_provenance_maps_every_line_and_file(tmp_path: Path) -> None:
    export = export_model(ROOT / "models" / "branch3" / "model.onnx", tmp_path / "e")
    provenance = json.loads((tmp_path / "e" / "provenance.json").read_text())
    assert provenance["schema_version"] == 1
    statements = [line for line in export.text.splitlines() if line.startswith("    ")]
    assert len(provenance["lines"]) == len(statements)
    for record in provenance["lines"]:
        line = export.text.splitlines()[record["line"] - 1]
        assert line.strip().startswith(" ".join(record["assigns"])[:1])
        assert record["node"] is not None or record["graph_input"] is not None
        if record["operation"] == "variable":
            assert record["initializer"]
    # v5/v6 are shared by two convolutions: one variable each, traced to the first user.
    files = {t["label"]: t for t in provenance["tensor_files"]}
    assert files["v5"]["node"] == 2 and files["v5"]["onnx_shape"] == [4, 4, 3, 3]
    assert files["v6"]["shape"] == [1, 4] and files["v6"]["onnx_shape"] == [4]
    for entry in provenance["tensor_files"]:
        data = (tmp_path / "e" / entry["file"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == entry["sha256"] and len(data) == entry["bytes"]
    nodes = {n["name"]: n for n in provenance["nodes"]}
    assert nodes["out"]["op_type"] == "Gemm" and nodes["out"]["nnef_operations"][-1] == "linear"
    assert provenance["source"]["sha256"] == hashlib.sha256((ROOT / "models/branch3/model.onnx").read_bytes()).hexdigest()
    assert provenance["graph"]["sha256"] == hashlib.sha256(export.text.encode()).hexdigest()


@pytest.mark.parametrize("model", ["lenet5", "inception"])
def test_export_is_deterministic(tmp_path: Path, model: str) -> None:
    source = ROOT / "models" / model / "model.onnx"
    export_model(source, tmp_path / "a")
    export_model(source, tmp_path / "b")
    names = sorted(p.name for p in (tmp_path / "a").iterdir())
    assert names == sorted(p.name for p in (tmp_path / "b").iterdir())
    for name in names:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name


def test_in_memory_and_file_exports_agree(tmp_path: Path) -> None:
    model = _collision_model()
    first = convert(model)
    second = convert(model.SerializeToString())
    assert first.files == second.files

"""Issue 38, the folding fixes: a Shape after a Pad with computed pads folds (shapes re-inferred while
folding), Trilu and ScatterND of constants fold, a node read only by folded nodes is dead (not converted,
`unused` in provenance, the claim checked by export.trace), an unused optional output is not written."""

from __future__ import annotations

import json

import numpy as np
from onnx import helper

from pipeline.export import convert, export_model
from pipeline.export import fold as folding
from pipeline.export.checks import trace_result
from pipeline.export.exporter import PROVENANCE_FILE
from pipeline.ledger.checks import Verdict
from tests.networks import netbuild as B


def transpose_read_by_shape():
    """x -> Transpose -> Shape -> Reshape(x, that shape): the Transpose computes nothing the output needs."""
    nodes = [helper.make_node("Transpose", ["x"], ["t"], perm=[1, 0], name="only_shaped"),
             helper.make_node("Shape", ["t"], ["s"]), helper.make_node("Reshape", ["x", "s"], ["y"], name="reshape")]
    return B.model(nodes, {"x": [2, 3]}, {"y": [3, 2]}, {})


def test_a_node_read_only_by_a_folded_shape_is_dead(tmp_path):
    model = transpose_read_by_shape()
    result = export_model(model, tmp_path / "export")
    assert "transpose" not in {op.name for op in result.graph.operations}
    nodes = {n["name"]: n for n in result.provenance["nodes"]}
    assert nodes["only_shaped"].get("unused") is True and nodes["only_shaped"]["nnef_lines"] == []
    path = tmp_path / "model.onnx"
    path.write_bytes(model.SerializeToString())
    result = export_model(path, tmp_path / "export")
    assert trace_result("m", tmp_path / "export", path, []).verdict is Verdict.PASS
    provenance = json.loads((tmp_path / "export" / PROVENANCE_FILE).read_text())
    for node in provenance["nodes"]:   # planted: the live Reshape claimed unused
        if node["name"] == "reshape":
            node["unused"] = True
    (tmp_path / "export" / PROVENANCE_FILE).write_text(json.dumps(provenance))
    planted = trace_result("m", tmp_path / "export", path, [])
    assert planted.verdict is Verdict.FAIL
    assert "ONNX node 2 (Reshape 'reshape') is listed as unused, but it has NNEF lines" in planted.reason


def computed_pads():
    """Swin's window padding in small: pads = (8 - n) mod 8 from the input's shape, then a Shape of the padded
    tensor fixes a Reshape."""
    nodes = [helper.make_node("Shape", ["x"], ["shape"]), helper.make_node("Gather", ["shape", "two"], ["n"]),
             helper.make_node("Sub", ["eight", "n"], ["gap"]), helper.make_node("Mod", ["gap", "eight"], ["right"]),
             helper.make_node("Concat", ["zeros", "right"], ["pads"], axis=0),
             helper.make_node("Pad", ["x", "pads"], ["p"], mode="constant"),
             helper.make_node("Relu", ["p"], ["r"]), helper.make_node("Shape", ["p"], ["pshape"]),
             helper.make_node("Reshape", ["r", "pshape"], ["y"])]
    weights = {"two": np.array([2], np.int64), "eight": np.array([8], np.int64),
               "zeros": np.array([0, 0, 0, 0, 0], np.int64)}
    return B.model(nodes, {"x": [1, 2, 5]}, {"y": [1, 2, 8]}, weights)


def test_shapes_are_inferred_again_while_folding(monkeypatch):
    calls = []
    real = folding.refine_shapes
    monkeypatch.setattr(folding, "refine_shapes", lambda model, values: (calls.append(len(values)), real(model, values)))
    result = convert(computed_pads())
    assert calls and calls[0] < max(calls)            # re-inferred during folding, and once after it
    assert [op.name for op in result.graph.operations] == ["external", "pad", "relu", "reshape"]
    folded = [n["op_type"] for n in result.provenance["nodes"] if n.get("folded") is not None]
    assert folded.count("Shape") == 2


def test_trilu_and_scatternd_of_constants_fold():
    nodes = [helper.make_node("Trilu", ["ones", "k"], ["tri"], upper=0),
             helper.make_node("ScatterND", ["tri", "index", "update"], ["mask"]),
             helper.make_node("Mul", ["x", "mask"], ["y"])]
    weights = {"ones": np.ones((3, 3), np.float32), "k": np.array(0, np.int64),
               "index": np.array([[0, 2]], np.int64), "update": np.array([5.0], np.float32)}
    result = convert(B.model(nodes, {"x": [3, 3]}, {"y": [3, 3]}, weights))
    assert [op.name for op in result.graph.operations] == ["external", "variable", "mul"]
    mask = next(iter(result.variables.values()))
    np.testing.assert_array_equal(mask, np.tril(np.ones((3, 3), np.float32)) + np.array([[0, 0, 5], [0, 0, 0],
                                                                                      [0, 0, 0]], np.float32))


def test_layer_normalization_writes_mean_and_inv_std_only_when_read():
    nodes = [helper.make_node("LayerNormalization", ["x", "scale"], ["y", "mean", "inv"], axis=-1)]
    model = B.model(nodes, {"x": [2, 4]}, {"y": [2, 4]}, {"scale": np.ones(4, np.float32)})
    result = convert(model)
    assert "div(1.0" not in result.text
    assert sorted(next(n for n in result.provenance["nodes"])["dropped_outputs"]) == ["inv", "mean"]

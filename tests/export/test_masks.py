"""Issue 38: -inf attention masks are accepted where they are masks, and only there.

A mask (pipeline/nnef/masks.py) is a constant whose non-finite values are all -inf and that reaches only
softmaxes, through add, select (ONNX Where) and storage-only operations. Planted here: a -inf reaching a
Relu, a graph output, a Pad value; a NaN and a +inf in a mask; a fully masked row (EXPORT-E019); a -inf
written into a weight's tensor file after export (NNEF-E034 at the check step). The accepted masks are
bit-exact in C and CUDA, within the tolerance of onnxruntime, and inside the computed error bound.
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from onnx import TensorProto, helper

from pipeline.export import convert, export_model
from pipeline.export.checks import finite_result
from pipeline.export.errors import ExportError
from pipeline.ledger.checks import Verdict
from pipeline.nnef.checker import check_paths, check_text
from pipeline.nnef.masks import judge
from pipeline.nnef.tensorfile import read_tensor, write_tensor
from tests.networks import chainhelpers as N
from tests.networks import netbuild as B

SEQ, WIDTH = 4, 8
CAUSAL = np.triu(np.full((SEQ, SEQ), -np.inf, np.float32), k=1)


def attention(mask: np.ndarray | None = None, where: bool = False, after: str = "Softmax",
              output_masked: bool = False, seed: int = 3):
    """x [1, SEQ, WIDTH] -> scores = (x Wq)(x Wk)^T -> masked -> Softmax -> (.) x Wv -> y; the mask added
    (torch's attn_mask) or, with `where`, selected by a constant condition (masked_fill: Where(c, -inf, s))."""
    rng = np.random.default_rng(seed)
    weights = {"wq": B.normal(rng, WIDTH, WIDTH), "wk": B.normal(rng, WIDTH, WIDTH), "wv": B.normal(rng, WIDTH, WIDTH)}
    nodes = [helper.make_node("MatMul", ["x", "wq"], ["q"]), helper.make_node("MatMul", ["x", "wk"], ["k"]),
             helper.make_node("MatMul", ["x", "wv"], ["v"]), helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 1]),
             helper.make_node("MatMul", ["q", "kt"], ["s"])]
    mask = CAUSAL if mask is None else mask
    if where:
        weights["cond"] = np.isneginf(mask)
        weights["minf"] = np.array(-np.inf, np.float32)
        nodes.append(helper.make_node("Where", ["cond", "minf", "s"], ["m"]))
    else:
        weights["mask"] = mask
        nodes.append(helper.make_node("Add", ["s", "mask"], ["m"]))
    if output_masked:
        return B.model(nodes, {"x": [1, SEQ, WIDTH]}, {"m": [1, SEQ, SEQ]}, weights)
    if after == "Softmax":
        nodes += [helper.make_node("Softmax", ["m"], ["p"], axis=-1), helper.make_node("MatMul", ["p", "v"], ["y"])]
        return B.model(nodes, {"x": [1, SEQ, WIDTH]}, {"y": [1, SEQ, WIDTH]}, weights)
    nodes += [helper.make_node(after, ["m"], ["y"])]
    return B.model(nodes, {"x": [1, SEQ, WIDTH]}, {"y": [1, SEQ, SEQ]}, weights)


gcc = pytest.mark.skipif(shutil.which("gcc") is None or shutil.which("g++") is None, reason="gcc and g++ are needed")


@gcc
@pytest.mark.parametrize("where", [False, True])
def test_a_causal_mask_is_exported_bit_exact_in_c_and_cuda_and_inside_the_bound(where, tmp_path):
    model = attention(where=where)
    inputs = N.vectors(model, count=4)
    run = N.through_chain(model, tmp_path, inputs)
    theirs = N.onnxruntime_outputs(model, inputs)["y"]
    np.testing.assert_allclose(run.reference["y"], theirs, atol=1e-6, rtol=0)
    assert ("select(" in run.text) == where
    measured = run.validation.outputs[0].enclosure
    assert measured["reference_over_bound"] == 0 and np.isfinite(measured["reference_bound_max"])
    assert measured["onnxruntime_over_bound"] == 0 and run.validation.enclosure["measure"] == "the enclosure"
    provenance = convert(model).provenance
    assert [m["masked_values"] for m in provenance["masks"]] == [1 if where else 6]


def test_the_mask_rows_are_weighted_zero_exactly():
    """softmax of a masked position is +0 bit for bit, and the row's other weights sum over the unmasked ones."""
    from pipeline.semantics import interpret

    result = convert(attention())
    x = N.vectors(attention(), count=1)["x"][0]
    env = interpret(result.graph, {"x": x}, result.variables, keep=True)
    weights = env[next(op.output_refs()[0].name for op in result.graph.operations if op.name == "softmax")]
    assert np.all(weights[0][np.isneginf(CAUSAL)].view(np.uint32) == 0)
    assert np.all(weights[0][0, 1:] == 0) and weights[0][0, 0] == 1.0


def test_a_fully_masked_row_is_refused():
    mask = CAUSAL.copy()
    mask[2, :] = -np.inf
    with pytest.raises(ExportError) as error:
        convert(attention(mask))
    assert error.value.code == "EXPORT-E019"
    assert "initializer 'mask'" in error.value.message and "row [0, 2]" in error.value.message


@pytest.mark.parametrize("after", ["Relu", "Sigmoid"])
def test_a_minus_infinity_reaching_anything_but_a_softmax_is_refused(after):
    with pytest.raises(ExportError) as error:
        convert(attention(after=after))
    assert error.value.code == "EXPORT-E017"
    assert "initializer 'mask' holds -inf" in error.value.message and f"reaches {after.lower()}" in error.value.message


def test_a_minus_infinity_reaching_a_graph_output_is_refused():
    with pytest.raises(ExportError) as error:
        convert(attention(output_masked=True))
    assert error.value.code == "EXPORT-E017" and "reaches the graph output" in error.value.message


@pytest.mark.parametrize("value", [np.nan, np.inf])
def test_a_nan_or_plus_infinity_is_no_mask(value):
    mask = CAUSAL.copy()
    mask[0, 3] = value
    with pytest.raises(ExportError) as error:
        convert(attention(mask))
    assert error.value.code == "EXPORT-E017" and "initializer 'mask'" in error.value.location.element


def test_a_minus_infinity_read_as_a_parameter_is_refused():
    """Dropout's ratio -inf, read as a parameter by a converted node: not a mask (EXPORT-E017); Clip's
    lower bound -inf becomes max(x, -inf): not a mask either; Pad's value -inf has no NNEF literal (E004)."""
    dropout = B.model([helper.make_node("Dropout", ["x", "ratio", "training"], ["y"])], {"x": [1, 3]}, {"y": [1, 3]},
                      {"ratio": np.array(-np.inf, np.float32), "training": np.array(False)}, opset=13)
    clip = B.model([helper.make_node("Clip", ["x", "lo", "hi"], ["y"])], {"x": [1, 3]}, {"y": [1, 3]},
                   {"lo": np.array(-np.inf, np.float32), "hi": np.array(6, np.float32)}, opset=13)
    pad = B.model([helper.make_node("Pad", ["x", "pads", "value"], ["y"], mode="constant")], {"x": [1, 2, 3]},
                  {"y": [1, 2, 5]}, {"pads": np.array([0, 0, 1, 0, 0, 1], np.int64),
                                     "value": np.array(-np.inf, np.float32)}, opset=13)
    for model, code, text in ((dropout, "EXPORT-E017", "read as a parameter by node"),
                              (clip, "EXPORT-E017", "reaches max"), (pad, "EXPORT-E004", "no NNEF literal")):
        with pytest.raises(ExportError) as error:
            convert(model)
        assert error.value.code == code and text in error.value.message


def test_a_mask_computed_from_constants_is_folded_into_one_mask():
    """torch's is_causal: ConstantOfShape(-inf) -> Trilu -> Add: Trilu folds (issue 38), the result is the mask."""
    rng = np.random.default_rng(4)
    nodes = [helper.make_node("ConstantOfShape", ["shape"], ["full"],
                              value=helper.make_tensor("v", TensorProto.FLOAT, [1], [-np.inf])),
             helper.make_node("Trilu", ["full", "one"], ["mask"], upper=1),
             helper.make_node("MatMul", ["x", "w"], ["s"]), helper.make_node("Add", ["s", "mask"], ["m"]),
             helper.make_node("Softmax", ["m"], ["y"], axis=-1)]
    model = B.model(nodes, {"x": [SEQ, WIDTH]}, {"y": [SEQ, SEQ]},
                    {"shape": np.array([SEQ, SEQ], np.int64), "one": np.array(1, np.int64), "w": B.normal(rng, WIDTH, SEQ)})
    result = convert(model)
    assert [m["onnx_tensor"] for m in result.provenance["masks"]] == ["mask"]
    folded = {n["op_type"] for n in result.provenance["nodes"] if n.get("folded") is not None}
    assert {"ConstantOfShape", "Trilu"} <= folded


def test_the_check_step_accepts_masks_and_refuses_a_planted_infinite_weight(tmp_path):
    export_model(attention(), tmp_path / "export")
    clean = check_paths([tmp_path / "export"], tensors=True, finite=True)
    assert not [f for f in clean.findings if f.is_error]
    weight = tmp_path / "export" / "wq.dat"
    data = read_tensor(weight).copy()
    data[0, 0] = -np.inf
    write_tensor(weight, data)
    planted = [f for f in check_paths([tmp_path / "export"], tensors=True, finite=True).findings if f.is_error]
    assert [f.code for f in planted] == ["NNEF-E034"] and "wq.dat" in planted[0].message
    assert "reaches matmul" in planted[0].message


def test_the_finite_parameters_check_counts_the_masks_and_needs_an_export(tmp_path):
    result = export_model(attention(), tmp_path / "export")
    judged = finite_result("m", result.model, [], tmp_path / "export")
    assert judged.verdict is Verdict.PASS and judged.measured["masks"] == 1 and judged.measured["masked_values"] == 6
    assert finite_result("m", result.model, []).verdict is Verdict.FAIL   # a -inf with nothing to judge it on


def test_judge_follows_the_mask_through_storage_only_operations_and_select():
    text = """version 1.0;
graph g( x ) -> ( y, z )
{
    x = external<scalar>(shape = [2, 3]);
    m = variable<scalar>(shape = [3, 2], label = 'm');
    c = variable<logical>(shape = [2, 3], label = 'c');
    t = transpose(m, axes = [1, 0]);
    a = add(x, t);
    s = select(c, a, x);
    y = softmax(s, axes = [1]);
    z = copy(x);
}
"""
    graph = check_text(text).graphs[0]
    m = np.array([[0, -np.inf], [-np.inf, 0], [0, 0]], np.float32)   # t = [[0, -inf, 0], [-inf, 0, 0]]
    masks, problems = judge(graph, {"m": m, "c": np.array([[True, True, True], [False, False, False]])})
    assert [mask.variable for mask in masks] == ["m"] and problems == []
    everything = np.array([[-np.inf, -np.inf], [-np.inf, -np.inf], [-np.inf, 0]], np.float32)
    _, problems = judge(graph, {"m": everything, "c": np.ones((2, 3), bool)})
    assert [p.full_row for p in problems] == [True] and "row [0]" in problems[0].reason


def test_a_finite_pass_on_attention_masks_names_what_it_read(tmp_path):
    """The pass that accepts -inf in masks says which masks and which files it judged (the auditor's trail)."""
    result = export_model(attention(), tmp_path / "export")
    judged = finite_result("m", result.model, ["models/m/model.onnx"], tmp_path / "export")
    assert judged.verdict is Verdict.PASS and judged.read == ["models/m/model.onnx"]
    assert judged.reason.startswith("-inf only in 1 attention mask(s) ahead of a softmax: '")

"""Issue 29, recurrent layers: GRU and LSTM with a static sequence length, unrolled at export
(pipeline/export/ops/recurrent.py), against onnxruntime on forward, reverse and bidirectional layers,
both GRU reset modes, zero, constant and computed initial states, a batch of 2, LSTM peepholes, the
batch-first layout; and bit-exact in C (one CPU item) and in the CUDA host emulation. Refusals name what
is not unrolled."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from onnx import helper

from pipeline.export.errors import ExportError
from pipeline.export import convert
from tests.networks import chainhelpers as N
from tests.networks import netbuild as B

SEQ, BATCH, INPUT, HIDDEN = 4, 2, 5, 6

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None or shutil.which("g++") is None,
                                reason="gcc and g++ are needed (Debian packages gcc, g++)")


def recurrent(op: str, direction: str = "forward", initial: str = "none", bias: bool = True, seed: int = 7,
              peephole: bool = False, **attrs):
    """X [SEQ, BATCH, INPUT] -> Y, Y_h (and Y_c) of one GRU or LSTM node; the initial state absent, a
    constant, or computed (Tanh of a graph input)."""
    rng = np.random.default_rng(seed)
    gates = 3 if op == "GRU" else 4
    dirs = 2 if direction == "bidirectional" else 1
    weights = {"W": B.normal(rng, dirs, gates * HIDDEN, INPUT, scale=0.5),
               "R": B.normal(rng, dirs, gates * HIDDEN, HIDDEN, scale=0.5)}
    if bias:
        weights["B"] = B.normal(rng, dirs, 2 * gates * HIDDEN, scale=0.5)
    state_names = ["h0"] + (["c0"] if op == "LSTM" else [])
    inputs = {"x": [SEQ, BATCH, INPUT]}
    nodes = []
    states = ["", ""]
    for k, name in enumerate(state_names):
        if initial == "constant":
            weights[name] = B.normal(rng, dirs, BATCH, HIDDEN)
            states[k] = name
        elif initial == "computed":
            inputs[f"{name}_in"] = [dirs, BATCH, HIDDEN]
            nodes.append(helper.make_node("Tanh", [f"{name}_in"], [name]))
            states[k] = name
    ins = ["x", "W", "R", "B" if bias else "", ""] + states[:len(state_names)]
    if peephole:
        weights["P"] = B.normal(rng, dirs, 3 * HIDDEN)
        ins.append("P")
    outs = {"y": [SEQ, dirs, BATCH, HIDDEN], "yh": [dirs, BATCH, HIDDEN]}
    if op == "LSTM":
        outs["yc"] = [dirs, BATCH, HIDDEN]
    nodes.append(helper.make_node(op, ins, list(outs), hidden_size=HIDDEN, direction=direction, **attrs))
    return B.model(nodes, inputs, outs, weights, opset=14)


CASES = {
    "gru_forward_reset_after": ("GRU", {"linear_before_reset": 1}),
    "gru_reverse_reset_before": ("GRU", {"direction": "reverse", "initial": "constant"}),
    "gru_bidirectional_computed_state": ("GRU", {"direction": "bidirectional", "initial": "computed",
                                                 "linear_before_reset": 1}),
    "gru_no_bias": ("GRU", {"bias": False}),
    "lstm_forward": ("LSTM", {}),
    "lstm_bidirectional_constant_state": ("LSTM", {"direction": "bidirectional", "initial": "constant"}),
    "lstm_peephole_computed_state": ("LSTM", {"peephole": True, "initial": "computed"}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_unrolled_layer_matches_onnxruntime_and_is_bit_exact(case, tmp_path):
    op, options = CASES[case]
    model = recurrent(op, **options)
    inputs = N.vectors(model, count=4, low=-1.5, high=1.5)
    run = N.through_chain(model, tmp_path, inputs)
    theirs = N.onnxruntime_outputs(model, inputs)
    for name, value in run.reference.items():
        np.testing.assert_allclose(value, theirs[name], atol=2e-6, rtol=0, err_msg=f"{case}: {name}")
    assert "linear(" in run.text and "GRU" not in run.text


@pytest.mark.parametrize("op", ["GRU", "LSTM"])
def test_batch_first_layout_matches_onnxruntime(op, tmp_path):
    """layout = 1: X [batch, seq, input], Y [batch, seq, directions, hidden], states [batch, directions, hidden]."""
    model = recurrent(op, direction="bidirectional", initial="computed")
    graph = model.graph
    graph.node[-1].attribute.append(helper.make_attribute("layout", 1))
    swap = {"x": [BATCH, SEQ, INPUT], "h0_in": [BATCH, 2, HIDDEN], "c0_in": [BATCH, 2, HIDDEN],
            "y": [BATCH, SEQ, 2, HIDDEN], "yh": [BATCH, 2, HIDDEN], "yc": [BATCH, 2, HIDDEN]}
    for value in list(graph.input) + list(graph.output):
        value.CopyFrom(helper.make_tensor_value_info(value.name, 1, swap[value.name]))
    inputs = N.vectors(model, count=3)
    run = N.through_chain(model, tmp_path, inputs, targets=("c",))
    theirs = N.onnxruntime_outputs(model, inputs)
    for name, value in run.reference.items():
        np.testing.assert_allclose(value, theirs[name], atol=2e-6, rtol=0, err_msg=name)


@pytest.mark.parametrize("attrs, what", [({"clip": 3.0}, "clip"), ({"activations": ["Relu", "Tanh"]}, "activations")])
def test_what_is_not_unrolled_is_refused_with_a_coded_message(attrs, what):
    with pytest.raises(ExportError) as error:
        convert(recurrent("GRU", **attrs))
    assert error.value.code == "EXPORT-E004" and what in str(error.value)

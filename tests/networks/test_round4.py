"""Issue 38, real networks of round four (written by torch, tests/networks/data/make_round4.py; the .onnx
files and torch's own outputs beside them are committed, torch is not needed here):

- causal and padding-mask encoders (torch's -inf masks), a nanoGPT block (masked_fill -> Where on the data
  path), scaled_dot_product_attention(is_causal), a Swin block (computed pads, ScatterND, relative position
  bias), two-layer bidirectional LSTM and GRU, a U-Net (ConvTranspose, bilinear upsampling), a 1-D audio net:
  exported, validated against onnxruntime, then C (one CPU item) and the CUDA host emulation (one GPU item)
  bit-identical to the reference semantics, and the reference within 1e-5 of torch's own outputs;
- what kept them out before: dead Y_h/Y_c copies (NNEF-W050), unfolded Shapes after a Pad, the C bilinear
  kernel's `?:` (codegen.static), a GroupNorm refusal naming the folded Shape;
- NVDLA refuses what it lacks, on the data path only, Where with its reason.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import numpy as np
import onnx
import pytest

from pipeline.codegen import static
from pipeline.diagnostics import PipelineError
from pipeline.export import convert, export_model
from pipeline.export.checks import explicit_result, trace_result
from pipeline.export.errors import ExportError
from pipeline.ledger.checks import Verdict
from pipeline.nnef.checker import check_text
from pipeline.split.nvdla_legalize import legalize
from tests.networks import chainhelpers as N

DATA = Path(__file__).resolve().parent / "data"
NETWORKS = ["encoder_causal", "encoder_padding", "nanogpt_block", "sdpa_causal", "swin_block", "lstm_bidirectional",
            "gru_bidirectional", "unet_small", "audio_net"]
MASKED = {"encoder_causal", "encoder_padding", "nanogpt_block", "sdpa_causal"}

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None or shutil.which("g++") is None,
                                reason="gcc and g++ are needed (Debian packages gcc, g++)")


def torch_vectors(name: str) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """The inputs torch ran and its outputs (make_round4.py): by ONNX name, [4, ...]."""
    with np.load(DATA / f"{name}.reference.npz", allow_pickle=False) as data:
        return ({k.split("/", 1)[1]: data[k] for k in data.files if k.startswith("inputs/")},
                {k.split("/", 1)[1]: data[k] for k in data.files if k.startswith("outputs/")})


@pytest.mark.parametrize("name", NETWORKS)
def test_round4_network_is_bit_exact_in_c_and_cuda_and_computes_what_torch_computes(name, tmp_path):
    model = onnx.load(str(DATA / f"{name}.onnx"))
    inputs, expected = torch_vectors(name)
    run = N.through_chain(model, tmp_path, inputs)          # C and CUDA emulation: 0 ULP against the reference
    assert run.validation.passed
    for output, value in expected.items():
        np.testing.assert_allclose(run.reference[output], value, atol=1e-5, rtol=0, err_msg=f"{name}: torch")
    graph_files = [p.name for p in run.export_dir.iterdir() if p.name != "provenance.json"]
    explicit = explicit_result(name, run.export_dir, graph_files)   # no NNEF-W050: no dead statement left
    assert explicit.verdict is Verdict.PASS, explicit.reason
    traced = trace_result(name, run.export_dir, tmp_path / "model.onnx", [])
    assert traced.verdict is Verdict.PASS, traced.reason
    assert ("select(" in run.text) == (name == "nanogpt_block")
    assert ("mask" in str(convert(model).provenance["masks"])) or name not in MASKED


@pytest.mark.parametrize("name", ["lstm_bidirectional", "gru_bidirectional"])
def test_unused_recurrent_states_are_not_written(name):
    """torch names Y_h and Y_c of every layer; nothing reads them: no statement computes them."""
    result = convert(DATA / f"{name}.onnx")
    report = check_text(result.text)
    assert not [f for f in report.findings if f.code == "NNEF-W050"]
    dropped = [o for node in result.provenance["nodes"] if node["op_type"] in ("LSTM", "GRU")
               for o in node["dropped_outputs"]]
    assert len(dropped) == 2 * (2 if name.startswith("lstm") else 1)
    assert not any(re.search(r"final[12]_", line) for line in result.text.splitlines())


def test_swin_folds_every_shape_computation():
    """The window padding's pads are computed (Shape, Sub, Mod, Concat): the Shapes after the Pad fold once
    the shapes are inferred again; ScatterND (the shifted-window regions) folds too."""
    result = convert(DATA / "swin_block.onnx")
    folded = {n["op_type"] for n in result.provenance["nodes"] if n.get("folded") is not None}
    assert {"Shape", "ScatterND", "ConstantOfShape", "Range", "Where", "Equal", "Expand"} <= folded
    operations = {op.name for op in result.graph.operations}
    assert {"pad", "softmax", "matmul", "erf"} <= operations
    assert not {"shape", "select"} & operations


def test_the_unet_bilinear_c_kernel_is_branch_free(tmp_path):
    model = onnx.load(str(DATA / "unet_small.onnx"))
    run = N.through_chain(model, tmp_path, N.vectors(model, count=2), targets=("c",))
    item = next(run.c_code.glob("*/nnef_item_*.c"))
    text = item.read_text()
    assert "multilinear_upsample" in text
    _, _, problems = static.kernel_problems(item.name, text)
    assert problems == []


@pytest.mark.parametrize("name, blocker", [("instancenorm", "InstanceNormalization"),
                                           ("groupnorm", "InstanceNormalization")])
def test_a_refusal_names_only_the_operators_on_the_data_path(name, blocker):
    with pytest.raises(ExportError) as error:
        convert(DATA / f"{name}.onnx")
    text = str(error.value).split("[")[0]
    assert error.value.code == "EXPORT-E003" and "1 unsupported operator: InstanceNormalization" in text
    assert "Shape" not in text and "folded" not in text


def _live(graph) -> set[str]:
    """The results a graph output depends on."""
    producers = graph.producers()
    needed, pending = set(), list(graph.outputs)
    while pending:
        name = pending.pop()
        if name in needed or name not in producers:
            continue
        needed.add(name)
        pending.extend(ref.name for ref in producers[name].input_refs())
    return needed


@pytest.mark.parametrize("name", NETWORKS)
def test_nvdla_refuses_only_what_it_lacks_on_the_data_path(name):
    """Every operation the NVDLA refusal names is one the outputs depend on; Where is refused with its reason."""
    result = convert(DATA / f"{name}.onnx")
    with pytest.raises(PipelineError) as error:
        legalize(result.graph, result.variables, text=result.text)
    assert error.value.code == "SPLIT-E101"
    lines = result.text.splitlines()
    live = _live(result.graph)
    named = re.findall(r"'(\w+)' at NNEF line (\d+)", error.value.message)
    assert named
    for _, line in named:   # (the operation as legalization names it: `eltwise` for an add)
        statement = lines[int(line) - 1]
        result_name = statement.split("=", 1)[0].strip().strip("[]").split(",")[0].strip()
        assert result_name in live, statement
    if name == "nanogpt_block":
        assert "'select' at NNEF line" in error.value.message
        assert "no NVDLA unit picks elements by a mask" in error.value.message


def test_exported_files_hold_the_mask_and_the_check_accepts_it(tmp_path):
    """The exported -inf mask passes the check step's finite rule (NNEF-E034 applies to masks' rule)."""
    from pipeline.nnef.checker import check_paths

    export_model(DATA / "encoder_padding.onnx", tmp_path / "export")
    report = check_paths([tmp_path / "export"], profile="certification", tensors=True, finite=True)
    assert not [f for f in report.findings if f.is_error]

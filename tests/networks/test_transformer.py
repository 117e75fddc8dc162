"""Issue 29, transformers: torch's TransformerEncoderLayer (d_model 32, 2 heads, sequence 8; the ONNX
files written by data/make_transformers.py) through export, the C of one CPU item and the CUDA host
emulation of one GPU item: 0 ULP against the reference semantics, and the reference within the
tolerance of onnxruntime (the export validation) and within 1e-5 of it element by element here.

What the layers exercise: LayerNormalization (opset 17 and 20) or its opset-14 decomposition (Pow,
Sqrt, ReduceMean), Erf (exact GELU), Gelu(approximate = 'tanh') (opset 20), batched MatMul, Softmax on
the last axis of a rank-4 tensor, Gather with constant indices on an activation (q, k, v), and a
constant subgraph (Shape, Slice, Cast, Sqrt, Div, Mod) folded at export.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import onnx
import pytest

from tests.networks import chainhelpers as N

DATA = Path(__file__).resolve().parent / "data"
LAYERS = ["transformer_relu_opset17.onnx", "transformer_gelu_opset14.onnx", "transformer_gelu_tanh_opset20.onnx"]

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None or shutil.which("g++") is None,
                                reason="gcc and g++ are needed (Debian packages gcc, g++)")


@pytest.mark.parametrize("name", LAYERS)
def test_transformer_encoder_layer_is_bit_exact_and_within_tolerance_of_onnxruntime(name, tmp_path):
    model = onnx.load(str(DATA / name))
    inputs = N.vectors(model, count=6, low=-2.0, high=2.0)
    run = N.through_chain(model, tmp_path, inputs)
    assert run.validation.passed
    theirs = N.onnxruntime_outputs(model, inputs)["y"]
    np.testing.assert_allclose(run.reference["y"], theirs, atol=1e-5, rtol=0)
    operations = {line.split("=", 1)[1].split("(", 1)[0].strip() for line in run.text.splitlines()
                  if "=" in line and "(" in line and not line.lstrip().startswith("fragment")}
    assert {"matmul", "softmax", "slice", "squeeze", "mean_reduce", "sqrt"} <= operations
    assert ("erf" in operations) == ("gelu_opset14" in name)
    assert ("tanh" in operations) == ("tanh" in name)


def test_folding_leaves_only_the_data_path(tmp_path):
    """The attention scale (Shape -> Slice -> Cast -> Sqrt -> Div -> Cast -> Sqrt) and the head split's
    Mod are evaluated at export: no sqrt of a constant reaches the NNEF, only the layer norms' two."""
    from pipeline.export import convert

    result = convert(DATA / "transformer_relu_opset17.onnx")
    folded = [n["op_type"] for n in result.provenance["nodes"] if n.get("folded") is not None]
    assert {"Mod", "Shape", "Cast", "Sqrt", "Div", "Slice"} <= set(folded)
    assert sum(1 for op in result.graph.operations if op.name == "sqrt") == 2

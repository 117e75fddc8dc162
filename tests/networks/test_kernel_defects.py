"""Issue 29, defects 1, 3 and 4 at their root, each on a network built here and compared with onnxruntime.

1. The CUDA pools test a tap's bounds on every axis padded at its beginning *or its end* (ceil-mode
   pools pad only at the end): googlenet's MaxPool(3, 2, ceil_mode) read past its input, a pool with
   pads [0, 1, 1, 1] did not compile. Checked in the host emulation, blocks in order and shuffled.
3. A MatMul with constant weights (skl2onnx's MLP) generates C that compiles under -Werror (no
   unused pointer into the rearranged weights).
4. The cache-blocked convolution's passes over input channels are branch-free: codegen.static
   finds no branch in any numeric kernel of a network whose convolutions run in passes.
Every case is also bit-identical between the reference semantics, the C and the CUDA emulation.
"""

from __future__ import annotations

import re
import shutil

import numpy as np
import pytest

from pipeline.codegen import static
from tests.networks import chainhelpers as N
from tests.networks import netbuild as B

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None or shutil.which("g++") is None,
                                reason="gcc and g++ are needed (Debian packages gcc, g++)")


@pytest.mark.parametrize("pool, ceil_mode, pads", [("MaxPool", 1, (0, 0, 0, 0)), ("AveragePool", 1, (0, 0, 0, 0)),
                                                   ("MaxPool", 0, (0, 1, 1, 1)), ("MaxPool", 1, (1, 0, 0, 1))])
def test_pools_padded_at_the_end_read_only_their_input(pool, ceil_mode, pads, tmp_path):
    model = B.conv_pool_linear(pool, ceil_mode, pads)
    inputs = N.vectors(model)
    run = N.through_chain(model, tmp_path, inputs)
    kernel = (run.cuda_code / "GPU0" / "nnef_item_GPU0.cu").read_text()
    assert re.search(r"p2 >= 0 && p2 < \d+", kernel) and re.search(r"p3 >= 0 && p3 < \d+", kernel)
    theirs = N.onnxruntime_outputs(model, inputs)["y"]
    np.testing.assert_allclose(run.reference["y"], theirs, atol=1e-5, rtol=0)


@pytest.mark.parametrize("pads", [(0, 1, 1, 1), (0, 0, 2, 0), (1, 1, 0, 0)])
def test_a_bare_pool_padded_on_some_sides_compiles_and_matches(pads, tmp_path):
    model = B.end_padded_pool(pads)
    inputs = N.vectors(model)
    run = N.through_chain(model, tmp_path, inputs)
    np.testing.assert_array_equal(run.reference["y"], N.onnxruntime_outputs(model, inputs)["y"])  # max: exact


def test_constant_weight_matmul_compiles_under_werror(tmp_path):
    model = B.constant_weight_mlp()
    inputs = N.vectors(model)
    run = N.through_chain(model, tmp_path, inputs)  # the C build is -Wall -Wextra -Werror
    item = (run.c_code / "CPU0" / "nnef_item_CPU0.c").read_text()
    assert "const float *const bb" not in item  # constant B is read through its rearranged array
    np.testing.assert_allclose(run.reference["y"], N.onnxruntime_outputs(model, inputs)["y"], atol=1e-6, rtol=0)


def test_convolution_in_passes_over_channels_is_branch_free(tmp_path, monkeypatch):
    # the subject is the C kernel: the export validation keeps its enclosure on one vector and computes no
    # error bound (a bound of 65,536 outputs is one backward pass each: tens of minutes on 2 cores)
    monkeypatch.setattr("pipeline.export.bounds.BOUND_VECTORS", 0)
    monkeypatch.setattr("pipeline.export.validate.ENCLOSURE_VECTORS", 1)
    model = B.wide_conv()
    inputs = N.vectors(model, count=2)
    run = N.through_chain(model, tmp_path, inputs, targets=("c",), lanes=8)
    item = run.c_code / "CPU0" / "nnef_item_CPU0.c"
    text = item.read_text()
    assert re.search(r"for \(int cc = 0; cc < 64; cc \+= \d+\)", text), "the network no longer exercises the passes"
    kernels, _, problems = static.kernel_problems(item.name, text)
    assert kernels >= 2 and problems == [], problems
    np.testing.assert_allclose(run.reference["y"], N.onnxruntime_outputs(model, inputs)["y"], atol=1e-4, rtol=0)

"""matmul and linear against onnxruntime (tolerance: semantics_helpers)."""

from __future__ import annotations


import numpy as np
import pytest


from tests.semantics.semantics_helpers import assert_bounded, one, ort, rand

from pipeline.diagnostics import PipelineError

RNG = np.random.default_rng(5)


@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
def test_matmul_matches_onnxruntime(ta, tb):
    a = rand(RNG, 3, 7, 5) if not ta else rand(RNG, 3, 5, 7)
    b = rand(RNG, 3, 5, 4) if not tb else rand(RNG, 3, 4, 5)
    ours = one("matmul", {"A": a, "B": b}, transposeA=ta, transposeB=tb)
    a2 = np.swapaxes(a, -1, -2) if ta else a
    b2 = np.swapaxes(b, -1, -2) if tb else b
    theirs = ort("MatMul", {"a": np.ascontiguousarray(a2), "b": np.ascontiguousarray(b2)})[0]
    magnitude = one("matmul", {"A": np.abs(a), "B": np.abs(b)}, transposeA=ta, transposeB=tb)
    assert ours.shape == (3, 7, 4)
    assert_bounded(ours, theirs, 5, magnitude)


def test_matmul_broadcasts_batch_axes():
    a, b = rand(RNG, 2, 1, 4, 6), rand(RNG, 1, 3, 6, 5)
    ours = one("matmul", {"A": a, "B": b}, transposeA=False, transposeB=False)
    theirs = ort("MatMul", {"a": a, "b": b})[0]
    assert ours.shape == (2, 3, 4, 5)
    assert_bounded(ours, theirs, 6, one("matmul", {"A": np.abs(a), "B": np.abs(b)}, transposeA=False, transposeB=False))


@pytest.mark.parametrize("bias_shape", [(1, 12), None])
def test_linear_matches_gemm(bias_shape):
    x, w = rand(RNG, 4, 400), rand(RNG, 12, 400)
    b = rand(RNG, *bias_shape) if bias_shape else 0.0
    ours = one("linear", {"input": x, "filter": w, "bias": b})
    inputs = {"x": x, "w": w} | ({"c": b.reshape(-1)} if bias_shape else {})
    theirs = ort("Gemm", inputs, {"transB": 1})[0]
    magnitude = one("linear", {"input": np.abs(x), "filter": np.abs(w), "bias": np.abs(b) if bias_shape else 0.0})
    assert_bounded(ours, theirs, 401, magnitude)


def test_shape_errors():
    with pytest.raises(PipelineError) as info:
        one("linear", {"input": rand(RNG, 2, 3), "filter": rand(RNG, 4, 5), "bias": 0.0})
    assert info.value.code == "SEM-E005"
    with pytest.raises(PipelineError):
        one("linear", {"input": rand(RNG, 2, 3), "filter": rand(RNG, 4, 3), "bias": rand(RNG, 1, 5)})
    with pytest.raises(PipelineError):
        one("matmul", {"A": rand(RNG, 2, 3), "B": rand(RNG, 4, 5)}, transposeA=False, transposeB=False)

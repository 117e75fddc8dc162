"""Reductions against onnxruntime (opset 18+: axes as an input)."""

from __future__ import annotations


import numpy as np
import pytest


from tests.semantics.semantics_helpers import assert_bounded, one, ort, rand, run, same_bits

RNG = np.random.default_rng(17)
AXES = [[1], [2, 3], [0, 2], [0, 1, 2, 3]]


@pytest.mark.parametrize("axes", AXES, ids=str)
def test_sum_and_mean(axes):
    x = rand(RNG, 2, 3, 4, 5)
    count = int(np.prod([x.shape[a] for a in axes]))
    axes_in = {"x": x, "axes": np.array(axes, np.int64)}
    ours = one("sum_reduce", {"input": x}, axes=axes, normalize=False)
    assert_bounded(ours, ort("ReduceSum", axes_in)[0], count, one("sum_reduce", {"input": np.abs(x)}, axes=axes))
    mean = one("mean_reduce", {"input": x}, axes=axes)
    assert_bounded(mean, ort("ReduceMean", axes_in)[0], count + 1, one("mean_reduce", {"input": np.abs(x)}, axes=axes))
    assert same_bits(one("sum_reduce", {"input": x}, axes=axes, normalize=True), mean)


@pytest.mark.parametrize("axes", AXES, ids=str)
def test_max_min_exact(axes):
    x = rand(RNG, 2, 3, 4, 5)
    axes_in = {"x": x, "axes": np.array(axes, np.int64)}
    assert same_bits(one("max_reduce", {"input": x}, axes=axes), ort("ReduceMax", axes_in)[0])
    assert same_bits(one("min_reduce", {"input": x}, axes=axes), ort("ReduceMin", axes_in, opset=18)[0])


def test_argmax_argmin_single_axis_and_ties():
    x = rand(RNG, 3, 6, 2)
    x[0, 4, 0] = x[0, 1, 0] = 10.0  # tie: the first wins (ONNX select_last_index = 0)
    ours = one("argmax_reduce", {"input": x}, axes=[1])
    theirs = ort("ArgMax", {"x": x}, {"axis": 1, "keepdims": 1}, outputs=(("out", np.dtype(np.int64)),))[0]
    assert ours.dtype == np.int64 and np.array_equal(ours, theirs) and ours[0, 0, 0] == 1
    ours = one("argmin_reduce", {"input": x}, axes=[1])
    theirs = ort("ArgMin", {"x": x}, {"axis": 1, "keepdims": 1}, outputs=(("out", np.dtype(np.int64)),))[0]
    assert np.array_equal(ours, theirs)


def test_nan_propagates_through_max_and_argmax():
    x = np.array([[1.0, np.nan, 3.0, np.nan]], np.float32)
    assert np.isnan(one("max_reduce", {"input": x}, axes=[1])).all()
    assert one("argmax_reduce", {"input": x}, axes=[1]).tolist() == [[1]]
    assert np.isnan(one("min_reduce", {"input": x}, axes=[1])).all()


def test_any_all_and_moments():
    b = rand(RNG, 3, 4) > 0.5
    assert np.array_equal(one("any_reduce", {"input": b}, axes=[1]), b.any(axis=1, keepdims=True))
    assert np.array_equal(one("all_reduce", {"input": b}, axes=[0]), b.all(axis=0, keepdims=True))
    x = rand(RNG, 4, 50)
    mean, var = run("moments", {"input": x}, axes=[1])
    assert np.allclose(mean, x.astype(np.float64).mean(axis=1, keepdims=True), atol=1e-6)
    assert np.allclose(var, x.astype(np.float64).var(axis=1, keepdims=True), rtol=1e-5)

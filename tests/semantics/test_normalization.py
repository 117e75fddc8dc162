"""softmax, batch normalization, LRN, L1/L2 and local normalizations against onnxruntime
or float64."""

from __future__ import annotations


import numpy as np
import pytest


from tests.semantics.semantics_helpers import F32, one, ort, rand, same_bits

RNG = np.random.default_rng(23)


@pytest.mark.parametrize("axis", [1, 2])
def test_softmax_matches_onnxruntime(axis):
    x = rand(RNG, 3, 10, 4, scale=4.0)
    ours = one("softmax", {"x": x}, axes=[axis])
    theirs = ort("Softmax", {"x": x}, {"axis": axis})[0]
    assert np.allclose(ours, theirs, rtol=2e-6, atol=1e-8)
    assert np.allclose(ours.astype(np.float64).sum(axis=axis), 1.0, atol=1e-6)


def test_softmax_over_several_axes_and_extremes():
    x = rand(RNG, 2, 3, 4, scale=30.0)
    x[0, 0, 0] = 1000.0  # the max subtraction keeps exp finite
    ours = one("softmax", {"x": x}, axes=[1, 2])
    z = x.astype(np.float64)
    ref = np.exp(z - z.max(axis=(1, 2), keepdims=True))
    ref /= ref.sum(axis=(1, 2), keepdims=True)
    assert np.allclose(ours, ref, rtol=1e-5, atol=1e-30)
    assert ours[0, 0, 0] == 1.0


def test_batch_normalization_matches_onnxruntime():
    x = rand(RNG, 2, 4, 5, 5)
    mean, var = rand(RNG, 1, 4), np.abs(rand(RNG, 1, 4)) + F32(0.1)
    scale, offset = rand(RNG, 1, 4), rand(RNG, 1, 4)
    ours = one("batch_normalization", {"input": x, "mean": mean, "variance": var, "offset": offset, "scale": scale},
               epsilon=1e-5)
    theirs = ort("BatchNormalization", {"x": x, "s": scale.ravel(), "b": offset.ravel(), "m": mean.ravel(),
                                        "v": var.ravel()}, {"epsilon": 1e-5})[0]
    assert np.allclose(ours, theirs, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("size", [3, 4, 5])
def test_lrn_matches_onnxruntime(size):
    x = rand(RNG, 2, 7, 3, 3)
    ours = one("local_response_normalization", {"input": x}, size=[1, size, 1, 1], alpha=1e-3, beta=0.75, bias=1.5)
    if size % 2:
        theirs = ort("LRN", {"x": x}, {"size": size, "alpha": 1e-3, "beta": 0.75, "bias": 1.5})[0]
    else:
        # onnxruntime refuses even sizes and onnx.reference's LRN loops over the batch
        # extent instead of the channels (onnx 1.23): the ONNX formula in float64 instead.
        z = x.astype(np.float64)
        lo, hi = (size - 1) // 2, -(-(size - 1) // 2)
        square = np.stack([(z[:, max(0, c - lo):c + hi + 1] ** 2).sum(axis=1) for c in range(z.shape[1])], axis=1)
        theirs = z / (1.5 + 1e-3 / size * square) ** 0.75
    assert np.allclose(ours, theirs, rtol=3e-6, atol=1e-7)


def test_l2_and_l1_normalization():
    x = rand(RNG, 3, 8)
    ours = one("l2_normalization", {"input": x}, axes=[1], bias=0.0, epsilon=0.0)
    theirs = ort("LpNormalization", {"x": x}, {"axis": 1, "p": 2})[0]
    assert np.allclose(ours, theirs, rtol=2e-6, atol=1e-7)
    l1 = one("l1_normalization", {"input": x}, axes=[1], bias=0.0, epsilon=0.0)
    assert np.allclose(l1, x / np.abs(x.astype(np.float64)).sum(axis=1, keepdims=True), rtol=2e-6)
    zero = one("l2_normalization", {"input": np.zeros((1, 3), F32)}, axes=[1], bias=0.0, epsilon=1e-6)
    assert same_bits(zero, np.zeros((1, 3), F32))


def test_local_normalizations_follow_the_fragments():
    x = rand(RNG, 1, 2, 5, 5)
    size = [1, 1, 3, 3]
    box = one("box", {"input": x}, size=size, border="constant", padding=[], stride=[], dilation=[], normalize=True)
    assert same_bits(one("local_mean_normalization", {"input": x}, size=size), x - box)
    sq = one("box", {"input": x * x}, size=size, border="constant", padding=[], stride=[], dilation=[], normalize=True)
    expected = x / np.where(np.sqrt(sq) + F32(0.5) > F32(1e-3), np.sqrt(sq) + F32(0.5), F32(1e-3))
    assert same_bits(one("local_variance_normalization", {"input": x}, size=size, bias=0.5, epsilon=1e-3),
                     expected.astype(F32))
    contrast = one("local_contrast_normalization", {"input": x}, size=size, bias=0.5, epsilon=1e-3)
    centred = x - box
    assert same_bits(contrast, one("local_variance_normalization", {"input": centred}, size=size, bias=0.5, epsilon=1e-3))

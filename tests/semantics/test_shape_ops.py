"""Shape operations: bit-exact data movement, checked against onnxruntime / NumPy."""

from __future__ import annotations


import numpy as np
import pytest


from tests.semantics.semantics_helpers import F32, one, ort, rand, run, same_bits

from pipeline.diagnostics import PipelineError

RNG = np.random.default_rng(31)
X = rand(RNG, 2, 3, 4, 5)


def test_reshape_zero_minus_one_and_axis_range():
    assert same_bits(one("reshape", {"input": X}, shape=[0, -1]), X.reshape(2, 60))
    assert same_bits(one("reshape", {"input": X}, shape=[12], axis_start=1, axis_count=2), X.reshape(2, 12, 5))
    assert same_bits(one("reshape", {"input": X}, shape=[2, 0, 20]),
                     ort("Reshape", {"x": X, "s": np.array([2, 0, 20], np.int64)})[0])
    with pytest.raises(PipelineError) as info:
        one("reshape", {"input": X}, shape=[7, -1])
    assert info.value.code == "SEM-E005"


def test_transpose_partial_axes():
    assert same_bits(one("transpose", {"input": X}, axes=[1, 0]), X.transpose(1, 0, 2, 3))
    assert same_bits(one("transpose", {"input": X}, axes=[0, 2, 3, 1]),
                     ort("Transpose", {"x": X}, {"perm": [0, 2, 3, 1]})[0])


def test_concat_split_stack_unstack():
    a, b = rand(RNG, 2, 3), rand(RNG, 2, 5)
    assert same_bits(one("concat", {"values": [a, b]}, axis=1), np.concatenate([a, b], axis=1))
    parts = one("split", {"value": rand(RNG, 2, 12)}, axis=1, ratios=[1, 2, 3])
    assert [p.shape for p in parts] == [(2, 2), (2, 4), (2, 6)]
    stacked = one("stack", {"values": [a, a]}, axis=1)
    assert stacked.shape == (2, 2, 3)
    assert all(same_bits(u, a) for u in one("unstack", {"value": stacked}, axis=1))


@pytest.mark.parametrize("axes,begin,end,stride", [
    ([1], [1], [0], []),              # end 0 with unit stride: to the end
    ([2, 3], [-3, 1], [-1, 5], [1, 2]),
    ([3], [-1], [-6], [-1]),          # reverse, end clamped to -1
    ([0, 2], [0, 3], [2, 0], [1, -2]),
])
def test_slice(axes, begin, end, stride):
    ours = one("slice", {"input": X}, axes=axes, begin=begin, end=end, stride=stride)
    index = [slice(None)] * 4
    for a, b0, e0, s0 in zip(axes, begin, end, stride or [1] * len(axes)):
        n = X.shape[a]
        first = b0 + n if b0 < 0 else b0
        last = e0 + n if e0 < 0 else e0
        if not stride or all(s == 1 for s in stride):
            last = n if e0 == 0 else last
        first, last = max(-1, min(n, first)), max(-1, min(n, last))
        index[a] = list(range(first, last, s0))
    expected = X
    for a, idx in enumerate(index):
        if isinstance(idx, list):
            expected = np.take(expected, idx, axis=a)
    assert same_bits(ours, expected)


def test_squeeze_unsqueeze_tile_gather_copy_n():
    y = rand(RNG, 3, 1, 4, 1)
    assert one("squeeze", {"input": y}, axes=[1, 3]).shape == (3, 4)
    assert one("unsqueeze", {"input": rand(RNG, 3, 4)}, axes=[0, 3]).shape == (1, 3, 4, 1)
    t = rand(RNG, 2, 3)
    assert same_bits(one("tile", {"input": t}, repeats=[2, 3]), np.tile(t, (2, 3)))
    idx = np.array([[2, 0], [1, 1]], np.int64)
    assert same_bits(one("gather", {"input": t, "indices": idx}, axis=1), np.take(t, idx, axis=1))
    copies = one("copy_n", {"x": t}, times=3)
    assert len(copies) == 3 and all(c is t for c in copies)


@pytest.mark.parametrize("border,mode", [("constant", "constant"), ("replicate", "edge"), ("reflect", "reflect")])
def test_pad_matches_onnxruntime(border, mode):
    x = rand(RNG, 1, 2, 4, 5)
    padding = [(0, 0), (1, 0), (2, 3), (3, 1)]
    ours = one("pad", {"input": x}, padding=padding, border=border, value=1.5)
    pads = np.array([p for p, _ in padding] + [q for _, q in padding], np.int64)
    inputs = {"x": x, "pads": pads} | ({"v": np.array(1.5, F32)} if mode == "constant" else {})
    assert same_bits(ours, ort("Pad", inputs, {"mode": mode})[0])


def test_pad_reflect_even_and_wide_reflection():
    x = rand(RNG, 1, 3)
    assert same_bits(one("pad", {"input": x}, padding=[(0, 0), (2, 2)], border="reflect-even", value=0.0),
                     np.pad(x, [(0, 0), (2, 2)], mode="symmetric"))
    wide = one("pad", {"input": x}, padding=[(0, 0), (5, 6)], border="reflect", value=0.0)
    assert same_bits(wide, np.pad(x, [(0, 0), (5, 6)], mode="reflect"))
    with pytest.raises(PipelineError):
        one("pad", {"input": x}, padding=[(0, 0), (1, 1)], border="ignore", value=0.0)


def test_constant():
    out = one("constant", {}, shape=[2, 3], value=[0.1])
    assert out.dtype == np.float32 and (out == F32(0.1)).all()
    out = run("constant", {}, shape=[2], value=[1, 2], dtype="integer")[0]
    assert out.dtype == np.int64 and out.tolist() == [1, 2]
    with pytest.raises(PipelineError):
        one("constant", {}, shape=[2, 2], value=[1.0, 2.0, 3.0])

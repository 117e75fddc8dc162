"""The blocked conv/linear/matmul paths (ordered_dot) against the straightforward loops they
replaced, bit for bit, and against onnxruntime within the summation bound; interpret_batch
against interpret.

`straight_conv` is the previous conv kernel kept verbatim as the oracle: per (c, tap) in
lexicographic order, one multiply and one add over every output. `straight_dot` is the
definition of ordered_dot written as a plain k loop. The block sizes are also shrunk so that
every blocking case (several output blocks, group chunks, runs of k split, the transposed
layout) is exercised on small shapes.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.semantics.semantics_helpers import assert_bounded, nchw_pads, one, ort, rand, same_bits
from tests.semantics.test_interpreter import LENET_SHAPES, lenet_graph

from pipeline.diagnostics import PipelineError
from pipeline.semantics import interpret, interpret_batch, interpreter, linear_algebra, sliding_window
from pipeline.semantics.linear_algebra import ordered_dot
from pipeline.semantics.tensors import F32
from pipeline.semantics.windows import inside_mask, pad, resolve

RNG = np.random.default_rng(2026)
ZERO = F32(0.0)


def straight_conv(x, w, b, border, padding, stride, dilation, groups):
    """The conv kernel before blocking: acc over [N, G, Og, positions], one (c, tap) at a time."""
    n_batch, channels = x.shape[:2]
    outs, cg = w.shape[:2]
    groups = groups or channels
    win = resolve(x.shape[2:], w.shape[2:], padding, stride, dilation)
    xp = pad(x, [(0, 0), (0, 0), *win.padding], border, ZERO)
    og = outs // groups
    positions = math.prod(win.out_shape)
    xg = xp.reshape((n_batch, groups, cg) + win.padded_shape)
    w_t = np.ascontiguousarray(np.moveaxis(w.reshape((groups, og, cg) + win.size), 2, 0))
    w_t = np.moveaxis(w_t, (1, 2), (-2, -1)).reshape((cg,) + win.size + (1, groups, og, 1))
    skip = None
    if border in ("constant", "ignore") and not np.isfinite(w).all():
        skip = ~inside_mask(win.in_shape, win.padding)
    acc = np.zeros((n_batch, groups, og, positions), dtype=F32)
    term = np.empty_like(acc)
    taps = np.empty((n_batch, groups) + win.out_shape, dtype=F32)
    flat_taps = taps.reshape(n_batch, groups, 1, positions)
    with np.errstate(all="ignore"):
        for c in range(cg):
            for offset in win.offsets():
                window = win.taps(offset)
                np.copyto(taps, xg[(slice(None), slice(None), c) + window])
                np.multiply(w_t[(c,) + offset], flat_taps, out=term)
                if skip is not None:
                    np.copyto(term, ZERO, where=skip[window].reshape(positions))
                np.add(acc, term, out=acc)
        out = acc.reshape((n_batch, outs) + win.out_shape)
        return np.asarray(out + b.reshape((1, -1) + (1,) * len(win.out_shape)), dtype=F32)


def straight_dot(a, b, skip=None):
    """out[g, m, n] = +0 + a[0, g, m] * b[0, g, n] + ... in increasing k: the definition."""
    acc = np.zeros((a.shape[1], a.shape[2], b.shape[2]), dtype=F32)
    with np.errstate(all="ignore"):
        for k in range(a.shape[0]):
            term = a[k][:, :, None] * b[k][:, None, :]
            if skip is not None:
                term[:, :, skip[k]] = ZERO
            acc += term
    return acc


@pytest.fixture(params=["default blocks", "numpy loop", "tiny blocks"])
def blocks(request, monkeypatch):
    """ordered_dot as it runs (compiled when numba is present), its NumPy loop, and the NumPy
    loop with tiny blocks (block sizes only exist there)."""
    if request.param != "default blocks":
        monkeypatch.setenv("NNCERT_NO_JIT", "1")
    if request.param == "tiny blocks":
        monkeypatch.setattr(linear_algebra, "ACC_BLOCK", 24)
        monkeypatch.setattr(linear_algebra, "INNER_BLOCK", 8)
        monkeypatch.setattr(linear_algebra, "PRODUCT_BLOCK", 100)
    return request.param


CASES = [
    # name, input shape, filter shape, padding, stride, dilation, groups, border
    ("plain", (1, 3, 9, 9), (4, 3, 3, 3), [(0, 0), (0, 0)], [], [], 1, "constant"),
    ("same_batch3", (3, 3, 8, 8), (5, 3, 3, 3), [(1, 1), (1, 1)], [], [], 1, "constant"),
    ("asymmetric_stride", (1, 2, 9, 7), (3, 2, 3, 2), [(0, 2), (1, 0)], [2, 1], [], 1, "ignore"),
    ("dilation", (2, 2, 10, 9), (3, 2, 3, 3), [(2, 2), (1, 3)], [1, 2], [2, 2], 1, "constant"),
    ("groups", (1, 6, 7, 7), (9, 2, 3, 3), [(1, 1), (1, 1)], [2, 2], [], 3, "constant"),
    ("depthwise_multiplier", (2, 5, 6, 6), (10, 1, 3, 3), [(1, 1), (1, 1)], [], [], 0, "constant"),
    ("pointwise", (1, 16, 3, 3), (24, 16, 1, 1), [(0, 0), (0, 0)], [], [], 1, "constant"),
    ("pointwise_stride", (1, 8, 6, 6), (12, 8, 1, 1), [(0, 0), (0, 0)], [2, 2], [], 1, "constant"),
    ("many_channels_few_positions", (1, 20, 2, 2), (40, 20, 3, 3), [(1, 1), (1, 1)], [], [], 1, "constant"),
    ("replicate", (1, 3, 5, 6), (2, 3, 3, 3), [(1, 1), (2, 0)], [], [], 1, "replicate"),
    ("conv1d", (4, 3, 11), (4, 3, 4), [(2, 1)], [2], [1], 1, "constant"),
    ("conv3d", (1, 2, 5, 6, 4), (3, 2, 2, 3, 2), [(1, 0), (1, 1), (0, 1)], [1, 2, 1], [1, 1, 2], 1, "constant"),
]


def _conv(x, w, b, padding, stride, dilation, groups, border):
    return one("conv", {"input": x, "filter": w, "bias": b}, border=border, padding=padding, stride=stride,
               dilation=dilation, groups=groups)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_conv_equals_the_straightforward_loop(case, blocks):
    _, xs, ws, padding, stride, dilation, groups, border = case
    x, w, b = rand(RNG, *xs), rand(RNG, *ws), rand(RNG, 1, ws[0])
    ours = _conv(x, w, b, padding, stride, dilation, groups, border)
    assert same_bits(ours, straight_conv(x, w, b, border, padding, stride, dilation, groups))


@pytest.mark.parametrize("border", ["constant", "ignore", "replicate"])
def test_conv_non_finite_weights_skip_padded_taps_as_before(border, blocks):
    x, w, b = rand(RNG, 2, 3, 5, 5), rand(RNG, 4, 3, 3, 3), rand(RNG, 1, 4)
    w[0, 1, 0, 0], w[1, 0, 2, 2], w[2, 2, 1, 0], w[3, 0, 0, 1] = np.inf, -np.inf, np.nan, np.inf
    x[0, 0, 2, 2] = -0.0
    attrs = ([(1, 1), (1, 1)], [], [], 1, border)
    ours = _conv(x, w, b, *attrs)
    assert same_bits(ours, straight_conv(x, w, b, border, *attrs[:4]))
    if border != "replicate":  # skipped, not NaN: an all-padding tap of row 0 leaves finite sums
        assert np.isfinite(ours[:, 1]).any()


def test_conv_batch_100_equals_batch_1():
    x, w, b = rand(RNG, 100, 4, 6, 6), rand(RNG, 6, 4, 3, 3), rand(RNG, 1, 6)
    attrs = ([(1, 1), (1, 1)], [], [], 1, "constant")
    batch = _conv(x, w, b, *attrs)
    assert same_bits(batch, straight_conv(x, w, b, "constant", *attrs[:4]))
    assert all(same_bits(batch[n:n + 1], _conv(x[n:n + 1], w, b, *attrs)) for n in (0, 57, 99))


@pytest.mark.parametrize("shape", [(7, 1, 3, 5), (40, 1, 30, 2), (5, 4, 1, 9), (64, 2, 17, 33), (1, 1, 1, 1)])
def test_ordered_dot_is_the_k_loop(shape, blocks):
    k, g, m, n = shape
    a, b = rand(RNG, k, g, m), rand(RNG, k, g, n)
    a[0, 0, 0] = -0.0
    assert same_bits(ordered_dot(a, b), straight_dot(a, b))
    skip = RNG.random((k, n)) < 0.3
    a[-1, 0, -1] = np.inf
    with np.errstate(all="ignore"):
        assert same_bits(ordered_dot(a, b, skip), straight_dot(a, b, skip))


def test_linear_and_matmul_are_the_k_loop(blocks):
    x, w, bias = rand(RNG, 3, 70), rand(RNG, 9, 70), rand(RNG, 1, 9)
    expected = straight_dot(x.T[:, None, :], w.T[:, None, :])[0]
    assert same_bits(one("linear", {"input": x, "filter": w, "bias": bias}), expected + bias)
    assert same_bits(one("matmul", {"A": x, "B": w}, transposeA=False, transposeB=True), expected)


@pytest.mark.parametrize("case", [c for c in CASES if c[7] == "constant"][:6], ids=lambda c: c[0])
def test_blocked_conv_matches_onnxruntime(case):
    _, xs, ws, padding, stride, dilation, groups, _ = case
    x, w, b = rand(RNG, *xs), rand(RNG, *ws), rand(RNG, 1, ws[0])
    ours = _conv(x, w, b, padding, stride, dilation, groups, "constant")
    magnitude = _conv(np.abs(x), np.abs(w), np.abs(b), padding, stride, dilation, groups, "constant")
    attrs = {"pads": nchw_pads(padding), "group": groups or xs[1]}
    if stride:
        attrs["strides"] = stride
    if dilation:
        attrs["dilations"] = dilation
    theirs = ort("Conv", {"x": x, "w": w, "b": b.reshape(-1)}, attrs)[0]
    assert_bounded(ours, theirs, int(np.prod(ws[1:])) + 1, magnitude)


def test_conv_batch_chunks_equal_one_call(monkeypatch):
    x, w, b = rand(RNG, 7, 3, 6, 6), rand(RNG, 4, 3, 3, 3), rand(RNG, 1, 4)
    attrs = ([(1, 1), (1, 1)], [], [], 1, "constant")
    whole = _conv(x, w, b, *attrs)
    monkeypatch.setattr(sliding_window, "COLUMNS_LIMIT", 27 * 36 * 2)  # two vectors per chunk
    assert same_bits(_conv(x, w, b, *attrs), whole)


def test_interpret_batch_equals_interpret_per_vector(monkeypatch):
    """LeNet-5 (convs, linears, pools, softmax) on 5 vectors, one with NaN, inf and -0 inputs:
    interpret_batch (convs, linears and relus stacked) gives interpret's bits for every vector."""
    stacked = []
    original = interpreter._run_stacked
    monkeypatch.setattr(interpreter, "_run_stacked",
                        lambda g, op, envs: stacked.append((op.name, original(g, op, envs))) or stacked[-1][1])
    graph = lenet_graph()
    variables = {label: rand(RNG, *shape) for label, shape in LENET_SHAPES.items()}
    for value in variables.values():
        value.setflags(write=False)
    vectors = [{"input": rand(RNG, 1, 1, 32, 32)} for _ in range(5)]
    vectors[2]["input"][0, 0, :3, :3] = [[np.nan, np.inf, -0.0], [-np.inf, 0.0, -0.0], [1e38, -1e38, 1e-45]]
    batch = interpret_batch(graph, vectors, variables)
    assert len(batch) == 5
    for vector, outputs in zip(vectors, batch):
        expected = interpret(graph, vector, variables)
        assert outputs.keys() == expected.keys()
        assert all(same_bits(outputs[name], expected[name]) for name in expected)
    assert stacked == [(op.name, True) for op in graph.operations if op.name in interpreter.STACKABLE]
    assert [name for name, _ in stacked].count("relu") >= 2  # elementwise relu is stacked too


def test_interpret_batch_reports_errors_like_interpret():
    graph = lenet_graph()
    variables = {label: rand(RNG, *shape) for label, shape in LENET_SHAPES.items()}
    with pytest.raises(PipelineError) as error:
        interpret_batch(graph, [{"input": rand(RNG, 1, 1, 32, 32)}, {"input": rand(RNG, 1, 1, 31, 32)}], variables)
    assert error.value.code == "SEM-E003"


@pytest.mark.parametrize("shape", [(3, 1, 0, 5), (0, 2, 3, 4), (2, 0, 3, 4)])
def test_ordered_dot_empty(shape):
    k, g, m, n = shape
    a, b = rand(RNG, k, g, m), rand(RNG, k, g, n)
    assert same_bits(ordered_dot(a, b), straight_dot(a, b))

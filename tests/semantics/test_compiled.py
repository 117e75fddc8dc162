"""The compiled ordered_dot (numba, pipeline/semantics/compiled.py) against the NumPy loop it
replaces when numba is present, bit for bit (a NaN equals any NaN: LLVM may swap the operands of
a commutative + or *, which picks the other NaN's sign when both are NaN; payloads and signs of
NaN are unspecified, docs/semantics/index.md): random shapes across the tile edges, conv with
strides, dilation, padding, groups, depthwise and 1x1 filters, NaN/inf/subnormal/-0 inputs and
weights (the padded-tap skip mask), batches of 1 and many, linear, matmul, and every shipped model
end to end. Also: the machine code has no fused multiply-add, and a sum where fusing or
reordering would change the bits gives the unfused, in-order value.

`NNCERT_NO_JIT=1` selects the NumPy loop (jit.compiled_loops), so each comparison runs
the same kernel twice in one process.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import numpy as np
import onnx
import pytest

from tests.semantics.semantics_helpers import one, rand, run, same_bits, same_bits_any_nan

from pipeline.semantics import interpret, interpret_batch, jit, load_variables
from pipeline.semantics.linear_algebra import numpy_ordered_dot, ordered_dot
from pipeline.semantics.tensors import F32

numba = pytest.importorskip("numba", reason="numba not installed: ordered_dot runs its NumPy loop only")
compiled = pytest.importorskip("pipeline.semantics.compiled")

ROOT = Path(__file__).resolve().parents[2]
RNG = np.random.default_rng(1313)
SPECIAL = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1e-45, -3e-39, 1e-38, 3e38, -3e38], dtype=F32)


def spiced(x: np.ndarray, share: float = 0.1) -> np.ndarray:
    """x with about `share` of its elements replaced by NaN, +-inf, +-0, subnormals and huge values."""
    x = np.array(x, dtype=F32)
    where = RNG.random(x.shape) < share
    x[where] = RNG.choice(SPECIAL, size=int(where.sum()))
    return x


def both(fn, monkeypatch):
    """fn() by the compiled loops, then by the NumPy loop."""
    assert jit.compiled_loops() is compiled
    with np.errstate(all="ignore"):
        fast = fn()
        monkeypatch.setenv("NNCERT_NO_JIT", "1")
        assert jit.compiled_loops() is None
        slow = fn()
        monkeypatch.delenv("NNCERT_NO_JIT")
    return fast, slow


# K, G, M, N: one tile, partial tiles, several row tiles (M > ROWS), several column tiles
# (N > COLUMNS), the transposed layout (N < M, M > COLUMNS), depthwise-like (M = 1), 1 x 1.
DOT_SHAPES = [(1, 1, 1, 1), (9, 1, 5, 7), (30, 2, 17, 33), (7, 3, 13, 1100), (5, 2, 1100, 3), (9, 6, 1, 600),
              (40, 1, 20, 2), (3, 4, 9, 9)]


@pytest.mark.parametrize("shape", DOT_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_ordered_dot_compiled_equals_numpy(shape):
    k, g, m, n = shape
    a, b = spiced(rand(RNG, k, g, m)), spiced(rand(RNG, k, g, n))
    with np.errstate(all="ignore"):
        assert same_bits_any_nan(compiled.ordered_dot(a, b), numpy_ordered_dot(a, b))
        skip = RNG.random((k, n)) < 0.3
        assert same_bits_any_nan(compiled.ordered_dot(a, b, skip), numpy_ordered_dot(a, b, skip))
        a_view = np.swapaxes(np.swapaxes(a, 0, 2).copy(), 0, 2)  # not C-contiguous, read-only
        a_view.setflags(write=False)
        assert same_bits_any_nan(compiled.ordered_dot(a_view, b), numpy_ordered_dot(a, b))


def test_ordered_dot_neither_fuses_nor_reorders():
    """Every output: +0 + (-1 * 1) + (1 + 2^-12)^2, then + 2^24, - 2^24. Unfused, in order: the
    product rounds to 1 + 2^-11 (a tie, to even), so the sum is 2^-11, then 2^24 absorbs it and
    the result is 0. A fused multiply-add gives 2^-11 + 2^-24 at k = 1; summing the last two terms
    first gives 2^-11. Many rows and columns, so the vector loops and their remainders both run."""
    e = F32(1 + 2.0 ** -12)
    column = np.array([-1.0, e, 1.0, 1.0], dtype=F32)
    row = np.array([1.0, e, 2.0 ** 24, -(2.0 ** 24)], dtype=F32)
    for m, n in ((13, 37), (37, 13)):
        a = np.repeat(column[:, None, None], m, axis=2)
        b = np.repeat(row[:, None, None], n, axis=2)
        assert same_bits(ordered_dot(a[:2], b[:2]), np.full((1, m, n), 2.0 ** -11, dtype=F32))
        assert same_bits(ordered_dot(a, b), np.zeros((1, m, n), dtype=F32))


def test_machine_code_has_no_fused_multiply_add():
    """The compiled kernels' x86 code (compiled again here: numba cannot disassemble cached code)."""
    if not re.match(r"x86|amd64", __import__("platform").machine(), re.I):
        pytest.skip("the FMA mnemonics checked are x86's")
    for kernel in (compiled._dot_rows, compiled._dot_columns, compiled._conv_wide):
        fresh = numba.njit(kernel.nopython_signatures[0], nogil=True)(kernel.py_func)
        asm = next(iter(fresh.inspect_asm().values())).lower()
        assert re.search(r"\bv?mulps\b", asm) and re.search(r"\bv?addps\b", asm), "expected vectorized mul and add"
        assert not re.search(r"\bvf(n)?m(add|sub)", asm), f"{kernel.__name__}: fused multiply-add in the code"


CONV_CASES = [
    # name, input shape, filter shape, padding, stride, dilation, groups, border
    ("same_batch1", (1, 3, 9, 9), (10, 3, 3, 3), [(1, 1), (1, 1)], [], [], 1, "constant"),
    ("batch40", (40, 3, 8, 8), (5, 3, 3, 3), [(1, 1), (1, 1)], [], [], 1, "constant"),
    ("asymmetric_stride_ignore", (2, 2, 9, 7), (3, 2, 3, 2), [(0, 2), (1, 0)], [2, 1], [], 1, "ignore"),
    ("dilation", (2, 2, 10, 9), (3, 2, 3, 3), [(2, 2), (1, 3)], [1, 2], [2, 2], 1, "constant"),
    ("groups", (3, 6, 7, 7), (9, 2, 3, 3), [(1, 1), (1, 1)], [2, 2], [], 3, "constant"),
    ("depthwise", (5, 12, 6, 6), (12, 1, 3, 3), [(1, 1), (1, 1)], [], [], 0, "constant"),
    ("depthwise_stride", (2, 8, 9, 9), (8, 1, 3, 3), [(0, 1), (0, 1)], [2, 2], [], 8, "constant"),
    ("pointwise", (3, 16, 3, 3), (24, 16, 1, 1), [(0, 0), (0, 0)], [], [], 1, "constant"),
    ("many_channels_few_positions", (1, 20, 2, 2), (40, 20, 3, 3), [(1, 1), (1, 1)], [], [], 1, "constant"),
    ("replicate", (2, 3, 5, 6), (2, 3, 3, 3), [(1, 1), (2, 0)], [], [], 1, "replicate"),
    ("conv1d", (4, 3, 11), (4, 3, 4), [(2, 1)], [2], [1], 1, "constant"),
    # stride 1 (compiled.conv_wide): several position tiles, channels not a whole tile, dilation,
    # asymmetric padding, groups, each border
    ("wide_tiles", (2, 5, 23, 19), (21, 5, 3, 3), [(1, 1), (1, 1)], [], [], 1, "constant"),
    ("wide_dilation", (1, 3, 12, 13), (5, 3, 3, 2), [(3, 0), (0, 2)], [], [2, 3], 1, "ignore"),
    ("wide_groups", (2, 6, 9, 8), (4, 3, 2, 3), [(0, 1), (2, 2)], [], [], 2, "constant"),
    ("wide_reflect", (1, 4, 7, 6), (3, 4, 3, 3), [(2, 2), (1, 1)], [], [], 1, "reflect"),
    ("wide_no_padding", (1, 2, 5, 40), (2, 2, 5, 3), [(0, 0), (0, 0)], [], [], 1, "constant"),
    # negative padding crops (never the compiled zero padding, which only grows)
    ("crop", (1, 3, 9, 9), (4, 3, 3, 3), [(1, -1), (-1, 2)], [], [], 1, "constant"),
    # strided conv_wide: the input split into stride phases (odd padded extents, dilation)
    ("wide_stride2_dilation", (1, 3, 15, 12), (6, 3, 3, 3), [(2, 1), (0, 3)], [2, 2], [2, 1], 1, "constant"),
    ("wide_stride3_replicate", (1, 2, 11, 10), (4, 2, 2, 3), [(1, 1), (1, 0)], [3, 3], [], 1, "replicate"),
    # depthwise: conv_wide with a stride and dilation (two outputs per group), the columns (unequal strides)
    ("depthwise_wide_dilation", (2, 4, 13, 13), (8, 1, 3, 3), [(2, 2), (2, 1)], [2, 2], [2, 2], 4, "constant"),
    ("depthwise_unequal_stride", (2, 6, 9, 8), (6, 1, 3, 3), [(1, 1), (1, 1)], [1, 2], [], 0, "constant"),
]


@pytest.mark.parametrize("case", CONV_CASES, ids=[c[0] for c in CONV_CASES])
def test_conv_compiled_equals_numpy(case, monkeypatch):
    _, xs, ws, padding, stride, dilation, groups, border = case
    x, w, b = spiced(rand(RNG, *xs)), spiced(rand(RNG, *ws), 0.05), rand(RNG, 1, ws[0])
    w[0].flat[0] = np.inf  # non-finite weights: padded taps are skipped (the mask)
    attrs = {"border": border, "padding": padding, "stride": stride, "dilation": dilation, "groups": groups}
    fast, slow = both(lambda: one("conv", {"input": x, "filter": w, "bias": b}, **attrs), monkeypatch)
    assert same_bits_any_nan(fast, slow)
    clean = rand(RNG, *ws)
    fast, slow = both(lambda: one("conv", {"input": x, "filter": clean, "bias": b}, **attrs), monkeypatch)
    assert same_bits_any_nan(fast, slow)


@pytest.mark.parametrize("rows", [1, 3, 70])
def test_linear_and_matmul_compiled_equal_numpy(rows, monkeypatch):
    x, w, bias = spiced(rand(RNG, rows, 600)), spiced(rand(RNG, 9, 600)), rand(RNG, 1, 9)
    fast, slow = both(lambda: one("linear", {"input": x, "filter": w, "bias": bias}), monkeypatch)
    assert same_bits_any_nan(fast, slow)
    fast, slow = both(lambda: one("matmul", {"A": x, "B": w}, transposeA=False, transposeB=True), monkeypatch)
    assert same_bits_any_nan(fast, slow)


def _shipped(name: str):
    from pipeline.project.deploy import load_deploy
    from pipeline.export import convert
    from pipeline.export.exporter import publish
    from pipeline.nnef.checker import check_paths
    from pipeline.numerics.vectors import draw_vectors

    result = convert(onnx.load(str(ROOT / "models" / name / "model.onnx")))
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "export"
        publish(result.files, out)
        graph = check_paths([out], profile="standard").graphs[0]
        variables = load_variables(graph, out)
    spec = load_deploy(ROOT / "models" / name / "deploy.yaml")
    vectors = [{result.inputs[k]: v for k, v in vector.items()} for vector in draw_vectors(spec.inputs, 3, 7)]
    vectors.append({k: spiced(v, 0.05) for k, v in vectors[0].items()})
    return graph, variables, vectors


@pytest.mark.parametrize("name", sorted(p.name for p in (ROOT / "models").iterdir() if (p / "model.onnx").is_file()))
def test_shipped_model_compiled_equals_numpy(name, monkeypatch):
    """interpret_batch of 4 vectors (one with special values), every output, both loops."""
    graph, variables, vectors = _shipped(name)
    fast, slow = both(lambda: interpret_batch(graph, vectors, variables), monkeypatch)
    for vector, ours, theirs in zip(vectors, fast, slow):
        assert ours.keys() == theirs.keys()
        assert all(same_bits_any_nan(ours[key], theirs[key]) for key in ours)
        alone = interpret(graph, vector, variables)  # stacked operations give each vector's own bits
        assert all(same_bits(ours[key], alone[key]) for key in ours)


def test_relu_compiled_equals_numpy(monkeypatch):
    x = spiced(rand(RNG, 3, 5, 7, 11), 0.3)
    x.flat[:4] = [-0.0, 0.0, np.float32(-np.nan), 1e-45]
    fast, slow = both(lambda: one("relu", {"x": x}), monkeypatch)
    assert same_bits(fast, slow)  # a select: every bit, NaN payloads included
    assert same_bits(fast.flat[:4], np.array([0.0, 0.0, -np.nan, 1e-45], dtype=F32))


@pytest.mark.parametrize("shapes", [((4, 6, 5, 7), (1, 6)), ((3, 6), (1, 6)), ((2, 6, 9), ()), ((2, 3, 4, 4), (1, 3, 4, 4))],
                         ids=["per_channel", "rank2", "literal", "full_tensor_numpy_path"])
def test_batch_normalization_compiled_equals_numpy(shapes, monkeypatch):
    xs, ps = shapes
    x = spiced(rand(RNG, *xs), 0.2)
    params = {name: spiced(rand(RNG, *ps), 0.1) for name in ("mean", "offset", "scale")}
    params["variance"] = np.abs(spiced(rand(RNG, *ps), 0.1))
    fast, slow = both(lambda: one("batch_normalization", {"input": x, **params}, epsilon=1e-3), monkeypatch)
    assert same_bits_any_nan(fast, slow)


@pytest.mark.parametrize("shape, axes", [((2, 64, 8, 8), [2, 3]), ((3, 5, 7), [0, 2]), ((4, 9), [1]), ((6,), [0]),
                                         ((2, 0, 3), [2]), ((2, 3, 0), [2])],
                         ids=["spatial", "outer_and_inner", "rows", "all", "no_rows", "no_terms"])
def test_sum_and_mean_reduce_compiled_equal_numpy(shape, axes, monkeypatch):
    """reduce.ordered_sum by compiled.row_sums: NaN, inf, -0 and subnormal terms, in row-major order."""
    x = spiced(rand(RNG, *shape), 0.2)
    for op in ("sum_reduce", "mean_reduce"):
        fast, slow = both(lambda: one(op, {"input": x}, axes=axes), monkeypatch)
        assert same_bits_any_nan(fast, slow)


def test_row_sums_keep_the_order():
    """1 + 2^-24 + 2^-24 ...: in order each small term is absorbed (ties to even), so the sum stays 1;
    any reassociation (pairwise, vector lanes) would add the small terms first and give more."""
    row = np.full(64, 2.0 ** -24, dtype=F32)
    row[0] = 1.0
    assert same_bits(compiled.row_sums(np.tile(row, (3, 1))), np.ones(3, dtype=F32))
    assert same_bits(compiled.row_sums(-np.zeros((2, 5), dtype=F32)), np.zeros(2, dtype=F32))  # +0 + -0 = +0


POOL_CASES = [
    # name, input shape, size, padding, stride, dilation, border
    ("image_3x3_s2", (2, 3, 9, 8), [1, 1, 3, 3], [(0, 0), (0, 0), (1, 1), (1, 1)], [1, 1, 2, 2], [], "constant"),
    ("ignore_asymmetric", (1, 4, 7, 6), [1, 1, 2, 3], [(0, 0), (0, 0), (0, 1), (2, 0)], [1, 1, 1, 2], [], "ignore"),
    ("dilation_replicate", (1, 2, 10, 9), [1, 1, 3, 2], [(0, 0), (0, 0), (2, 2), (1, 1)], [1, 1, 2, 1], [1, 1, 2, 3],
     "replicate"),
    ("plane_2d", (7, 8), [2, 2], [(0, 1), (1, 0)], [2, 2], [], "constant"),
    ("rank3", (3, 6, 5), [1, 3, 3], [(0, 0), (1, 1), (1, 1)], [1, 1, 1], [], "ignore"),
    ("window_over_channels_numpy", (1, 4, 5, 5), [1, 2, 2, 2], [(0, 0), (0, 0), (0, 0), (0, 0)], [1, 2, 1, 1], [],
     "constant"),
]


@pytest.mark.parametrize("case", POOL_CASES, ids=[c[0] for c in POOL_CASES])
def test_max_pools_compiled_equal_numpy(case, monkeypatch):
    """max_pool, argmax_pool and max_pool_with_index by compiled.running_max: the first maximum
    (the first of a +0/-0 tie), the first NaN, padded taps per border; every bit and index."""
    _, shape, size, padding, stride, dilation, border = case
    x = spiced(rand(RNG, *shape), 0.3)
    x.flat[:3] = [-0.0, 0.0, np.nan]
    attrs = {"size": size, "padding": padding, "stride": stride, "dilation": dilation, "border": border}
    for op in ("max_pool", "argmax_pool"):
        fast, slow = both(lambda: one(op, {"input": x}, **attrs), monkeypatch)
        assert same_bits(fast, slow) if op == "max_pool" else np.array_equal(fast, slow)
    fast, slow = both(lambda: run("max_pool_with_index", {"input": x}, **attrs), monkeypatch)
    assert same_bits(fast[0], slow[0]) and np.array_equal(fast[1], slow[1])


def test_conv_of_an_empty_batch_is_empty(monkeypatch):
    """A batch of 0 vectors gives 0 output vectors on both paths (the batch is chunked: no chunk
    used to mean no part to concatenate)."""
    x, w, b = np.zeros((0, 3, 8, 8), F32), rand(RNG, 4, 3, 3, 3), rand(RNG, 1, 4)
    attrs = {"border": "constant", "padding": [(1, 1), (1, 1)], "stride": [1, 1], "dilation": [1, 1], "groups": 1}
    fast, slow = both(lambda: one("conv", {"input": x, "filter": w, "bias": b}, **attrs), monkeypatch)
    assert fast.shape == slow.shape == (0, 4, 8, 8)

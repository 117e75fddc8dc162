"""conv, deconv, box and pooling against onnxruntime (tolerance: semantics_helpers)."""

from __future__ import annotations


import numpy as np
import pytest


from tests.semantics.semantics_helpers import F32, assert_bounded, nchw_pads, one, ort, rand, reference, run, same_bits

from pipeline.diagnostics import PipelineError

RNG = np.random.default_rng(1234)

CONV_CASES = [
    # name, input shape, filter shape, padding, stride, dilation, groups
    ("plain", (2, 3, 9, 9), (4, 3, 3, 3), [(0, 0), (0, 0)], [1, 1], [1, 1], 1),
    ("same", (1, 3, 8, 8), (5, 3, 3, 3), [(1, 1), (1, 1)], [1, 1], [1, 1], 1),
    ("asymmetric", (1, 2, 7, 6), (3, 2, 3, 2), [(0, 2), (1, 0)], [1, 1], [1, 1], 1),
    ("stride2", (1, 3, 9, 10), (4, 3, 3, 3), [(1, 1), (1, 1)], [2, 2], [1, 1], 1),
    ("stride_ceil_via_padding", (1, 2, 8, 8), (2, 2, 3, 3), [(0, 1), (0, 1)], [2, 2], [1, 1], 1),
    ("dilation2", (1, 2, 10, 9), (3, 2, 3, 3), [(2, 2), (1, 3)], [1, 2], [2, 2], 1),
    ("groups2", (1, 4, 7, 7), (6, 2, 3, 3), [(1, 1), (1, 1)], [1, 1], [1, 1], 2),
    ("depthwise", (2, 4, 6, 6), (8, 1, 3, 3), [(1, 1), (1, 1)], [1, 1], [1, 1], 0),
    ("conv1d", (2, 3, 11), (4, 3, 4), [(2, 1)], [2], [1], 1),
    ("conv3d", (1, 2, 5, 6, 4), (3, 2, 2, 3, 2), [(1, 0), (1, 1), (0, 1)], [1, 2, 1], [1, 1, 2], 1),
    ("kernel5_lenet", (1, 6, 14, 14), (16, 6, 5, 5), [(0, 0), (0, 0)], [1, 1], [1, 1], 1),
]


def _conv_reference(x, w, b, padding, stride, dilation, groups):
    g = groups or x.shape[1]
    attrs = {"pads": nchw_pads(padding), "strides": stride, "dilations": dilation, "group": g}
    inputs = {"x": x, "w": w}
    if b is not None:
        inputs["b"] = b.reshape(-1)
    return ort("Conv", inputs, attrs)[0]


@pytest.mark.parametrize("case", CONV_CASES, ids=[c[0] for c in CONV_CASES])
def test_conv_matches_onnxruntime(case):
    _, xs, ws, padding, stride, dilation, groups = case
    x, w = rand(RNG, *xs), rand(RNG, *ws)
    b = rand(RNG, 1, ws[0])
    attrs = dict(border="constant", padding=padding, stride=stride, dilation=dilation, groups=groups)
    ours = one("conv", {"input": x, "filter": w, "bias": b}, **attrs)
    magnitude = one("conv", {"input": np.abs(x), "filter": np.abs(w), "bias": np.abs(b)}, **attrs)
    theirs = _conv_reference(x, w, b, padding, stride, dilation, groups)
    terms = int(np.prod(ws[1:])) + 1
    assert_bounded(ours, theirs, terms, magnitude)


def test_conv_ignore_equals_constant_and_literal_bias():
    x, w = rand(RNG, 1, 3, 6, 6), rand(RNG, 2, 3, 3, 3)
    common = dict(padding=[(1, 1), (1, 1)], stride=[1, 1], dilation=[1, 1], groups=1)
    a = one("conv", {"input": x, "filter": w, "bias": 0.0}, border="constant", **common)
    b = one("conv", {"input": x, "filter": w, "bias": 0.0}, border="ignore", **common)
    assert same_bits(a, b)
    assert not np.signbit(a[a == 0]).any()  # accumulators start at +0: no -0 results


@pytest.mark.parametrize("border,mode", [("replicate", "edge"), ("reflect", "reflect"), ("reflect-even", "symmetric")])
def test_conv_border_modes_read_input_elements(border, mode):
    x, w = rand(RNG, 1, 2, 6, 7), rand(RNG, 3, 2, 3, 3)
    padding = [(2, 1), (1, 2)]
    ours = one("conv", {"input": x, "filter": w, "bias": 0.0}, border=border, padding=padding,
               stride=[1, 1], dilation=[1, 1], groups=1)
    padded = np.pad(x, [(0, 0), (0, 0)] + padding, mode=mode)
    theirs = _conv_reference(padded, w, None, [(0, 0), (0, 0)], [1, 1], [1, 1], 1)
    magnitude = _conv_reference(np.abs(padded), np.abs(w), None, [(0, 0), (0, 0)], [1, 1], [1, 1], 1)
    assert_bounded(ours, theirs, 18, magnitude)


def test_conv_empty_lists_mean_nnef_defaults():
    """padding = [] is automatic ("same", extra at the end), stride/dilation [] are 1."""
    x, w = rand(RNG, 1, 2, 7, 8), rand(RNG, 3, 2, 4, 3)
    ours = one("conv", {"input": x, "filter": w, "bias": 0.0}, border="constant", padding=[],
               stride=[2, 2], dilation=[], groups=1)
    theirs = ort("Conv", {"x": x, "w": w}, {"auto_pad": "SAME_UPPER", "strides": [2, 2]})[0]
    assert ours.shape == (1, 3, 4, 4)
    magnitude = ort("Conv", {"x": np.abs(x), "w": np.abs(w)}, {"auto_pad": "SAME_UPPER", "strides": [2, 2]})[0]
    assert_bounded(ours, theirs, 24, magnitude)


def test_conv_padded_taps_are_skipped_even_for_infinite_weights():
    x = rand(RNG, 1, 1, 4, 4)
    w = np.zeros((1, 1, 3, 3), F32)
    w[0, 0, 0, 0] = np.inf  # this tap reads padding for the first output row/column only
    out = one("conv", {"input": x, "filter": w, "bias": 0.0}, border="constant",
              padding=[(1, 1), (1, 1)], stride=[1, 1], dilation=[1, 1], groups=1)
    assert not np.isnan(out[0, 0, 0, :]).any() and not np.isnan(out[0, 0, :, 0]).any()
    assert np.isinf(out[0, 0, 1:, 1:]).all() or np.isnan(out[0, 0, 1:, 1:]).any()


DECONV_CASES = [
    # name, input, filter, padding, stride, dilation, groups, output_shape (spatial) or None
    ("plain", (1, 3, 4, 5), (3, 2, 3, 3), [(0, 0), (0, 0)], [1, 1], [1, 1], 1, None),
    ("stride2_pad", (2, 2, 4, 4), (2, 3, 3, 3), [(1, 1), (1, 1)], [2, 2], [1, 1], 1, None),
    ("output_padding", (1, 2, 4, 4), (2, 3, 3, 3), [(1, 1), (1, 1)], [2, 2], [1, 1], 1, [8, 8]),
    ("asym_dilation", (1, 2, 5, 3), (2, 2, 2, 3), [(1, 0), (0, 2)], [1, 2], [2, 1], 1, None),
    ("groups", (1, 4, 3, 3), (4, 2, 3, 3), [(0, 0), (0, 0)], [2, 2], [1, 1], 2, None),
    ("depthwise", (1, 3, 4, 4), (3, 1, 2, 2), [(0, 0), (0, 0)], [2, 2], [1, 1], 0, None),
    ("deconv1d", (2, 3, 6), (3, 2, 4), [(1, 2)], [3], [1], 1, None),
]


@pytest.mark.parametrize("case", DECONV_CASES, ids=[c[0] for c in DECONV_CASES])
def test_deconv_matches_onnxruntime(case):
    _, xs, ws, padding, stride, dilation, groups, out_spatial = case
    x, w = rand(RNG, *xs), rand(RNG, *ws)
    g = groups or xs[1]
    b = rand(RNG, 1, ws[1] * g)
    output_shape = [xs[0], ws[1] * g] + out_spatial if out_spatial else []
    attrs = dict(border="constant", padding=padding, stride=stride, dilation=dilation, groups=groups,
                 output_shape=output_shape)
    ours = one("deconv", {"input": x, "filter": w, "bias": b}, **attrs)
    magnitude = one("deconv", {"input": np.abs(x), "filter": np.abs(w), "bias": np.abs(b)}, **attrs)
    onnx_attrs = {"pads": nchw_pads(padding), "strides": stride, "dilations": dilation, "group": g}
    if out_spatial:
        natural = [(n - 1) * s + (k - 1) * d + 1 - p - q
                   for n, k, s, d, (p, q) in zip(xs[2:], ws[2:], stride, dilation, padding)]
        onnx_attrs["output_padding"] = [o - n for o, n in zip(out_spatial, natural)]
    theirs = ort("ConvTranspose", {"x": x, "w": w, "b": b.reshape(-1)}, onnx_attrs)[0]
    assert_bounded(ours, theirs, int(np.prod(ws[2:])) * xs[1] // g + 1, magnitude)


def test_deconv_automatic_padding():
    x, w = rand(RNG, 1, 2, 3, 4), rand(RNG, 2, 3, 3, 3)
    attrs = dict(border="constant", padding=[], stride=[2, 2], dilation=[], groups=1, output_shape=[])
    ours = one("deconv", {"input": x, "filter": w, "bias": 0.0}, **attrs)
    assert ours.shape == (1, 3, 6, 8)
    theirs = ort("ConvTranspose", {"x": x, "w": w}, {"auto_pad": "SAME_UPPER", "strides": [2, 2]})[0]
    magnitude = one("deconv", {"input": np.abs(x), "filter": np.abs(w), "bias": 0.0}, **attrs)
    assert_bounded(ours, theirs, 18, magnitude)


def test_deconv_rejects_reading_borders():
    with pytest.raises(PipelineError) as info:
        one("deconv", {"input": rand(RNG, 1, 1, 3, 3), "filter": rand(RNG, 1, 1, 2, 2), "bias": 0.0},
            border="replicate", padding=[], stride=[], dilation=[], groups=1, output_shape=[])
    assert info.value.code == "SEM-E004"


POOL_CASES = [
    # name, input, size, padding (full rank), stride, dilation
    ("2x2", (1, 3, 8, 8), [1, 1, 2, 2], [(0, 0)] * 4, [1, 1, 2, 2], [1, 1, 1, 1]),
    ("3x3_pad", (2, 2, 7, 7), [1, 1, 3, 3], [(0, 0), (0, 0), (1, 1), (1, 1)], [1, 1, 2, 2], [1, 1, 1, 1]),
    ("asymmetric", (1, 2, 6, 7), [1, 1, 3, 2], [(0, 0), (0, 0), (0, 2), (1, 0)], [1, 1, 1, 2], [1, 1, 1, 1]),
    ("dilated", (1, 2, 9, 9), [1, 1, 2, 3], [(0, 0), (0, 0), (1, 1), (2, 2)], [1, 1, 2, 1], [1, 1, 2, 2]),
    ("pool1d", (2, 3, 10), [1, 1, 3], [(0, 0), (0, 0), (1, 2)], [1, 1, 2], [1, 1, 1]),
]


def _pool_attrs(size, padding, stride, dilation):
    spatial = slice(2, None)
    return {"kernel_shape": size[spatial], "pads": nchw_pads(padding[spatial]), "strides": stride[spatial],
            "dilations": dilation[spatial]}


@pytest.mark.parametrize("border,include", [("constant", 1), ("ignore", 0)])
@pytest.mark.parametrize("case", POOL_CASES, ids=[c[0] for c in POOL_CASES])
def test_avg_pool_matches_onnxruntime(case, border, include):
    _, xs, size, padding, stride, dilation = case
    x = rand(RNG, *xs)
    attrs = dict(size=size, border=border, padding=padding, stride=stride, dilation=dilation)
    ours = one("avg_pool", {"input": x}, **attrs)
    magnitude = one("avg_pool", {"input": np.abs(x)}, **attrs)
    onnx_attrs = _pool_attrs(size, padding, stride, dilation) | {"count_include_pad": include}
    theirs = ort("AveragePool", {"x": x}, onnx_attrs)[0]
    assert_bounded(ours, theirs, int(np.prod(size)), magnitude)


@pytest.mark.parametrize("include", [0, 1])
def test_avg_pool_ceil_mode_is_extra_end_padding(include):
    """ONNX ceil_mode = 1 equals NNEF padding extended at the end; with count_include_pad
    the extra (ceil) positions are still not counted by ONNX, so only 'ignore' matches
    there when the extra padding is all beyond the input: we compare 'ignore' with 0."""
    x = rand(RNG, 1, 2, 7, 7)
    ours = one("avg_pool", {"input": x}, size=[1, 1, 2, 2], border="ignore",
               padding=[(0, 0), (0, 0), (0, 1), (0, 1)], stride=[1, 1, 2, 2], dilation=[])
    theirs = ort("AveragePool", {"x": x}, {"kernel_shape": [2, 2], "strides": [2, 2], "ceil_mode": 1,
                                          "count_include_pad": include})[0]
    if include == 0:
        assert_bounded(ours, theirs, 4, one("avg_pool", {"input": np.abs(x)}, size=[1, 1, 2, 2], border="ignore",
                                            padding=[(0, 0), (0, 0), (0, 1), (0, 1)], stride=[1, 1, 2, 2], dilation=[]))
    assert ours.shape == theirs.shape == (1, 2, 4, 4)


@pytest.mark.parametrize("case", POOL_CASES, ids=[c[0] for c in POOL_CASES])
def test_max_pool_ignore_matches_onnxruntime_exactly(case):
    _, xs, size, padding, stride, dilation = case
    x = rand(RNG, *xs)
    ours = one("max_pool", {"input": x}, size=size, border="ignore", padding=padding, stride=stride, dilation=dilation)
    theirs = ort("MaxPool", {"x": x}, _pool_attrs(size, padding, stride, dilation))[0]
    assert same_bits(ours, theirs)


def test_max_pool_constant_border_pads_zero():
    x = rand(RNG, 1, 2, 5, 5) - F32(3.0)  # mostly negative: the zero padding wins at the border
    padding = [(0, 0), (0, 0), (1, 1), (1, 1)]
    ours = one("max_pool", {"input": x}, size=[1, 1, 3, 3], border="constant", padding=padding,
               stride=[1, 1, 1, 1], dilation=[1, 1, 1, 1])
    theirs = ort("MaxPool", {"x": np.pad(x, padding)}, {"kernel_shape": [3, 3]})[0]
    assert same_bits(ours, theirs)


def test_max_pool_ceil_mode_and_automatic_padding():
    x = rand(RNG, 1, 1, 7, 7)
    ours = one("max_pool", {"input": x}, size=[1, 1, 3, 3], border="ignore", padding=[],
               stride=[1, 1, 2, 2], dilation=[])
    theirs = ort("MaxPool", {"x": x}, {"kernel_shape": [3, 3], "strides": [2, 2], "auto_pad": "SAME_UPPER"})[0]
    assert same_bits(ours, theirs)
    ours = one("max_pool", {"input": x}, size=[1, 1, 2, 2], border="ignore",
               padding=[(0, 0), (0, 0), (0, 1), (0, 1)], stride=[1, 1, 2, 2], dilation=[])
    theirs = ort("MaxPool", {"x": x}, {"kernel_shape": [2, 2], "strides": [2, 2], "ceil_mode": 1})[0]
    assert same_bits(ours, theirs)


def test_max_pool_nan_and_signed_zero():
    x = np.array([[[[1.0, np.nan, 2.0, 0.5], [-0.0, 0.0, 0.0, -0.0]]]], F32)
    attrs = dict(size=[1, 1, 1, 2], border="ignore", padding=[(0, 0)] * 4, stride=[1, 1, 1, 2], dilation=[])
    out = one("max_pool", {"input": x}, **attrs)
    assert np.isnan(out[0, 0, 0, 0]) and out[0, 0, 0, 1] == 2.0
    assert np.signbit(out[0, 0, 1, 0]) and not np.signbit(out[0, 0, 1, 1])  # first of a +-0 tie
    index = one("argmax_pool", {"input": x}, **attrs)
    assert index.dtype == np.int64 and index.tolist() == [[[[1, 0], [0, 0]]]]
    value, index2 = run("max_pool_with_index", {"input": x}, **attrs)
    assert same_bits(value, out) and same_bits(index2, index)
    sampled = one("sample", {"input": x, "index": index}, **attrs)
    assert same_bits(sampled, out)


def test_argmax_pool_is_window_local_row_major():
    x = rand(RNG, 1, 2, 6, 6)
    attrs = dict(size=[1, 1, 3, 2], border="constant", padding=[(0, 0), (0, 0), (1, 1), (0, 1)],
                 stride=[1, 1, 2, 2], dilation=[])
    index = one("argmax_pool", {"input": x}, **attrs)
    value = one("max_pool", {"input": x}, **attrs)
    xp = np.pad(x, attrs["padding"])
    for pos in np.ndindex(*index.shape):
        n, c, i, j = pos
        window = xp[n, c, i * 2:i * 2 + 3, j * 2:j * 2 + 2].ravel()
        assert index[pos] == int(np.argmax(window)) and window[index[pos]] == value[pos]


def test_box_and_rms_pool_against_float64():
    x = rand(RNG, 1, 3, 6, 5)
    attrs = dict(size=[1, 1, 2, 3], border="constant", padding=[(0, 0), (0, 0), (1, 0), (1, 1)],
                 stride=[1, 1, 1, 2], dilation=[1, 1, 2, 1])
    xp = np.pad(x.astype(np.float64), attrs["padding"])
    expected = np.zeros((1, 3, 5, 3))
    for a in range(2):
        for b in range(3):
            expected += xp[:, :, 2 * a:2 * a + 5, b:b + 5:2]
    ours = one("box", {"input": x}, normalize=False, **attrs)
    magnitude = one("box", {"input": np.abs(x)}, normalize=False, **attrs)
    assert_bounded(ours, expected, 6, magnitude)
    rms = one("rms_pool", {"input": x}, **attrs)
    assert np.allclose(rms, np.sqrt(np.maximum(
        one("avg_pool", {"input": (x * x).astype(F32)}, **attrs), 0)), rtol=0, atol=0)


def test_box_normalize_ignore_counts_inside_taps():
    x = np.ones((1, 1, 3, 3), F32)
    out = one("box", {"input": x}, size=[1, 1, 3, 3], border="ignore", padding=[(0, 0), (0, 0), (1, 1), (1, 1)],
              stride=[], dilation=[], normalize=True)
    assert (out == 1.0).all()
    out = one("box", {"input": x}, size=[1, 1, 3, 3], border="constant", padding=[(0, 0), (0, 0), (1, 1), (1, 1)],
              stride=[], dilation=[], normalize=True)
    assert out[0, 0, 0, 0] == F32(4.0) / F32(9.0) and out[0, 0, 1, 1] == 1.0


def test_up_and_downsampling():
    x = rand(RNG, 1, 2, 4, 6)
    x[0, 0, 0, 0] = -0.0
    up = one("nearest_upsample", {"input": x}, factor=[2, 3])
    assert up.shape == (1, 2, 8, 18)
    expected = np.repeat(np.repeat(x, 2, axis=2), 3, axis=3)
    assert np.array_equal(up, expected) and not np.signbit(up[0, 0, 0, 0])  # +0 + (-0) = +0
    down = one("nearest_downsample", {"input": x}, factor=[2, 3])
    assert np.array_equal(down, x[:, :, ::2, ::3])
    area = one("area_downsample", {"input": x}, factor=[2, 2])
    theirs = ort("AveragePool", {"x": x}, {"kernel_shape": [2, 2], "strides": [2, 2]})[0]
    assert_bounded(area, theirs, 4, one("area_downsample", {"input": np.abs(x)}, factor=[2, 2]))


def test_window_errors_have_codes():
    with pytest.raises(PipelineError) as info:
        one("max_pool", {"input": rand(RNG, 1, 1, 4, 4)}, size=[1, 1, 2, 2], border="mirror",
            padding=[], stride=[], dilation=[])
    assert info.value.code == "SEM-E004"
    with pytest.raises(PipelineError) as info:
        one("conv", {"input": rand(RNG, 1, 3, 4, 4), "filter": rand(RNG, 2, 2, 3, 3), "bias": 0.0},
            border="constant", padding=[], stride=[], dilation=[], groups=1)
    assert info.value.code == "SEM-E005"


@pytest.mark.parametrize("case", [CONV_CASES[2], CONV_CASES[5], CONV_CASES[9]], ids=["asymmetric", "dilation2", "conv3d"])
def test_conv_matches_onnx_reference_evaluator(case):
    """A second, independent implementation (onnx.reference, NumPy in float32)."""
    _, xs, ws, padding, stride, dilation, groups = case
    x, w = rand(RNG, *xs), rand(RNG, *ws)
    attrs = dict(border="constant", padding=padding, stride=stride, dilation=dilation, groups=groups)
    ours = one("conv", {"input": x, "filter": w, "bias": 0.0}, **attrs)
    onnx_attrs = {"pads": nchw_pads(padding), "strides": stride, "dilations": dilation, "group": groups or xs[1]}
    theirs = reference("Conv", {"x": x, "w": w}, onnx_attrs)[0]
    magnitude = one("conv", {"input": np.abs(x), "filter": np.abs(w), "bias": 0.0}, **attrs)
    assert_bounded(ours, theirs.astype(F32), int(np.prod(ws[1:])), magnitude)


def test_pooling_matches_onnx_reference_evaluator():
    x = rand(RNG, 1, 2, 7, 6)
    attrs = dict(size=[1, 1, 3, 2], padding=[(0, 0), (0, 0), (1, 1), (0, 1)], stride=[1, 1, 2, 2], dilation=[1, 1, 1, 1])
    onnx_attrs = _pool_attrs(attrs["size"], attrs["padding"], attrs["stride"], attrs["dilation"])
    assert same_bits(one("max_pool", {"input": x}, border="ignore", **attrs), reference("MaxPool", {"x": x}, onnx_attrs)[0])
    ours = one("avg_pool", {"input": x}, border="ignore", **attrs)
    theirs = reference("AveragePool", {"x": x}, onnx_attrs | {"count_include_pad": 0})[0]
    assert_bounded(ours, theirs, 6, one("avg_pool", {"input": np.abs(x)}, border="ignore", **attrs))


def _scalar_multilinear(x: np.ndarray, factor: list[int], method: str) -> np.ndarray:
    """The documented order written as a scalar loop over Python float32 scalars, with the
    sample positions from exact fractions (independent of the kernel's table code)."""
    from fractions import Fraction

    def taps(n: int, f: int) -> list:
        out = []
        for y in range(n * f):
            pos = Fraction(2 * y + 1 - f, 2 * f) if method == "symmetric" else Fraction(y * (n - 1), max(n * f - 1, 1))
            lo = pos.numerator // pos.denominator
            frac = pos - lo
            w_hi, w_lo = F32(float(frac)), F32(float(1 - frac))  # correctly rounded rationals
            out.append(((min(max(lo, 0), n - 1), w_lo), (min(max(lo + 1, 0), n - 1), w_hi)))
        return out

    n0, n1 = x.shape[2:]
    t0, t1 = taps(n0, factor[0]), taps(n1, factor[1])
    out = np.zeros(x.shape[:2] + (len(t0), len(t1)), F32)
    for b in range(x.shape[0]):
        for c in range(x.shape[1]):
            for y0, pair0 in enumerate(t0):
                for y1, pair1 in enumerate(t1):
                    acc = F32(0.0)
                    for i0, w0 in pair0:
                        for i1, w1 in pair1:
                            acc = F32(acc + F32(F32(w0 * w1) * x[b, c, i0, i1]))
                    out[b, c, y0, y1] = acc
    return out


@pytest.mark.parametrize("method, mode", [("symmetric", "half_pixel"), ("symmetric", "pytorch_half_pixel"),
                                          ("aligned", "align_corners")])
@pytest.mark.parametrize("shape, factor", [((1, 2, 3, 5), [2, 2]), ((2, 1, 4, 3), [3, 1]), ((1, 1, 1, 2), [2, 5])])
def test_multilinear_upsample_order_and_onnx(method, mode, shape, factor):
    """Bit for bit the documented order; within the bound of two-term interpolation (weights
    rounded differently) of onnxruntime's and onnx.reference's Resize linear."""
    x = rand(RNG, *shape)
    ours = one("multilinear_upsample", {"input": x}, factor=factor, method=method, border="replicate")
    assert same_bits(ours, _scalar_multilinear(x, factor, method))
    scales = np.array([1, 1] + factor, np.float32)
    attrs = {"mode": "linear", "coordinate_transformation_mode": mode}
    magnitude = one("multilinear_upsample", {"input": np.abs(x)}, factor=factor, method=method, border="replicate")
    for theirs in (ort("Resize", {"x": x, "scales": scales}, attrs, input_names=["x", "", "scales"])[0],
                   reference("Resize", {"x": x, "scales": scales}, attrs, input_names=["x", "", "scales"])[0]):
        assert_bounded(ours, theirs, 8, magnitude)


def test_multilinear_upsample_refuses_what_it_does_not_define():
    x = rand(RNG, 1, 1, 3, 3)
    for attrs in ({"method": "asymmetric", "border": "replicate"}, {"method": "symmetric", "border": "constant"}):
        with pytest.raises(PipelineError) as info:
            one("multilinear_upsample", {"input": x}, factor=[2, 2], **attrs)
        assert info.value.code == "SEM-E004" and attrs["method"] in str(info.value)

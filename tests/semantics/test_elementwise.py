"""Element-wise operations and activations against onnxruntime, plus the NaN, signed-zero
and broadcasting rules the reference fixes."""

from __future__ import annotations


import numpy as np
import pytest


from tests.semantics.semantics_helpers import F32, assert_ulp, one, ort, rand, same_bits

from pipeline.diagnostics import PipelineError

RNG = np.random.default_rng(99)
BIG = rand(RNG, 2, 3, 4, 5)


def _with_specials(x: np.ndarray) -> np.ndarray:
    flat = x.ravel().copy()
    flat[:6] = [0.0, -0.0, np.inf, -np.inf, 1e-40, -1e-40]
    return flat.reshape(x.shape)


BINARY = [("add", "Add"), ("sub", "Sub"), ("mul", "Mul"), ("div", "Div")]


@pytest.mark.parametrize("nnef,onnx_op", BINARY)
def test_arithmetic_is_exact_ieee(nnef, onnx_op):
    x, y = _with_specials(rand(RNG, 3, 4, 5)), rand(RNG, 3, 4, 5)
    assert same_bits(one(nnef, {"x": x, "y": y}), ort(onnx_op, {"x": x, "y": y})[0])


def test_broadcasting_is_left_aligned():
    x = rand(RNG, 2, 3, 4, 5)
    b = rand(RNG, 1, 3)  # NNEF: [1, 3] lines up as [1, 3, 1, 1]
    ours = one("add", {"x": x, "y": b})
    assert same_bits(ours, ort("Add", {"x": x, "y": b.reshape(1, 3, 1, 1)})[0])
    assert same_bits(one("mul", {"x": b, "y": x}), (b.reshape(1, 3, 1, 1) * x).astype(F32))
    with pytest.raises(PipelineError) as info:
        one("add", {"x": rand(RNG, 2, 3), "y": rand(RNG, 3)})  # [3] is [3, 1] in NNEF
    assert info.value.code == "SEM-E005"


def test_literal_operands_are_float32_scalars():
    x = rand(RNG, 4)
    out = one("add", {"x": x, "y": 0.1})
    assert out.dtype == np.float32 and same_bits(out, x + F32(0.1))
    assert one("mul", {"x": 2.0, "y": 3.0}).shape == ()


def test_min_max_clamp_relu_nan_and_signed_zero():
    nan = np.nan
    x = np.array([nan, 1.0, nan, 0.0, -0.0, 2.0], F32)
    y = np.array([1.0, nan, nan, -0.0, 0.0, 2.0], F32)
    mx = one("max", {"x": x, "y": y})
    mn = one("min", {"x": x, "y": y})
    assert np.isnan(mx[:3]).all() and np.isnan(mn[:3]).all()  # NaN propagates from either side
    assert np.signbit(mx[3]) and not np.signbit(mx[4])  # ties give y
    assert np.signbit(mn[3]) and not np.signbit(mn[4])
    relu = one("relu", {"x": np.array([-0.0, nan, -1.0, 3.0, -np.inf], F32)})
    assert same_bits(relu, np.array([0.0, nan, 0.0, 3.0, 0.0], F32))
    clamp = one("clamp", {"x": np.array([-5.0, 0.5, 5.0, nan], F32), "a": 0.0, "b": 1.0})
    assert same_bits(clamp, np.array([0.0, 0.5, 1.0, nan], F32))


def test_min_max_clamp_match_onnxruntime():
    x, y = rand(RNG, 3, 4), rand(RNG, 3, 4)
    assert same_bits(one("max", {"x": x, "y": y}), ort("Max", {"x": x, "y": y})[0])
    assert same_bits(one("min", {"x": x, "y": y}), ort("Min", {"x": x, "y": y})[0])
    lo, hi = np.array(-0.5, F32), np.array(0.7, F32)
    assert same_bits(one("clamp", {"x": x, "a": lo, "b": hi}), ort("Clip", {"x": x, "lo": lo, "hi": hi})[0])
    assert same_bits(one("relu", {"x": BIG}), ort("Relu", {"x": BIG})[0])


FLOAT64 = {"exp": np.exp, "log": np.log, "tanh": np.tanh, "sigmoid": lambda v: 1 / (1 + np.exp(-v)),
           "softplus": lambda v: np.logaddexp(0, v)}


@pytest.mark.parametrize("nnef,onnx_op,attrs,ulps", [
    ("exp", "Exp", {}, 1), ("log", "Log", {}, 1), ("tanh", "Tanh", {}, 2), ("sigmoid", "Sigmoid", {}, 3),
    ("softplus", "Softplus", {}, 3), ("elu", "Elu", {"alpha": 0.7}, 3),
    ("sqrt", "Sqrt", {}, 0), ("rcp", "Reciprocal", {}, 0), ("abs", "Abs", {}, 0), ("neg", "Neg", {}, 0),
    ("floor", "Floor", {}, 0), ("ceil", "Ceil", {}, 0), ("round", "Round", {}, 0), ("sign", "Sign", {}, 0),
])
def test_unary_against_onnxruntime(nnef, onnx_op, attrs, ulps):
    """Exact operations: bit for bit. Transcendentals: ours within `ulps` of the float64
    truth, and close to onnxruntime, whose MLAS approximations are themselves only good
    to ~1e-7 absolute (its sigmoid is off by thousands of ULP for tiny results)."""
    x = (rand(RNG, 6, 50) * F32(4)).astype(F32)
    x[0, :4] = [0.5, 1.5, 2.5, -0.5]  # rounding ties (to even)
    if nnef in ("log", "sqrt"):
        x = np.abs(x) + F32(1e-3)
    ours = one(nnef, {"x": x}, **attrs)
    theirs = ort(onnx_op, {"x": x}, attrs)[0]
    if nnef in FLOAT64:
        truth = FLOAT64[nnef](x.astype(np.float64))
        assert_ulp(ours, truth.astype(F32), ulps)
        assert np.allclose(ours, theirs, rtol=2e-6, atol=5e-7)
    elif nnef == "elu":
        assert np.allclose(ours, theirs, rtol=1e-6, atol=2e-7)
    else:
        assert same_bits(ours, theirs)


def test_unary_helpers_exact():
    x = np.abs(rand(RNG, 100)) + F32(0.01)
    assert same_bits(one("sqr", {"x": x}), x * x)
    assert same_bits(one("rsqrt", {"x": x}), F32(1) / np.sqrt(x))
    assert same_bits(one("rsqr", {"x": x}), F32(1) / (x * x))
    log2 = one("log2", {"x": x})
    assert np.allclose(log2, np.log2(x.astype(np.float64)), rtol=3e-7, atol=2e-7)
    sign = one("sign", {"x": np.array([-0.0, 0.0, np.nan, -3.0, 2.0], F32)})
    assert same_bits(sign, np.array([-0.0, 0.0, np.nan, -1.0, 1.0], F32))


def test_prelu_leaky_relu_elu_select():
    x = _with_specials(rand(RNG, 2, 3, 4))
    alpha = rand(RNG, 1, 3)
    ours = one("prelu", {"x": x, "alpha": alpha})
    slope = alpha.reshape(3, 1)  # ONNX PRelu broadcasts the slope numpy-style: [3, 1] against [2, 3, 4]
    assert same_bits(ours, ort("PRelu", {"x": x, "s": slope})[0])
    assert same_bits(one("leaky_relu", {"x": x}, alpha=0.1), ort("LeakyRelu", {"x": x}, {"alpha": 0.1})[0])
    assert np.signbit(one("leaky_relu", {"x": np.array([-0.0], F32)}, alpha=0.1))[0]  # -0 is not < 0
    elu = one("elu", {"x": np.array([-0.0, np.nan, -np.inf, 1.0], F32)}, alpha=1.0)
    assert np.signbit(elu[0]) and np.isnan(elu[1]) and elu[2] == -1.0 and elu[3] == 1.0
    cond = rand(RNG, 2, 3, 4) > 0
    assert same_bits(one("select", {"condition": cond, "true_value": x, "false_value": 0.0}),
                     np.where(cond, x, F32(0)))


def test_comparisons_and_logic():
    x = np.array([1.0, np.nan, -0.0, 2.0], F32)
    y = np.array([1.0, 1.0, 0.0, np.nan], F32)
    for nnef, expected in (("lt", [0, 0, 0, 0]), ("gt", [0, 0, 0, 0]), ("le", [1, 0, 1, 0]),
                           ("ge", [1, 0, 1, 0]), ("eq", [1, 0, 1, 0]), ("ne", [0, 1, 0, 1])):
        out = one(nnef, {"x": x, "y": y})
        assert out.dtype == np.bool_ and out.tolist() == [bool(e) for e in expected], nnef
    a, b = rand(RNG, 5) > 0, rand(RNG, 5) > 0
    assert one("and", {"x": a, "y": b}).tolist() == (a & b).tolist()
    assert one("or", {"x": a, "y": True}).tolist() == [True] * 5
    assert one("not", {"x": a}).tolist() == (~a).tolist()


def test_pow_against_onnxruntime():
    x = np.abs(rand(RNG, 200)) + F32(0.5)
    y = rand(RNG, 200)
    assert_ulp(one("pow", {"x": x, "y": y}), ort("Pow", {"x": x, "y": y})[0], 4)


def test_gelu_silu_selu_softabs_follow_the_fragments():
    from pipeline.semantics import transcendental as T

    x = rand(RNG, 50)
    assert same_bits(one("silu", {"x": x}), x * T.sigmoid(x))
    assert same_bits(one("gelu", {"x": x}), x * T.sigmoid(F32(1.702) * x))
    assert same_bits(one("softabs", {"x": x}, epsilon=0.5), np.sqrt(x * x + F32(0.5)))
    selu = one("selu", {"x": x}, alpha=1.67326319, **{"lambda": 1.05070102})
    assert np.allclose(selu, ort("Selu", {"x": x}, {"alpha": 1.67326319, "gamma": 1.05070102})[0], rtol=3e-6, atol=2e-7)


def test_copy_and_type_errors():
    x = rand(RNG, 3)
    assert one("copy", {"x": x}) is x
    with pytest.raises(PipelineError) as info:
        one("add", {"x": x.astype(np.float64), "y": x})
    assert info.value.code == "SEM-E005"

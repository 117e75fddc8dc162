"""A forward error bound of float32 evaluation of an ONNX model, computed from the network.

For every tensor t of the graph, on one input vector, a float64 pass carries the value v(t)
(the network's semantics in double) and a bound e(t) such that any float32 evaluation that
satisfies the assumptions below computes each element within e of v:

* IEEE binary32, round to nearest even, unit roundoff u = 2^-24; no flush of subnormals
  (a tiny absolute term covers gradual underflow); FMA allowed (it rounds less).
* A dot product or sum of n terms (products, bias) is computed in *any* order and any
  blocking: |fl(sum) - sum| <= gamma_n * sum |terms| with gamma_n = n u / (1 - n u)
  (Higham, Accuracy and Stability of Numerical Algorithms, 2nd ed., (3.4)-(3.5)). So the same
  bound holds for our documented order and for onnxruntime's.
* `slack` extra roundings per accumulated term cover graph rewrites an engine may apply
  (onnxruntime folds BatchNormalization into the preceding Conv's weights: up to 3 roundings
  per folded weight, one for the folded bias).
* Transcendental functions within `ulps` units in the last place of the exact result, plus an
  absolute error `absolute` (onnxruntime's MLAS approximations are not ulp-accurate near 0).
* Errors in an operation's inputs propagate through its exact Lipschitz behaviour on the
  interval [v - e, v + e] (relu, max pool: 1; sigmoid: 1/4; exp: exp(v + e); softmax:
  relative exp(2 max e) - 1; products: (|a| + e_a)(|b| + e_b) - |a||b|).

The float64 value v has its own error (~1e-16 relative), far below the float32 terms.
Operators without a rule raise BoundUnavailable naming them: the bound is then not computed,
never guessed. docs/compare.md ("The computed bound") derives each rule.

An Arithmetic may add a *storage* format (`Storage`, FP16 for NVDLA items): the graph inputs and
the float constants are rounded to it (their rounding error is known exactly), every tensor an
operation writes is rounded to it (relative `storage.u` plus `storage.tiny` per rounding), a
value whose bound reaches `storage.max` makes the bound unavailable (BOUND-E003), and
BatchNormalization is the folded scale and bias stored in that format. The sums stay float32
(the same rules, the same gamma_n). docs/compare.md ("The FP16 bound") derives it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Mapping

import numpy as np
import onnx
from onnx import numpy_helper

U = 2.0 ** -24
TINY = 2.0 ** -149  # the smallest subnormal: gradual underflow's absolute error per rounding


@dataclass(frozen=True)
class Storage:
    """The format every tensor written to memory is rounded to (round to nearest even)."""

    name: str
    u: float  # unit roundoff: relative error of one rounding in the normal range
    tiny: float  # absolute error of one rounding in the subnormal range (half the smallest subnormal)
    max: float  # the largest finite value: a bound reaching it makes the bound unavailable

    def round(self, value: np.ndarray) -> np.ndarray:
        """The stored value of an exactly known float64 value (constants and inputs)."""
        return np.asarray(value, np.float64).astype(np.float16).astype(np.float64)

    def to_json(self) -> dict[str, object]:
        return {"format": self.name, "unit_roundoff": self.u, "subnormal_absolute": self.tiny, "max": self.max}


FP16 = Storage("IEEE binary16", 2.0 ** -11, 2.0 ** -25, 65504.0)


@dataclass(frozen=True)
class Arithmetic:
    """How one float32 implementation computes: what the bound may assume of it."""

    name: str
    slack: int = 0
    ulps: Mapping[str, float] = field(default_factory=dict)
    absolute: float = 0.0
    lam: float | None = None
    storage: Storage | None = None

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {"name": self.name, "slack_roundings": self.slack,
                                  "transcendental_ulps": dict(sorted(self.ulps.items())),
                                  "transcendental_absolute": self.absolute}
        if self.storage is not None:
            out["storage"] = self.storage.to_json()
        return out


# Our reference: the documented order (no rewrite), the transcendental programs' measured maxima
# rounded up (docs/semantics/transcendental.md).
REFERENCE = Arithmetic("reference semantics (float32)", 0,
                       {"exp": 1.0, "tanh": 1.1, "sigmoid": 2.5, "log": 1.0, "pow": 32.0, "erf": 1.5})
# onnxruntime (CPU provider, ORT_ENABLE_ALL): Conv+BatchNormalization folding (4 extra roundings),
# MLAS polynomial exp/tanh/logistic: an assumption, checked on every model by the
# onnxruntime-against-yardstick check.
ONNXRUNTIME = Arithmetic("onnxruntime (CPUExecutionProvider, float32)", 4,
                         {"exp": 4.0, "tanh": 4.0, "sigmoid": 4.0, "log": 4.0, "pow": 4.0, "erf": 4.0}, 2.0 ** -24)


# NVDLA items, mode `ideal` and (an assumption to be checked on hardware) CACC accumulating at least as
# precisely as float32: FP16 inputs, weights and stored tensors, float32 sums and SDP/PDP arithmetic,
# the EMU softmax in float32 (NumPy's float32 exp: 4 ulps assumed, negligible against FP16).
NVDLA_FP16 = Arithmetic("NVDLA FP16 (FP16 storage, float32 accumulation)", 0, {"exp": 4.0}, storage=FP16)

NO_RULE, DATA_DEPENDENT, STORAGE_OVERFLOW, NO_STORAGE_RULE = "BOUND-E001", "BOUND-E002", "BOUND-E003", "BOUND-E004"
NOT_FINITE = "BOUND-E005"


class BoundUnavailable(Exception):
    """The model uses an operator (or attribute, or reaches a value) the bound has no rule for.

    `code`: BOUND-E001 no rule for an operator or attribute, BOUND-E002 a data-dependent refusal,
    BOUND-E003 a value whose bound reaches the storage format's largest value, BOUND-E004 an
    operator the storage arithmetic has no rule for, BOUND-E005 a tensor whose bound is not finite
    (the pass stops there: a bound that says nothing costs no further work; docs/compare.md, "Errors")."""

    def __init__(self, message: str, code: str = NO_RULE) -> None:
        super().__init__(message)
        self.code = code


def gamma_probabilistic(n: int, lam: float) -> float:
    """Higham and Mary's gamma~_n(lam) = exp(lam sqrt(n) u + n u^2 / (1 - u)) - 1 (SIAM J. Sci. Comput. 41(5), 2019)."""
    return math.expm1(lam * math.sqrt(n) * U + n * U * U / (1.0 - U))


def gamma(n: int | float) -> float:
    nu = n * U
    if nu >= 1.0:
        return math.inf
    return nu / (1.0 - nu)


@dataclass
class Bounded:
    """A tensor's float64 value and the bound on any float32 evaluation's distance to it."""

    v: np.ndarray
    e: np.ndarray

    @property
    def hi(self) -> np.ndarray:
        """A bound on the magnitude of the float32 value."""
        return np.abs(self.v) + self.e


def _attrs(node: onnx.NodeProto) -> dict[str, object]:
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def _rounding(a: Arithmetic, y: np.ndarray, fn: str) -> np.ndarray:
    """The error of one transcendental evaluation with exact argument: ulps of |y| plus absolute."""
    if fn not in a.ulps:
        raise BoundUnavailable(f"no accuracy stated for {fn} in {a.name}")
    return a.ulps[fn] * 2.0 * U * np.abs(y) + a.absolute + TINY


# --- linear operators ------------------------------------------------------------------------------


def _conv64(x: np.ndarray, w: np.ndarray, pads: list[int], strides: list[int], dilations: list[int],
            group: int) -> np.ndarray:
    """Cross-correlation (ONNX Conv without bias) in float64, any number of spatial axes.

    Per kernel tap, every group at once: a depthwise tap is one broadcast product, any other a
    batched matrix product [G, Og, Cg] @ [N, G, Cg, positions] (no Python loop over groups:
    efficientnet_b0's depthwise convolutions have up to 1,152 of them)."""
    spatial = x.ndim - 2
    half = len(pads) // 2
    x = np.pad(x, [(0, 0), (0, 0)] + [(pads[i], pads[i + half]) for i in range(spatial)])
    n, c = x.shape[:2]
    o, cg = w.shape[:2]
    kernel = w.shape[2:]
    out_shape = [(x.shape[2 + i] - dilations[i] * (kernel[i] - 1) - 1) // strides[i] + 1 for i in range(spatial)]
    og = o // group
    positions = int(np.prod(out_shape))
    xg = x.reshape(n, group, cg, *x.shape[2:])
    wg = w.reshape(group, og, cg, *kernel)
    out = np.zeros([n, group, og, positions])
    for k in np.ndindex(*kernel):
        sl = tuple(slice(k[i] * dilations[i], k[i] * dilations[i] + strides[i] * (out_shape[i] - 1) + 1, strides[i])
                   for i in range(spatial))
        patch = xg[(slice(None), slice(None), slice(None), *sl)].reshape(n, group, cg, positions)
        tap = wg[(slice(None), slice(None), slice(None), *k)]
        if cg == 1 and og == 1:
            out += patch * tap.reshape(1, group, 1, 1)
        else:
            out += np.matmul(tap[None], patch)
    return out.reshape(n, o, *out_shape)


def _bilinear(a: Arithmetic, f: Callable[[np.ndarray, np.ndarray], np.ndarray], x: Bounded, w: Bounded,
              n: int, bias: Bounded | None) -> Bounded:
    """y = f(x, w) (+ bias), f bilinear with n products per output element (any order).

    Worst case: |f(x^, w^) - f(x, w)| <= f(|x| + e_x, |w| + e_w) - f(|x|, |w|), rounding gamma_(n+1) f(|x^|, |w^|).
    Probabilistic (a.lam): the input errors as independent, mean-zero, bounded: Hoeffding gives
    lam * sqrt(f(e_x^2, (|w| + e_w)^2) + f(x^2, e_w^2)); rounding Higham-Mary's gamma~_(n+1)(lam).
    """
    v = f(x.v, w.v)
    mag = f(x.hi, w.hi)
    terms = n + (bias is not None)
    if a.lam is None:
        propagated = np.maximum(mag - f(np.abs(x.v), np.abs(w.v)), 0.0)
        rounding = gamma(terms + a.slack)
    else:
        propagated = a.lam * np.sqrt(f(x.e ** 2, w.hi ** 2) + f(x.v ** 2, w.e ** 2))
        rounding = gamma_probabilistic(terms + a.slack, a.lam)
    if bias is not None:
        v = v + bias.v
        mag = mag + bias.hi
        propagated = propagated + bias.e
    return Bounded(v, propagated + rounding * mag + TINY * terms)


def _conv(a: Arithmetic, node: onnx.NodeProto, ins: list[Bounded]) -> list[Bounded]:
    at = _attrs(node)
    if at.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET"):
        raise BoundUnavailable("Conv with auto_pad")
    x, w = ins[0], ins[1]
    spatial = x.v.ndim - 2
    pads = list(at.get("pads", [0] * 2 * spatial))
    strides = list(at.get("strides", [1] * spatial))
    dilations = list(at.get("dilations", [1] * spatial))
    group = int(at.get("group", 1))
    n = int(np.prod(w.v.shape[1:]))
    bias = ins[2] if len(ins) > 2 else None
    if bias is not None:
        shape = [1, -1] + [1] * spatial
        bias = Bounded(bias.v.reshape(shape), bias.e.reshape(shape))
    return [_bilinear(a, lambda p, q: _conv64(p, q, pads, strides, dilations, group), x, w, n, bias)]


def _conv_transpose64(x: np.ndarray, w: np.ndarray, pads: list[int], strides: list[int], dilations: list[int],
                      group: int, output_padding: list[int]) -> np.ndarray:
    """ONNX ConvTranspose without bias in float64: each input element scattered through the kernel,
    the full extent (n - 1) s + (k - 1) d + 1 + output_padding cropped by the pads."""
    spatial = x.ndim - 2
    n, c = x.shape[:2]
    og = w.shape[1]
    cg = c // group
    kernel = w.shape[2:]
    full = [(x.shape[2 + i] - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1 + output_padding[i]
            for i in range(spatial)]
    out = np.zeros([n, group * og, *full])
    for g in range(group):
        xg = x[:, g * cg:(g + 1) * cg]
        wg = w[g * cg:(g + 1) * cg]
        for k in np.ndindex(*kernel):
            sl = tuple(slice(k[i] * dilations[i], k[i] * dilations[i] + strides[i] * (x.shape[2 + i] - 1) + 1, strides[i])
                       for i in range(spatial))
            out[(slice(None), slice(g * og, (g + 1) * og), *sl)] += np.einsum(
                "nc...,co->no...", xg, wg[(slice(None), slice(None), *k)])
    crop = tuple(slice(pads[i], full[i] - pads[i + spatial]) for i in range(spatial))
    return out[(slice(None), slice(None), *crop)]


def _conv_transpose(a: Arithmetic, node: onnx.NodeProto, ins: list[Bounded]) -> list[Bounded]:
    """At most C/group * prod(kernel) products per output (fewer where the stride skips taps: gamma
    grows with n, so the largest count bounds every output) + the bias."""
    at = _attrs(node)
    if at.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET") or "output_shape" in at:
        raise BoundUnavailable("ConvTranspose with auto_pad or output_shape")
    x, w = ins[0], ins[1]
    spatial = x.v.ndim - 2
    pads = list(at.get("pads", [0] * 2 * spatial))
    strides = list(at.get("strides", [1] * spatial))
    dilations = list(at.get("dilations", [1] * spatial))
    output_padding = list(at.get("output_padding", [0] * spatial))
    group = int(at.get("group", 1))
    n = int(np.prod(w.v.shape[2:])) * (x.v.shape[1] // group)
    bias = ins[2] if len(ins) > 2 and ins[2].v.size else None
    if bias is not None:
        shape = [1, -1] + [1] * spatial
        bias = Bounded(bias.v.reshape(shape), bias.e.reshape(shape))
    return [_bilinear(a, lambda p, q: _conv_transpose64(p, q, pads, strides, dilations, group, output_padding),
                      x, w, n, bias)]


def _gemm(a: Arithmetic, node: onnx.NodeProto, ins: list[Bounded]) -> list[Bounded]:
    at = _attrs(node)
    alpha, beta = float(at.get("alpha", 1.0)), float(at.get("beta", 1.0))
    x, w = ins[0], ins[1]
    if at.get("transA", 0):
        x = Bounded(x.v.T, x.e.T)
    if at.get("transB", 0):
        w = Bounded(w.v.T, w.e.T)
    if alpha != 1.0:  # alpha * (A B) as (alpha A) B: one more rounding per product
        x = Bounded(alpha * x.v, abs(alpha) * x.e)
    extra = (alpha != 1.0) + (beta != 1.0)
    scaled = Arithmetic(a.name, a.slack + extra, a.ulps, a.absolute, a.lam)
    bias = None
    if len(ins) > 2 and ins[2].v.size:
        bias = Bounded(beta * ins[2].v, abs(beta) * ins[2].e)
    return [_bilinear(scaled, np.matmul, x, w, x.v.shape[-1], bias)]


def _matmul(a: Arithmetic, node: onnx.NodeProto, ins: list[Bounded]) -> list[Bounded]:
    return [_bilinear(a, np.matmul, ins[0], ins[1], ins[0].v.shape[-1], None)]


# --- element-wise ---------------------------------------------------------------------------------


def _masked(x: Bounded) -> np.ndarray:
    """The elements that are exactly -inf: an attention mask's (pipeline/nnef/masks.py), in every evaluation."""
    return (x.v == -np.inf) & (x.e == 0)


def _add(a: Arithmetic, node: onnx.NodeProto, ins: list[Bounded], sign: float = 1.0) -> list[Bounded]:
    """x + y: the errors add, one rounding. Where one operand is a mask's -inf and the other finite the sum is
    exactly -inf in every IEEE evaluation: error 0 there (issue 38)."""
    x, y = ins
    e = x.e + y.e
    v = x.v + sign * y.v
    bound = e + U * (x.hi + y.hi) + TINY
    if sign > 0 and (np.any(x.v == -np.inf) or np.any(y.v == -np.inf)):
        masked = (_masked(x) & np.isfinite(y.v)) | (_masked(y) & np.isfinite(x.v))
        bound = np.where(masked, 0.0, bound)
    return [Bounded(v, bound)]


def _sub(a: Arithmetic, node: onnx.NodeProto, ins: list[Bounded]) -> list[Bounded]:
    return _add(a, node, ins, -1.0)


def _mul(a: Arithmetic, node: onnx.NodeProto, ins: list[Bounded]) -> list[Bounded]:
    x, y = ins
    mag = x.hi * y.hi
    return [Bounded(x.v * y.v, mag - np.abs(x.v * y.v) + U * mag + TINY)]


def _div(a: Arithmetic, node: onnx.NodeProto, ins: list[Bounded]) -> list[Bounded]:
    x, y = ins
    low = np.abs(y.v) - y.e
    with np.errstate(divide="ignore", invalid="ignore"):
        propagated = np.where(low > 0, (np.abs(x.v) * y.e + np.abs(y.v) * x.e) / (np.abs(y.v) * low), np.inf)
        rounding = np.where(low > 0, U * x.hi / low, np.inf)
    return [Bounded(x.v / y.v, propagated + rounding + TINY)]


def _relu(a: Arithmetic, node: onnx.NodeProto, ins: list[Bounded]) -> list[Bounded]:
    return [Bounded(np.maximum(ins[0].v, 0.0), ins[0].e)]


def _leaky(a: Arithmetic, node: onnx.NodeProto, ins: list[Bounded]) -> list[Bounded]:
    alpha = float(_attrs(node).get("alpha", 0.01))
    x = ins[0]
    y = np.where(x.v >= 0, x.v, alpha * x.v)
    return [Bounded(y, max(1.0, abs(alpha)) * x.e + U * np.abs(alpha) * x.hi + TINY)]


def _clip(a: Arithmetic, node: onnx.NodeProto, ins: list[Bounded]) -> list[Bounded]:
    at = _attrs(node)
    low = ins[1].v if len(ins) > 1 and ins[1].v.size else at.get("min", -np.inf)
    high = ins[2].v if len(ins) > 2 and ins[2].v.size else at.get("max", np.inf)
    return [Bounded(np.clip(ins[0].v, low, high), ins[0].e)]


def _sigmoid(a: Arithmetic, node: onnx.NodeProto, ins: list[Bounded]) -> list[Bounded]:
    x = ins[0]
    y = 1.0 / (1.0 + np.exp(-x.v))
    hi = 1.0 / (1.0 + np.exp(-(x.v + x.e)))
    return [Bounded(y, np.minimum(x.e / 4.0 + _rounding(a, hi, "sigmoid"), 1.0))]  # both in [0, 1]


def _tanh(a: Arithmetic, node: onnx.NodeProto, ins: list[Bounded]) -> list[Bounded]:
    x = ins[0]
    return [Bounded(np.tanh(x.v), np.minimum(x.e, 2.0) + _rounding(a, np.tanh(np.abs(x.v) + x.e), "tanh"))]


def _exp(a: Arithmetic, node: onnx.NodeProto, ins: list[Bounded]) -> list[Bounded]:
    x = ins[0]
    hi = np.exp(x.v + x.e)
    return [Bounded(np.exp(x.v), hi - np.exp(x.v) + _rounding(a, hi, "exp"))]


def _softmax_operands(node: onnx.NodeProto, x: Bounded, opset: int) -> tuple[np.ndarray, np.ndarray, int, tuple[int, ...]]:
    """Values, errors and axis of (log-)softmax's input, and its shape; before opset 13 ONNX coerces the
    input to 2-D at `axis` and normalizes over the second dimension."""
    axis = int(_attrs(node).get("axis", -1 if opset >= 13 else 1))
    v, e = x.v, x.e
    shape = v.shape
    if opset < 13:
        axis = axis % v.ndim
        v = v.reshape(int(np.prod(shape[:axis])), -1)
        e = e.reshape(v.shape)
        axis = 1
    return v, e, axis, shape


def _softmax(a: Arithmetic, node: onnx.NodeProto, ins: list[Bounded], opset: int) -> list[Bounded]:
    """Masked elements (an attention mask's exact -inf) give exp(-inf - max) = +0 exactly in every
    evaluation: they add nothing to the sum and their output is exactly 0 (bound 0); a row masked
    everywhere is 0 / 0 (the export refuses it, EXPORT-E019)."""
    v, e, axis, shape = _softmax_operands(node, ins[0], opset)
    masked = (v == -np.inf) & (e == 0)
    if np.any(masked.all(axis=axis)):
        raise BoundUnavailable(f"Softmax of a fully masked row (node '{node.name or node.output[0]}')", DATA_DEPENDENT)
    t = v - v.max(axis=axis, keepdims=True)
    s = np.exp(t) / np.exp(t).sum(axis=axis, keepdims=True)
    n = v.shape[axis]
    big = e.max(axis=axis, keepdims=True)
    with np.errstate(over="ignore"):  # a large input error: inf here, the bound capped at 1 below
        propagated = s * np.expm1(2.0 * big)
    # x - max rounds relatively by u; exp amplifies that by |t|; exp's own error; the sum; the division.
    exp_rel = np.where(masked, 0.0, np.expm1(U * (np.abs(np.where(masked, 0.0, t)) + 2.0 * big)) +
                       _rounding(a, 1.0, "exp"))
    worst = exp_rel.max(axis=axis, keepdims=True)
    rel = (1.0 + exp_rel) * (1.0 + U) / ((1.0 - worst) * (1.0 - gamma(n))) - 1.0
    bound = np.where(masked, 0.0, np.minimum(propagated + (s + propagated) * rel + TINY, 1.0))  # both in [0, 1]
    return [Bounded(s.reshape(shape), bound.reshape(shape))]


def _log_softmax(a: Arithmetic, node: onnx.NodeProto, ins: list[Bounded], opset: int) -> list[Bounded]:
    """y = t - log(sum exp(t)), t = x - max (ONNX's formula, and the export's).

    Propagation: dy_i/dx_j = [i = j] - softmax_j, so |dy_i| <= e_i + max e. Rounding: t (u |t|),
    exp of a rounded argument (expm1(u |t|)) and exp's accuracy; the sum of n terms in [0, 1]
    (gamma_n; the sum is >= 1, so exp's absolute error is relative too): s^ = s (1 + rho), so
    log errs by -log(1 - rho), plus log's accuracy; the final subtraction, u (|t| + |log s|)."""
    v, e, axis, shape = _softmax_operands(node, ins[0], opset)
    n = v.shape[axis]
    t = v - v.max(axis=axis, keepdims=True)
    s = np.exp(t).sum(axis=axis, keepdims=True)
    log_s = np.log(s)
    y = t - log_s
    big = e.max(axis=axis, keepdims=True)
    t_hi = np.abs(t) + 2.0 * big  # the computed t: |x^ - max^| <= |t| + 2 max e
    exp_rel = np.expm1(U * t_hi) + _rounding(a, 1.0, "exp") + n * a.absolute
    rho = (1.0 + exp_rel.max(axis=axis, keepdims=True)) * (1.0 + gamma(n)) - 1.0
    if np.any(rho >= 1.0):
        raise BoundUnavailable("LogSoftmax: the rounding of the sum is not bounded below 1", DATA_DEPENDENT)
    log_error = -np.log1p(-rho) + _rounding(a, np.abs(log_s) - np.log1p(-rho), "log")
    l_hi = np.abs(log_s) - np.log1p(-rho) + log_error
    bound = e + big + U * t_hi + log_error + U * (t_hi + l_hi) + TINY
    return [Bounded(y.reshape(shape), bound.reshape(shape))]


# --- pooling and normalization -------------------------------------------------------------------


def _window(x: np.ndarray, kernel: list[int], pads: list[int], strides: list[int], fill: float,
            dilations: list[int] | None = None) -> np.ndarray:
    """[N, C, *out, *kernel] view of the padded input's windows."""
    spatial = len(kernel)
    dilations = dilations or [1] * spatial
    half = len(pads) // 2
    padded = np.pad(x, [(0, 0), (0, 0)] + [(pads[i], pads[i + half]) for i in range(spatial)], constant_values=fill)
    span = [dilations[i] * (kernel[i] - 1) + 1 for i in range(spatial)]
    windows = np.lib.stride_tricks.sliding_window_view(padded, span, axis=tuple(range(2, 2 + spatial)))
    windows = windows[(Ellipsis, *[slice(None, None, d) for d in dilations])]
    return windows[(slice(None), slice(None), *[slice(None, None, s) for s in strides])]


def _pool_attrs(node: onnx.NodeProto, shape: tuple[int, ...]) -> tuple[list[int], list[int], list[int], dict[str, object]]:
    """kernel, pads, strides and attributes of a pool; ceil_mode as end padding: the output extent
    ceil((n + p + q - span) / s) + 1, less one where that last window would start in the end padding
    (ONNX), the taps past the input's end padded like the others (MaxPool: never the maximum;
    AveragePool without count_include_pad: not counted)."""
    at = _attrs(node)
    spatial = len(shape) - 2
    if at.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET"):
        raise BoundUnavailable(f"{node.op_type} with auto_pad")
    kernel = list(at["kernel_shape"])
    pads = list(at.get("pads", [0] * 2 * spatial))
    strides = list(at.get("strides", [1] * spatial))
    if at.get("ceil_mode", 0):
        if node.op_type == "AveragePool" and at.get("count_include_pad", 0):
            raise BoundUnavailable("AveragePool with ceil_mode and count_include_pad")
        dilations = list(at.get("dilations", [1] * spatial))
        for i in range(spatial):
            extent = shape[2 + i] + pads[i] + pads[i + spatial]
            span = (kernel[i] - 1) * dilations[i] + 1
            out = -(-(extent - span) // strides[i]) + 1
            if (out - 1) * strides[i] >= shape[2 + i] + pads[i]:
                out -= 1
            pads[i + spatial] += max(0, (out - 1) * strides[i] + span - extent)
    return kernel, pads, strides, at


def _maxpool(a: Arithmetic, node: onnx.NodeProto, ins: list[Bounded]) -> list[Bounded]:
    x = ins[0]
    kernel, pads, strides, at = _pool_attrs(node, x.v.shape)
    dil = list(at.get("dilations", [1] * len(kernel)))
    axes = tuple(range(-len(kernel), 0))
    v = _window(x.v, kernel, pads, strides, -np.inf, dil).max(axis=axes)
    e = _window(x.e, kernel, pads, strides, 0.0, dil).max(axis=axes)
    return [Bounded(v, e)]


def _average(x: Bounded, axes: tuple[int, ...], count: np.ndarray | int, a: Arithmetic, terms: int) -> Bounded:
    """Sum of `terms` terms then one division by `count` (or a multiplication by its rounded reciprocal)."""
    s = x.v.sum(axis=axes)
    mag = x.hi.sum(axis=axes)
    e = (x.e.sum(axis=axes) + gamma(terms + 2 + a.slack) * mag) / count + TINY * terms
    return Bounded(s / count, e)


def _avgpool(a: Arithmetic, node: onnx.NodeProto, ins: list[Bounded]) -> list[Bounded]:
    x = ins[0]
    kernel, pads, strides, at = _pool_attrs(node, x.v.shape)
    axes = tuple(range(-len(kernel), 0))
    windows = Bounded(_window(x.v, kernel, pads, strides, 0.0), _window(x.e, kernel, pads, strides, 0.0))
    if at.get("count_include_pad", 0):
        count: np.ndarray | int = int(np.prod(kernel))
    else:
        ones = _window(np.ones_like(x.v), kernel, pads, strides, 0.0)
        count = ones.sum(axis=axes)
    return [_average(windows, axes, count, a, int(np.prod(kernel)))]


def _global_avgpool(a: Arithmetic, node: onnx.NodeProto, ins: list[Bounded]) -> list[Bounded]:
    x = ins[0]
    axes = tuple(range(2, x.v.ndim))
    count = int(np.prod(x.v.shape[2:]))
    out = _average(x, axes, count, a, count)
    shape = x.v.shape[:2] + (1,) * (x.v.ndim - 2)
    return [Bounded(out.v.reshape(shape), out.e.reshape(shape))]


def _lrn(a: Arithmetic, node: onnx.NodeProto, ins: list[Bounded]) -> list[Bounded]:
    """y = x / t^beta, t = bias + alpha / size * S, S the sum of x^2 over `size` channels (ONNX; the
    reference sums, divides by size, multiplies by alpha; onnxruntime multiplies by t^-beta).

    S: propagated sum((|x| + e)^2 - x^2), rounding gamma_(size + 1) on sum (|x| + e)^2; t: + 3
    roundings (divide or scale, multiply, add) on |bias| + c S_hi; t^beta monotone on [t - e_t, t + e_t]
    (t - e_t must stay > 0), plus pow's accuracy (one ulp more: x * pow(t, -beta) instead of x / pow);
    the division rule of Div for x / p."""
    at = _attrs(node)
    size = int(at["size"])
    alpha, beta, bias = (float(np.float32(at.get(k, d))) for k, d in (("alpha", 1e-4), ("beta", 0.75), ("bias", 1.0)))
    x = ins[0]
    lo, hi = (size - 1) // 2, size - 1 - (size - 1) // 2
    pad = [(0, 0), (lo, hi)] + [(0, 0)] * (x.v.ndim - 2)

    def window_sum(values: np.ndarray) -> np.ndarray:
        padded = np.pad(values, pad)
        return sum(padded[:, k:k + values.shape[1]] for k in range(size))

    square = x.v ** 2
    s_v, s_hi = window_sum(square), window_sum(x.hi ** 2)
    c = alpha / size
    t = bias + c * s_v
    t_mag = abs(bias) + c * s_hi
    e_t = c * (s_hi - s_v) + gamma(size + 4 + a.slack) * t_mag + TINY * (size + 3)
    t_lo = t - e_t
    if np.any(t_lo <= 0):
        raise BoundUnavailable("LRN: bias + alpha / size * sum of squares is not bounded away from 0", DATA_DEPENDENT)
    p = t ** beta
    p_prop = np.maximum(np.abs((t + e_t) ** beta - p), np.abs(p - t_lo ** beta))
    p_hi = p + p_prop
    ulps = a.ulps.get("pow")
    if ulps is None:
        raise BoundUnavailable(f"no accuracy stated for pow in {a.name}")
    e_p = p_prop + (ulps + 1.0) * 2.0 * U * p_hi + a.absolute + TINY
    return _div(a, node, [x, Bounded(p, e_p)])


def _resize_taps(n: int, f: int, transform: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(lo, hi, w_lo, w_hi) per output position: x_original exact (half_pixel: (y + 0.5) / f - 0.5,
    align_corners: y (n - 1) / (f n - 1)), clamped to [0, n - 1], linear weights in float64."""
    y = np.arange(n * f, dtype=np.float64)
    if transform == "align_corners":
        pos = y * (n - 1) / max(n * f - 1, 1)
    else:
        pos = (y + 0.5) / f - 0.5
    pos = np.clip(pos, 0.0, n - 1)
    lo = np.floor(pos).astype(np.int64)
    hi = np.minimum(lo + 1, n - 1)
    w_hi = pos - lo
    return lo, hi, 1.0 - w_hi, w_hi


def _resize(a: Arithmetic, node: onnx.NodeProto, ins: list[Bounded]) -> list[Bounded]:
    """Whole factors (what the export accepts). nearest: a copy of x[y // f] (no rounding). linear
    (half_pixel, pytorch_half_pixel, align_corners): y = sum over the 2^d corners of the weight
    product times x, weights >= 0 summing to 1: the input errors propagate as the same
    interpolation of e (<= the largest corner error); rounding: the d - 1 weight products, the
    2^d products and the sum, gamma_(2^d + d) on the corners' largest |x| + e; the sample
    position computed in float32 (onnxruntime: (y + 0.5) / scale - 0.5; ours: exact integers,
    one division per weight) moves each weight by at most 4 u (n + 1), which moves y by at most
    that times |x_hi - x_lo| <= 2 max(|x| + e) per axis."""
    at = _attrs(node)
    mode = at.get("mode", b"nearest")
    mode = mode.decode() if isinstance(mode, bytes) else str(mode)
    transform = at.get("coordinate_transformation_mode", b"half_pixel")
    transform = transform.decode() if isinstance(transform, bytes) else str(transform)
    x = ins[0]
    in_shape = x.v.shape
    sizes = ins[3].v if len(ins) > 3 and ins[3].v.size else None
    scales = ins[2].v if len(ins) > 2 and ins[2].v.size else (ins[1].v if len(ins) == 2 else None)
    if at.get("axes") is not None or (sizes is None and scales is None):
        raise BoundUnavailable("Resize with axes or without constant scales / sizes")
    out_shape = [int(s) for s in sizes] if sizes is not None else [int(np.floor(n * s)) for n, s in zip(in_shape, scales)]
    if any(m % n or m < n for n, m in zip(in_shape, out_shape)) or out_shape[:2] != list(in_shape[:2]):
        raise BoundUnavailable(f"Resize from {list(in_shape)} to {out_shape} (whole spatial factors only)")
    factors = [m // n for n, m in zip(in_shape[2:], out_shape[2:])]
    if mode == "nearest":
        v, e = x.v, x.e
        for axis, f in enumerate(factors, start=2):
            v, e = np.repeat(v, f, axis=axis), np.repeat(e, f, axis=axis)
        return [Bounded(v, e)]
    if mode != "linear" or transform not in ("half_pixel", "pytorch_half_pixel", "align_corners"):
        raise BoundUnavailable(f"Resize mode '{mode}' with coordinate_transformation_mode '{transform}'")
    spatial = len(factors)
    taps = [_resize_taps(n, f, transform) for n, f in zip(in_shape[2:], factors)]
    v = np.zeros(tuple(in_shape[:2]) + tuple(n * f for n, f in zip(in_shape[2:], factors)))
    e = np.zeros_like(v)
    mag = np.zeros_like(v)
    for corner in np.ndindex(*([2] * spatial)):
        index, weight = [], np.ones(())
        for axis, (table, side) in enumerate(zip(taps, corner)):
            shape = [1] * spatial
            shape[axis] = -1
            index.append(table[side])
            weight = weight * table[2 + side].reshape(shape)
        grid = (slice(None), slice(None)) + np.ix_(*index)
        v = v + weight * x.v[grid]
        e = e + weight * x.e[grid]
        mag = np.maximum(mag, x.hi[grid])
    moved = sum(4.0 * U * (n + 1) for n in in_shape[2:]) * 2.0 * mag
    return [Bounded(v, e + gamma(2 ** spatial + spatial + a.slack) * (1.0 + moved / np.maximum(mag, TINY)) * mag
                    + moved + TINY * 2 ** spatial)]


def _batchnorm(a: Arithmetic, node: onnx.NodeProto, ins: list[Bounded]) -> list[Bounded]:
    x, scale, bias, mean, var = ins[:5]
    if any(np.any(p.e) for p in (scale, bias, mean, var)):
        raise BoundUnavailable("BatchNormalization with computed parameters")
    eps = float(np.float32(_attrs(node).get("epsilon", 1e-5)))
    shape = [1, -1] + [1] * (x.v.ndim - 2)
    factor = (scale.v / np.sqrt(var.v + eps)).reshape(shape)
    m, b = mean.v.reshape(shape), bias.v.reshape(shape)
    if a.storage is not None:
        return [_batchnorm_folded(a.storage, x, factor, m, b)]
    v = factor * (x.v - m) + b
    # sub, mul, add epsilon, sqrt, div, add: six roundings, relative to these magnitudes.
    e = np.abs(factor) * x.e + gamma(6 + a.slack) * (np.abs(factor) * (x.hi + np.abs(m)) + np.abs(b)) + TINY
    return [Bounded(v, e)]


def _batchnorm_folded(storage: Storage, x: Bounded, f: np.ndarray, m: np.ndarray, offset: np.ndarray) -> Bounded:
    """BatchNormalization folded into a scale f~ and a bias b~ (each computed in float32 or better, then
    stored), applied as fl(fl(x^ f~) + b~) (NVDLA's SDP: batch-normalization-to-sdp-scale-bias).

    f~: add epsilon, sqrt, divide (gamma_3), then one storage rounding: |f~ - f| <= df = r |f| + tiny.
    b~ = fl_s(fl(offset - fl(mean f~))): |mean| df + gamma_2 (|offset| + |mean| |f~|), then one storage
    rounding. y: |f~| e_x + |x| df + e_b propagated, gamma_2 (|x^| |f~| + |b~|) for the multiply and add."""
    u, tiny = storage.u, storage.tiny
    df = ((1.0 + gamma(3)) * (1.0 + u) - 1.0) * np.abs(f) + tiny
    f_hi = np.abs(f) + df
    folded = offset - m * f  # the exact folded bias
    e_b32 = np.abs(m) * df + gamma(2) * (np.abs(offset) + np.abs(m) * f_hi)
    e_b = e_b32 + u * (np.abs(folded) + e_b32) + tiny
    b_hi = np.abs(folded) + e_b
    v = f * x.v + folded
    e = f_hi * x.e + np.abs(x.v) * df + e_b + gamma(2) * (x.hi * f_hi + b_hi) + 2 * TINY
    return Bounded(v, e)


def _hardsigmoid_parts(x: Bounded, alpha: float, beta: float) -> tuple[np.ndarray, np.ndarray]:
    """max(0, min(1, alpha x + beta)) and the rounding of its evaluation on the computed x^ (alpha x, + beta:
    two roundings, a third for an implementation that rounds alpha to float32 (HardSwish's 1/6) or divides
    by 6; the clamp is exact). The propagated error is the caller's: Lipschitz |alpha| here."""
    v = np.clip(alpha * x.v + beta, 0.0, 1.0)
    return v, gamma(3) * (abs(alpha) * x.hi + abs(beta)) + TINY


def _hardsigmoid(a: Arithmetic, node: onnx.NodeProto, ins: list[Bounded]) -> list[Bounded]:
    at = _attrs(node)
    alpha = float(at.get("alpha", 0.2))
    v, rounding = _hardsigmoid_parts(ins[0], alpha, float(at.get("beta", 0.5)))
    return [Bounded(v, abs(alpha) * ins[0].e + rounding)]


def _hardswish(a: Arithmetic, node: onnx.NodeProto, ins: list[Bounded]) -> list[Bounded]:
    """y = x h(x), h = hardsigmoid(x; 1/6, 1/2). The exact function is 3/2-Lipschitz (its slope lies in
    [-1/2, 3/2]), so the incoming error contributes 1.5 e_x, linearly; evaluating on x^ adds |x^| times
    h's rounding, and the product one rounding of |x^| h^ <= |x^| (h^ <= 1). The rule once multiplied the
    incoming error by itself (|x^| e_h with e_h holding e_x / 6): quadratic, it overflowed to inf over
    17 convolution + HardSwish layers (issue 29)."""
    x = ins[0]
    h, rounding = _hardsigmoid_parts(x, 1.0 / 6.0, 0.5)
    return [Bounded(x.v * h, 1.5 * x.e + x.hi * rounding + U * x.hi + TINY)]


def _prelu(a: Arithmetic, node: onnx.NodeProto, ins: list[Bounded]) -> list[Bounded]:
    x, slope = ins
    v = np.where(x.v >= 0, x.v, slope.v * x.v)
    return [Bounded(v, np.maximum(1.0, slope.hi) * x.e + U * slope.hi * x.hi + TINY)]


def _extremum(fn: Callable[..., np.ndarray]):
    """Max / Min of n inputs: exact, and 1-Lipschitz in the max norm."""
    def rule(a: Arithmetic, node: onnx.NodeProto, ins: list[Bounded]) -> list[Bounded]:
        v = ins[0].v
        e = ins[0].e
        for other in ins[1:]:
            v = fn(v, other.v)
            e = np.maximum(e, other.e)
        return [Bounded(v, np.broadcast_to(e, v.shape).copy())]
    return rule


def _sum(a: Arithmetic, node: onnx.NodeProto, ins: list[Bounded]) -> list[Bounded]:
    v = sum(i.v for i in ins)
    mag = sum(i.hi for i in ins)
    return [Bounded(v, sum(i.e for i in ins) + gamma(max(len(ins) - 1, 0)) * mag + TINY)]


def _global_maxpool(a: Arithmetic, node: onnx.NodeProto, ins: list[Bounded]) -> list[Bounded]:
    x = ins[0]
    axes = tuple(range(2, x.v.ndim))
    return [Bounded(x.v.max(axis=axes, keepdims=True), x.e.max(axis=axes, keepdims=True))]


def _reduce_mean(a: Arithmetic, node: onnx.NodeProto, ins: list[Bounded]) -> list[Bounded]:
    x = ins[0]
    at = _attrs(node)
    axes = list(at["axes"]) if "axes" in at else ([int(i) for i in ins[1].v] if len(ins) > 1 and ins[1].v.size
                                                  else list(range(x.v.ndim)))
    axes_t = tuple(sorted(i % x.v.ndim for i in axes))
    count = int(np.prod([x.v.shape[i] for i in axes_t]))
    out = _average(x, axes_t, count, a, count)
    if at.get("keepdims", 1):
        shape = [1 if i in axes_t else d for i, d in enumerate(x.v.shape)]
        out = Bounded(out.v.reshape(shape), out.e.reshape(shape))
    return [out]


def _pad(a: Arithmetic, node: onnx.NodeProto, ins: list[Bounded]) -> list[Bounded]:
    at = _attrs(node)
    mode = at.get("mode", b"constant")
    if mode not in (b"constant", "constant"):
        raise BoundUnavailable(f"Pad mode {mode!r}")
    x = ins[0]
    pads = [int(p) for p in (ins[1].v if len(ins) > 1 else at["pads"])]
    if len(ins) > 3 and ins[3].v.size:
        raise BoundUnavailable("Pad with axes")
    value = float(ins[2].v) if len(ins) > 2 and ins[2].v.size else float(at.get("value", 0.0))
    if min(pads) < 0:
        raise BoundUnavailable("Pad with negative pads")
    half = len(pads) // 2
    width = [(pads[i], pads[i + half]) for i in range(half)]
    return [Bounded(np.pad(x.v, width, constant_values=value), np.pad(x.e, width))]


def _slice_index(node: onnx.NodeProto, ins: list[Bounded], ndim: int) -> tuple[slice, ...]:
    starts, ends = (np.asarray(i.v, np.int64) for i in ins[1:3])
    axes = np.asarray(ins[3].v, np.int64) if len(ins) > 3 and ins[3].v.size else np.arange(len(starts))
    steps = np.asarray(ins[4].v, np.int64) if len(ins) > 4 and ins[4].v.size else np.ones(len(starts), np.int64)
    index = [slice(None)] * ndim
    for start, end, axis, step in zip(starts, ends, axes, steps):
        big = np.iinfo(np.int64).max // 2
        index[int(axis) % ndim] = slice(int(np.clip(start, -big, big)), int(np.clip(end, -big, big)), int(step))
    return tuple(index)


def _slice(a: Arithmetic, node: onnx.NodeProto, ins: list[Bounded]) -> list[Bounded]:
    if len(ins) < 3:
        raise BoundUnavailable("Slice before opset 10")
    index = _slice_index(node, ins, ins[0].v.ndim)
    return [Bounded(ins[0].v[index], ins[0].e[index])]


def _split(a: Arithmetic, node: onnx.NodeProto, ins: list[Bounded]) -> list[Bounded]:
    at = _attrs(node)
    x = ins[0]
    axis = int(at.get("axis", 0)) % x.v.ndim
    if len(ins) > 1 and ins[1].v.size:
        sizes = [int(s) for s in ins[1].v]
    elif "split" in at:
        sizes = list(at["split"])
    else:
        count = len(node.output)
        step = -(-x.v.shape[axis] // count)
        sizes = [min(step, x.v.shape[axis] - i * step) for i in range(count)]
    cuts = np.cumsum(sizes)[:-1]
    return [Bounded(v, e) for v, e in zip(np.split(x.v, cuts, axis), np.split(x.e, cuts, axis))]


# --- data movement: the same operation on value and bound ------------------------------------------


def _shape_op(fn: Callable[[np.ndarray, list[np.ndarray]], np.ndarray]):
    def rule(a: Arithmetic, node: onnx.NodeProto, ins: list[Bounded]) -> list[Bounded]:
        rest = [i.v for i in ins[1:]]
        return [Bounded(fn(ins[0].v, rest, node), fn(ins[0].e, rest, node))]
    return rule


def _flatten(x: np.ndarray, rest: list[np.ndarray], node: onnx.NodeProto) -> np.ndarray:
    axis = int(_attrs(node).get("axis", 1)) % max(x.ndim, 1)
    return x.reshape(int(np.prod(x.shape[:axis])), -1)


def _reshape(x: np.ndarray, rest: list[np.ndarray], node: onnx.NodeProto) -> np.ndarray:
    shape = [int(d) for d in rest[0]]
    if not _attrs(node).get("allowzero", 0):
        shape = [x.shape[i] if d == 0 else d for i, d in enumerate(shape)]
    return x.reshape(shape)


def _transpose(x: np.ndarray, rest: list[np.ndarray], node: onnx.NodeProto) -> np.ndarray:
    perm = _attrs(node).get("perm")
    return np.transpose(x, perm)


def _axes(node: onnx.NodeProto, rest: list[np.ndarray]) -> list[int] | None:
    if rest and rest[0].size:
        return [int(i) for i in rest[0]]
    axes = _attrs(node).get("axes")
    return None if axes is None else list(axes)


def _squeeze(x: np.ndarray, rest: list[np.ndarray], node: onnx.NodeProto) -> np.ndarray:
    axes = _axes(node, rest)
    return np.squeeze(x) if axes is None else np.squeeze(x, axis=tuple(axes))


def _unsqueeze(x: np.ndarray, rest: list[np.ndarray], node: onnx.NodeProto) -> np.ndarray:
    axes = _axes(node, rest) or []
    out = x
    for axis in sorted(a % (x.ndim + len(axes)) for a in axes):
        out = np.expand_dims(out, axis)
    return out


def _concat(a: Arithmetic, node: onnx.NodeProto, ins: list[Bounded]) -> list[Bounded]:
    axis = int(_attrs(node)["axis"])
    return [Bounded(np.concatenate([i.v for i in ins], axis), np.concatenate([i.e for i in ins], axis))]


def _shape(a: Arithmetic, node: onnx.NodeProto, ins: list[Bounded]) -> list[Bounded]:
    at = _attrs(node)
    dims = np.array(ins[0].v.shape, np.int64)[int(at.get("start", 0)):at.get("end")]
    return [Bounded(dims, np.zeros(dims.shape))]


def _gather(a: Arithmetic, node: onnx.NodeProto, ins: list[Bounded]) -> list[Bounded]:
    axis = int(_attrs(node).get("axis", 0))
    indices = np.asarray(ins[1].v, np.int64)
    return [Bounded(np.take(ins[0].v, indices, axis=axis), np.take(ins[0].e, indices, axis=axis))]


_INTEGER = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply,
            "Div": lambda x, y: np.trunc(np.true_divide(x, y)).astype(np.int64),
            "Mod": np.mod}  # fmod = 0 on integers: the sign of the divisor, as Python's %


def _sqrt(a: Arithmetic, node: onnx.NodeProto, ins: list[Bounded]) -> list[Bounded]:
    """sqrt is increasing and concave: the largest change on [v - e, v + e] is sqrt(v) - sqrt(max(v - e, 0));
    one correct rounding (IEEE sqrt, ours and onnxruntime's) of at most u sqrt(v + e)."""
    x = ins[0]
    if np.any(x.v < 0):
        raise BoundUnavailable(f"Sqrt of a negative value (node '{node.name or node.output[0]}')", DATA_DEPENDENT)
    root = np.sqrt(x.v)
    return [Bounded(root, root - np.sqrt(np.maximum(x.v - x.e, 0.0)) + U * np.sqrt(x.v + x.e) + TINY)]


ERF_LIPSCHITZ = 2.0 / math.sqrt(math.pi)  # erf's largest slope, at 0


def _erf(a: Arithmetic, node: onnx.NodeProto, ins: list[Bounded]) -> list[Bounded]:
    """2/sqrt(pi)-Lipschitz, values in [-1, 1]: propagated min(2/sqrt(pi) e, 2), plus erf's accuracy."""
    x = ins[0]
    y = np.vectorize(math.erf, otypes=[np.float64])(x.v) if x.v.size else x.v
    hi = np.minimum(np.abs(y) + ERF_LIPSCHITZ * x.e, 1.0)
    return [Bounded(y, np.minimum(ERF_LIPSCHITZ * x.e, 2.0) + _rounding(a, hi, "erf"))]


def _pow(a: Arithmetic, node: onnx.NodeProto, ins: list[Bounded]) -> list[Bounded]:
    """x^2 and x^3 with an exact constant exponent (x * x, x * x * x: one and two roundings, what the
    export writes and onnxruntime computes); any other exponent has no rule here."""
    x, y = ins
    exponent = np.unique(y.v) if y.v.size else y.v
    if np.any(y.e) or exponent.size != 1 or float(exponent[0]) not in (2.0, 3.0):
        raise BoundUnavailable(f"Pow with an exponent other than a constant 2 or 3 (node '{node.name or node.output[0]}')")
    n = int(exponent[0])
    mag = x.hi ** n
    return [Bounded(x.v ** n, mag - np.abs(x.v) ** n + gamma(n - 1) * mag + TINY)]


def _cast(a: Arithmetic, node: onnx.NodeProto, ins: list[Bounded]) -> list[Bounded]:
    """Cast to float (from float: the identity; from integers below 2^24: exact) or from an exact value to
    an integer type (shape arithmetic); a cast that rounds a value with an error has no rule."""
    x = ins[0]
    to = int(_attrs(node)["to"])
    if to in (onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE):
        if x.v.dtype.kind in "iu" and np.any(np.abs(x.v) >= 2 ** 24):
            raise BoundUnavailable(f"Cast of an integer beyond 2^24 to float (node '{node.name or node.output[0]}')")
        return [Bounded(np.asarray(x.v, np.float64), x.e)]
    if np.any(x.e) or x.v.dtype.kind == "f":
        raise BoundUnavailable(f"Cast of a float to {onnx.TensorProto.DataType.Name(to)} (node "
                               f"'{node.name or node.output[0]}')")
    target = onnx.helper.tensor_dtype_to_np_dtype(to)
    return [Bounded(np.asarray(x.v).astype(target), np.zeros(np.shape(x.v)))]


def _integer(node: onnx.NodeProto, ins: list[Bounded]) -> list[Bounded] | None:
    """Shape arithmetic on int64 tensors: exact, no rounding."""
    if node.op_type not in _INTEGER or not all(np.asarray(i.v).dtype.kind in "iu" for i in ins):
        return None
    fn = np.fmod if node.op_type == "Mod" and _attrs(node).get("fmod", 0) else _INTEGER[node.op_type]
    value = fn(ins[0].v, ins[1].v)
    return [Bounded(value, np.zeros(np.shape(value)))]


def _float_mod(a: Arithmetic, node: onnx.NodeProto, ins: list[Bounded]) -> list[Bounded]:
    raise BoundUnavailable(f"no error-bound rule for Mod of floats (node '{node.name or node.output[0]}')")


def _identity(a: Arithmetic, node: onnx.NodeProto, ins: list[Bounded]) -> list[Bounded]:
    return [ins[0]]


def _where(a: Arithmetic, node: onnx.NodeProto, ins: list[Bounded]) -> list[Bounded]:
    """Where(c, x, y): each element is x's or y's, with its bound (no arithmetic); c exact (a constant)."""
    c, x, y = ins
    if np.any(c.e):
        raise BoundUnavailable(f"Where with a condition that has an error (node '{node.name or node.output[0]}')",
                               DATA_DEPENDENT)
    condition = np.asarray(c.v, bool)
    return [Bounded(np.where(condition, x.v, y.v), np.where(condition, x.e, y.e))]


def _evaluate(node: onnx.NodeProto, values: list[np.ndarray]) -> list[np.ndarray]:
    from onnx.reference import ReferenceEvaluator

    bare = onnx.helper.make_node(node.op_type, list(node.input), list(node.output), domain=node.domain)
    bare.attribute.extend(node.attribute)
    feeds = {name: value for name, value in zip(node.input, values) if name}
    return [np.asarray(v) for v in ReferenceEvaluator(bare).run(None, feeds)]


# What torch writes around masks (causal: Trilu, Equal, Where; padding: ConstantOfShape, Expand) and in-place
# writes of constants (ScatterND): selections and comparisons, no rounding (issue 38). A selection moves each
# element with its bound (the operator applied to the values and to the bounds alike); a comparison or a
# generator needs exact inputs and gives exact outputs.
SELECTIONS = frozenset({"Trilu", "Expand", "Tile", "ScatterND", "ScatterElements", "GatherND", "GatherElements"})
EXACT_RESULTS = frozenset({"Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "Not", "And", "Or", "Xor",
                           "ConstantOfShape", "NonZero", "IsNaN", "IsInf", "OneHot", "EyeLike", "Range"})


def _selection(a: Arithmetic, node: onnx.NodeProto, ins: list[Bounded]) -> list[Bounded]:
    floats = [np.asarray(i.v).dtype.kind == "f" for i in ins]
    if any(np.any(i.e) for i, f in zip(ins, floats) if not f):
        raise BoundUnavailable(f"{node.op_type} with indices or a shape that have an error (node "
                               f"'{node.name or node.output[0]}')", DATA_DEPENDENT)
    values = _evaluate(node, [i.v for i in ins])
    bounds = _evaluate(node, [np.asarray(i.e, np.float64) if f else i.v for i, f in zip(ins, floats)])
    return [Bounded(np.asarray(v, np.float64) if v.dtype.kind == "f" else v, np.asarray(b, np.float64))
            for v, b in zip(values, bounds)]


def _exact_result(a: Arithmetic, node: onnx.NodeProto, ins: list[Bounded]) -> list[Bounded]:
    if any(np.any(i.e) for i in ins) or (node.op_type == "Range" and any(np.asarray(i.v).dtype.kind == "f" for i in ins)):
        raise BoundUnavailable(f"{node.op_type} of values that have an error or are floats (node "
                               f"'{node.name or node.output[0]}')", DATA_DEPENDENT)
    values = _evaluate(node, [i.v for i in ins])
    return [Bounded(np.asarray(v, np.float64) if v.dtype.kind == "f" else v, np.zeros(np.shape(v))) for v in values]


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _refuse_attributes(node: onnx.NodeProto) -> None:
    """The attribute values a rule has no bound for, found before any vector is run (the rules
    repeat the test; data-dependent refusals, LRN's denominator and LogSoftmax's sum, come at run)."""
    at = _attrs(node)
    if node.op_type == "ConvTranspose" and (_text(at.get("auto_pad", "NOTSET")) != "NOTSET" or "output_shape" in at):
        raise BoundUnavailable(f"ConvTranspose with auto_pad or output_shape (node '{node.name or node.output[0]}')")
    if node.op_type == "Resize":
        mode = _text(at.get("mode", "nearest"))
        transform = _text(at.get("coordinate_transformation_mode", "half_pixel"))
        if at.get("axes") is not None or (mode == "linear" and transform not in (
                "half_pixel", "pytorch_half_pixel", "align_corners")) or mode not in ("nearest", "linear"):
            raise BoundUnavailable(f"Resize mode '{mode}' with coordinate_transformation_mode '{transform}' or axes "
                                   f"(node '{node.name or node.output[0]}')")


def _unsupported(node: onnx.NodeProto) -> list[Bounded]:
    raise BoundUnavailable(f"no error-bound rule for {node.op_type} (node '{node.name or node.output[0]}')")


RULES: dict[str, Callable[..., list[Bounded]]] = {
    "Conv": _conv, "Gemm": _gemm, "MatMul": _matmul, "Add": _add, "Sub": _sub, "Mul": _mul, "Div": _div,
    "Relu": _relu, "LeakyRelu": _leaky, "Clip": _clip, "Sigmoid": _sigmoid, "Tanh": _tanh, "Exp": _exp,
    "MaxPool": _maxpool, "AveragePool": _avgpool, "GlobalAveragePool": _global_avgpool,
    "BatchNormalization": _batchnorm, "Flatten": _shape_op(_flatten), "Reshape": _shape_op(_reshape),
    "Transpose": _shape_op(_transpose), "Squeeze": _shape_op(_squeeze), "Unsqueeze": _shape_op(_unsqueeze),
    "Concat": _concat, "Identity": _identity, "Dropout": _identity,
    "HardSigmoid": _hardsigmoid, "HardSwish": _hardswish, "PRelu": _prelu, "Max": _extremum(np.maximum),
    "Min": _extremum(np.minimum), "Sum": _sum, "GlobalMaxPool": _global_maxpool, "ReduceMean": _reduce_mean,
    "Pad": _pad, "Slice": _slice, "Split": _split, "Shape": _shape, "Gather": _gather,
    "ConvTranspose": _conv_transpose, "LRN": _lrn, "Resize": _resize,
    "Sqrt": _sqrt, "Erf": _erf, "Pow": _pow, "Cast": _cast, "Mod": _float_mod,
    "Where": _where, **{op: _selection for op in SELECTIONS}, **{op: _exact_result for op in EXACT_RESULTS},
}


# Storage arithmetic: operators whose output is an element (or a copy) of a stored input are stored
# without rounding; every other operator's output is rounded once (also where a unit pipes it on
# unrounded, NVDLA's CONV -> SDP: one rounding more is a larger bound, never a smaller one).
EXACT_IN_STORAGE = frozenset({"Flatten", "Reshape", "Transpose", "Squeeze", "Unsqueeze", "Concat", "Identity",
                              "Dropout", "Relu", "MaxPool", "GlobalMaxPool", "Max", "Min", "Slice", "Split",
                              "Gather", "Where"}) | SELECTIONS
# Operators a storage arithmetic refuses, and why.
STORAGE_REFUSED = {"LRN": "NVDLA's CDP evaluates a lookup table whose interpolation error has no bound rule here "
                          "(it would need the LUT's sample spacing and the derivative of the function)"}


class ErrorBound:
    """The bound of one arithmetic on one model: `run({input: array}) -> {output: Bounded}`."""

    def __init__(self, model: onnx.ModelProto, arithmetic: Arithmetic) -> None:
        self.model = model
        self.arithmetic = arithmetic
        self.opset = max((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), default=13)
        self.constants = {t.name: numpy_helper.to_array(t).astype(np.float64)
                          if t.data_type == onnx.TensorProto.FLOAT else numpy_helper.to_array(t)
                          for t in model.graph.initializer}
        missing = sorted({n.op_type for n in model.graph.node if n.op_type not in RULES and n.op_type != "Constant"})
        if missing:
            raise BoundUnavailable(f"no error-bound rule for {', '.join(missing)}")
        for node in model.graph.node:
            _refuse_attributes(node)
            if arithmetic.storage is not None and node.op_type in STORAGE_REFUSED:
                raise BoundUnavailable(f"{node.op_type} (node '{node.name or node.output[0]}') under "
                                       f"{arithmetic.name}: {STORAGE_REFUSED[node.op_type]}", NO_STORAGE_RULE)
        # BatchNormalization's parameters stay exact: its storage rule rounds the folded scale and bias.
        folded = {name for n in model.graph.node if n.op_type == "BatchNormalization" for name in n.input[1:5]}
        used = {name for n in model.graph.node if n.op_type != "BatchNormalization" for name in n.input}
        used |= {name for n in model.graph.node if n.op_type == "BatchNormalization" for name in n.input[:1]}
        self.exact = folded - used
        self._last: dict[str, int] | None = None

    def _known(self, name: str, value: np.ndarray) -> Bounded:
        """A constant or an input: exact, or stored (its rounding error known exactly)."""
        storage = self.arithmetic.storage
        if value.dtype.kind != "f":
            return Bounded(value, np.zeros(value.shape))
        value = np.asarray(value, np.float64)
        if storage is None or name in self.exact:
            return Bounded(value, np.zeros(value.shape))
        with np.errstate(over="ignore"):
            stored = storage.round(value)
        if not np.all(np.isfinite(stored[np.isfinite(value)])):
            raise BoundUnavailable(f"'{name}' holds a value beyond {storage.name}'s largest {storage.max:g}",
                                   STORAGE_OVERFLOW)
        return Bounded(value, np.where(value == -np.inf, 0.0, np.abs(stored - value)))  # a mask's -inf: exact

    def _store(self, node: onnx.NodeProto, name: str, x: Bounded) -> Bounded:
        """The tensor as written to memory: one rounding to the storage format, overflow refused."""
        storage = self.arithmetic.storage
        if storage is None or np.asarray(x.v).dtype.kind != "f":
            return x
        masked = _masked(x)  # a mask's -inf is stored as -inf (issue 38)
        if node.op_type not in EXACT_IN_STORAGE:
            x = Bounded(x.v, np.where(masked, 0.0, x.e + storage.u * x.hi + storage.tiny))
        if x.v.size and float(np.max(np.where(masked, 0.0, x.hi))) >= storage.max:
            raise BoundUnavailable(f"'{name}' (node '{node.name or node.output[0]}', {node.op_type}): its bound reaches "
                                   f"{float(np.max(x.hi)):.6g} >= {storage.name}'s largest {storage.max:g}",
                                   STORAGE_OVERFLOW)
        return x

    def run(self, inputs: Mapping[str, np.ndarray]) -> dict[str, Bounded]:
        """Every output's value and bound on one input vector. A tensor is dropped after its last
        reader (memory: one vector of resnet18 at 224x224 held 1.77 GB of float64 pairs); a tensor
        whose bound is not finite stops the pass (BOUND-E005, naming it)."""
        env: dict[str, Bounded] = {name: self._known(name, c) for name, c in self.constants.items()}
        for name, value in inputs.items():
            env[name] = self._known(name, np.asarray(value, np.float32))
        env[""] = Bounded(np.zeros(0), np.zeros(0))
        outputs = {o.name for o in self.model.graph.output}
        last = self._last_reader()
        with np.errstate(over="ignore", invalid="ignore"):  # an overflow is a non-finite bound: caught below
            self._walk(env, outputs, last)
        return {o.name: env[o.name] for o in self.model.graph.output}

    def _walk(self, env: dict[str, Bounded], outputs: set[str], last: dict[str, int]) -> None:
        for index, node in enumerate(self.model.graph.node):
            if node.op_type == "Constant":
                env[node.output[0]] = self._known(node.output[0], numpy_helper.to_array(_attrs(node)["value"]))
                continue
            ins = [env[name] for name in node.input]
            integer = _integer(node, ins)
            if integer is not None:
                outs = integer
            elif node.op_type == "Softmax":
                outs = _softmax(self.arithmetic, node, ins, self.opset)
            elif node.op_type == "LogSoftmax":
                outs = _log_softmax(self.arithmetic, node, ins, self.opset)
            else:
                outs = RULES[node.op_type](self.arithmetic, node, ins)
            for name, value in zip(node.output, outs):
                value = self._store(node, name, value)
                if value.e.size and not np.isfinite(value.e).all():
                    raise BoundUnavailable(f"the bound of '{name}' (node '{node.name or node.output[0]}', "
                                           f"{node.op_type}) is not finite", NOT_FINITE)
                env[name] = value
            for name in set(node.input):
                if name and last.get(name) == index and name not in outputs:
                    del env[name]

    def _last_reader(self) -> dict[str, int]:
        """Tensor name -> index of the last node that reads it."""
        if self._last is None:
            self._last = {name: index for index, node in enumerate(self.model.graph.node) for name in node.input}
        return self._last


def tolerance_bound(model: onnx.ModelProto) -> tuple[ErrorBound, ErrorBound]:
    """The bounds of our reference and of onnxruntime on `model` (BoundUnavailable if either has no rule)."""
    return ErrorBound(model, REFERENCE), ErrorBound(model, ONNXRUNTIME)


RULES["Softmax"] = _softmax  # dispatched with the opset in ErrorBound.run
RULES["LogSoftmax"] = _log_softmax  # likewise

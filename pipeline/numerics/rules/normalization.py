"""BatchNormalization, Softmax, LogSoftmax.

BatchNormalization is y = f x + c per channel, f = scale / sqrt(var + eps), c = B - mean f (exact: the
enclosure evaluates f and c in arb). Its rounding depends on the arithmetic:

* our reference: offset + scale (x - mean) / s, s = sqrt(var + eps) once per channel (docs/semantics/
  normalization.md): three roundings of |y - offset| and one of |y| per element, s's 1.5 u shared by the
  channel;
* onnxruntime: f and B - mean f computed once per channel in float32 (3 u of f, u |mean f| + u |c| of c,
  shared), x f + c (two roundings); folded into the preceding convolution the per-weight rounding is the
  convolution's (pipeline.numerics.rules.linear);
* NVDLA (the SDP's scale and bias, legalization rule batch-normalization-to-sdp-scale-bias): f and c
  computed in float32 as the legalization does, stored in FP16: errors known per channel; then x f~ + c~ in
  float32 (two roundings).

Softmax over an axis (opset < 13: the 2-D coercion at the axis): t = x - max (relative u |t| of e^t), e^t
(the exp's accuracy), their sum (n - 1 additions of positive terms in any order: relative (n - 1) u,
shared by the row), the division (or a reciprocal and a product: 2 u). The roundings of x - max and of
exp perturb the input (carried by the Jacobian s (I - s^T)), the sum's scales the row. Remainder:
s_i (2 a^2 e^(2a) + a^2 / 2), a the largest spread of the row. LogSoftmax: t - log(sum e^t), the same
sources through its Jacobian I - s^T, log's accuracy, the final subtraction; remainder a^2 / 2.

Masks (issue 38): an input that is an attention mask's -inf gives e^t = +0 exactly in every evaluation:
its softmax output is exactly 0 (no rounding, no sensitivity) and it adds nothing to the row's sum (the
sum's rounding counts the unmasked elements); a row masked everywhere is 0 / 0, refused by the export
(EXPORT-E019) and not finite here (BOUND-E005).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pipeline.numerics import doubled as D
from pipeline.numerics import products
from pipeline.numerics.arithmetic import Arithmetic
from pipeline.numerics.graph import Op
from pipeline.numerics.rules import Array, Context, Local, NoRule, Rounding, Rule, Shared, Spread, Step, register

U32 = 2.0 ** -24


def _bn_constants(op: Op, ctx: Context) -> tuple[np.ndarray, ...]:
    values = [ctx.constant(name) for name in op.inputs[1:5]]
    if any(v is None for v in values):
        raise NoRule(f"BatchNormalization with computed parameters (node '{op.origin}')")
    if len(op.outputs) > 1 and any(op.outputs[1:]):
        raise NoRule(f"BatchNormalization in training mode (node '{op.origin}')")
    return tuple(np.asarray(v, np.float64).ravel() for v in values)


def _epsilon(op: Op) -> float:
    return float(np.float32(op.attr("epsilon", 1e-5)))


def _bn_enclose(op: Op, ins: list[Any], ctx: Context) -> list[Any]:
    scale, bias, mean, var = _bn_constants(op, ctx)
    flint = D._flint()
    arb = flint.arb
    eps = arb(_epsilon(op))
    f = np.empty(scale.size, dtype=object)
    c = np.empty(scale.size, dtype=object)
    for k in range(scale.size):
        root = (arb(float(var[k])) + eps).sqrt()
        f[k] = arb(float(scale[k])) / root
        c[k] = arb(float(bias[k])) - arb(float(mean[k])) * f[k]
    x = ins[0]
    shape = [1, -1] + [1] * (x.hi.ndim - 2)
    fb = D.from_arb(f).map(lambda a: a.reshape(shape))
    cb = D.from_arb(c).map(lambda a: a.reshape(shape))
    return [D.add(D.mul(x, fb), cb)]


def nvdla_fold(scale: np.ndarray, bias: np.ndarray, mean: np.ndarray, var: np.ndarray,
               eps: float) -> tuple[np.ndarray, np.ndarray]:
    """The SDP's scale and bias as the NVDLA legalization computes them (float32) and stores them (FP16)."""
    s32, v32 = scale.astype(np.float32), var.astype(np.float32)
    factor = (s32 / np.sqrt(v32 + np.float32(eps))).astype(np.float32)
    offset = (bias.astype(np.float32) - mean.astype(np.float32) * factor).astype(np.float32)
    return factor.astype(np.float16).astype(np.float64), offset.astype(np.float16).astype(np.float64)


class _BatchNormStep(Step):
    def __init__(self, op: Op, ins: list[Array | None], ctx: Context) -> None:
        self.scale, self.bias, self.mean, self.var = _bn_constants(op, ctx)
        self.eps = _epsilon(op)
        self.x = np.asarray(ins[0], np.float64)
        self.axes = tuple([0] + list(range(2, self.x.ndim)))
        self.shape = [1, -1] + [1] * (self.x.ndim - 2)
        self.f = self.scale / np.sqrt(self.var + self.eps)
        self.c = self.bias - self.mean * self.f
        self.outputs = [self.f.reshape(self.shape) * self.x + self.c.reshape(self.shape)]

    def jvp(self, tangents: list[Array | None]) -> list[Array | None]:
        t = tangents[0]
        return [None if t is None else t * self.f.reshape(self.shape)]

    def vjp(self, grads: list[Array | None], need: list[bool]) -> list[Array | None]:
        g = grads[0]
        out: list[Array | None] = [None] * len(need)
        if g is not None and need[0]:
            out[0] = g * self.f.reshape(self.shape)
        return out

    def _per_channel(self, values: Array) -> Any:
        """coefficient(grads) = sum over batch and space of g * values, per channel: [B, C]."""
        axes = tuple(a + 1 for a in self.axes)
        return lambda grads: (grads[0] * values).sum(axis=axes)

    def _channel_forward(self, values: Array) -> Any:
        return lambda delta: delta.reshape([delta.shape[0]] + self.shape) * values

    def rounding(self, arithmetic: Arithmetic, spread: Spread) -> Rounding:
        u, tiny = arithmetic.u, arithmetic.tiny
        b = spread.i(0)
        shape = self.shape
        f = np.abs(self.f).reshape(shape)
        y = np.abs(self.outputs[0]) + f * b
        if arithmetic.storage is not None:
            factor, offset = nvdla_fold(self.scale, self.bias, self.mean, self.var, self.eps)
            fx = np.abs(factor).reshape(shape) * (np.abs(self.x) + b)
            d = u * (fx + np.abs(self.outputs[0]) + np.abs(factor - self.f).reshape(shape) * np.abs(self.x)
                     + y) + 2 * tiny
            ones = np.ones(self.x.shape)
            known = [(self._per_channel(self.x), factor - self.f, self._channel_forward(self.x)),
                     (self._per_channel(ones), offset - self.c, self._channel_forward(ones))]
            return Rounding([Local(d, d)], known=known)
        if arithmetic.fused_batchnorm:
            fx = f * (np.abs(self.x) + b)
            local = Local(u * (fx + y) + 2 * tiny, u * np.sqrt(fx ** 2 + y ** 2) + 2 * tiny)
            df = 3.0 * u * np.abs(self.f) * (1.0 + 4 * u)
            dc = u * (4.0 * np.abs(self.mean * self.f) + np.abs(self.c)) * (1.0 + 4 * u)
            ones = np.ones(self.x.shape)
            shared = [Shared(self._per_channel(self.x), df, df, self._channel_forward(self.x)),
                      Shared(self._per_channel(ones), dc, dc, self._channel_forward(ones))]
            return Rounding([local], shared)
        centred = np.abs(self.outputs[0] - self.bias.reshape(shape)) + f * b
        local = Local(u * (3.0 * centred + y) + 4 * tiny, u * np.sqrt(3.0 * centred ** 2 + y ** 2) + 4 * tiny)
        ds = 1.5 * u * (1.0 + 4 * u) * np.ones(self.f.shape)
        centre = self.outputs[0] - self.bias.reshape(shape)
        shared = [Shared(self._per_channel(centre), ds, ds, self._channel_forward(centre))]
        return Rounding([local], shared)


def _bn_linearize(op: Op, ins: list[Array | None], ctx: Context) -> Step:
    return _BatchNormStep(op, ins, ctx)


register(Rule("BatchNormalization", _bn_enclose, _bn_linearize, stores_constants=False))


# --- Softmax and LogSoftmax ------------------------------------------------------------------------------


def _rows(op: Op, shape: tuple[int, ...], opset: int) -> tuple[tuple[int, ...], int]:
    """The shape softmax works on and its axis: opset >= 13 the tensor itself, before it the 2-D coercion."""
    axis = int(op.attr("axis", -1 if opset >= 13 else 1))
    if opset >= 13:
        return tuple(shape), axis % len(shape)
    axis %= len(shape)
    return (int(np.prod(shape[:axis])), int(np.prod(shape[axis:]))), 1


def _softmax_enclose(op: Op, ins: list[Any], ctx: Context) -> list[Any]:
    x = ins[0]
    work, axis = _rows(op, x.shape, ctx.opset)
    xr = x.map(lambda a: a.reshape(work))
    masked = np.isneginf(xr.hi) & (xr.rad == 0)  # a mask's -inf: e^-inf = +0 exactly
    zero = D.exact(np.zeros(work))
    if masked.any():
        xr = D.select(masked, zero, xr)
    e = D.apply_arb(xr, lambda a: a.exp())
    if masked.any():
        e = D.select(masked, zero, e)
    total = products.reduce_sum(e, (axis,))
    if op.op_type == "Softmax":
        y = D.div(e, total)
        if masked.any():
            y = D.select(masked, zero, y)
    else:
        log_total = D.apply_arb(total, lambda a: a.log())
        y = D.sub(xr, log_total)
        if masked.any():
            y = D.select(masked, D.exact(np.full(work, -np.inf)), y)
    return [y.map(lambda a: a.reshape(x.shape))]


class _SoftmaxStep(Step):
    def __init__(self, op: Op, ins: list[Array | None], ctx: Context) -> None:
        self.op = op
        x = np.asarray(ins[0], np.float64)
        self.shape = x.shape
        self.work, self.axis = _rows(op, x.shape, ctx.opset)
        xr = x.reshape(self.work)
        self.masked = np.isneginf(xr)  # a mask's -inf (module docstring)
        self.count = (~self.masked).sum(axis=self.axis, keepdims=True)  # the terms of each row's sum
        self.t = xr - xr.max(axis=self.axis, keepdims=True)
        e = np.exp(self.t)
        self.sum = e.sum(axis=self.axis, keepdims=True)
        self.s = e / self.sum
        self.n = self.work[self.axis]
        self.log = op.op_type == "LogSoftmax"
        y = self.t - np.log(self.sum) if self.log else self.s
        self.outputs = [y.reshape(self.shape)]

    def _batch(self, t: Array) -> Array:
        return t.reshape((t.shape[0],) + self.work)

    def jvp(self, tangents: list[Array | None]) -> list[Array | None]:
        t = tangents[0]
        if t is None:
            return [None]
        t = self._batch(t)
        ax = self.axis + 1
        mean = (t * self.s).sum(axis=ax, keepdims=True)
        out = (t - mean) if self.log else self.s * (t - mean)
        return [out.reshape((t.shape[0],) + self.shape)]

    def vjp(self, grads: list[Array | None], need: list[bool]) -> list[Array | None]:
        g = grads[0]
        if g is None or not need[0]:
            return [None] * len(need)
        g = self._batch(g)
        ax = self.axis + 1
        if self.log:
            out = g - self.s * g.sum(axis=ax, keepdims=True)
        else:
            out = self.s * (g - (g * self.s).sum(axis=ax, keepdims=True))
        return [out.reshape((g.shape[0],) + self.shape)] + [None] * (len(need) - 1)

    def _row_sum(self, values: Array) -> Any:
        ax = self.axis + 1
        return lambda grads: (self._batch(grads[0]) * values).sum(axis=ax, keepdims=True)

    def _row_forward(self, values: Array) -> Any:
        return lambda delta: (delta.reshape((delta.shape[0],) + self.sum.shape) * values).reshape(
            (delta.shape[0],) + self.shape)

    def rounding(self, arithmetic: Arithmetic, spread: Spread) -> Rounding:
        u, tiny = arithmetic.u, arithmetic.tiny
        accuracy = arithmetic.accuracy("exp")
        if accuracy is None:
            raise NoRule(f"{self.op.op_type}: no accuracy stated for exp in {arithmetic.name} (node "
                         f"'{self.op.origin}')")
        b = np.where(self.masked, 0.0, np.broadcast_to(spread.i(0), self.shape).reshape(self.work))
        big = b.max(axis=self.axis, keepdims=True)
        # x - max rounded (relative u |t| of e^t) and exp's relative accuracy: perturbations of the input
        per_input = np.where(self.masked, 0.0, u * (np.abs(np.where(self.masked, 0.0, self.t)) + 2.0 * big)
                             + accuracy[0] * np.exp(4.0 * big)).reshape(self.shape)
        inputs = [Local(per_input, per_input)]
        ax = self.axis + 1
        # exp's absolute error (and the subnormal term) on each e^t: through d y / d e_j
        absolute = np.where(self.masked, 0.0, accuracy[1] + tiny)
        if self.log:
            exp_coefficient = lambda grads: np.broadcast_to(
                -self._batch(grads[0]).sum(axis=ax, keepdims=True) / self.sum, (grads[0].shape[0],) + self.work)
            exp_forward = lambda delta: np.broadcast_to(
                -delta.reshape((delta.shape[0],) + self.work).sum(axis=ax, keepdims=True) / self.sum,
                (delta.shape[0],) + self.work).reshape((delta.shape[0],) + self.shape)
        else:
            exp_coefficient = lambda grads: (self._batch(grads[0]) - (self._batch(grads[0]) * self.s).sum(
                axis=ax, keepdims=True)) / self.sum
            exp_forward = lambda delta: ((delta.reshape((delta.shape[0],) + self.work) - self.s * delta.reshape(
                (delta.shape[0],) + self.work).sum(axis=ax, keepdims=True)) / self.sum).reshape(
                (delta.shape[0],) + self.shape)
        shared = [Shared(exp_coefficient, absolute, absolute, exp_forward)]
        n = self.count
        rel_sum = (n - 1) * u * (1.0 + n * u)
        rel_sum_q = np.sqrt(np.maximum(n - 1, 0)) * u * (1.0 + n * u)
        row = np.ones(self.sum.shape)
        if self.log:
            coefficient = self._row_sum(-np.ones(self.work))
            log_acc = arithmetic.accuracy("log")
            if log_acc is None:
                raise NoRule(f"LogSoftmax: no accuracy stated for log in {arithmetic.name} (node '{self.op.origin}')")
            log_mag = np.abs(np.log(self.sum)) + rel_sum
            d_log = log_acc[0] * log_mag + log_acc[1]
            spread_row = self._row_forward(-np.ones(self.work))
            shared += [Shared(coefficient, rel_sum * row, rel_sum_q * row, spread_row),
                       Shared(coefficient, d_log, d_log, spread_row)]
            y = np.abs(self.outputs[0]).reshape(self.work) + b + big
            local = u * y + tiny
        else:
            shared.append(Shared(self._row_sum(-self.s), rel_sum * row, rel_sum_q * row, self._row_forward(-self.s)))
            local = 2.0 * u * self.s * np.exp(2.0 * big) + tiny
        local = np.where(self.masked, 0.0, local).reshape(self.shape)
        return Rounding([Local(local, local)], shared, inputs=inputs)

    def remainder(self, spread: Spread, arithmetic: Arithmetic | None = None) -> list[Array | None]:
        """With d_i = e_i - sum_j s_j e_j (|d_i| <= D_i = (1 - s_i) B_i + sum_(j != i) s_j B_j), softmax(x + e)_i =
        s_i e^(d_i) / Z, Z = sum_j s_j e^(d_j) >= 1 (Jensen) and Z - 1 <= V e^(2a) / 2, V = sum_j s_j D_j^2: the
        remainder is at most s_i e^(4a) (D_i^2 + V) / 2; LogSoftmax's -(LSE(x + e) - LSE(x) - s . e) at most
        e^(2a) V / 2 (a the row's largest B)."""
        b = spread.i(0)
        if not np.any(b):
            return [None]
        b = np.where(self.masked, 0.0, np.broadcast_to(b, self.shape).reshape(self.work))
        a = b.max(axis=self.axis, keepdims=True)
        weighted = (self.s * b).sum(axis=self.axis, keepdims=True)
        dev = (1.0 - self.s) * b + (weighted - self.s * b)
        v = (self.s * dev * dev).sum(axis=self.axis, keepdims=True)
        if self.log:
            out = np.broadcast_to(0.5 * np.exp(2.0 * a) * v, self.work)
        else:
            out = self.s * np.exp(4.0 * a) * 0.5 * (dev * dev + v)
        return [np.asarray(out).reshape(self.shape)]


def _softmax_linearize(op: Op, ins: list[Array | None], ctx: Context) -> Step:
    return _SoftmaxStep(op, ins, ctx)


register(Rule("Softmax", _softmax_enclose, _softmax_linearize))
register(Rule("LogSoftmax", _softmax_enclose, _softmax_linearize))

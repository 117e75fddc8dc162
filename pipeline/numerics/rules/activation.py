"""Element-wise activations: Relu, LeakyRelu, PRelu, Clip, HardSigmoid, HardSwish (piecewise linear or
polynomial: kinks), Sigmoid, Tanh, Exp, Log, Erf, Sqrt (smooth: second derivatives).

Enclosure: interval max/min and double-word arithmetic for the piecewise ones, arb (python-flint) element
by element for the transcendental ones. Bound: the slope at the vector; a kink at distance r from the
vector value, where the slope changes by J, adds J (B - r)+ (the error may cross it); a smooth function
adds sup |f''| B^2 / 2 over [v - B, v + B] (sigmoid 0.0963, tanh 0.7699, erf 0.9679, exp e^(v+B),
log 1 / (v - B)^2, sqrt (v - B)^(-3/2) / 4). Rounding: the stated accuracy of each function (ulps of
|y| plus an absolute part) with its argument's spread; HardSigmoid's a x + b (two roundings) and
HardSwish's x / 6 + 1/2, then the product (a third and fourth, one more for a rounded 1/6). A function
an arithmetic evaluates from a lookup table (NVDLA's SDP: sigmoid, tanh) errs by the table's own error
T(v) - f(v), known with its sign at the vector (a `shift`), plus the difference of the table's segment
slopes and f'(v) over [v - B, v + B] (remainder) and the rounding of the table's index (x - start in
float32).
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from pipeline.numerics import doubled as D
from pipeline.numerics.arithmetic import Arithmetic
from pipeline.numerics.doubled import Ball
from pipeline.numerics.graph import Op
from pipeline.numerics.rules import (NEGLIGIBLE, Array, Context, Local, NoRule, Rounding, Rule, Spread, Step, kink,
                                     register, unbroadcast)

SIGMOID_CURVATURE = 0.0962251  # max |sigmoid''| = max |s (1 - s) (1 - 2 s)|, at s = 1/2 +- 1/sqrt(12)
TANH_CURVATURE = 0.7698004     # max |tanh''| = 4 / (3 sqrt 3)
ERF_CURVATURE = 0.9678828      # max |erf''| = (2 / sqrt pi) sqrt(2 / e)
ERF_SLOPE = 2.0 / math.sqrt(math.pi)


def _attr_float(op: Op, key: str, default: float) -> float:
    return float(np.float32(op.attr(key, default)))


def _clip_bounds(op: Op, ins: list[Any], ctx: Context) -> tuple[Any, Any]:
    def bound(k: int, key: str, default: float) -> Any:
        if len(op.inputs) > k and op.inputs[k]:
            value = ctx.constant(op.inputs[k])
            if value is None:
                raise NoRule(f"Clip with a computed bound (node '{op.origin}')")
            return float(np.ravel(value)[0])
        return float(op.attr(key, default))
    return bound(1, "min", -np.inf), bound(2, "max", np.inf)


def _by_sign(x: Ball, positive: Ball, negative: Ball) -> Ball:
    """positive where x > 0 surely, negative where x < 0 surely, else the hull of both (a continuous
    piecewise function: both branches contain its values on the ball)."""
    sign = D.sign_decided(x)
    out = D.select(sign > 0, positive, negative)
    if np.any(sign == 0):
        pl, pu = D.bounds(positive)
        nl, nu = D.bounds(negative)
        out = D.select(sign == 0, D.hull(np.minimum(pl, nl), np.maximum(pu, nu)), out)
    return out


def _hardsigmoid_ball(x: Ball, alpha: float, beta: float) -> Ball:
    y = D.add(D.scale(x, np.float64(alpha)), D.exact(np.full(x.shape, beta)))
    return D.minimum(D.maximum(y, D.exact(np.zeros(x.shape))), D.exact(np.ones(x.shape)))


def _enclose(op: Op, ins: list[Any], ctx: Context) -> list[Any]:
    x = ins[0] if isinstance(ins[0], Ball) else D.exact(np.asarray(ins[0], np.float64))
    t = op.op_type
    if t == "Relu":
        return [D.relu(x)]
    if t == "LeakyRelu":
        alpha = _attr_float(op, "alpha", 0.01)
        return [_by_sign(x, x, D.scale(x, np.float64(alpha)))]
    if t == "PRelu":
        slope = ins[1] if isinstance(ins[1], Ball) else D.exact(np.asarray(ins[1], np.float64))
        return [_by_sign(x, x, D.mul(x, slope))]
    if t == "Clip":
        low, high = _clip_bounds(op, ins, ctx)
        y = x
        if np.isfinite(low):
            y = D.maximum(y, D.exact(np.full(x.shape, low)))
        if np.isfinite(high):
            y = D.minimum(y, D.exact(np.full(x.shape, high)))
        return [y]
    if t == "HardSigmoid":
        return [_hardsigmoid_ball(x, _attr_float(op, "alpha", 0.2), _attr_float(op, "beta", 0.5))]
    if t == "HardSwish":
        h = D.add(D.div(x, D.exact(np.full(x.shape, 6.0))), D.exact(np.full(x.shape, 0.5)))
        h = D.minimum(D.maximum(h, D.exact(np.zeros(x.shape))), D.exact(np.ones(x.shape)))
        return [D.mul(x, h)]
    fn = _ARB.get(t)
    if fn is None:
        raise NoRule(f"no rule for {t} (node '{op.origin}')")
    if t in ("Log", "Sqrt"):
        low, _ = D.bounds(x)
        if np.any(low < 0) or (t == "Log" and np.any(low <= 0)):
            raise NoRule(f"{t} of a value that may be negative (node '{op.origin}')", "BOUND-E002")
    return [D.apply_arb(x, fn)]


_ARB: dict[str, Callable[[Any], Any]] = {
    "Sigmoid": lambda a: 1 / (1 + (-a).exp()),
    "Tanh": lambda a: a.tanh(),
    "Exp": lambda a: a.exp(),
    "Log": lambda a: a.log(),
    "Erf": lambda a: a.erf(),
    "Sqrt": lambda a: a.sqrt(),
}


class _Unary(Step):
    """y = f(x) element by element: subclasses give the value, the slope, the rounding and the remainder."""

    def __init__(self, op: Op, ins: list[Array | None], ctx: Context) -> None:
        self.op = op
        self.x = np.asarray(ins[0], np.float64)
        self.outputs = [self.value()]
        self.slope_ = self.slope()

    def value(self) -> Array:
        raise NotImplementedError

    def slope(self) -> Array:
        raise NotImplementedError

    def jvp(self, tangents: list[Array | None]) -> list[Array | None]:
        return [None if tangents[0] is None else tangents[0] * self.slope_]

    def vjp(self, grads: list[Array | None], need: list[bool]) -> list[Array | None]:
        g = grads[0]
        return [None if g is None or not need[0] else g * self.slope_] + [None] * (len(need) - 1)


def _near(spread: Array | float, *distances: Array) -> tuple[int, int]:
    b = np.asarray(spread)
    near = np.zeros(np.shape(distances[0]), bool)
    for d in distances:
        near |= b - np.abs(d) * (1.0 - 2.0 ** -40) > NEGLIGIBLE
    return int(np.count_nonzero(near)), int(np.size(near)) * len(distances)


class _Relu(_Unary):
    def decisions(self, spread: Spread) -> tuple[int, int]:
        return _near(spread.i(0), self.x)

    def value(self) -> Array:
        return np.maximum(self.x, 0.0)

    def slope(self) -> Array:
        return (self.x > 0).astype(np.float64)

    def remainder(self, spread: Spread, arithmetic: Arithmetic | None = None) -> list[Array | None]:
        b = spread.i(0)
        return [kink(b, self.x, 1.0) if np.any(b) else None]


class _Leaky(_Unary):
    def decisions(self, spread: Spread) -> tuple[int, int]:
        return _near(spread.i(0), self.x)

    def __init__(self, op: Op, ins: list[Array | None], ctx: Context) -> None:
        self.alpha = _attr_float(op, "alpha", 0.01)
        super().__init__(op, ins, ctx)

    def value(self) -> Array:
        return np.where(self.x >= 0, self.x, self.alpha * self.x)

    def slope(self) -> Array:
        return np.where(self.x >= 0, 1.0, self.alpha)

    def rounding(self, arithmetic: Arithmetic, spread: Spread) -> Rounding:
        mag = np.where(self.x < 0, np.abs(self.alpha) * (np.abs(self.x) + spread.i(0)), 0.0)
        mag = np.where(np.abs(self.x) <= spread.i(0), np.abs(self.alpha) * (np.abs(self.x) + spread.i(0)), mag)
        d = arithmetic.u * mag + arithmetic.tiny
        return Rounding([Local(d, d)])

    def remainder(self, spread: Spread, arithmetic: Arithmetic | None = None) -> list[Array | None]:
        b = spread.i(0)
        return [kink(b, self.x, 1.0 - self.alpha) if np.any(b) else None]


class _PRelu(_Unary):
    def decisions(self, spread: Spread) -> tuple[int, int]:
        return _near(spread.i(0), self.x)

    def __init__(self, op: Op, ins: list[Array | None], ctx: Context) -> None:
        self.alpha = np.asarray(ins[1], np.float64)
        super().__init__(op, ins, ctx)

    def value(self) -> Array:
        return np.where(self.x >= 0, self.x, self.alpha * self.x)

    def slope(self) -> Array:
        return np.where(self.x >= 0, 1.0, np.broadcast_to(self.alpha, self.x.shape))

    def vjp(self, grads: list[Array | None], need: list[bool]) -> list[Array | None]:
        g = grads[0]
        out = super().vjp(grads, need)
        if g is not None and len(need) > 1 and need[1]:
            out[1] = unbroadcast(g * np.minimum(self.x, 0.0), self.alpha.shape)
        return out

    def rounding(self, arithmetic: Arithmetic, spread: Spread) -> Rounding:
        b = spread.i(0)
        mag = np.where((self.x < 0) | (np.abs(self.x) <= b), np.abs(self.alpha) * (np.abs(self.x) + b), 0.0)
        d = arithmetic.u * mag + arithmetic.tiny
        return Rounding([Local(d, d)])

    def remainder(self, spread: Spread, arithmetic: Arithmetic | None = None) -> list[Array | None]:
        b = spread.i(0)
        return [np.abs(1.0 - self.alpha) * kink(b, self.x, 1.0) if np.any(b) else None]


class _Clip(_Unary):
    def __init__(self, op: Op, ins: list[Array | None], ctx: Context) -> None:
        self.low, self.high = _clip_bounds(op, ins, ctx)
        super().__init__(op, ins, ctx)

    def value(self) -> Array:
        return np.clip(self.x, self.low, self.high)

    def decisions(self, spread: Spread) -> tuple[int, int]:
        edges = [self.x - e for e in (self.low, self.high) if np.isfinite(e)]
        return _near(spread.i(0), *edges) if edges else (0, 0)

    def slope(self) -> Array:
        return ((self.x > self.low) & (self.x < self.high)).astype(np.float64)

    def remainder(self, spread: Spread, arithmetic: Arithmetic | None = None) -> list[Array | None]:
        b = spread.i(0)
        if not np.any(b):
            return [None]
        out = np.zeros(self.x.shape)
        for edge in (self.low, self.high):
            if np.isfinite(edge):
                out = out + kink(b, self.x - edge, 1.0)
        return [out]


class _HardSigmoid(_Unary):
    def __init__(self, op: Op, ins: list[Array | None], ctx: Context) -> None:
        self.alpha, self.beta = _attr_float(op, "alpha", 0.2), _attr_float(op, "beta", 0.5)
        super().__init__(op, ins, ctx)

    def value(self) -> Array:
        return np.clip(self.alpha * self.x + self.beta, 0.0, 1.0)

    def decisions(self, spread: Spread) -> tuple[int, int]:
        if self.alpha == 0:
            return 0, 0
        return _near(spread.i(0), self.x + self.beta / self.alpha, self.x - (1 - self.beta) / self.alpha)

    def slope(self) -> Array:
        z = self.alpha * self.x + self.beta
        return np.where((z > 0) & (z < 1), self.alpha, 0.0)

    def rounding(self, arithmetic: Arithmetic, spread: Spread) -> Rounding:
        ax = np.abs(self.alpha) * (np.abs(self.x) + spread.i(0))
        d = arithmetic.u * (ax + ax + np.abs(self.beta)) + 2 * arithmetic.tiny
        return Rounding([Local(d, d)])

    def remainder(self, spread: Spread, arithmetic: Arithmetic | None = None) -> list[Array | None]:
        b = spread.i(0)
        if not np.any(b) or self.alpha == 0:
            return [None]
        a = abs(self.alpha)
        return [a * (kink(b, self.x + self.beta / self.alpha, 1.0) + kink(b, self.x - (1 - self.beta) / self.alpha, 1.0))]


class _HardSwish(_Unary):
    """y = x h(x), h = clip(x / 6 + 1/2, 0, 1): slope 0 below -3, x / 3 + 1/2 between, 1 above 3; kinks at
    +-3 (the slope jumps by 1/2), curvature 1/3 between."""

    def value(self) -> Array:
        return self.x * np.clip(self.x / 6.0 + 0.5, 0.0, 1.0)

    def decisions(self, spread: Spread) -> tuple[int, int]:
        return _near(spread.i(0), self.x + 3.0, self.x - 3.0)

    def slope(self) -> Array:
        return np.where(self.x <= -3, 0.0, np.where(self.x >= 3, 1.0, self.x / 3.0 + 0.5))

    def rounding(self, arithmetic: Arithmetic, spread: Spread) -> Rounding:
        b = spread.i(0)
        ax = np.abs(self.x) + b
        h = np.minimum(ax / 6.0 + 0.5, 1.0)
        # x / 6 (or x * fl(1/6): two roundings), + 1/2, then x * h: h's error times |x|, the product's rounding
        d = arithmetic.u * (ax * (2.0 * ax / 6.0 + h) + ax * h) + 3 * arithmetic.tiny
        return Rounding([Local(d, d)])

    def remainder(self, spread: Spread, arithmetic: Arithmetic | None = None) -> list[Array | None]:
        b = spread.i(0)
        if not np.any(b):
            return [None]
        inside = np.abs(self.x) < 3.0 + b
        return [kink(b, self.x + 3.0, 0.5) + kink(b, self.x - 3.0, 0.5) + np.where(inside, b * b / 6.0, 0.0)]


class _Smooth(_Unary):
    """A transcendental function: its accuracy in the arithmetic, or its lookup table."""

    name = ""

    def __init__(self, op: Op, ins: list[Array | None], ctx: Context) -> None:
        super().__init__(op, ins, ctx)

    def curvature(self, spread: Array | float) -> Array | float:
        raise NotImplementedError

    def magnitude(self, spread: Array | float) -> Array:
        """A bound of |f| on [v - B, v + B]."""
        return np.abs(self.outputs[0]) + np.abs(self.slope_) * spread + 0.5 * self.curvature(spread) * np.square(spread)

    def rounding(self, arithmetic: Arithmetic, spread: Spread) -> Rounding:
        b = spread.i(0)
        table = arithmetic.tables.get(self.name)
        if table is not None:
            return self._table_rounding(arithmetic, table, b)
        accuracy = arithmetic.accuracy(self.name)
        if accuracy is None:
            raise NoRule(f"{self.op.op_type}: no accuracy stated for {self.name} in {arithmetic.name} "
                         f"(node '{self.op.origin}')")
        d = accuracy[0] * self.magnitude(b) + accuracy[1] + arithmetic.tiny
        return Rounding([Local(d, d)])

    def _table_rounding(self, arithmetic: Arithmetic, table: Any, b: Array | float) -> Rounding:
        """T(x^) - f(x) = (T(v) - f(v)) [known] + f'(v)(x^ - x) [Jacobian] + (T' - f'(v)) (x^ - x) [remainder] +
        the index's rounding: the table reads x - start rounded to float32."""
        shift = table.evaluate(self.x) - self.outputs[0]
        index = arithmetic.u * (np.abs(self.x - table.start) + b) * np.max(np.abs(table.slopes()))
        return Rounding([Local(index, index)], shift=[shift])

    def remainder(self, spread: Spread, arithmetic: Arithmetic | None = None) -> list[Array | None]:
        b = spread.i(0)
        if not np.any(b):
            return [None]
        table = None if arithmetic is None else arithmetic.tables.get(self.name)
        if table is not None:
            return [self.table_remainder(table, b)]
        return [0.5 * self.curvature(b) * np.square(b)]

    def table_remainder(self, table: Any, spread: Array | float) -> Array:
        """max |T'_segment - f'(v)| over the segments [v - B, v + B] meets, times B."""
        slopes = np.concatenate([[0.0], table.slopes(), [0.0]])
        position = lambda x: np.clip(np.floor((x - table.start) / table.step) + 1, 0, len(slopes) - 1).astype(int)
        lo, hi = position(self.x - spread), position(self.x + spread)
        worst = np.maximum(np.abs(slopes[lo] - self.slope_), np.abs(slopes[hi] - self.slope_))
        wide = hi - lo > 1
        if np.any(wide):
            worst = np.where(wide, np.max(np.abs(slopes)) + np.abs(self.slope_), worst)
        return worst * spread


class _Sigmoid(_Smooth):
    name = "sigmoid"

    def value(self) -> Array:
        return 1.0 / (1.0 + np.exp(-self.x))

    def slope(self) -> Array:
        y = self.outputs[0]
        return y * (1.0 - y)

    def curvature(self, spread: Array | float) -> Array | float:
        return SIGMOID_CURVATURE


class _Tanh(_Smooth):
    name = "tanh"

    def value(self) -> Array:
        return np.tanh(self.x)

    def slope(self) -> Array:
        return 1.0 - np.square(self.outputs[0])

    def curvature(self, spread: Array | float) -> Array | float:
        return TANH_CURVATURE


class _Erf(_Smooth):
    name = "erf"

    def value(self) -> Array:
        return np.vectorize(math.erf, otypes=[np.float64])(self.x) if self.x.size else self.x.copy()

    def slope(self) -> Array:
        return ERF_SLOPE * np.exp(-np.square(self.x))

    def curvature(self, spread: Array | float) -> Array | float:
        return ERF_CURVATURE


class _Exp(_Smooth):
    name = "exp"

    def value(self) -> Array:
        return np.exp(self.x)

    def slope(self) -> Array:
        return self.outputs[0]

    def curvature(self, spread: Array | float) -> Array | float:
        return np.exp(self.x + spread)

    def magnitude(self, spread: Array | float) -> Array:
        return np.exp(self.x + spread)


class _Log(_Smooth):
    name = "log"

    def value(self) -> Array:
        return np.log(self.x)

    def slope(self) -> Array:
        return 1.0 / self.x

    def _low(self, spread: Array | float) -> Array:
        low = self.x - spread
        if np.any(low <= 0):
            raise NoRule(f"Log of a value whose error may reach 0 (node '{self.op.origin}')", "BOUND-E002")
        return low

    def curvature(self, spread: Array | float) -> Array | float:
        return 1.0 / np.square(self._low(spread))

    def magnitude(self, spread: Array | float) -> Array:
        low = self._low(spread)
        return np.maximum(np.abs(np.log(low)), np.abs(np.log(self.x + spread)))


class _Sqrt(_Smooth):
    """Correctly rounded (IEEE): one rounding."""

    name = "sqrt"

    def value(self) -> Array:
        if np.any(self.x < 0):
            raise NoRule(f"Sqrt of a negative value (node '{self.op.origin}')", "BOUND-E002")
        return np.sqrt(self.x)

    def slope(self) -> Array:
        with np.errstate(divide="ignore"):
            return 0.5 / self.outputs[0]

    def _low(self, spread: Array | float) -> Array:
        low = self.x - spread
        if np.any(low <= 0) and np.any(spread):
            raise NoRule(f"Sqrt of a value whose error may reach 0 (node '{self.op.origin}')", "BOUND-E002")
        return low

    def curvature(self, spread: Array | float) -> Array | float:
        return 0.25 * np.power(self._low(spread), -1.5)

    def magnitude(self, spread: Array | float) -> Array:
        return np.sqrt(self.x + spread)

    def rounding(self, arithmetic: Arithmetic, spread: Spread) -> Rounding:
        d = arithmetic.u * self.magnitude(spread.i(0)) + arithmetic.tiny
        return Rounding([Local(d, d)])


_STEPS: dict[str, type[_Unary]] = {
    "Relu": _Relu, "LeakyRelu": _Leaky, "PRelu": _PRelu, "Clip": _Clip, "HardSigmoid": _HardSigmoid,
    "HardSwish": _HardSwish, "Sigmoid": _Sigmoid, "Tanh": _Tanh, "Erf": _Erf, "Exp": _Exp, "Log": _Log,
    "Sqrt": _Sqrt,
}


def _linearize(op: Op, ins: list[Array | None], ctx: Context) -> Step:
    if op.op_type == "Clip" and len(ins) > 1:
        ins = ins[:1]
    return _STEPS[op.op_type](op, ins, ctx)


for _t in _STEPS:
    register(Rule(_t, _enclose, _linearize, exact_in_storage=_t == "Relu"))  # a clip bound may not be an FP16 value

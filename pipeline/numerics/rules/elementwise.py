"""Element-wise arithmetic with broadcasting: Add, Sub, Mul, Div, Sum, Max, Min, Pow, Where.

Enclosure: double-word ball arithmetic (exact integers stay integers). Bound: the Jacobian of each
(product rule for Mul, quotient rule for Div); one rounding of each result, of magnitude at most
|y| plus what the operands' spreads add (Sum of n inputs: n - 1 additions in any order, each partial
sum at most sum |x_i|); a constant the model states as a real number (1/sqrt 2, 0.044715) is rounded
once more by a float implementation. Remainders: Mul's B_a B_b, Div's (B_a |b| + |a| B_b) B_b /
(b^2 (|b| - B_b)) (no bound where the spread of b reaches 0), Max/Min's choice that may flip when the
operands are closer than their spreads, Pow's second derivative.

Masks (issue 38): an attention mask's -inf added to a finite value is -inf in every evaluation (the
enclosure's exact -inf, no rounding, no sensitivity: the Jacobian is 0 there); Where with a constant
condition selects each element with its ball (a computed condition is refused, naming what its rule would
check).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pipeline.numerics import doubled as D
from pipeline.numerics.arithmetic import Arithmetic
from pipeline.numerics.doubled import Ball
from pipeline.numerics.graph import Op
from pipeline.numerics.rules import (Array, Context, Local, NoRule, Rounding, Rule, Spread, Step, lift, one_rounding,
                                     plus, register, unbroadcast)

_INTEGER = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply,
            "Div": lambda x, y: np.trunc(np.true_divide(x, y)).astype(np.int64), "Mod": np.mod}


def _integers(op: Op, ins: list[Any]) -> list[Any] | None:
    if any(isinstance(x, Ball) for x in ins) or not all(np.asarray(x).dtype.kind in "iub" for x in ins):
        return None
    if op.op_type not in _INTEGER:
        raise NoRule(f"{op.op_type} of integers (node '{op.origin}')")
    fn = np.fmod if op.op_type == "Mod" and op.attr("fmod", 0) else _INTEGER[op.op_type]
    return [fn(np.asarray(ins[0]), np.asarray(ins[1]))]


def _ball(x: Any) -> Ball:
    return x if isinstance(x, Ball) else D.exact(np.asarray(x, np.float64))


def _real_constant(op: Op, ctx: Context) -> bool:
    return any(name in ctx.graph.reals for name in op.inputs)


def _is_mask(x: Ball) -> np.ndarray:
    """An attention mask's -inf (pipeline/nnef/masks.py): exactly -inf, no radius."""
    return np.isneginf(x.hi) & (x.rad == 0)


def _masked_sum(a: Ball, b: Ball) -> Ball:
    """a + b; where one is a mask's -inf and the other finite the sum is exactly -inf in every evaluation (issue
    38; double-word arithmetic on an infinity would give NaN)."""
    total = D.add(a, b)
    masked = (_is_mask(a) & np.isfinite(b.hi)) | (_is_mask(b) & np.isfinite(a.hi))
    if not np.any(masked):
        return total
    return D.select(masked, D.exact(np.full(masked.shape, -np.inf)), total)


def _enclose(op: Op, ins: list[Any], ctx: Context) -> list[Any]:
    found = _integers(op, ins)
    if found is not None:
        return found
    t = op.op_type
    balls = [_ball(x) for x in ins if x is not None]
    if t == "Add":
        return [_masked_sum(balls[0], balls[1])]
    if t == "Sub":
        return [D.sub(balls[0], balls[1])]
    if t == "Mul":
        return [D.mul(balls[0], balls[1])]
    if t == "Div":
        return [D.div(balls[0], balls[1])]
    if t == "Sum":
        total = balls[0]
        for x in balls[1:]:
            total = D.add(total, x)
        return [total]
    if t in ("Max", "Min"):
        fn = D.maximum if t == "Max" else D.minimum
        total = balls[0]
        for x in balls[1:]:
            total = fn(total, x)
        return [total]
    if t == "Pow":
        return [_pow_enclose(op, ins, ctx)]
    if t == "Where":
        return [D.select(_condition(op, ctx), balls[1], balls[2])]
    raise NoRule(f"no rule for {t} (node '{op.origin}')")


def _exponent(op: Op, ctx: Context) -> float:
    value = ctx.constant(op.inputs[1])
    if value is None or np.unique(np.asarray(value, np.float64)).size != 1:
        raise NoRule(f"Pow with a computed or non-uniform exponent (node '{op.origin}')")
    return float(np.ravel(value)[0])


def _pow_enclose(op: Op, ins: list[Any], ctx: Context) -> Ball:
    p = _exponent(op, ctx)
    x = _ball(ins[0])
    if p == 1.0:
        return x
    if p == 2.0:
        return D.mul(x, x)
    if p == 3.0:
        return D.mul(D.mul(x, x), x)
    if p == 0.5:
        return D.apply_arb(x, lambda a: a.sqrt())
    flint = D._flint()
    exponent = flint.arb(p)
    low, _ = D.bounds(x)
    if np.any(low <= 0) and not float(p).is_integer():
        raise NoRule(f"Pow of a value that may be <= 0 to the non-integer power {p} (node '{op.origin}')",
                     "BOUND-E002")
    return D.apply_arb(x, lambda a: a ** exponent)


def _condition(op: Op, ctx: Context) -> np.ndarray:
    value = ctx.constant(op.inputs[0])
    if value is None:
        raise NoRule(f"Where with a computed condition (node '{op.origin}'): its rule would check that every "
                     "comparison is decided on the enclosure and stable under the spread")
    return np.asarray(value, bool)


class _Binary(Step):
    def __init__(self, op: Op, ins: list[Array | None], ctx: Context) -> None:
        self.op = op
        self.ins = [np.asarray(x, np.float64) for x in ins if x is not None]
        self.shapes = [x.shape for x in self.ins]
        self.constant = [ctx.graph.is_constant(name) for name in op.inputs]
        self.real = _real_constant(op, ctx)
        self.outputs = [self._value()]

    def _value(self) -> Array:
        raise NotImplementedError

    def _bcast(self, t: Array | None, k: int) -> Array | float:
        return 0.0 if t is None else t

    def rounding(self, arithmetic: Arithmetic, spread: Spread) -> Rounding:
        mag = np.abs(self.outputs[0]) + spread.o()
        local = one_rounding(arithmetic, mag)
        if self.real:
            local = plus(local, one_rounding(arithmetic, mag))
        return Rounding([local])


class _AddSub(_Binary):
    """x + y, x - y. An attention mask's -inf added to a finite value gives -inf in every evaluation: no
    rounding, no sensitivity there (issue 38)."""

    def __init__(self, op: Op, ins: list[Array | None], ctx: Context, sign: float) -> None:
        self.sign = sign
        super().__init__(op, ins, ctx)
        self.masked = None
        if sign > 0 and np.isneginf(self.outputs[0]).any():
            a, b = np.broadcast_arrays(*self.ins)
            self.masked = (np.isneginf(a) & np.isfinite(b)) | (np.isneginf(b) & np.isfinite(a))

    def _value(self) -> Array:
        return self.ins[0] + self.sign * self.ins[1]

    def _unmasked(self, t: Array) -> Array:
        return t if self.masked is None else np.where(self.masked, 0.0, t)

    def rounding(self, arithmetic: Arithmetic, spread: Spread) -> Rounding:
        found = super().rounding(arithmetic, spread)
        if self.masked is None:
            return found
        local = found.local[0]
        return Rounding([Local(self._unmasked(np.broadcast_to(local.d, self.masked.shape)),
                               self._unmasked(np.broadcast_to(local.q, self.masked.shape)))])

    def jvp(self, tangents: list[Array | None]) -> list[Array | None]:
        ndim = self.outputs[0].ndim
        a, b = lift(tangents[0], ndim), lift(tangents[1], ndim)
        if a is None and b is None:
            return [None]
        out = 0.0 if a is None else a
        if b is not None:
            out = out + self.sign * b
        batch = (a if a is not None else b).shape[0]
        return [self._unmasked(np.broadcast_to(out, (batch,) + self.outputs[0].shape))]

    def vjp(self, grads: list[Array | None], need: list[bool]) -> list[Array | None]:
        g = grads[0]
        if g is None:
            return [None] * len(need)
        g = self._unmasked(g)
        return [unbroadcast(g, self.shapes[0]) if need[0] else None,
                unbroadcast(self.sign * g, self.shapes[1]) if need[1] else None]


class _Mul(_Binary):
    def _value(self) -> Array:
        return self.ins[0] * self.ins[1]

    def jvp(self, tangents: list[Array | None]) -> list[Array | None]:
        ndim = self.outputs[0].ndim
        a, b = lift(tangents[0], ndim), lift(tangents[1], ndim)
        if a is None and b is None:
            return [None]
        out = 0.0
        if a is not None:
            out = a * self.ins[1]
        if b is not None:
            out = out + self.ins[0] * b
        batch = (a if a is not None else b).shape[0]
        return [np.broadcast_to(out, (batch,) + self.outputs[0].shape)]

    def vjp(self, grads: list[Array | None], need: list[bool]) -> list[Array | None]:
        g = grads[0]
        if g is None:
            return [None] * len(need)
        return [unbroadcast(g * self.ins[1], self.shapes[0]) if need[0] else None,
                unbroadcast(g * self.ins[0], self.shapes[1]) if need[1] else None]

    def rounding(self, arithmetic: Arithmetic, spread: Spread) -> Rounding:
        a, b = spread.i(0), spread.i(1)
        mag = np.abs(self.outputs[0]) + np.abs(self.ins[0]) * b + np.abs(self.ins[1]) * a + a * b
        local = one_rounding(arithmetic, mag)
        if self.real:
            local = plus(local, one_rounding(arithmetic, mag))
        return Rounding([local])

    def remainder(self, spread: Spread, arithmetic: Arithmetic | None = None) -> list[Array | None]:
        a, b = spread.i(0), spread.i(1)
        if not (np.any(a) and np.any(b)):
            return [None]
        return [np.broadcast_to(a * b, self.outputs[0].shape)]


class _Div(_Binary):
    def _value(self) -> Array:
        return self.ins[0] / self.ins[1]

    def jvp(self, tangents: list[Array | None]) -> list[Array | None]:
        ndim = self.outputs[0].ndim
        a, b = lift(tangents[0], ndim), lift(tangents[1], ndim)
        if a is None and b is None:
            return [None]
        out = 0.0
        if a is not None:
            out = a / self.ins[1]
        if b is not None:
            out = out - self.outputs[0] / self.ins[1] * b
        batch = (a if a is not None else b).shape[0]
        return [np.broadcast_to(out, (batch,) + self.outputs[0].shape)]

    def vjp(self, grads: list[Array | None], need: list[bool]) -> list[Array | None]:
        g = grads[0]
        if g is None:
            return [None] * len(need)
        return [unbroadcast(g / self.ins[1], self.shapes[0]) if need[0] else None,
                unbroadcast(-g * self.outputs[0] / self.ins[1], self.shapes[1]) if need[1] else None]

    def _low(self, spread: Spread) -> Array:
        low = np.abs(self.ins[1]) - spread.i(1)
        if np.any(low <= 0):
            raise NoRule(f"Div by a value whose error may reach 0 (node '{self.op.origin}')", "BOUND-E002")
        return low

    def rounding(self, arithmetic: Arithmetic, spread: Spread) -> Rounding:
        low = self._low(spread)
        mag = (np.abs(self.ins[0]) + spread.i(0)) / low
        local = one_rounding(arithmetic, mag)
        if self.real:
            local = plus(local, one_rounding(arithmetic, mag))
        return Rounding([local])

    def remainder(self, spread: Spread, arithmetic: Arithmetic | None = None) -> list[Array | None]:
        a, b = spread.i(0), spread.i(1)
        if not np.any(b):
            return [None]
        low = self._low(spread)
        y = self.ins[1]
        return [np.broadcast_to((a * np.abs(y) + np.abs(self.ins[0]) * b) * b / (y * y * low), self.outputs[0].shape)]


class _Sum(Step):
    def __init__(self, op: Op, ins: list[Array | None], ctx: Context) -> None:
        self.ins = [np.asarray(x, np.float64) for x in ins]
        self.outputs = [sum(self.ins)]

    def jvp(self, tangents: list[Array | None]) -> list[Array | None]:
        present = [lift(t, self.outputs[0].ndim) for t in tangents if t is not None]
        if not present:
            return [None]
        return [np.broadcast_to(sum(present), (present[0].shape[0],) + self.outputs[0].shape)]

    def vjp(self, grads: list[Array | None], need: list[bool]) -> list[Array | None]:
        g = grads[0]
        return [unbroadcast(g, x.shape) if g is not None and n else None for x, n in zip(self.ins, need)]

    def rounding(self, arithmetic: Arithmetic, spread: Spread) -> Rounding:
        n = len(self.ins)
        if n < 2:
            return Rounding([None])
        total = sum(np.abs(x) + spread.i(k) for k, x in enumerate(self.ins))
        u = arithmetic.u
        return Rounding([Local(u * (n - 1) * total + arithmetic.tiny, u * np.sqrt(n - 1) * total + arithmetic.tiny)])


class _Extremum(Step):
    """Max / Min of n inputs: the chosen input's Jacobian; the choice may flip where the runner-up is closer
    than the spreads (remainder: the excess, as for a kink)."""

    def __init__(self, op: Op, ins: list[Array | None], ctx: Context) -> None:
        self.sign = 1.0 if op.op_type == "Max" else -1.0
        self.ins = [np.asarray(x, np.float64) for x in ins]
        shape = np.broadcast_shapes(*(x.shape for x in self.ins))
        stacked = np.stack([np.broadcast_to(self.sign * x, shape) for x in self.ins])
        self.choice = np.argmax(stacked, axis=0)
        self.outputs = [self.sign * stacked.max(axis=0)]
        order = np.sort(stacked, axis=0)
        self.gap = order[-1] - order[-2] if len(self.ins) > 1 else np.full(shape, np.inf)

    def jvp(self, tangents: list[Array | None]) -> list[Array | None]:
        present = [t for t in tangents if t is not None]
        if not present:
            return [None]
        batch = present[0].shape[0]
        out = np.zeros((batch,) + self.outputs[0].shape)
        for k, t in enumerate(tangents):
            if t is not None:
                out = np.where(self.choice == k, np.broadcast_to(lift(t, out.ndim - 1), out.shape), out)
        return [out]

    def vjp(self, grads: list[Array | None], need: list[bool]) -> list[Array | None]:
        g = grads[0]
        if g is None:
            return [None] * len(need)
        return [unbroadcast(np.where(self.choice == k, g, 0.0), x.shape) if n else None
                for k, (x, n) in enumerate(zip(self.ins, need))]

    def decisions(self, spread: Spread) -> tuple[int, int]:
        rho = self.remainder(spread)[0]
        if rho is None:
            return 0, int(np.size(self.gap))
        return int(np.count_nonzero(rho > 2.0 ** -100)), int(np.size(rho))

    def remainder(self, spread: Spread, arithmetic: Arithmetic | None = None) -> list[Array | None]:
        largest = np.zeros(self.outputs[0].shape)
        for k in range(len(self.ins)):
            largest = np.maximum(largest, spread.i(k))
        if not np.any(largest):
            return [None]
        return [np.maximum(2.0 * largest - self.gap * (1.0 - 2.0 ** -40), 0.0)]


class _Pow(Step):
    """x^p, p a constant: p = 2 and 3 as products (one and two roundings, as implementations compute them),
    0.5 as sqrt (correctly rounded), others from pow's stated accuracy."""

    def __init__(self, op: Op, ins: list[Array | None], ctx: Context) -> None:
        self.op = op
        self.p = _exponent(op, ctx)
        self.x = np.asarray(ins[0], np.float64)
        self.outputs = [np.power(self.x, self.p)]

    def _slope(self) -> Array:
        return self.p * np.power(self.x, self.p - 1.0)

    def jvp(self, tangents: list[Array | None]) -> list[Array | None]:
        return [None if tangents[0] is None else tangents[0] * self._slope()]

    def vjp(self, grads: list[Array | None], need: list[bool]) -> list[Array | None]:
        return [None if grads[0] is None or not need[0] else grads[0] * self._slope()] + [None] * (len(need) - 1)

    def rounding(self, arithmetic: Arithmetic, spread: Spread) -> Rounding:
        b = spread.i(0)
        mag = np.power(np.abs(self.x) + b, self.p) if self.p > 0 else np.abs(self.outputs[0]) + spread.o()
        if self.p in (2.0, 0.5):
            return Rounding([one_rounding(arithmetic, mag)])
        if self.p == 3.0:
            return Rounding([plus(one_rounding(arithmetic, mag), one_rounding(arithmetic, mag))])
        accuracy = arithmetic.accuracy("pow")
        if accuracy is None:
            raise NoRule(f"Pow {self.p}: no accuracy stated for pow in {arithmetic.name} (node '{self.op.origin}')")
        d = accuracy[0] * mag + accuracy[1] + arithmetic.tiny
        return Rounding([Local(d, d)])

    def remainder(self, spread: Spread, arithmetic: Arithmetic | None = None) -> list[Array | None]:
        b = spread.i(0)
        if not np.any(b) or self.p in (1.0, 0.0):
            return [None]
        p = self.p
        low = np.abs(self.x) - b
        if (p - 2.0) < 0 and np.any(low <= 0):
            raise NoRule(f"Pow {p} of a value whose error may reach 0 (node '{self.op.origin}')", "BOUND-E002")
        reach = np.maximum(np.abs(self.x) + b, 0.0) if p >= 2.0 else low
        return [0.5 * abs(p * (p - 1.0)) * np.power(reach, p - 2.0) * b * b]


class _Where(Step):
    def __init__(self, op: Op, ins: list[Array | None], ctx: Context) -> None:
        self.mask = _condition(op, ctx)
        self.ins = [None if x is None else np.asarray(x, np.float64) for x in ins]
        self.outputs = [np.where(self.mask, self.ins[1], self.ins[2])]

    def jvp(self, tangents: list[Array | None]) -> list[Array | None]:
        ndim = self.outputs[0].ndim
        a, b = lift(tangents[1], ndim), lift(tangents[2], ndim)
        if a is None and b is None:
            return [None]
        batch = (a if a is not None else b).shape[0]
        shape = (batch,) + self.outputs[0].shape
        return [np.where(self.mask, 0.0 if a is None else np.broadcast_to(a, shape),
                         0.0 if b is None else np.broadcast_to(b, shape))]

    def vjp(self, grads: list[Array | None], need: list[bool]) -> list[Array | None]:
        g = grads[0]
        if g is None:
            return [None] * len(need)
        return [None, unbroadcast(np.where(self.mask, g, 0.0), self.ins[1].shape) if need[1] else None,
                unbroadcast(np.where(self.mask, 0.0, g), self.ins[2].shape) if need[2] else None]


def _integer_step(op: Op, ins: list[Array | None]) -> Step | None:
    found = _integers(op, ins)
    if found is None:
        return None

    class _Exact(Step):
        outputs = found

        def vjp(self, grads, need):
            return [None] * len(need)

        def jvp(self, tangents):
            return [None]

    return _Exact()


def _linearize(op: Op, ins: list[Array | None], ctx: Context) -> Step:
    exact_step = _integer_step(op, ins)
    if exact_step is not None:
        return exact_step
    t = op.op_type
    if t == "Add":
        return _AddSub(op, ins, ctx, 1.0)
    if t == "Sub":
        return _AddSub(op, ins, ctx, -1.0)
    if t == "Mul":
        return _Mul(op, ins, ctx)
    if t == "Div":
        return _Div(op, ins, ctx)
    if t == "Sum":
        return _Sum(op, ins, ctx)
    if t in ("Max", "Min"):
        return _Extremum(op, ins, ctx)
    if t == "Pow":
        return _Pow(op, ins, ctx)
    if t == "Where":
        return _Where(op, ins, ctx)
    raise NoRule(f"no rule for {t} (node '{op.origin}')")


for _t in ("Add", "Sub", "Mul", "Div", "Sum", "Pow", "Mod"):
    register(Rule(_t, _enclose, _linearize))
for _t in ("Max", "Min", "Where"):  # each element one of the (stored) operands
    register(Rule(_t, _enclose, _linearize, exact_in_storage=True))

"""Windows and reductions: MaxPool, GlobalMaxPool, AveragePool, GlobalAveragePool, ReduceMean.

Enclosure: the maximum of a window is the ball of the one element whose lower bound is the largest when
no other element's ball reaches it (or several copies of the same exact number), else the hull; sums
are exact slice products (pipeline.numerics.products.matmul with a row of ones), then divided by the
count. Bound: a maximum's Jacobian routes to the chosen element; the choice may flip where the runner-up
is within the spreads (remainder (2 B - gap)+). A mean's n terms are added in any order (every partial
sum at most S = sum |x|: d = u (n - 1) S, q = u sqrt(n - 1) S) and divided by the count (or multiplied
by a rounded reciprocal: two roundings). ceil_mode: the extra taps are end padding (never the maximum,
not counted).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pipeline.numerics import doubled as D
from pipeline.numerics import products
from pipeline.numerics.arithmetic import Arithmetic
from pipeline.numerics.doubled import Ball
from pipeline.numerics.graph import Op
from pipeline.numerics.rules import NEGLIGIBLE, Array, Context, Local, NoRule, Rounding, Rule, Spread, Step, register

FAR = -1.0e300  # the padding of a max window: below every activation, finite (interval bounds stay numbers)


def pool_attrs(op: Op, shape: tuple[int, ...]) -> tuple[list[int], list[int], list[int], list[int]]:
    """kernel, pads, strides, dilations; ceil_mode as end padding (ONNX: ceil((n + p + q - span) / s) + 1
    outputs, one less where the last window would start in the end padding)."""
    spatial = len(shape) - 2
    if op.attr("auto_pad", "NOTSET") not in ("NOTSET", ""):
        raise NoRule(f"{op.op_type} with auto_pad (node '{op.origin}')")
    kernel = list(op.attr("kernel_shape"))
    pads = list(op.attr("pads", [0] * 2 * spatial))
    strides = list(op.attr("strides", [1] * spatial))
    dilations = list(op.attr("dilations", [1] * spatial))
    if op.attr("ceil_mode", 0):
        if op.op_type == "AveragePool" and op.attr("count_include_pad", 0):
            raise NoRule(f"AveragePool with ceil_mode and count_include_pad (node '{op.origin}')")
        for i in range(spatial):
            extent = shape[2 + i] + pads[i] + pads[i + spatial]
            span = (kernel[i] - 1) * dilations[i] + 1
            out = -(-(extent - span) // strides[i]) + 1
            if (out - 1) * strides[i] >= shape[2 + i] + pads[i]:
                out -= 1
            pads[i + spatial] += max(0, (out - 1) * strides[i] + span - extent)
    return kernel, pads, strides, dilations


def windows(x: np.ndarray, kernel: list[int], pads: list[int], strides: list[int], dilations: list[int],
            fill: Any) -> np.ndarray:
    """[..., N, C, *out, taps] of the padded input (the leading axes kept)."""
    spatial = len(kernel)
    half = len(pads) // 2
    lead = x.ndim - spatial
    padded = np.pad(x, [(0, 0)] * lead + [(pads[i], pads[i + half]) for i in range(spatial)], constant_values=fill)
    span = [dilations[i] * (kernel[i] - 1) + 1 for i in range(spatial)]
    view = np.lib.stride_tricks.sliding_window_view(padded, span, axis=tuple(range(lead, lead + spatial)))
    view = view[(Ellipsis, *[slice(None, None, d) for d in dilations])]
    view = view[(slice(None),) * lead + tuple(slice(None, None, s) for s in strides)]
    return view.reshape(view.shape[:lead + spatial] + (-1,))


def _global(x_shape: tuple[int, ...]) -> tuple[list[int], list[int], list[int], list[int]]:
    spatial = len(x_shape) - 2
    return list(x_shape[2:]), [0] * 2 * spatial, [1] * spatial, [1] * spatial


def _geometry(op: Op, shape: tuple[int, ...]) -> tuple[list[int], list[int], list[int], list[int]]:
    if op.op_type.startswith("Global"):
        return _global(shape)
    return pool_attrs(op, shape)


# --- maximum ---------------------------------------------------------------------------------------------


def window_max(win: Ball) -> Ball:
    """The maximum over the last axis of a ball array."""
    low, high = D.bounds(win)
    best = low.max(axis=-1, keepdims=True)
    candidate = high >= best
    count = candidate.sum(axis=-1)
    first = np.argmax(candidate, axis=-1)[..., None]
    pick = Ball(*(np.take_along_axis(getattr(win, k), first, -1)[..., 0] for k in ("hi", "lo", "rad")))
    same = np.ones(count.shape, bool)
    for k in ("hi", "lo"):
        arr = getattr(win, k)
        ref = np.take_along_axis(arr, first, -1)
        same &= np.all(np.where(candidate, arr == ref, True), axis=-1)
    same &= np.all(np.where(candidate, win.rad == 0, True), axis=-1)
    decided = (count == 1) | same
    if np.all(decided):
        return pick
    # overlapping candidates: the maximum is one of them; a ball at one of their midpoints (the largest high
    # word), wide enough for all of them
    top = np.argmax(np.where(candidate, win.hi, -np.inf), axis=-1)[..., None]
    centre = D.Ball(*(np.take_along_axis(getattr(win, k), top, -1) for k in ("hi", "lo", "rad")))
    spread = D.sub(win, D.Ball(centre.hi, centre.lo, np.zeros_like(centre.rad)))
    reach = np.where(candidate, D.up(np.abs(spread.hi) + np.abs(spread.lo) + spread.rad), 0.0).max(axis=-1)
    widened = D.Ball(centre.hi[..., 0], centre.lo[..., 0], np.maximum(centre.rad[..., 0], reach))
    return D.select(decided, pick, widened)


def _max_enclose(op: Op, ins: list[Any], ctx: Context) -> list[Any]:
    x = ins[0]
    kernel, pads, strides, dilations = _geometry(op, x.shape)
    win = Ball(windows(x.hi, kernel, pads, strides, dilations, FAR), windows(x.lo, kernel, pads, strides, dilations, 0.0),
               windows(x.rad, kernel, pads, strides, dilations, 0.0))
    out = window_max(win)
    if op.op_type == "GlobalMaxPool":
        out = out.map(lambda a: a.reshape(x.shape[:2] + (1,) * (x.hi.ndim - 2)))
    return [out]


class _MaxStep(Step):
    def __init__(self, op: Op, ins: list[Array | None], ctx: Context) -> None:
        if len(op.outputs) > 1 and op.outputs[1]:
            raise NoRule(f"MaxPool with an Indices output (node '{op.origin}')")
        x = np.asarray(ins[0], np.float64)
        self.shape = x.shape
        self.geo = _geometry(op, x.shape)
        win = windows(x, *self.geo, -np.inf)
        self.index = windows(np.arange(x.size).reshape(x.shape), *self.geo, -1)
        arg = np.argmax(win, axis=-1)[..., None]
        self.choice = np.take_along_axis(self.index, arg, -1)[..., 0]
        out = np.take_along_axis(win, arg, -1)[..., 0]
        self.gaps = out[..., None] - win                      # >= 0; the chosen tap's own gap is 0
        self.arg = arg
        self.out_shape = out.shape if op.op_type == "MaxPool" else x.shape[:2] + (1,) * (x.ndim - 2)
        self.outputs = [out.reshape(self.out_shape)]

    def jvp(self, tangents: list[Array | None]) -> list[Array | None]:
        t = tangents[0]
        if t is None:
            return [None]
        return [t.reshape(t.shape[0], -1)[:, self.choice.ravel()].reshape((t.shape[0],) + self.out_shape)]

    def vjp(self, grads: list[Array | None], need: list[bool]) -> list[Array | None]:
        g = grads[0]
        if g is None or not need[0]:
            return [None] * len(need)
        out = np.zeros((g.shape[0], int(np.prod(self.shape))))
        np.add.at(out, (slice(None), self.choice.ravel()), g.reshape(g.shape[0], -1))
        return [out.reshape((g.shape[0],) + self.shape)] + [None] * (len(need) - 1)

    def _excess(self, b: Array | float) -> Array:
        """Per window and tap, how far the spreads of the chosen element and that tap reach past their gap."""
        win_b = windows(np.broadcast_to(b, self.shape).astype(np.float64), *self.geo, 0.0)
        chosen = np.take_along_axis(win_b, self.arg, -1)
        excess = chosen + win_b - self.gaps * (1.0 - 2.0 ** -40)
        np.put_along_axis(excess, self.arg, -np.inf, -1)
        return np.where(self.index < 0, -np.inf, excess)

    def remainder(self, spread: Spread, arithmetic: Arithmetic | None = None) -> list[Array | None]:
        b = spread.i(0)
        if not np.any(b) or self.index.shape[-1] < 2:
            return [None]
        return [np.maximum(self._excess(b).max(axis=-1), 0.0).reshape(self.out_shape)]

    def decisions(self, spread: Spread) -> tuple[int, int]:
        b = spread.i(0)
        if self.index.shape[-1] < 2:
            return 0, 0
        near = (self._excess(b).max(axis=-1) > NEGLIGIBLE) if np.any(b) else np.zeros(self.choice.shape, bool)
        return int(np.count_nonzero(near)), int(near.size)


# --- means -----------------------------------------------------------------------------------------------


def _counts(op: Op, shape: tuple[int, ...], geo: tuple[list[int], ...]) -> np.ndarray:
    """The divisor of each window: its taps inside the input (count_include_pad 0), or the kernel's size."""
    kernel = geo[0]
    if op.attr("count_include_pad", 0):
        return np.full(windows(np.ones(shape), *geo, 0.0).shape[:-1], float(np.prod(kernel)))
    return windows(np.ones(shape), *geo, 0.0).sum(axis=-1)


def _reduce_axes(op: Op, x_shape: tuple[int, ...], ctx: Context) -> tuple[tuple[int, ...], bool]:
    axes = op.attr("axes")
    if axes is None and len(op.inputs) > 1 and op.inputs[1]:
        value = ctx.constant(op.inputs[1])
        if value is None:
            raise NoRule(f"ReduceMean with computed axes (node '{op.origin}')")
        axes = [int(a) for a in np.ravel(value)]
    if axes is None or len(axes) == 0:
        if op.attr("noop_with_empty_axes", 0):
            raise NoRule(f"ReduceMean with noop_with_empty_axes (node '{op.origin}')")
        axes = list(range(len(x_shape)))
    return tuple(sorted(a % len(x_shape) for a in axes)), bool(op.attr("keepdims", 1))


def _mean_enclose(op: Op, ins: list[Any], ctx: Context) -> list[Any]:
    x = ins[0]
    if op.op_type == "ReduceMean":
        axes, keep = _reduce_axes(op, x.shape, ctx)
        total = products.reduce_sum(x, axes)
        count = float(np.prod([x.shape[a] for a in axes]))
        y = D.div(total, D.exact(np.full(total.shape, count)))
        if not keep:
            y = y.map(lambda a: np.squeeze(a, axis=axes))
        return [y]
    if op.op_type == "GlobalAveragePool":
        axes = tuple(range(2, x.hi.ndim))
        total = products.reduce_sum(x, axes)
        return [D.div(total, D.exact(np.full(total.shape, float(np.prod(x.shape[2:])))))]
    geo = _geometry(op, x.shape)
    win = x.map(lambda a: windows(a, *geo, 0.0))                   # [N, C, *out, taps]
    taps = win.shape[-1]
    column = win.map(lambda a: a[..., None])                        # [..., taps, 1]
    total = products.matmul(np.ones((1, taps)), column).map(lambda a: a[..., 0, 0])
    return [D.div(total, D.exact(_counts(op, x.shape, geo)))]


class MeanStep(Step):
    """A mean over windows (AveragePool) or over axes (GlobalAveragePool, ReduceMean): a linear map."""

    def __init__(self, op: Op, ins: list[Array | None], ctx: Context) -> None:
        x = np.asarray(ins[0], np.float64)
        self.shape = x.shape
        self.x_abs = np.abs(x)
        self.op = op
        if op.op_type == "AveragePool":
            self.geo = _geometry(op, x.shape)
            self.count = _counts(op, x.shape, self.geo)
            self.terms = int(np.prod(self.geo[0]))
            self.outputs = [windows(x, *self.geo, 0.0).sum(axis=-1) / self.count]
            self.index = windows(np.arange(x.size).reshape(x.shape), *self.geo, -1)
        else:
            if op.op_type == "GlobalAveragePool":
                self.axes, self.keep = tuple(range(2, x.ndim)), True
            else:
                self.axes, self.keep = _reduce_axes(op, x.shape, ctx)
            self.count = float(np.prod([x.shape[a] for a in self.axes]))
            self.terms = int(self.count)
            y = x.sum(axis=self.axes, keepdims=True) / self.count
            self.kept = y.shape
            self.outputs = [y if self.keep else np.squeeze(y, axis=self.axes)]

    def _apply(self, t: Array) -> Array:
        if self.op.op_type == "AveragePool":
            return windows(t, *self.geo, 0.0).sum(axis=-1) / self.count
        axes = tuple(a + 1 for a in self.axes)
        y = t.sum(axis=axes, keepdims=True) / self.count
        return y if self.keep else np.squeeze(y, axis=axes)

    def jvp(self, tangents: list[Array | None]) -> list[Array | None]:
        return [None if tangents[0] is None else self._apply(tangents[0])]

    def vjp(self, grads: list[Array | None], need: list[bool]) -> list[Array | None]:
        g = grads[0]
        if g is None or not need[0]:
            return [None] * len(need)
        batch = g.shape[0]
        if self.op.op_type == "AveragePool":
            scaled = (g / self.count).reshape(batch, -1, 1)
            index = self.index.reshape(-1, self.index.shape[-1])
            out = np.zeros((batch, int(np.prod(self.shape)) + 1))
            spread = np.broadcast_to(scaled, (batch,) + index.shape)
            np.add.at(out, (slice(None), np.where(index < 0, out.shape[1] - 1, index)), spread)
            return [out[:, :-1].reshape((batch,) + self.shape)] + [None] * (len(need) - 1)
        g = g.reshape((batch,) + self.kept)
        return [np.broadcast_to(g / self.count, (batch,) + self.shape).copy()] + [None] * (len(need) - 1)

    def rounding(self, arithmetic: Arithmetic, spread: Spread) -> Rounding:
        """n terms in any order (partial sums at most S = sum |x|), then a division (or a rounded reciprocal
        and a product: two roundings)."""
        n = self.terms
        x_abs = np.broadcast_to(self.x_abs + spread.i(0), self.shape)
        s = self._apply(x_abs[None])[0] * self.count
        u = arithmetic.u
        d = u * ((n - 1) * s + 2.0 * s) / self.count + arithmetic.tiny * (n + 2)
        q = u * (np.sqrt(max(n - 1, 0)) * s + 2.0 * s) / self.count + arithmetic.tiny * (n + 2)
        return Rounding([Local(d, q)])


def _max_linearize(op: Op, ins: list[Array | None], ctx: Context) -> Step:
    return _MaxStep(op, ins, ctx)


def _mean_linearize(op: Op, ins: list[Array | None], ctx: Context) -> Step:
    return MeanStep(op, ins, ctx)


for _t in ("MaxPool", "GlobalMaxPool"):
    register(Rule(_t, _max_enclose, _max_linearize, exact_in_storage=True))
for _t in ("AveragePool", "GlobalAveragePool", "ReduceMean"):
    register(Rule(_t, _mean_enclose, _mean_linearize))

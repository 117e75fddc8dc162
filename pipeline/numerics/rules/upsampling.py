"""Operators that spread their input over a larger output: ConvTranspose and Resize.

ConvTranspose is the convolution of its input dilated by the strides (zeros between the elements) and
padded by dilation (k - 1) - pad on each side (plus output_padding at the end), with the kernel flipped
and its input and output channels swapped per group: the same real numbers, so the enclosure and the
bound are Conv's (pipeline.numerics.rules.linear) on that input. The zeros add exact zero products: the
rounding counts them as additions (a bound a little larger than needed, never smaller).

Resize in nearest mode moves elements (pipeline.numerics.rules.movement); in linear mode it is the
product, axis by axis, of interpolation matrices whose weights are exact rationals (half_pixel,
pytorch_half_pixel, align_corners: the coordinate transformation evaluated in fractions). Its rounding:
2^d products and sums plus d weight products (gamma_(2^d + d) of the corners' largest magnitude), and an
implementation computing the sample position in float32 ((y + 0.5) / scale - 0.5) moves each weight by
at most 2 u (n + 1) (a division and a subtraction of a value at most n), which moves y by that times
|x_hi - x_lo| <= 2 max |x| per axis.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

from pipeline.numerics import doubled as D
from pipeline.numerics import products
from pipeline.numerics.arithmetic import Arithmetic
from pipeline.numerics.doubled import Ball
from pipeline.numerics.graph import Op
from pipeline.numerics.rules import Array, Context, Local, NoRule, Rounding, Rule, Spread, Step, register
from pipeline.numerics.rules import movement
from pipeline.numerics.rules.linear import ConvStep, _conv_enclose


# --- ConvTranspose -------------------------------------------------------------------------------------------


class _Transposed:
    """The equivalent convolution of one ConvTranspose node: input index map, weights, attributes."""

    def __init__(self, op: Op, x_shape: tuple[int, ...], w: np.ndarray) -> None:
        if op.attr("auto_pad", "NOTSET") not in ("NOTSET", "") or op.attr("output_shape") is not None:
            raise NoRule(f"ConvTranspose with auto_pad or output_shape (node '{op.origin}')")
        spatial = len(x_shape) - 2
        group = int(op.attr("group", 1))
        strides = list(op.attr("strides", [1] * spatial))
        dilations = list(op.attr("dilations", [1] * spatial))
        pads = list(op.attr("pads", [0] * 2 * spatial))
        extra = list(op.attr("output_padding", [0] * spatial))
        kernel = w.shape[2:]
        channels, og = w.shape[0], w.shape[1]
        cg = channels // group
        # weights [C, Og, *k] -> [G * Og, Cg, *k], flipped
        wg = w.reshape(group, cg, og, *kernel).swapaxes(1, 2).reshape(group * og, cg, *kernel)
        self.weights = np.ascontiguousarray(wg[(slice(None), slice(None)) + (slice(None, None, -1),) * spatial])
        dilated = [(x_shape[2 + i] - 1) * strides[i] + 1 for i in range(spatial)]
        before = [dilations[i] * (kernel[i] - 1) - pads[i] for i in range(spatial)]
        after = [dilations[i] * (kernel[i] - 1) - pads[i + spatial] + extra[i] for i in range(spatial)]
        if min(before + after) < 0:
            raise NoRule(f"ConvTranspose with pads larger than its kernel's reach (node '{op.origin}')")
        self.shape = tuple(x_shape[:2]) + tuple(d + b + a for d, b, a in zip(dilated, before, after))
        index = np.full(self.shape, -1, np.int64)
        where = (slice(None), slice(None)) + tuple(slice(b, b + d, s) for b, d, s in zip(before, dilated, strides))
        index[where] = np.arange(int(np.prod(x_shape))).reshape(x_shape)
        self.index = index
        self.conv = Op("Conv", op.name, [op.inputs[0], op.inputs[1]] + op.inputs[2:3], op.outputs,
                       {"group": group, "dilations": dilations, "strides": [1] * spatial,
                        "pads": [0] * 2 * spatial}, op.origin, op.source)

    def spread(self, values: np.ndarray) -> np.ndarray:
        """The input placed in the dilated, padded grid (zeros elsewhere); leading axes kept."""
        lead = values.shape[:values.ndim - len(self.shape)]
        flat = values.reshape(lead + (-1,))
        out = np.concatenate([flat, np.zeros(lead + (1,))], axis=-1)
        return out[..., np.where(self.index < 0, flat.shape[-1], self.index)]

    def gather(self, values: np.ndarray, x_shape: tuple[int, ...]) -> np.ndarray:
        """The adjoint of spread: the grid's values at the input's positions."""
        lead = values.shape[:values.ndim - len(self.shape)]
        keep = self.index >= 0
        out = np.zeros(lead + (int(np.prod(x_shape)),))
        out[..., self.index[keep]] = values.reshape(lead + (-1,))[..., keep.ravel()]
        return out.reshape(lead + tuple(x_shape))


def _ct_enclose(op: Op, ins: list[Any], ctx: Context) -> list[Any]:
    x, w = ins[0], ins[1]
    t = _Transposed(op, x.shape, w.hi if isinstance(w, Ball) else np.asarray(w))
    grid = x.map(t.spread)
    bias = ins[2] if len(ins) > 2 else None
    return _conv_enclose(t.conv, [grid, D.exact(t.weights)] + ([bias] if bias is not None else []), ctx)


class _ConvTransposeStep(Step):
    def __init__(self, op: Op, ins: list[Array | None], ctx: Context) -> None:
        if ctx.constant(op.inputs[1]) is None:
            raise NoRule(f"ConvTranspose with computed weights (node '{op.origin}')")
        x = np.asarray(ins[0], np.float64)
        self.x_shape = x.shape
        self.t = _Transposed(op, x.shape, np.asarray(ins[1], np.float64))
        bias = ins[2] if len(ins) > 2 else None
        self.conv = ConvStep(self.t.conv, [self.t.spread(x), self.t.weights, bias], ctx, checked=True)
        self.outputs = self.conv.outputs
        self.n_inputs = len(ins)

    def jvp(self, tangents: list[Array | None]) -> list[Array | None]:
        return self.conv.jvp([None if tangents[0] is None else self.t.spread(tangents[0])])

    def vjp(self, grads: list[Array | None], need: list[bool]) -> list[Array | None]:
        out = self.conv.vjp(grads, [need[0], False] + list(need[2:]))
        if out[0] is not None:
            out[0] = self.t.gather(out[0], self.x_shape)
        if len(need) > 1 and need[1] and grads[0] is not None:
            raise NoRule("ConvTranspose's weights in a storage format: no rule (their cotangent is not mapped back)")
        return out[:self.n_inputs]

    def rounding(self, arithmetic: Arithmetic, spread: Spread) -> Rounding:
        ins = list(spread.ins)
        if ins and ins[0] is not None:
            ins[0] = self.t.spread(np.broadcast_to(ins[0], self.x_shape).astype(np.float64))
        return self.conv.rounding(arithmetic, Spread(ins, spread.outs))


def _ct_linearize(op: Op, ins: list[Array | None], ctx: Context) -> Step:
    return _ConvTransposeStep(op, ins, ctx)


register(Rule("ConvTranspose", _ct_enclose, _ct_linearize, stores_constants=False))


# --- Resize ------------------------------------------------------------------------------------------------


def _sizes(op: Op, x_shape: tuple[int, ...], ctx: Context) -> list[int]:
    def constant(k: int) -> np.ndarray | None:
        if len(op.inputs) > k and op.inputs[k]:
            value = ctx.constant(op.inputs[k])
            if value is None:
                raise NoRule(f"Resize with computed scales or sizes (node '{op.origin}')")
            return value if np.size(value) else None
        return None
    sizes, scales = constant(3), constant(2)
    if sizes is None and scales is None and len(op.inputs) == 2:
        scales = constant(1)
    if op.attr("axes") is not None or (sizes is None and scales is None):
        raise NoRule(f"Resize with axes or without constant scales / sizes (node '{op.origin}')")
    out = [int(v) for v in np.ravel(sizes)] if sizes is not None else \
        [int(np.floor(n * float(s))) for n, s in zip(x_shape, np.ravel(scales))]
    if out[:2] != list(x_shape[:2]) or any(m % n or m < n for n, m in zip(x_shape, out)):
        raise NoRule(f"Resize from {list(x_shape)} to {out}: whole spatial factors only (node '{op.origin}')")
    return out


def _matrix(n: int, m: int, transform: str) -> list[list[Fraction]]:
    """[m, n] interpolation weights of one axis, exact."""
    rows = []
    for y in range(m):
        if transform == "align_corners":
            pos = Fraction(y * (n - 1), max(m - 1, 1))
        else:
            pos = (Fraction(y) + Fraction(1, 2)) * Fraction(n, m) - Fraction(1, 2)
            if transform == "pytorch_half_pixel" and m == 1:
                pos = Fraction(0)
        pos = min(max(pos, Fraction(0)), Fraction(n - 1))
        lo = int(pos)
        hi = min(lo + 1, n - 1)
        row = [Fraction(0)] * n
        row[lo] += 1 - (pos - lo)
        row[hi] += pos - lo
        rows.append(row)
    return rows


def _matrix_ball(rows: list[list[Fraction]]) -> Ball:
    hi = np.array([[float(v) for v in r] for r in rows])
    lo = np.array([[float(v - Fraction(h)) for v, h in zip(r, hr)] for r, hr in zip(rows, hi)])
    rad = np.array([[abs(float(v - Fraction(h) - Fraction(l))) * 2.0 for v, h, l in zip(r, hr, lr)]
                    for r, hr, lr in zip(rows, hi, lo)])
    return Ball(hi, lo, D.up(rad))


def _linear_parts(op: Op, x_shape: tuple[int, ...], ctx: Context) -> list[tuple[int, list[list[Fraction]]]]:
    transform = op.attr("coordinate_transformation_mode", "half_pixel")
    if transform not in ("half_pixel", "pytorch_half_pixel", "align_corners"):
        raise NoRule(f"Resize linear with coordinate_transformation_mode '{transform}' (node '{op.origin}')")
    out = _sizes(op, x_shape, ctx)
    return [(axis, _matrix(n, m, transform)) for axis, (n, m) in enumerate(zip(x_shape, out)) if m != n]


def _resize_enclose(op: Op, ins: list[Any], ctx: Context) -> list[Any]:
    if op.attr("mode", "nearest") == "nearest":
        return movement.enclose(op, ins, ctx)
    if op.attr("mode") != "linear":
        raise NoRule(f"Resize mode '{op.attr('mode')}' (node '{op.origin}')")
    x = ins[0]
    for axis, rows in _linear_parts(op, x.shape, ctx):
        moved = x.map(lambda a: np.moveaxis(a, axis, -2))                        # [..., n, rest]
        y = products.matmul(_matrix_ball(rows), moved)
        x = y.map(lambda a: np.moveaxis(a, -2, axis))
    return [x]


class _ResizeStep(Step):
    def __init__(self, op: Op, ins: list[Array | None], ctx: Context) -> None:
        x = np.asarray(ins[0], np.float64)
        self.shape = x.shape
        self.parts = [(axis, np.array([[float(v) for v in r] for r in rows])) for axis, rows in
                      _linear_parts(op, x.shape, ctx)]
        self.outputs = [self._apply(x[None])[0]]
        self.mag = self._corners(np.abs(x))
        self.n_inputs = len(ins)

    def _apply(self, t: Array, transpose: bool = False) -> Array:
        parts = reversed(self.parts) if transpose else self.parts
        for axis, m in parts:
            mat = m.T if transpose else m
            t = np.moveaxis(np.tensordot(t, mat, axes=([axis + 1], [1])), -1, axis + 1)
        return t

    def _corners(self, a: Array) -> Array:
        """The largest |x| among the corners of each output (a max-interpolation)."""
        for axis, m in self.parts:
            moved = np.moveaxis(a, axis, -1)                                      # [..., in]
            a = np.moveaxis(np.where(m > 0, moved[..., None, :], 0.0).max(axis=-1), -1, axis)
        return a

    def jvp(self, tangents: list[Array | None]) -> list[Array | None]:
        return [None if tangents[0] is None else self._apply(tangents[0])]

    def vjp(self, grads: list[Array | None], need: list[bool]) -> list[Array | None]:
        g = grads[0]
        return [None if g is None or not need[0] else self._apply(g, True)] + [None] * (self.n_inputs - 1)

    def rounding(self, arithmetic: Arithmetic, spread: Spread) -> Rounding:
        d_axes = len(self.parts)
        mag = self.mag + (self._corners(np.broadcast_to(spread.i(0), self.shape).astype(np.float64))
                          if np.any(spread.i(0)) else 0.0)
        moved = sum(4.0 * arithmetic.u * (self.shape[axis] + 1) for axis, _ in self.parts) * mag
        d = arithmetic.u * (2 ** d_axes + d_axes + 2) * mag + moved + arithmetic.tiny * 2 ** d_axes
        return Rounding([Local(d, d)])


def _resize_linearize(op: Op, ins: list[Array | None], ctx: Context) -> Step:
    if op.attr("mode", "nearest") == "nearest":
        return movement.MoveStep(op, ins, ctx)
    if op.attr("mode") != "linear":
        raise NoRule(f"Resize mode '{op.attr('mode')}' (node '{op.origin}')")
    return _ResizeStep(op, ins, ctx)


register(Rule("Resize", _resize_enclose, _resize_linearize))

"""Contractions: Conv, Gemm, MatMul.

Enclosure: the exact products of pipeline.numerics.products on im2col's columns (per group, batched).

Bound: the Jacobian is the operation itself (and, for MatMul of two computed operands, the product rule,
with the remainder |dA| |dB|). The local rounding of a dot product of K terms (and a bias) depends on the
order of its additions through the partial sums s_k: the error is sum_k s_k delta_k + sum_j t_j delta'_j
(t_j the products, rounded unless fused). `rounding` bounds it per output element:

* order `sequential` (our reference: input channel, then taps, bias last): the partial sums of that
  order, exactly: d = u (sum |s_k| + sum |t_j|), q = u sqrt(sum s_k^2 + sum t_j^2);
* order `nested` (onnxruntime, the NVDLA emulator): any of the nestings of pipeline.numerics.arithmetic,
  possibly cut into contiguous blocks, bias first or last: every partial sum is then a sum of a contiguous
  range of one nesting's sequence, at most R = max - min of its prefix sums (0 included); d = u (n R +
  sum |t|), q = u (sqrt(n) R + sqrt(sum t^2)).

The magnitudes are the implementation's: each term's input may be off by its spread B, which adds
E = |W| B to every partial sum. A convolution read only by a BatchNormalization is, under an arithmetic
that folds them (onnxruntime), computed with the folded weights W f rounded once: a per-weight error
shared by every position, carried by the weight's cotangent (`Shared`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pipeline.numerics import products
from pipeline.numerics.arithmetic import SEQUENTIAL, Arithmetic
from pipeline.numerics.doubled import Ball, add, exact, scale
from pipeline.numerics.graph import Op
from pipeline.numerics.rules import (Array, Context, Local, NoRule, Rounding, Rule, Shared, Spread, Step, lift,
                                     register, unbroadcast)

CHUNK = 1 << 21  # elements of one block of products held at once


# --- geometry -------------------------------------------------------------------------------------------


class Geometry:
    """A convolution's pads, strides, dilations, groups, kernel and output extent."""

    def __init__(self, op: Op, x_shape: tuple[int, ...], w_shape: tuple[int, ...]) -> None:
        spatial = len(x_shape) - 2
        if op.attr("auto_pad", "NOTSET") not in ("NOTSET", ""):
            raise NoRule(f"{op.op_type} with auto_pad (node '{op.origin}')")
        self.pads = list(op.attr("pads", [0] * 2 * spatial))
        self.strides = list(op.attr("strides", [1] * spatial))
        self.dilations = list(op.attr("dilations", [1] * spatial))
        self.group = int(op.attr("group", 1))
        self.kernel = tuple(w_shape[2:])
        self.channels = x_shape[1]
        self.out_channels = w_shape[0]
        self.cg = w_shape[1]
        self.og = self.out_channels // self.group
        self.taps = int(np.prod(self.kernel)) if self.kernel else 1
        padded = [x_shape[2 + i] + self.pads[i] + self.pads[i + spatial] for i in range(spatial)]
        self.padded = padded
        self.out = [(padded[i] - self.dilations[i] * (self.kernel[i] - 1) - 1) // self.strides[i] + 1
                    for i in range(spatial)]
        self.positions = int(np.prod(self.out)) if self.out else 1
        self.x_shape = tuple(x_shape)

    def _slices(self, k: tuple[int, ...]) -> tuple[slice, ...]:
        return tuple(slice(k[i] * self.dilations[i], k[i] * self.dilations[i] + self.strides[i] * (self.out[i] - 1) + 1,
                           self.strides[i]) for i in range(len(self.out)))

    def im2col(self, x: np.ndarray) -> np.ndarray:
        """[L, N, C, *spatial] -> [L, N, G, Cg * taps, P] (input channel major, taps minor: W's layout)."""
        lead = x.shape[:-len(self.x_shape)] if x.ndim > len(self.x_shape) else ()
        x = x.reshape((-1,) + self.x_shape)
        spatial = len(self.out)
        half = len(self.pads) // 2
        xp = np.pad(x, [(0, 0), (0, 0), (0, 0)] + [(self.pads[i], self.pads[i + half]) for i in range(spatial)])
        cols = np.stack([xp[(slice(None), slice(None), slice(None), *self._slices(k))].reshape(
            xp.shape[0], xp.shape[1], self.channels, self.positions) for k in np.ndindex(*self.kernel)], axis=3)
        n = self.x_shape[0]
        return cols.reshape(lead + (n, self.group, self.cg * self.taps, self.positions))

    @property
    def depthwise(self) -> bool:
        return self.cg == 1 and self.og == 1

    def _padded(self, t: np.ndarray) -> np.ndarray:
        spatial = len(self.out)
        half = len(self.pads) // 2
        lead = t.ndim - spatial
        return np.pad(t, [(0, 0)] * lead + [(self.pads[i], self.pads[i + half]) for i in range(spatial)])

    def depthwise_apply(self, t: np.ndarray, w: np.ndarray) -> np.ndarray:
        """A depthwise convolution [L, N, C, *spatial] -> [L, N, C, *out], w [C, 1, *kernel]: tap by tap (no
        im2col copy)."""
        tp = self._padded(t)
        out = None
        spatial = len(self.out)
        for k in np.ndindex(*self.kernel):
            weight = w[(slice(None), 0) + k].reshape((-1,) + (1,) * spatial)
            part = tp[(Ellipsis, *self._slices(k))] * weight
            out = part if out is None else out + part
        return out

    def depthwise_adjoint(self, g: np.ndarray, w: np.ndarray) -> np.ndarray:
        """The adjoint of depthwise_apply: [B, N, C, *out] -> [B, N, C, *spatial]."""
        spatial = len(self.out)
        grad = np.zeros(g.shape[:-spatial] + tuple(self.padded))
        part = np.empty(np.broadcast_shapes(g.shape, w.shape[:1] + (1,) * spatial))
        for k in np.ndindex(*self.kernel):
            weight = w[(slice(None), 0) + k].reshape((-1,) + (1,) * spatial)
            np.multiply(g, weight, out=part)
            window = grad[(Ellipsis, *self._slices(k))]
            np.add(window, part, out=window)
        crop = tuple(slice(self.pads[i], self.pads[i] + self.x_shape[2 + i]) for i in range(spatial))
        return grad[(Ellipsis, *crop)]

    def col2im(self, cols: np.ndarray) -> np.ndarray:
        """The adjoint of im2col: [B, N, G, Cg * taps, P] -> [B, N, C, *spatial]."""
        batch, n = cols.shape[:2]
        spatial = len(self.out)
        cols = cols.reshape(batch, n, self.channels, self.taps, *self.out)
        grad = np.zeros((batch, n, self.channels) + tuple(self.padded))
        for t, k in enumerate(np.ndindex(*self.kernel)):
            grad[(slice(None), slice(None), slice(None), *self._slices(k))] += cols[:, :, :, t]
        half = len(self.pads) // 2
        crop = tuple(slice(self.pads[i], self.pads[i] + self.x_shape[2 + i]) for i in range(spatial))
        del half
        return grad[(slice(None), slice(None), slice(None), *crop)]


# --- order statistics of dot products ---------------------------------------------------------------------


def _range(high: np.ndarray, low: np.ndarray, total: np.ndarray, b: np.ndarray | float) -> np.ndarray:
    """The range of the partial sums {0, s_1 .. s_n} with the bias added last ({.., s_n + b}) or first
    ({0, b, b + s_1, ..}): the larger of the two."""
    high, low = np.maximum(high, 0.0), np.minimum(low, 0.0)
    last = np.maximum(high, total + b) - np.minimum(low, total + b)
    first = np.maximum(0.0, np.maximum(b, b + high)) - np.minimum(0.0, np.minimum(b, b + low))
    return np.maximum(last, first)


def _cumsum(a: np.ndarray, axis: int) -> np.ndarray:
    """np.cumsum along `axis`, the same additions in the same order, one vectorized addition per index (numpy's
    accumulate along a middle axis ran seven times slower on these shapes)."""
    out = np.empty_like(a)
    index: list[Any] = [slice(None)] * a.ndim
    running = None
    for i in range(a.shape[axis]):
        index[axis] = i
        where = tuple(index)
        running = a[where] if running is None else running + a[where]
        out[where] = running
    return out


def _extent(values: np.ndarray, axes: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    return values.max(axis=axes), values.min(axis=axes)


def order_stats(w: np.ndarray, cols: np.ndarray, bias: np.ndarray | None, channels: int, taps: int,
                nested: bool = True) -> dict[str, np.ndarray]:
    """Per output [N, G, Og, P] of y = w @ cols (+ bias), its K = channels * taps terms t in input-channel-major
    order: S1 = sum |t|, S2 = sum t^2; A1 = sum |s_k|, A2 = sum s_k^2 over the partial sums the sequential order
    (channel, then tap, bias last) rounds; R = the largest range of the prefix sums of any nesting of
    pipeline.numerics.arithmetic.NESTINGS, bias first or last (`nested`). Prefix sums of the nestings from two
    cumulative sums (over taps within a channel, over channels within a tap) and their totals, never a copy
    of the terms in another order. Computed in float32 (half the memory traffic), each figure then enlarged by
    what that can have cost it: every computed partial sum is within (K + 3) u32 S1 of the exact one.
    w [G, Og, K], cols [N, G, K, P], bias [G, Og] or [G, Og, P]."""
    n, g_count, k, p = cols.shape
    og = w.shape[1]
    shape = (n, g_count, og, p)
    stats = {key: np.zeros(shape) for key in ("S1", "S2", "R", "A1", "A2")}
    rows = g_count * og
    step = max(1, CHUNK // max(1, n * k * p))
    w_rows = w.reshape(rows, k)
    b_rows = None if bias is None else bias.reshape(rows, -1)
    groups = np.repeat(np.arange(g_count), og)
    w32 = w_rows.astype(np.float32)
    cols32 = cols.astype(np.float32)
    for start in range(0, rows, step):
        stop = min(rows, start + step)
        c = stop - start
        terms = w32[start:stop][None, :, :, None] * cols32[:, groups[start:stop]]       # [N, c, K, P]
        b = 0.0 if b_rows is None else b_rows[start:stop][None].astype(np.float32)     # [1, c, 1 | P]
        where = (slice(None), groups[start:stop], np.arange(start, stop) % og)
        stats["S1"][where] = np.abs(terms).sum(axis=2)
        stats["S2"][where] = np.einsum("nckp,nckp->ncp", terms, terms)
        t5 = terms.reshape(n, c, channels, taps, p)
        within = _cumsum(t5, axis=3)                                                  # taps within a channel
        channel_totals = within[:, :, :, -1]
        before = _cumsum(channel_totals, axis=2) - channel_totals
        ct = within + before[:, :, :, None]                                             # (c, t) prefixes
        high, low = _extent(ct, (2, 3))
        total = ct[:, :, -1, -1]
        best = _range(high, low, total, b)
        first = np.abs(ct[:, :, 0, 0])
        a1 = np.abs(ct).sum(axis=(2, 3)) - first
        a2 = np.einsum("ncxtp,ncxtp->ncp", ct, ct) - first * first
        if b_rows is not None:
            a1 = a1 + np.abs(total + b)
            a2 = a2 + np.square(total + b)
        stats["A1"][where], stats["A2"][where] = a1, a2
        if nested and taps > 1 and channels > 1:
            across = _cumsum(t5, axis=2)                                              # channels within a tap
            tap_totals = across[:, :, -1]
            before_t = _cumsum(tap_totals, axis=2) - tap_totals
            # (t, c) prefixes: the offsets do not depend on the channel, so extremes over channels come first
            high = (across.max(axis=2) + before_t).max(axis=2)
            low = (across.min(axis=2) + before_t).min(axis=2)
            best = np.maximum(best, _range(high, low, total, b))
            for block in (8, 16):
                if channels <= block:
                    continue
                blocks = -(-channels // block)
                if blocks * block != channels:
                    padded = np.zeros((n, c, blocks * block, taps, p))
                    padded[:, :, :channels] = t5
                else:
                    padded = t5
                inner = _cumsum(padded.reshape(n, c, blocks, block, taps, p), axis=3)  # channels of a block
                block_taps = inner[:, :, :, -1]                                          # [N, c, blocks, taps, P]
                before_bt = _cumsum(block_taps, axis=3) - block_taps
                block_totals = block_taps.sum(axis=3)
                before_b = _cumsum(block_totals, axis=2) - block_totals
                offset = before_bt + before_b[:, :, :, None]
                high = (inner.max(axis=3) + offset).max(axis=(2, 3))
                low = (inner.min(axis=3) + offset).min(axis=(2, 3))
                best = np.maximum(best, _range(high, low, total, b))
        stats["R"][where] = best
    # what float32 can have cost: the terms (two roundings each) and every partial sum ((K + 3) u32 S1)
    u32 = 2.0 ** -24
    slack = (k + 3) * u32 * stats["S1"] * (1.0 + 2.0 ** -20)
    grow = 1.0 + 4.0 * (k + 3) * u32
    stats["S1"] = stats["S1"] * grow
    stats["S2"] = stats["S2"] * grow
    stats["R"] = stats["R"] + 2.0 * slack
    stats["A1"] = stats["A1"] + k * slack
    stats["A2"] = np.square(np.sqrt(stats["A2"]) + np.sqrt(k + 1.0) * slack)
    return stats


def dot_rounding(arithmetic: Arithmetic, stats: dict[str, np.ndarray], k: int, has_bias: bool,
                 spread_sum: np.ndarray | float) -> Local:
    """The local error of dot products of k terms (module docstring); `spread_sum` = E = |W| B."""
    u = arithmetic.u
    additions = k - 1 + (1 if has_bias else 0)
    growth = 1.0 + 2.0 * (k + 2) * u
    e = np.asarray(spread_sum, np.float64)
    if arithmetic.order == SEQUENTIAL:
        d = u * (stats["A1"] + additions * e + stats["S1"] + e) * growth
        q = u * (np.sqrt(stats["A2"]) + np.sqrt(additions) * e + np.sqrt(stats["S2"]) + e) * growth
    else:
        r = stats["R"] + e
        d = u * (additions * r + stats["S1"] + e) * growth
        q = u * (np.sqrt(additions) * r + np.sqrt(stats["S2"]) + e) * growth
    tiny = arithmetic.tiny * (k + 1)
    return Local(d + tiny, q + tiny)


# --- Conv -----------------------------------------------------------------------------------------------


def _conv_enclose(op: Op, ins: list[Any], ctx: Context) -> list[Any]:
    x, w = ins[0], ins[1]
    geo = Geometry(op, x.shape, w.shape)
    cols = x.map(geo.im2col)                                      # [N, G, K, P]
    wg = w.map(lambda a: a.reshape(geo.group, geo.og, -1))
    if not (np.any(wg.lo) or np.any(wg.rad)):
        wg = wg.hi  # exact weights: the cheaper product
    y = products.matmul(wg, cols)                                 # [N, G, Og, P]
    shape = (geo.x_shape[0], geo.out_channels, *geo.out)
    y = y.map(lambda a: a.reshape(shape))
    if len(ins) > 2 and ins[2] is not None:
        bias = ins[2].map(lambda a: a.reshape([1, -1] + [1] * len(geo.out)))
        y = add(y, bias)
    return [y]


class ConvStep(Step):
    def __init__(self, op: Op, ins: list[Array | None], ctx: Context, checked: bool = False) -> None:
        x, w = np.asarray(ins[0], np.float64), ins[1]
        if not checked and ctx.constant(op.inputs[1]) is None:
            raise NoRule(f"{op.op_type} with computed weights (node '{op.origin}')")
        self.op = op
        self.geo = geo = Geometry(op, x.shape, np.shape(w))
        self.w = np.asarray(w, np.float64)
        self.wg = self.w.reshape(geo.group, geo.og, -1)
        self.bias = np.asarray(ins[2], np.float64) if len(ins) > 2 and ins[2] is not None else None
        self.cols = geo.im2col(x)                                                   # [N, G, K, P]
        self.cols_g = np.ascontiguousarray(np.moveaxis(self.cols, 0, 2)).reshape(
            geo.group, self.wg.shape[-1], -1)                                       # [G, K, N * P]
        y = self._apply(x[None])[0]
        if self.bias is not None:
            y = y + self.bias.reshape([1, -1] + [1] * len(geo.out))
        self.outputs = [y]
        self.folded = ctx.feeds_only(op, ("BatchNormalization",))
        self._stats: dict[str, np.ndarray] | None = None

    def _apply(self, t: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
        """The convolution (no bias) of a batch [L, N, C, *spatial]: one product per group (a depthwise one tap
        by tap)."""
        geo = self.geo
        wg = self.wg if weights is None else weights
        if geo.depthwise:
            return geo.depthwise_apply(t, wg.reshape(self.w.shape))
        cols = geo.im2col(t)                                                       # [L, N, G, K, P]
        lead = cols.shape[:2]
        flat = cols.transpose(2, 3, 0, 1, 4).reshape(geo.group, cols.shape[3], -1)  # [G, K, L * N * P]
        out = np.matmul(wg, flat).reshape(geo.group, geo.og, *lead, geo.positions)  # [G, Og, L, N, P]
        return out.transpose(2, 3, 0, 1, 4).reshape(lead + (geo.out_channels, *geo.out))

    def jvp(self, tangents: list[Array | None]) -> list[Array | None]:
        if tangents[0] is None:
            return [None]
        return [self._apply(tangents[0])]

    def _grouped(self, g: np.ndarray) -> np.ndarray:
        """[B, N, O, *out] -> [G, Og, B * N * P]."""
        geo = self.geo
        flat = g.reshape(g.shape[:2] + (geo.group, geo.og, geo.positions))
        return flat.transpose(2, 3, 0, 1, 4).reshape(geo.group, geo.og, -1)

    def weight_tangent(self, delta: np.ndarray) -> np.ndarray:
        """The output's perturbation [R, N, O, *out] by weight perturbations [R, O, Cg, *k]."""
        geo = self.geo
        r = delta.shape[0]
        dw = np.moveaxis(delta.reshape(r, geo.group, geo.og, -1), 0, 1).reshape(geo.group, r * geo.og, -1)
        out = np.matmul(dw, self.cols_g).reshape(geo.group, r, geo.og, geo.x_shape[0], geo.positions)
        out = np.moveaxis(out, 1, 0).reshape(r, geo.out_channels, geo.x_shape[0], geo.positions)
        return np.moveaxis(out, 2, 1).reshape((r, geo.x_shape[0], geo.out_channels, *geo.out))

    def weight_grad(self, g: np.ndarray) -> np.ndarray:
        geo = self.geo
        batch = g.shape[0]
        gg = g.reshape(batch, geo.x_shape[0], geo.group, geo.og, geo.positions)
        gg = np.moveaxis(gg, 2, 0)                                                 # [G, B, N, Og, P]
        gg = np.moveaxis(gg, 3, 2).reshape(geo.group, batch * geo.og, -1)         # [G, B * Og, N * P]
        gw = np.matmul(gg, np.swapaxes(self.cols_g, 1, 2))                        # [G, B * Og, K]
        gw = np.moveaxis(gw.reshape(geo.group, batch, geo.og, -1), 1, 0)
        return gw.reshape((batch,) + self.w.shape)

    def vjp(self, grads: list[Array | None], need: list[bool]) -> list[Array | None]:
        g = grads[0]
        out: list[Array | None] = [None] * len(need)
        if g is None:
            return out
        geo = self.geo
        batch = g.shape[0]
        if need[0] and geo.depthwise:
            out[0] = geo.depthwise_adjoint(g, self.w)
        elif need[0]:
            cols = np.matmul(np.swapaxes(self.wg, 1, 2), self._grouped(g))        # [G, K, B * N * P]
            cols = cols.reshape(geo.group, -1, batch, geo.x_shape[0], geo.positions)
            out[0] = geo.col2im(cols.transpose(2, 3, 0, 1, 4))                      # [B, N, G, K, P]
        if len(need) > 1 and need[1]:
            out[1] = self.weight_grad(g)
        if len(need) > 2 and need[2] and self.bias is not None:
            out[2] = g.sum(axis=tuple([1] + list(range(3, g.ndim))))
        return out

    def stats(self) -> dict[str, np.ndarray]:
        if self._stats is None:
            bias = None if self.bias is None else self.bias.reshape(self.geo.group, self.geo.og)
            self._stats = order_stats(self.wg, self.cols, bias, self.geo.cg, self.geo.taps)
        return self._stats

    def rounding(self, arithmetic: Arithmetic, spread: Spread) -> Rounding:
        geo = self.geo
        stats = self.stats()
        spread_in = spread.i(0)
        e = 0.0
        if np.any(spread_in):
            s = np.broadcast_to(spread_in, geo.x_shape).astype(np.float64)
            e = self._apply(s[None], np.abs(self.wg))[0]
        shape = self.outputs[0].shape
        stats = {k: v.reshape(shape) for k, v in stats.items()}
        local = dot_rounding(arithmetic, stats, self.wg.shape[-1], self.bias is not None, e)
        shared = []
        if arithmetic.fused_batchnorm and self.folded:
            bound = arithmetic.u * np.abs(self.w)
            shared.append(Shared(lambda grads: self.weight_grad(grads[0]), bound, bound, self.weight_tangent))
        return Rounding([local], shared)


def _conv_linearize(op: Op, ins: list[Array | None], ctx: Context) -> Step:
    return ConvStep(op, ins, ctx)


register(Rule("Conv", _conv_enclose, _conv_linearize))


# --- Gemm and MatMul ------------------------------------------------------------------------------------


def _batch_matmul_shapes(a_shape: tuple[int, ...], b_shape: tuple[int, ...]) -> tuple[tuple[int, ...], bool, bool]:
    """The broadcast batch shape of np.matmul, and whether a or b is a vector (1-D)."""
    a1, b1 = len(a_shape) == 1, len(b_shape) == 1
    a2 = (1,) + a_shape if a1 else a_shape
    b2 = b_shape + (1,) if b1 else b_shape
    return np.broadcast_shapes(a2[:-2], b2[:-2]), a1, b1


class MatMulStep(Step):
    """y = a @ b (np.matmul semantics), either operand computed or constant."""

    def __init__(self, a: np.ndarray, b: np.ndarray, constant_a: bool, constant_b: bool,
                 bias: np.ndarray | None = None, alpha: float = 1.0, beta: float = 1.0) -> None:
        self.a, self.b = np.asarray(a, np.float64), np.asarray(b, np.float64)
        self.constant = (constant_a, constant_b)
        self.alpha, self.beta = alpha, beta
        self.bias = None if bias is None else np.asarray(bias, np.float64)
        y = alpha * np.matmul(self.a, self.b)
        if self.bias is not None:
            y = y + beta * self.bias
        self.outputs = [y]
        self._stats: dict[str, dict[str, np.ndarray]] = {}

    def jvp(self, tangents: list[Array | None]) -> list[Array | None]:
        ta, tb = tangents[0], tangents[1]
        out = None
        if ta is not None:
            out = self.alpha * np.matmul(ta, self.b)
        if tb is not None:
            part = self.alpha * np.matmul(self.a, tb)
            out = part if out is None else out + part
        if len(tangents) > 2 and tangents[2] is not None:
            part = self.beta * np.broadcast_to(lift(tangents[2], self.outputs[0].ndim),
                                               (tangents[2].shape[0],) + self.outputs[0].shape)
            out = part if out is None else out + part
        return [out]

    def vjp(self, grads: list[Array | None], need: list[bool]) -> list[Array | None]:
        g = grads[0]
        out: list[Array | None] = [None] * len(need)
        if g is None:
            return out
        g = self.alpha * g
        a, b = self.a, self.b
        if need[0]:
            if b.ndim == 1:
                ga = g[..., None] * b
            else:
                ga = np.matmul(g if a.ndim > 1 else g[..., None, :], np.swapaxes(b, -1, -2))
                if a.ndim == 1:
                    ga = ga[..., 0, :]
            out[0] = unbroadcast(ga, a.shape)
        if len(need) > 1 and need[1]:
            if a.ndim == 1:
                gb = a[:, None] * g[..., None, :] if b.ndim > 1 else a * g[..., None]
            else:
                gb = np.matmul(np.swapaxes(a, -1, -2), g if b.ndim > 1 else g[..., None])
                if b.ndim == 1:
                    gb = gb[..., 0]
            out[1] = unbroadcast(gb, b.shape)
        if len(need) > 2 and need[2] and self.bias is not None:
            out[2] = unbroadcast(self.beta / self.alpha * g, self.bias.shape)
        return out

    def _canonical(self) -> tuple[np.ndarray, np.ndarray]:
        """w [G, M, K] and cols [1, G, K, P] of a @ b over the broadcast batch."""
        batch, _, _ = _batch_matmul_shapes(self.a.shape, self.b.shape)
        a = self.a[None] if self.a.ndim == 1 else self.a
        b = self.b[:, None] if self.b.ndim == 1 else self.b
        a = np.broadcast_to(a, batch + a.shape[-2:]).reshape(-1, *a.shape[-2:])
        b = np.broadcast_to(b, batch + b.shape[-2:]).reshape(-1, *b.shape[-2:])
        return a, b[None]

    def stats(self, arithmetic: Arithmetic) -> dict[str, np.ndarray]:
        key = "all"
        if key not in self._stats:
            w, cols = self._canonical()
            bias = None
            if self.bias is not None:
                full = np.broadcast_to(self.beta * self.bias / self.alpha, self.outputs[0].shape)
                bias = full.reshape(w.shape[0], w.shape[1], -1)
            stats = order_stats(w, cols, bias, w.shape[-1], 1)
            self._stats[key] = {name: value.reshape(self.outputs[0].shape) for name, value in stats.items()}
        return self._stats[key]

    def rounding(self, arithmetic: Arithmetic, spread: Spread) -> Rounding:
        stats = self.stats(arithmetic)
        e = 0.0
        sa, sb = spread.i(0), spread.i(1)
        if np.any(sa):
            e = e + np.matmul(np.broadcast_to(sa, self.a.shape), np.abs(self.b))
        if np.any(sb):
            e = e + np.matmul(np.abs(self.a) + np.broadcast_to(sa, self.a.shape), np.broadcast_to(sb, self.b.shape))
        k = self.a.shape[-1]
        local = dot_rounding(arithmetic, stats, k, self.bias is not None, np.asarray(e))
        local = Local(abs(self.alpha) * local.d, abs(self.alpha) * local.q)
        if self.alpha != 1.0 or (self.bias is not None and self.beta != 1.0):
            # alpha (A B) and beta C: one rounding each, of the product and of the scaled bias
            extra = arithmetic.u * np.abs(self.outputs[0]) * 2.0 + arithmetic.tiny
            local = Local(local.d + extra, np.sqrt(local.q ** 2 + extra ** 2))
        return Rounding([local])

    def remainder(self, spread: Spread, arithmetic: Arithmetic | None = None) -> list[Array | None]:
        sa, sb = spread.i(0), spread.i(1)
        if not (np.any(sa) and np.any(sb)):
            return [None]
        return [abs(self.alpha) * np.matmul(np.broadcast_to(sa, self.a.shape), np.broadcast_to(sb, self.b.shape))]


def _gemm_parts(op: Op, ins: list[Any]) -> tuple[Any, Any, Any, float, float]:
    a, b = ins[0], ins[1]
    if op.attr("transA", 0):
        a = a.map(lambda v: v.T) if isinstance(a, Ball) else np.asarray(a).T
    if op.attr("transB", 0):
        b = b.map(lambda v: v.T) if isinstance(b, Ball) else np.asarray(b).T
    c = ins[2] if len(ins) > 2 else None
    return a, b, c, float(op.attr("alpha", 1.0)), float(op.attr("beta", 1.0))


def _as_ball(value: Any) -> Ball:
    return value if isinstance(value, Ball) else exact(np.asarray(value, np.float64))


def _gemm_enclose(op: Op, ins: list[Any], ctx: Context) -> list[Any]:
    a, b, c, alpha, beta = _gemm_parts(op, ins)
    y = _matmul_balls(a, b)
    if alpha != 1.0:
        y = scale(y, np.float64(alpha))
    if c is not None:
        cb = _as_ball(c)
        if beta != 1.0:
            cb = scale(cb, np.float64(beta))
        y = add(y, cb)
    return [y]


def _matmul_balls(a: Any, b: Any) -> Ball:
    """a @ b for balls or exact arrays (np.matmul shapes, 1-D operands included)."""
    a_is_vec = (a.hi.ndim if isinstance(a, Ball) else np.ndim(a)) == 1
    b_is_vec = (b.hi.ndim if isinstance(b, Ball) else np.ndim(b)) == 1
    if a_is_vec:
        a = a.map(lambda v: v[None]) if isinstance(a, Ball) else np.asarray(a)[None]
    if b_is_vec:
        b = b.map(lambda v: v[:, None]) if isinstance(b, Ball) else np.asarray(b)[:, None]
    bb = _as_ball(b)
    left = a if isinstance(a, Ball) and (np.any(a.lo) or np.any(a.rad)) else (a.hi if isinstance(a, Ball) else
                                                                             np.asarray(a, np.float64))
    y = products.matmul(left, bb)
    if a_is_vec:
        y = y.map(lambda v: v[..., 0, :])
    if b_is_vec:
        y = y.map(lambda v: v[..., 0])
    return y


def _gemm_linearize(op: Op, ins: list[Array | None], ctx: Context) -> Step:
    a, b, c, alpha, beta = _gemm_parts(op, ins)
    step = MatMulStep(a, b, ctx.graph.is_constant(op.inputs[0]), ctx.graph.is_constant(op.inputs[1]), c, alpha, beta)
    return _Transposed(step, bool(op.attr("transA", 0)), bool(op.attr("transB", 0)))


class _Transposed(Step):
    """Gemm's transA / transB around a MatMulStep: cotangents and tangents of A and B transposed back."""

    def __init__(self, inner: MatMulStep, ta: bool, tb: bool) -> None:
        self.inner, self.ta, self.tb = inner, ta, tb
        self.outputs = inner.outputs

    def jvp(self, tangents: list[Array | None]) -> list[Array | None]:
        t = list(tangents) + [None] * (3 - len(tangents))
        if self.ta and t[0] is not None:
            t[0] = np.swapaxes(t[0], -1, -2)
        if self.tb and t[1] is not None:
            t[1] = np.swapaxes(t[1], -1, -2)
        return self.inner.jvp(t)

    def vjp(self, grads: list[Array | None], need: list[bool]) -> list[Array | None]:
        out = self.inner.vjp(grads, list(need) + [False] * (3 - len(need)))[:len(need)]
        if self.ta and out[0] is not None:
            out[0] = np.swapaxes(out[0], -1, -2)
        if self.tb and len(out) > 1 and out[1] is not None:
            out[1] = np.swapaxes(out[1], -1, -2)
        return out

    def rounding(self, arithmetic: Arithmetic, spread: Spread) -> Rounding:
        return self.inner.rounding(arithmetic, self._spread(spread))

    def remainder(self, spread: Spread, arithmetic: Arithmetic | None = None) -> list[Array | None]:
        return self.inner.remainder(self._spread(spread), arithmetic)

    def _spread(self, spread: Spread) -> Spread:
        ins = list(spread.ins) + [None] * (3 - len(spread.ins))
        if self.ta and ins[0] is not None and np.ndim(ins[0]) == 2:
            ins[0] = np.swapaxes(ins[0], -1, -2)
        if self.tb and ins[1] is not None and np.ndim(ins[1]) == 2:
            ins[1] = np.swapaxes(ins[1], -1, -2)
        return Spread(ins, spread.outs)


def _matmul_enclose(op: Op, ins: list[Any], ctx: Context) -> list[Any]:
    return [_matmul_balls(ins[0], ins[1])]


def _matmul_linearize(op: Op, ins: list[Array | None], ctx: Context) -> Step:
    return MatMulStep(ins[0], ins[1], ctx.graph.is_constant(op.inputs[0]), ctx.graph.is_constant(op.inputs[1]))


register(Rule("Gemm", _gemm_enclose, _gemm_linearize))
register(Rule("MatMul", _matmul_enclose, _matmul_linearize))

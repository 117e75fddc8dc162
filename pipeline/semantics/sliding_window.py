"""Sliding-window operations: conv, deconv, box, avg/max/rms pooling, argmax_pool, sample,
and the up/down-sampling fragments built on box.

Evaluation order (the C and CUDA generators mirror it loop for loop):

conv   out[n, o, y] = (+0 + t(c=0, j=0) + t(0, 1) + ... + t(Cg-1, K-1)) + bias[o]
       t(c, j) = filter[o, c, j] * xpad[n, g*Cg + c, y*s + j*d], g = o // (O/groups);
       terms in lexicographic order of (c, j0, j1, ...): input channel of the group
       outermost, then kernel row, kernel column; each `+` one float32 rounding, bias last.
deconv out[n, o, y] = (+0 + sum over (c, j) lexicographic of
       filter[g*Cg + c, o % Og, j] * x[n, g*Cg + c, i] for the i with i*s + j*d - p = y)
       + bias[o]; a (c, j) with no such i in range contributes no term.
box    out[y] = +0 + xpad[y*s + 0*d] + xpad[y*s + 1*d] + ... (taps row-major), then / count
       if normalize; max_pool keeps the first maximal tap (NaN wins, see below).

Padded positions. With border 'constant' or 'ignore' a padded tap of conv/deconv/box is
*skipped* (no term). Because every accumulator starts at +0 and round-to-nearest
addition can only produce -0 from two -0 operands, the accumulator is never -0, so
adding a +-0 term never changes it: a generator may equally add `w * 0.0f` at padded
taps (a zero-padded buffer), with the same bits, as long as the weight is finite. (With
an infinite weight `inf * 0` is NaN: this implementation masks those terms, so the
skip semantics holds exactly.) 'replicate', 'reflect', 'reflect-even' read real input
elements and include them as terms.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

import numpy as np

from pipeline.semantics.elementwise import first_max_update
from pipeline.semantics.jit import compiled_loops
from pipeline.semantics.linear_algebra import derived, laid_out, ordered_dot
from pipeline.semantics.kernels import kernel
from pipeline.semantics.tensors import (
    F32,
    KernelError,
    align,
    broadcast_shape,
    int_list,
    integer,
    scalar,
)
from pipeline.semantics.windows import Window, border_of, inside_mask, pad, padding_list, resolve

Inputs = Mapping[str, Any]
Attribs = Mapping[str, Any]
ZERO = F32(0.0)
NEG_INF = F32(-np.inf)
WINDOW_BORDERS = ("constant", "ignore")
# conv builds the inputs of its terms (conv_columns) for at most this many elements at once
COLUMNS_LIMIT = 1 << 24


def _add_bias(acc: np.ndarray, bias: Any) -> np.ndarray:
    """acc + bias, bias aligned NNEF-style ([1, C] -> [1, C, 1, ...]); added last."""
    b = scalar(bias, "bias")
    if broadcast_shape([acc.shape, b.shape]) != acc.shape:
        raise KernelError(f"bias of shape {list(b.shape)} does not fit output {list(acc.shape)}", "SEM-E005")
    return np.asarray(acc + align(b, acc.ndim), dtype=F32)


def _groups(attribs: Attribs, default: int) -> int:
    groups = int(attribs["groups"])
    if groups < 0:
        raise KernelError(f"'groups' must be >= 0, got {groups}")
    return groups or default


# ---- conv ----------------------------------------------------------------------------

def conv_columns(xg: np.ndarray, win: Window) -> np.ndarray:
    """The inputs each conv term reads, as b[k, g, n * positions] with k = (c, tap) in
    lexicographic order: b[c * taps + t, g, n * P + y] = xpad[n, g * Cg + c, y*s + j_t*d].
    One strided copy per tap (every channel, group and vector at once)."""
    n_batch, groups, cg = xg.shape[:3]
    taps = win.volume()
    cols = np.empty((cg, taps, groups, n_batch) + win.out_shape, dtype=F32)
    source = xg.transpose((2, 1, 0) + tuple(range(3, xg.ndim)))  # [Cg, G, N, padded...]
    for t, offset in enumerate(win.offsets()):
        cols[:, t] = source[(slice(None),) * 3 + win.taps(offset)]
    return cols.reshape(cg * taps, groups, n_batch * math.prod(win.out_shape))


def padded_taps(win: Window, cg: int, n_batch: int) -> np.ndarray:
    """skip[k, n * P + y]: term k = (c, tap) of output position y reads padding."""
    outside = ~inside_mask(win.in_shape, win.padding)
    per_tap = np.stack([outside[win.taps(offset)].reshape(-1) for offset in win.offsets()])  # [taps, P]
    return np.tile(per_tap, (cg, n_batch))


@kernel("conv")
def conv(inputs: Inputs, attribs: Attribs, dtype: str | None) -> tuple[np.ndarray]:
    """Grouped N-d convolution (cross-correlation), accumulation order (c, j0, j1, ...), bias last.

    out[n, g*Og + o, y] = ordered_dot over k = (c, tap) of filter[g*Og + o, c, tap] times
    xpad[n, g*Cg + c, y*s + tap*d]: the filter as a[k, g, o], the inputs as b[k, g, (n, y)]
    (conv_columns), summed in increasing k from +0; then + bias.
    """
    x = scalar(inputs["input"], "input")
    w = scalar(inputs["filter"], "filter")
    if x.ndim < 3 or w.ndim != x.ndim:
        raise KernelError(f"conv needs input and filter of equal rank >= 3, got {x.shape} and {w.shape}", "SEM-E005")
    n_batch, channels = x.shape[:2]
    outs, cg = w.shape[:2]
    groups = _groups(attribs, channels)
    if cg * groups != channels or outs % groups:
        raise KernelError(f"filter {list(w.shape)} with groups={groups} does not fit input channels {channels}", "SEM-E005")
    border = border_of(attribs)
    win = resolve(x.shape[2:], w.shape[2:], attribs["padding"], attribs["stride"], attribs["dilation"])
    weights = laid_out(w, w.reshape(groups, outs // groups, -1).transpose(2, 0, 1), f"k,g{groups},o")  # a[k, g, o]
    finite = derived(w, "finite", lambda: np.asarray(np.isfinite(w).all()))
    skip_padding = border in WINDOW_BORDERS and not finite
    # vectors in chunks whose columns stay under COLUMNS_LIMIT elements (each vector's outputs
    # depend on that vector only, so the chunking changes no value)
    chunk = max(1, COLUMNS_LIMIT // (w[0].size * groups * math.prod(win.out_shape)))
    parts = [_conv_vectors(x[n:n + chunk], weights, win, border, skip_padding) for n in range(0, max(n_batch, 1), chunk)]  # an empty batch: one empty part
    out = parts[0] if len(parts) == 1 else np.concatenate(parts)
    bias = scalar(inputs["bias"], "bias")
    loops = compiled_loops()
    if loops is not None and out.ndim == 4 and bias.shape in ((1, out.shape[1]), (1, 1), ()):
        # one value per channel (or one value), added last by one compiled pass
        per_channel = bias.reshape(-1)
        if per_channel.size != out.shape[1]:
            per_channel = np.full(out.shape[1], per_channel[0], dtype=F32)
        return (loops.channel_bias(out, per_channel),)
    return (_add_bias(out, bias),)


def _conv_vectors(x: np.ndarray, weights: np.ndarray, win: Window, border: str, skip_padding: bool) -> np.ndarray:
    """conv of the vectors x [n, C, *S] without bias: [n, O, *out]."""
    cg, groups, og = weights.shape[0] // win.volume(), weights.shape[1], weights.shape[2]
    n_batch = x.shape[0]
    loops = compiled_loops()
    if (loops is not None and len(win.out_shape) == 2 and border in WINDOW_BORDERS
            and all(p >= 0 and q >= 0 for p, q in win.padding)):  # (negative padding crops: pad does that)
        xp = loops.zero_padded(x, win.padding)  # pad's +0 border, one compiled pass
    else:
        xp = pad(x, [(0, 0), (0, 0), *win.padding], border, ZERO)
    if loops is not None and len(win.out_shape) == 2 and not skip_padding:
        if _wide(win, cg, og, n_batch):
            # the terms read from the padded input, no columns (compiled.conv_wide)
            out = loops.conv_wide(xp.reshape((n_batch, groups, cg) + win.padded_shape), weights, win.size,
                                  win.stride[0], win.dilation, win.out_shape)
            return out.reshape((n_batch, groups * og) + win.out_shape)
    cols = conv_columns(xp.reshape((n_batch, groups, cg) + win.padded_shape), win)
    return _conv_product(weights, cols, win, n_batch, skip_padding)


# conv_wide's outputs per vector (padded rows, OH * Wp) from which its tiles are as full as
# ordered_dot's on the columns of a whole batch (measured on the benchmark models).
WIDE_POSITIONS = 1024


def _wide(win: Window, cg: int, og: int, n_batch: int) -> bool:
    """Whether compiled.conv_wide computes this 2-D conv (measured on the benchmark models): the same
    stride on both axes, and depthwise (one input channel per group), or dense with a filter wider
    than one tap (a 1 x 1 filter's columns cost little) whose outputs per vector are at least as
    many as its output channels per group and those at most 64 (else ordered_dot's tiles fit the
    shape better), for a batch only with WIDE_POSITIONS outputs per vector (ordered_dot's columns
    then span the whole batch: full tiles)."""
    if win.stride[0] != win.stride[1]:
        return False
    if cg == 1:
        return True
    positions = win.out_shape[0] * -(-win.padded_shape[1] // win.stride[1])
    return (win.volume() > 1 and og <= 64 and positions >= og
            and (n_batch == 1 or positions >= WIDE_POSITIONS))


def _conv_product(weights: np.ndarray, cols: np.ndarray, win: Window, n_batch: int, skip_padding: bool) -> np.ndarray:
    """ordered_dot(weights a[k, g, o], columns b[k, g, (n, y)]) as [n, O, *out] (the padded
    taps skipped when `skip_padding`)."""
    cg, groups, og = weights.shape[0] // win.volume(), weights.shape[1], weights.shape[2]
    skip = padded_taps(win, cg, n_batch) if skip_padding else None
    acc = ordered_dot(weights, cols, skip)  # [G, Og, n * P]
    if n_batch == 1:
        return acc.reshape((1, groups * og) + win.out_shape)
    acc = np.moveaxis(acc.reshape((groups, og, n_batch) + win.out_shape), 2, 0)
    return acc.reshape((n_batch, groups * og) + win.out_shape)


# ---- deconv --------------------------------------------------------------------------

def _deconv_geometry(x: np.ndarray, w: np.ndarray, attribs: Attribs, groups: int) -> Window:
    spatial_in = x.shape[2:]
    size = w.shape[2:]
    rank = len(spatial_in)
    stride = int_list(attribs["stride"], "stride") or [1] * rank
    dilation = int_list(attribs["dilation"], "dilation") or [1] * rank
    output_shape = int_list(attribs.get("output_shape", []), "output_shape")
    pads = padding_list(attribs["padding"])
    if output_shape:
        if len(output_shape) != x.ndim or output_shape[0] != x.shape[0] or output_shape[1] != w.shape[1] * groups:
            raise KernelError(f"output_shape {output_shape} does not fit input {list(x.shape)} and filter {list(w.shape)}", "SEM-E005")
        out = list(output_shape[2:])
    elif pads:
        out = [(n - 1) * s + (k - 1) * d + 1 - p - q for n, k, s, d, (p, q) in zip(spatial_in, size, stride, dilation, pads)]
    else:
        out = [n * s for n, s in zip(spatial_in, stride)]
    if not pads:
        pads = []
        for n, k, s, d, o in zip(spatial_in, size, stride, dilation, out):
            total = max(0, (n - 1) * s + (k - 1) * d + 1 - o)
            pads.append((total // 2, total - total // 2))
    if len(pads) != rank or len(stride) != rank or len(dilation) != rank or any(o <= 0 for o in out):
        raise KernelError(f"invalid deconv geometry: padding {pads}, stride {stride}, dilation {dilation}, output {out}")
    return Window(tuple(spatial_in), tuple(size), tuple(stride), tuple(dilation), tuple(pads), tuple(out))


@kernel("deconv")
def deconv(inputs: Inputs, attribs: Attribs, dtype: str | None) -> tuple[np.ndarray]:
    """Transposed convolution; per output element the terms in (c, j0, j1, ...) order, bias last."""
    x = scalar(inputs["input"], "input")
    w = scalar(inputs["filter"], "filter")
    if x.ndim < 3 or w.ndim != x.ndim or w.shape[0] != x.shape[1]:
        raise KernelError(f"deconv needs filter[0] == input channels, got {x.shape} and {w.shape}", "SEM-E005")
    border_of(attribs, WINDOW_BORDERS)
    n_batch, channels = x.shape[:2]
    output_shape = int_list(attribs.get("output_shape", []), "output_shape")
    groups = _groups(attribs, output_shape[1] if output_shape else channels)
    if channels % groups:
        raise KernelError(f"groups={groups} does not divide input channels {channels}", "SEM-E005")
    win = _deconv_geometry(x, w, attribs, groups)
    cg, og = channels // groups, w.shape[1]
    xg = x.reshape((n_batch, groups, cg) + win.in_shape)
    wg = w.reshape((groups, cg, og) + win.size)
    acc = np.zeros((n_batch, groups, og) + win.out_shape, dtype=F32)
    w_shape = (1, groups, og) + (1,) * len(win.out_shape)
    for c in range(cg):
        for offset in win.offsets():
            src, dst = [], []
            for j, n, s, d, (p, _), o in zip(offset, win.in_shape, win.stride, win.dilation, win.padding, win.out_shape):
                # inputs i whose tap j lands inside the output: 0 <= i*s + j*d - p < o
                lo = max(0, -(-(p - j * d) // s))
                hi = min(n - 1, (o - 1 + p - j * d) // s)
                if lo > hi:
                    break
                first = lo * s + j * d - p
                src.append(slice(lo, hi + 1))
                dst.append(slice(first, first + (hi - lo) * s + 1, s))
            else:
                xs = xg[(slice(None), slice(None), c) + tuple(src)][:, :, None]
                term = wg[(slice(None), c, slice(None)) + offset].reshape(w_shape) * xs
                view = acc[(slice(None), slice(None), slice(None)) + tuple(dst)]
                np.add(view, term, out=view)
    out = acc.reshape((n_batch, groups * og) + win.out_shape)
    return (_add_bias(out, inputs["bias"]),)


# ---- box and pooling -----------------------------------------------------------------

def _pool_window(x: np.ndarray, attribs: Attribs) -> Window:
    size = int_list(attribs["size"], "size")
    if len(size) != x.ndim:
        raise KernelError(f"'size' {size} must have one item per input dimension ({x.ndim})")
    return resolve(x.shape, size, attribs["padding"], attribs["stride"], attribs["dilation"])


def box_sum(x: np.ndarray, win: Window, border: str) -> np.ndarray:
    """Sum over each window, taps in row-major order, accumulator from +0 (padding adds +0)."""
    xp = pad(x, win.padding, border, ZERO)
    acc = np.zeros(win.out_shape, dtype=F32)
    for offset in win.offsets():
        np.add(acc, xp[win.taps(offset)], out=acc)
    return acc


def window_count(win: Window, border: str) -> np.ndarray:
    """The divisor of a normalized box: the window volume, or for 'ignore' the number of
    taps inside the input (exact integer, converted to float32; 1 if there is none)."""
    if border != "ignore":
        return np.asarray(F32(win.volume()))
    inside = inside_mask(win.in_shape, win.padding).astype(np.int64)
    count = np.zeros(win.out_shape, dtype=np.int64)
    for offset in win.offsets():
        count += inside[win.taps(offset)]
    return np.maximum(count, 1).astype(F32)


def box(x: np.ndarray, attribs: Attribs, normalize: bool) -> np.ndarray:
    border = border_of(attribs)
    win = _pool_window(x, attribs)
    total = box_sum(x, win, border)
    if normalize:
        total = total / window_count(win, border)
    return np.asarray(total, dtype=F32)


@kernel("box")
def box_kernel(inputs: Inputs, attribs: Attribs, dtype: str | None) -> tuple[np.ndarray]:
    """Window sum (row-major taps, from +0), divided by the count if `normalize`."""
    return (box(scalar(inputs["input"], "input"), attribs, bool(attribs["normalize"])),)


@kernel("avg_pool")
def avg_pool(inputs: Inputs, attribs: Attribs, dtype: str | None) -> tuple[np.ndarray]:
    """box(normalize = true): 'constant' divides by the window volume, 'ignore' by the
    number of taps inside the input (ONNX count_include_pad 1 / 0)."""
    return (box(scalar(inputs["input"], "input"), attribs, True),)


@kernel("rms_pool")
def rms_pool(inputs: Inputs, attribs: Attribs, dtype: str | None) -> tuple[np.ndarray]:
    """sqrt(avg_pool(x * x)) as the fragment."""
    x = scalar(inputs["input"], "input")
    return (np.asarray(np.sqrt(box(x * x, attribs, True)), dtype=F32),)


def _max_padded(x: np.ndarray, attribs: Attribs) -> tuple[np.ndarray, Window]:
    """Input padded for max-type windows: 'constant' pads +0 (a real tap), 'ignore' pads
    -inf (never selected, so the tap is skipped), the others read input elements."""
    border = border_of(attribs)
    win = _pool_window(x, attribs)
    return pad(x, win.padding, border, NEG_INF if border == "ignore" else ZERO), win


def running_max(xp: np.ndarray, win: Window) -> tuple[np.ndarray, np.ndarray]:
    """Maximum and its tap index (row-major in the window) over each window.

    m = -inf, idx = 0; for each tap t (index j) in row-major order:
        update = t > m  or  (t is NaN and m is not NaN);  m = update ? t : m;  idx = update ? j : idx
    So the first maximal tap wins (first of +0/-0 ties too) and the first NaN wins.
    C: `u = (t > m) | ((t != t) & (m == m)); m = u ? t : m; idx = u ? j : idx;`
    Windows over the last two axes only (NNEF pools of images: size [1, 1, kh, kw], stride and
    dilation 1 elsewhere) run in one compiled pass when numba is importable: the same rule and order.
    """
    loops = compiled_loops()
    lead = len(win.size) - 2
    if (loops is not None and lead >= 0 and xp.size and win.size[:lead] == (1,) * lead
            and win.stride[:lead] == (1,) * lead and win.out_shape[:lead] == xp.shape[:lead]):
        return loops.running_max(xp, win.size[lead:], win.stride[lead:], win.dilation[lead:], win.out_shape[lead:])
    m = np.full(win.out_shape, NEG_INF, dtype=F32)
    idx = np.zeros(win.out_shape, dtype=np.int64)
    for j, offset in enumerate(win.offsets()):
        t = xp[win.taps(offset)]
        update = first_max_update(t, m)
        np.copyto(m, t, where=update)
        idx[update] = j
    return m, idx


@kernel("max_pool")
def max_pool(inputs: Inputs, attribs: Attribs, dtype: str | None) -> tuple[np.ndarray]:
    """Running maximum over row-major taps (first maximum wins, NaN propagates);
    'constant' border taps are +0, 'ignore' taps are skipped (-inf if a window has none)."""
    xp, win = _max_padded(scalar(inputs["input"], "input"), attribs)
    return (running_max(xp, win)[0],)


@kernel("argmax_pool")
def argmax_pool(inputs: Inputs, attribs: Attribs, dtype: str | None) -> tuple[np.ndarray]:
    """Row-major index, within the window (padded taps counted), of the tap max_pool selects."""
    xp, win = _max_padded(scalar(inputs["input"], "input"), attribs)
    return (running_max(xp, win)[1],)


def _sample(xp: np.ndarray, win: Window, index: np.ndarray) -> np.ndarray:
    out = np.zeros(win.out_shape, dtype=F32)
    for j, offset in enumerate(win.offsets()):
        np.copyto(out, xp[win.taps(offset)], where=index == j)
    return out


@kernel("sample")
def sample(inputs: Inputs, attribs: Attribs, dtype: str | None) -> tuple[np.ndarray]:
    """The tap `index` (row-major within the window) of each window, bit for bit; padded
    taps read +0 ('constant'), -inf ('ignore') or the border element."""
    xp, win = _max_padded(scalar(inputs["input"], "input"), attribs)
    index = integer(inputs["index"], "index")
    if index.shape != win.out_shape:
        raise KernelError(f"index shape {list(index.shape)} differs from the output shape {list(win.out_shape)}", "SEM-E005")
    return (_sample(xp, win, index),)


@kernel("max_pool_with_index")
def max_pool_with_index(inputs: Inputs, attribs: Attribs, dtype: str | None) -> tuple[np.ndarray, np.ndarray]:
    """(sample(input, argmax_pool(input)), argmax_pool(input)) as the fragment; equal to max_pool."""
    xp, win = _max_padded(scalar(inputs["input"], "input"), attribs)
    value, index = running_max(xp, win)
    return _sample(xp, win, index), index


# ---- up/down-sampling fragments ------------------------------------------------------

def _factor(x: np.ndarray, attribs: Attribs) -> list[int]:
    factor = int_list(attribs["factor"], "factor")
    if len(factor) != x.ndim - 2 or any(f <= 0 for f in factor):
        raise KernelError(f"'factor' {factor} must have {x.ndim - 2} positive items")
    return factor


def _fixed_box(x: np.ndarray, size: list[int], stride: list[int], normalize: bool) -> np.ndarray:
    attribs = {"size": size, "border": "constant", "padding": [(0, 0)] * x.ndim,
               "stride": stride, "dilation": []}
    return box(x, attribs, normalize)


@kernel("nearest_downsample")
def nearest_downsample(inputs: Inputs, attribs: Attribs, dtype: str | None) -> tuple[np.ndarray]:
    """box(size 1, stride [1, 1] + factor): x[.., y*f] as a one-term sum (+0 + x: -0 -> +0)."""
    x = scalar(inputs["input"], "input")
    factor = _factor(x, attribs)
    return (_fixed_box(x, [1] * x.ndim, [1, 1] + factor, False),)


@kernel("area_downsample")
def area_downsample(inputs: Inputs, attribs: Attribs, dtype: str | None) -> tuple[np.ndarray]:
    """box(size = stride = [1, 1] + factor, normalize): row-major window sum / volume."""
    x = scalar(inputs["input"], "input")
    factor = _factor(x, attribs)
    return (_fixed_box(x, [1, 1] + factor, [1, 1] + factor, True),)


@kernel("nearest_upsample")
def nearest_upsample(inputs: Inputs, attribs: Attribs, dtype: str | None) -> tuple[np.ndarray]:
    """debox(size = stride = [1, 1] + factor): each output is the one-term sum +0 + x[y // f]
    (every value copied exactly except -0, which becomes +0)."""
    x = scalar(inputs["input"], "input")
    out = x
    for axis, f in enumerate(_factor(x, attribs), start=2):
        out = np.repeat(out, f, axis=axis)
    return (np.asarray(ZERO + out, dtype=F32),)


# ---- multilinear_upsample ---------------------------------------------------------------

LINEAR_METHODS = ("symmetric", "aligned")


def linear_taps(n: int, f: int, method: str) -> list[tuple[int, int, np.float32, np.float32]]:
    """Per output position y of one axis (input extent n, factor f): the two input indices
    (clamped to [0, n-1]: the 'replicate' border) and their float32 weights (w_lo, w_hi).

    The sample position is the exact rational x = t / den: 'symmetric' (half-pixel centres)
    t = 2y + 1 - f, den = 2f; 'aligned' (corners) t = y (n - 1), den = f n - 1 (1 if f n = 1).
    lo = floor(t / den), r = t - lo * den; w_hi = float32(r) / float32(den), w_lo =
    float32(den - r) / float32(den): each weight is one correctly rounded division of exact
    integers, the same bits in C (the generators compute them the same way)."""
    taps = []
    for y in range(n * f):
        if method == "symmetric":
            t, den = 2 * y + 1 - f, 2 * f
        else:
            t, den = y * (n - 1), max(n * f - 1, 1)
        lo = t // den
        r = t - lo * den
        w_hi = F32(F32(r) / F32(den))
        w_lo = F32(F32(den - r) / F32(den))
        taps.append((min(max(lo, 0), n - 1), min(max(lo + 1, 0), n - 1), w_lo, w_hi))
    return taps


@kernel("multilinear_upsample")
def multilinear_upsample(inputs: Inputs, attribs: Attribs, dtype: str | None) -> tuple[np.ndarray]:
    """Linear interpolation on every spatial axis, each output the sum from +0 of its 2^d
    corner terms: corners in lexicographic order of (axis 2 lo/hi, axis 3 lo/hi, ...), lo
    before hi; a term is (w_a2 * w_a3 * ...) * x[corner], the weight product left to right,
    each * and + one float32 rounding. Methods 'symmetric' with border 'replicate' (ONNX
    half_pixel) and 'aligned' (ONNX align_corners, which never reads outside the input);
    other method/border pairs are SEM-E004."""
    x = scalar(inputs["input"], "input")
    factor = _factor(x, attribs)
    method = str(attribs.get("method", "symmetric"))
    border = str(attribs.get("border", "replicate"))
    if method not in LINEAR_METHODS:
        raise KernelError(f"multilinear_upsample method '{method}' is not implemented (implemented: "
                          f"{', '.join(LINEAR_METHODS)})")
    if method == "symmetric" and border != "replicate":
        raise KernelError(f"multilinear_upsample method 'symmetric' with border '{border}' is not implemented "
                          "(implemented: 'replicate')")
    axes = list(range(2, x.ndim))
    tables = [linear_taps(x.shape[a], f, method) for a, f in zip(axes, factor)]
    out = np.zeros(x.shape[:2] + tuple(len(t) for t in tables), dtype=F32)
    for corner in np.ndindex(*([2] * len(axes))):
        weight: np.ndarray | None = None
        index = []
        for a, (table, side) in enumerate(zip(tables, corner)):
            w = np.array([tap[2 + side] for tap in table], dtype=F32)
            shape = [1] * len(axes)
            shape[a] = len(table)
            w = w.reshape(shape)
            weight = w if weight is None else np.asarray(weight * w, dtype=F32)
            index.append(np.array([tap[side] for tap in table]))
        gathered = x[(slice(None), slice(None)) + np.ix_(*index)]
        out = np.asarray(out + np.asarray(weight * gathered, dtype=F32), dtype=F32)
    return (out,)

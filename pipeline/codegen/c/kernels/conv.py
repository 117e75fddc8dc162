"""conv: grouped convolution, terms in (input channel, kernel row, kernel column) order, bias last.

out[n, o, y] = (+0 + w[o, 0, 0, 0] * x(...) + ... + w[o, Cg-1, KH-1, KW-1] * x(...)) + bias[o]
(docs/semantics/sliding_window.md). Every output element gets exactly this sequence of
rounded products and rounded sums.

Fast path (2-D, constant finite weights or a border that reads real values): the weights are
re-arranged at generation time so that a block of output channels is contiguous
([group][channel block][c][kh][kw][block lanes], zero lanes past the group's channels), and
a block of P output positions times the channel block is accumulated in vector registers:
for each tap (c, kh, kw) in order, acc[p][lanes] = acc[p][lanes] + w[lanes] * x[p]. The
vectors run across independent outputs, never across the reduction, so every lane performs
its own output's sum in the documented order; the bias is added once the sum is complete.
The input is first copied into a padded buffer (zeros for constant/ignore borders: with a
finite weight a zero tap adds +-0 to a sum that is never -0, which changes nothing).

Across output columns (_fast_positions): vectors of consecutive output columns, R output
channels times T rows times Q vectors per tile; width stride 2 reads a phase-split copy
(padding.emit_phase_split_copy), planes that alias in L1 are skewed (plane_skew), and a
reduction whose rows overflow L1 runs in passes over input channels (channel_chunk). Each
changes addresses or where a partial sum waits, never the order of an output's terms.

Whole planes (_fast_whole_plane): across output channels with all 2-12 output positions of a plane in
one tile (ResNet-18's 2x2 last stage); the taps written out per input channel with the positions each
reaches inside the input, padded taps skipped (finite weights: +-0 changes no sum), the input read
where it is, large weight arrays prefetched ahead of their one linear pass.

General path (any spatial rank, weights computed or non-finite): scalar loops with the valid
tap range of each output position in index tables, so padded taps are skipped exactly.
"""

from __future__ import annotations

import math
from typing import Iterator

import numpy as np

from pipeline.codegen.c.kernels.common import F32, Kernel, Operand, emitter, strides
from pipeline.codegen.c.kernels.padding import FILL_BORDERS, emit_padded_copy, emit_phase_split_copy
from pipeline.codegen.c.kernels.geometry import BORDERS, WindowGeometry, kernel_window
from pipeline.codegen.c.kernels.tiling import (MAX_CHANNEL_ACCUMULATORS, channels_tile, phase_split_factor,
                                               positions_tile, transposing_store_cycles)



def _groups(k: Kernel, channels: int) -> int:
    groups = int(k.op.attribs["groups"])
    if groups < 0:
        raise k.fail(f"groups = {groups}")
    return groups or channels


def _bias_per_channel(k: Kernel, bias: Operand, outs: int) -> tuple[str, np.ndarray | None]:
    """('zero' | 'scalar' | 'channel' | 'tensor_scalar' | 'tensor_channel', per-channel values)."""
    if bias.is_literal:
        if np.array([bias.literal], F32).view(np.uint32)[0] == 0:
            return "zero", None
        return "scalar", np.full(outs, bias.literal, F32)
    shape = list(bias.shape)
    scalar_like = all(d == 1 for d in shape)
    channel_like = len(shape) >= 2 and shape[0] == 1 and shape[1] == outs and all(d == 1 for d in shape[2:])
    if not (scalar_like or channel_like):
        raise k.fail(f"bias of shape {shape} is neither per channel nor a scalar")
    if bias.is_constant:
        values = np.asarray(bias.value, F32).reshape(-1)
        return "channel", (np.full(outs, values[0], F32) if scalar_like else values.copy())
    return ("tensor_scalar" if scalar_like else "tensor_channel"), None


def bias_array(k: Kernel, bias: Operand, outs: int) -> tuple[str, str | None]:
    """(kind, the per-output-channel bias array's C name or None): the one declaration of the bias
    as `B_<label>` (layout bias_channels, traced to its tensor file) shared by every kernel that
    stores acc + bias[o] (conv fast path, conv general path, deconv)."""
    kind, per_channel = _bias_per_channel(k, bias, outs)
    if per_channel is None:
        return kind, None
    return kind, k.const_array(f"B_{bias.label or k.function}", per_channel, "float",
                               f"bias of {k.op.name} per output channel", source=bias.label,
                               layout={"kind": "bias_channels", "outs": outs} if bias.label else {})


@emitter("conv")
def conv(k: Kernel) -> None:
    x, f, bias = k.operand("input"), k.operand("filter"), k.operand("bias")
    if len(x.shape) < 3 or len(f.shape) != len(x.shape):
        raise k.fail(f"input {list(x.shape)} and filter {list(f.shape)} must have equal rank >= 3")
    border = str(k.op.attribs["border"])
    if border not in BORDERS:
        raise k.fail(f"border '{border}'")
    channels = x.shape[1]
    groups = _groups(k, channels)
    finite = f.is_constant and bool(np.isfinite(f.value).all())
    if len(x.shape) == 4 and f.is_constant and (finite or border not in FILL_BORDERS):
        if _prefer_positions(k, x, f, groups, border):
            _fast_positions(k, x, f, bias, groups, border)
        elif (tile := _whole_plane(k, x, f, groups, border, finite)) is not None:
            _fast_whole_plane(k, x, f, bias, groups, border, *tile)
        else:
            _fast(k, x, f, bias, groups, border)
    else:
        _general(k, x, f, bias, groups, border)


def store_plus_bias(k: Kernel, o_index: str, kind: str, bref: str | None, bias: Operand) -> None:
    """out[o_index] = acc, plus the bias of output channel `o` last (the reference's order)."""
    if kind == "zero":
        k.line(f"{k.out.c}[{o_index}] = acc;")
    elif kind in ("scalar", "channel"):
        k.line(f"{k.out.c}[{o_index}] = acc + {bref}[o];")
    elif kind == "tensor_scalar":
        k.line(f"{k.out.c}[{o_index}] = acc + {bias.c}[0];")
    else:
        k.line(f"{k.out.c}[{o_index}] = acc + {bias.c}[o];")


def _column_starts(wo: int, lanes: int) -> list[int]:
    """First column of each vector of an output row: every `lanes` columns, the last one shifted
    back to end at the last column."""
    starts = list(range(0, wo - lanes + 1, lanes))
    if starts[-1] + lanes < wo:
        starts.append(wo - lanes)
    return starts


def _prefer_positions(k: Kernel, x: Operand, f: Operand, groups: int, border: str) -> bool:
    """Vectors across output columns rather than output channels, when the tile cycle model
    (kernels/tiling.py) says it costs fewer cycles; needs a width stride of 1 or 2 and at least
    one full vector of columns. Stride 2 reads a phase-split copy (constant borders: one load per
    vector) or, for the other borders, two loads and a shuffle per vector, only where the second
    load stays inside the input."""
    win = _window(k, x, f)
    og = f.shape[0] // groups
    ho, wo = win.out_shape
    lanes = k.lanes
    s1 = win.stride[1]
    if s1 not in (1, 2) or wo < lanes:
        return False
    if s1 == 2 and not _phase_split(win, border) and not _even_loads_fit(k, x, f, win):
        return False
    cost = positions_tile(og, len(_column_starts(wo, lanes)), ho, _x_loads(win, border), math.prod(f.shape[1:]))[3]
    if _phase_split(win, border):
        cost *= phase_split_factor(f.shape[3])
    return cost <= channels_tile(og, lanes, ho * wo)[2] + transposing_store_cycles(og, ho * wo, math.prod(f.shape[1:]))


def _phase_split(win: WindowGeometry, border: str) -> bool:
    """Width stride 2 with a fill border: the input copy stores each padded row's even columns,
    then its odd ones (padding.emit_phase_split_copy)."""
    return win.stride[1] == 2 and border in FILL_BORDERS


def _x_loads(win: WindowGeometry, border: str) -> int:
    """Loads per input vector of the across-columns tile (two and a shuffle for stride 2 without
    the phase-split copy)."""
    return 1 if win.stride[1] == 1 or _phase_split(win, border) else 2


def _even_loads_fit(k: Kernel, x: Operand, f: Operand, win: WindowGeometry) -> bool:
    """A stride-2 vector of the last output columns, read as 2 * lanes floats, ends inside the
    (padded) input the kernel reads."""
    hp, wp = (n + p + q for n, (p, q) in zip(x.shape[2:], win.padding))
    ho, wo = win.out_shape
    last = ((math.prod(x.shape[:2]) - 1) * hp + (ho - 1) * win.stride[0] + (f.shape[2] - 1) * win.dilation[0]) * wp \
        + (wo - k.lanes) * 2 + (f.shape[3] - 1) * win.dilation[1] + 2 * k.lanes - 1
    return last < math.prod(x.shape[:2]) * hp * wp


ALIASING_BYTES = 256  # channel planes this many bytes apart (or a multiple) share a few first-level cache sets
L1_SETS, L1_WAYS, LINE_BYTES = 64, 8, 64  # Zen 3 (and most x86-64 cores): 32 KiB, 8 ways, 64-byte lines


def plane_skew(cg: int, hp: int, wp: int, rows: int) -> int:
    """Extra rows (never read) below each channel plane of the padded copy, so that consecutive
    planes do not start a multiple of ALIASING_BYTES apart, where the lines a tile reads would
    otherwise not fit the L1 sets they map to: each tap reads `rows` rows of every one of the
    group's `cg` input channels, and planes 1 or 4 KiB apart (16x16 or 32x32 floats) put all of
    them in 4 or 1 of the 64 sets, 8 lines each, so they evict each other every tap (MobileNet's
    1x1 convolutions over 32-256 channels). 0 where they fit: the copy would cost more than it
    saves (the Inception net's 1x1 convolutions over 16-48 channels). Changes addresses only."""
    plane = hp * wp * 4
    if plane % ALIASING_BYTES:
        return 0
    sets = L1_SETS // math.gcd(plane // LINE_BYTES, L1_SETS)
    if cg * -(-rows * wp * 4 // LINE_BYTES) <= L1_WAYS * sets:
        return 0
    return next((e for e in range(1, 5) if ((hp + e) * wp * 4) % ALIASING_BYTES), 0)


L1_LINES = L1_SETS * L1_WAYS
CHUNK_LINES = L1_LINES * 5 // 8  # a chunk's input rows: room left for the weights and the outputs


def channel_chunk(cg: int, rows: int, wp: int, lanes: int, wo: int) -> int:
    """Input channels per pass of the across-columns kernel: all `cg`, unless the `rows` padded
    rows of every input channel that one output row reads overflow the first-level cache (then
    each channel block re-reads them from L2). Then the reduction is cut into passes over the
    largest divisor of cg whose rows fit CHUNK_LINES: each pass loads the partial sums it
    stored (a float stored and loaded is the same float), adds its channels' terms in order,
    and the bias is added last, so every output gets the same operations in the same order.
    Measured on the plain CNN: 64 channels at 32x32, 1375-1430 -> 1129-1292 us; 128 at 16x16,
    1150-1280 -> 1108-1134 us; layers whose rows fit (32 channels at 64x64, 64 at 16x16) were
    5-7 % slower cut, so they are not. Needs whole column vectors (a shifted last vector would
    add a pass twice to the columns it shares)."""
    per_channel = rows * -(-wp * 4 // LINE_BYTES)
    if wo % lanes or cg * per_channel <= L1_LINES:
        return cg
    return max((c for c in range(1, cg) if cg % c == 0 and c * per_channel <= CHUNK_LINES), default=cg)


def _padded_input(k: Kernel, x: Operand, win, border: str, cg: int, rows: int) -> tuple[str, int, int]:
    """(pointer, plane height, padded width) of the input the kernel reads: a zero- or
    border-padded scratch copy when the window pads or the channel planes alias in the cache
    (then each plane is followed by plane_skew rows of the fill value, never read)."""
    height, width = x.shape[2], x.shape[3]
    hp, wp = height + sum(win.padding[0]), width + sum(win.padding[1])
    skew = plane_skew(cg, hp, wp, rows) if border in FILL_BORDERS else 0
    phase = _phase_split(win, border)
    if not skew and not phase and not any(p or q for p, q in win.padding):
        return x.c, height, width
    k.line(f"float *const xp = {k.scratch(math.prod(x.shape[:2]) * (hp + skew) * wp)};")
    (top, bottom), (left, right) = win.padding
    if phase:
        emit_phase_split_copy(k, x.c, x.shape, [(0, 0), (0, 0), (top, bottom + skew), (left, right)], 0.0, "xp",
                              "padded input, phase split" + (f" ({skew} rows below each channel plane against "
                                                             "cache-set aliasing)" if skew else ""))
        return "xp", hp + skew, wp
    emit_padded_copy(k, x.c, x.shape, [(0, 0), (0, 0), (top, bottom + skew), (left, right)], border, 0.0, "xp",
                     "padded input" + (f" ({skew} rows below each channel plane against cache-set aliasing)"
                                       if skew else ""))
    return "xp", hp + skew, wp


def _fast_positions(k: Kernel, x: Operand, f: Operand, bias: Operand, groups: int, border: str) -> None:
    """Vectors across NNEF_VL consecutive output columns of one row (width stride 1 or 2): for each
    tap (c, kh, kw) in order, acc[r][q] = acc[r][q] + w[o_r, c, kh, kw] * x[row, col_q .. col_q + VL),
    R output channels times Q column vectors in registers. The last vector of a row is shifted
    back to end at the last column (it recomputes a few columns: same values, same bits)."""
    n_batch, channels = x.shape[:2]
    outs, cg, kh, kw = f.shape
    og = outs // groups
    win = _window(k, x, f)
    (s0, s1), (d0, d1) = win.stride, win.dilation
    ho, wo = win.out_shape
    lanes = k.lanes
    starts = _column_starts(wo, lanes)
    phase = _phase_split(win, border)
    r_block, t_block, q_block, _ = positions_tile(og, len(starts), ho, _x_loads(win, border), cg * kh * kw)
    wname = _packed_weights(k, f, groups, r_block)
    nblocks = -(-og // r_block)
    kind, bname = bias_array(k, bias, outs)
    rows_read = (t_block - 1) * s0 + (kh - 1) * d0 + 1
    src, hp, wp = _padded_input(k, x, win, border, cg, rows_read)
    chunk = channel_chunk(cg, rows_read, wp, lanes, wo)
    k.comment(f"{r_block} output channels times {t_block} output rows times {q_block} vectors of {lanes} output "
              "columns at a time; per output: acc = +0, then acc = acc + w * x for (c, kh, kw) in order, then + bias")
    if chunk < cg:
        k.comment(f"the input channels in {cg // chunk} passes of {chunk} (their rows fit the first-level cache): "
                  "every output starts at +0 stored here, each pass loads the partial sums, adds its channels' "
                  "terms in order and stores them; the bias is added after the last pass (no branch: every pass "
                  "runs the same code)")
        _emit_zero(k, math.prod(k.out.shape))
    loops = [(v, e) for v, e in (("n", n_batch), ("g", groups)) if e > 1]
    for var, extent in loops:
        k.open(f"for (int {var} = 0; {var} < {extent}; ++{var})")
    nvar = "n" if n_batch > 1 else "0"
    gvar = "g" if groups > 1 else "0"
    k.line(f"const float *const xg = {src} + ({nvar} * {channels} + {gvar} * {cg}) * {hp * wp};")
    if chunk < cg:
        k.reduce(f"for (int cc = 0; cc < {cg}; cc += {chunk})", cg // chunk)

    def block(o0: str, rows: int, lines: int, cols: list[str]) -> None:
        """rows output channels x lines output rows (y, y + 1, ...) x the column vectors cols."""
        spots = [(t, col) for t in range(lines) for col in cols]
        accs = [[f"a{r}_{v}" for v in range(len(spots))] for r in range(rows)]
        def out_at(r: int, t: int, col: str) -> str:
            return f"{k.out.c} + (({nvar} * {outs} + {gvar} * {og} + {o0} + {r}) * {ho} + y + {t}) * {wo} + {col}"

        if chunk == cg:
            k.line("nnef_vf " + ", ".join(a for row in accs for a in row).replace(", ", " = nnef_vzero(), ")
                   + " = nnef_vzero();")
            k.reduce(f"for (int c = 0; c < {cg}; ++c)", cg)
        else:
            for r, row in enumerate(accs):
                for a, (t, col) in zip(row, spots):
                    k.line(f"nnef_vf {a} = nnef_vload({out_at(r, t, col)});")
            k.reduce(f"for (int c = cc; c < cc + {chunk}; ++c)", chunk)
        k.reduce(f"for (int i = 0; i < {kh}; ++i)", kh)
        for t in range(lines):
            k.line(f"const float *const xr{t} = xg + (c * {hp} + (y + {t}) * {s0} + i * {d0}) * {wp};")
        k.line(f"const float *const wr = {wname} + ((({gvar} * {nblocks} + {o0} / {r_block}) * {cg} + c) * {kh} + i)"
               f" * {kw * r_block};")
        for j in _taps(k, kw):
            if phase:  # padded column 2 * x + j * d1 sits at (j * d1 odd) * half + x + (j * d1) / 2
                k.line(f"const int xj = (({j} * {d1}) % 2) * {(wp + 1) // 2} + (({j} * {d1}) / 2);")   # >= 0: MISRA 10.1
            for v, (t, col) in enumerate(spots):
                if phase:
                    k.line(f"const nnef_vf xv{v} = nnef_vload(xr{t} + {col} + xj);")
                elif s1 == 1:
                    k.line(f"const nnef_vf xv{v} = nnef_vload(xr{t} + {col} + {j} * {d1});")
                else:
                    k.line(f"const nnef_vf xv{v} = nnef_vload_even(xr{t} + ({col}) * 2 + {j} * {d1});")
            for r in range(rows):
                k.line(f"const nnef_vf w{r} = nnef_vset1(wr[{j} * {r_block} + {r}]);")
                for v in range(len(spots)):
                    k.line(f"{accs[r][v]} = nnef_vadd({accs[r][v]}, nnef_vmul(w{r}, xv{v}));")
            _end_tap(k, kw)
        k.close()
        k.close()
        if chunk < cg:
            for r, row in enumerate(accs):
                for a, (t, col) in zip(row, spots):
                    k.line(f"nnef_vstore({out_at(r, t, col)}, {a});")
            return
        for r in range(rows):
            o = f"{gvar} * {og} + {o0} + {r}"
            if kind == "zero":
                bias_v = None
            elif kind in ("scalar", "channel"):
                bias_v = f"nnef_vset1({bname}[{o}])"
            elif kind == "tensor_scalar":
                bias_v = f"nnef_vset1({bias.c}[0])"
            else:
                bias_v = f"nnef_vset1({bias.c}[{o}])"
            for v, (t, col) in enumerate(spots):
                value = accs[r][v] if bias_v is None else f"nnef_vadd({accs[r][v]}, {bias_v})"
                k.line(f"nnef_vstore({out_at(r, t, col)}, {value});")

    def columns(o0: str, rows: int, lines: int) -> None:
        regular = [s for s in starts if s % lanes == 0]
        full = (len(regular) // q_block) * q_block
        if full:
            k.open(f"for (int x0 = 0; x0 < {full * lanes}; x0 += {q_block * lanes})")
            block(o0, rows, lines, [f"x0 + {q * lanes}" for q in range(q_block)])
            k.close()
        rest = starts[full:]
        for first in range(0, len(rest), q_block):
            k.open("")
            block(o0, rows, lines, [str(s) for s in rest[first:first + q_block]])
            k.close()

    def channel_blocks(lines: int) -> None:
        full_blocks = og // r_block
        if full_blocks:
            k.open(f"for (int ob = 0; ob < {full_blocks * r_block}; ob += {r_block})")
            columns("ob", r_block, lines)
            k.close()
        if og % r_block:
            k.open("")
            columns(str(full_blocks * r_block), og % r_block, lines)
            k.close()

    # output rows outermost: the input rows of a group of output rows stay in the first-level
    # caches while every output-channel block reads them
    full_rows = (ho // t_block) * t_block
    if full_rows:
        k.open(f"for (int y = 0; y < {full_rows}; y += {t_block})")
        channel_blocks(t_block)
        k.close()
    if ho % t_block:
        k.open("")
        k.line(f"const int y = {full_rows};")
        channel_blocks(ho % t_block)
        k.close()
    if chunk < cg:
        k.close()
    for _ in loops:
        k.close()
    if chunk < cg and kind != "zero":
        _emit_add_bias(k, n_batch, outs, ho * wo, kind, bname, bias)


def _emit_zero(k: Kernel, size: int) -> None:
    """out[i] = +0 for the whole output: the start of every sum a chunked reduction continues."""
    k.open(f"for (int i = 0; i < {size}; ++i)")
    k.line(f"{k.out.c}[i] = 0.0f;")
    k.close()


def _emit_add_bias(k: Kernel, batch: int, outs: int, plane: int, kind: str, bname: str | None,
                   bias: Operand) -> None:
    """out[n, o, ...] = out[n, o, ...] + bias[o] after a chunked reduction's last pass: the same one
    addition, on the same stored sum, as the unchunked kernels' acc + bias."""
    term = {"scalar": f"{bname}[o]", "channel": f"{bname}[o]", "tensor_scalar": f"{bias.c}[0]"}.get(kind,
                                                                                                  f"{bias.c}[o]")
    k.comment("the bias, last: out = out + bias[o]")
    k.open(f"for (int n = 0; n < {batch}; ++n)")
    k.open(f"for (int o = 0; o < {outs}; ++o)")
    k.line(f"float *const op = {k.out.c} + (n * {outs} + o) * {plane};")
    k.line(f"const float b = {term};")
    k.open(f"for (int i = 0; i < {plane}; ++i)")
    k.line("op[i] = op[i] + b;")
    k.close()
    k.close()
    k.close()


UNROLL_TAPS = 0  # measured: writing the taps out made LeNet-5 and the Inception net slower (gcc 12, -O2)


def _taps(k: Kernel, kw: int) -> Iterator[str]:
    """The kernel-column taps in order: written out one after the other (a block each, in
    increasing j) for narrow kernels, else one loop over j. The caller closes each with _end_tap."""
    if kw <= UNROLL_TAPS:
        for j in range(kw):
            k.open("")
            yield str(j)
    else:
        k.reduce(f"for (int j = 0; j < {kw}; ++j)", kw)
        yield "j"


def _end_tap(k: Kernel, kw: int) -> None:
    k.close()


def _window(k: Kernel, x: Operand, f: Operand) -> WindowGeometry:
    return kernel_window(k, x.shape[2:], f.shape[2:], slice(2, None))


def _packed_weights(k: Kernel, f: Operand, groups: int, block: int) -> str:
    """The filter packed in the order a tile reads it: [group][channel block][c][kh][kw][block
    channels], zero past the group's channels (layout conv_blocks, re-derived by codegen.trace)."""
    outs, cg, kh, kw = f.shape
    og = outs // groups
    nblocks = -(-og // block)
    w = np.asarray(f.value, F32).reshape(groups, og, cg, kh, kw)
    arranged = np.zeros((groups, nblocks, cg, kh, kw, block), F32)
    for b in range(nblocks):
        valid = min(block, og - b * block)
        arranged[:, b, :, :, :, :valid] = np.moveaxis(w[:, b * block:b * block + valid], 1, -1)
    return k.const_array(
        f"W_{f.label or f.name}_ob{block}", arranged, "float",
        f"{f.label or f.name} re-arranged for {k.op.name}: [group {groups}][channel block {nblocks}][c {cg}]"
        f"[kh {kh}][kw {kw}][{block} output channels], zero past the group's {og} channels",
        source=f.label, layout={"kind": "conv_blocks", "groups": groups, "og": og, "cg": cg, "kh": kh, "kw": kw,
                                "block": block})


def _fast(k: Kernel, x: Operand, f: Operand, bias: Operand, groups: int, border: str) -> None:
    n_batch, channels, height, width = x.shape
    outs, cg, kh, kw = f.shape
    og = outs // groups
    win = _window(k, x, f)
    (s0, s1), (d0, d1) = win.stride, win.dilation
    ho, wo = win.out_shape
    lanes = k.lanes
    vb, positions, _ = channels_tile(og, lanes, ho * wo)
    block = vb * lanes
    nblocks = -(-og // block)
    taps = cg * kh * kw
    wname = _packed_weights(k, f, groups, block)
    kind, bname = _bias_blocks(k, bias, groups, og, block)
    # the padded input
    pads = [(0, 0), (0, 0)] + list(win.padding)
    src, hp, wp = x.c, height, width
    if any(p or q for p, q in win.padding):
        src = k.scratch(math.prod(x.shape[:2]) * (height + sum(win.padding[0])) * (width + sum(win.padding[1])))
        k.line(f"float *const xp = {src};")
        padded = emit_padded_copy(k, x.c, x.shape, pads, border, 0.0, "xp", "padded input")
        src, hp, wp = "xp", padded[2], padded[3]
    k.comment(f"output channels in blocks of {block} ({vb} vectors) times {positions} output positions (row-major) "
              "at a time; per output: acc = +0, then acc = acc + w * x for (c, kh, kw) in order, then + bias")
    loops = []
    if n_batch > 1:
        loops.append(("n", n_batch))
    if groups > 1:
        loops.append(("g", groups))
    for var, extent in loops:
        k.open(f"for (int {var} = 0; {var} < {extent}; ++{var})")
    nvar = "n" if n_batch > 1 else "0"
    gvar = "g" if groups > 1 else "0"
    full = og // block
    remainder = og - full * block
    total = ho * wo

    def channel_block(bvar: str, valid: int) -> None:
        k.line(f"const float *const wb = {wname} + ({gvar} * {nblocks} + {bvar}) * {taps * block};")
        _bias_vectors(k, kind, bname, bias, gvar, bvar, og, block, valid)
        k.line(f"const float *const xg = {src} + ({nvar} * {channels} + {gvar} * {cg}) * {hp * wp};")
        k.line(f"float *const og = {k.out.c} + ({nvar} * {outs} + {gvar} * {og} + {bvar} * {block}) * {total};")
        full_positions = (total // positions) * positions
        if full_positions:
            k.open(f"for (int pos = 0; pos < {full_positions}; pos += {positions})")
            position_block(valid, positions)
            k.close()
        if total % positions:
            k.open("")
            k.line(f"const int pos = {full_positions};")
            position_block(valid, total % positions)
            k.close()

    def position_block(valid: int, count: int) -> None:
        for p in range(count):
            k.line(f"const int off{p} = ((pos + {p}) / {wo}) * {s0 * wp} + ((pos + {p}) % {wo}) * {s1};")
        accs = [[f"a{p}_{v}" for v in range(vb)] for p in range(count)]
        k.line("nnef_vf " + ", ".join(f"{a} = nnef_vzero()" for row in accs for a in row) + ";")
        k.reduce(f"for (int c = 0; c < {cg}; ++c)", cg)
        k.reduce(f"for (int i = 0; i < {kh}; ++i)", kh)
        k.line(f"const float *const xr = xg + c * {hp * wp} + i * {d0 * wp};")
        k.line(f"const float *const wr = wb + (c * {kh} + i) * {kw * block};")
        for j in _taps(k, kw):
            for v in range(vb):
                k.line(f"const nnef_vf w{v} = nnef_vload(wr + {j} * {block} + {v * lanes});")
            for p in range(count):
                k.line(f"const nnef_vf xv{p} = nnef_vset1(xr[off{p} + {j} * {d1}]);")
                for v in range(vb):
                    k.line(f"{accs[p][v]} = nnef_vadd({accs[p][v]}, nnef_vmul(w{v}, xv{p}));")
            _end_tap(k, kw)
        k.close()
        k.close()
        _store_positions(k, accs, kind, block, valid, [f"q * {total} + pos + {p}" for p in range(count)])

    if full:
        k.open(f"for (int b = 0; b < {full}; ++b)")
        channel_block("b", block)
        k.close()
    if remainder:
        k.open("")
        k.line(f"const int b = {full};")
        channel_block("b", remainder)
        k.close()
    for _ in loops:
        k.close()


def _bias_blocks(k: Kernel, bias: Operand, groups: int, og: int, block: int) -> tuple[str, str | None]:
    """(kind, C name or None) of the bias of the across-channels layouts: per-channel values
    arranged [group][channel block][block lanes], zero lanes past the group's channels (layout
    bias_blocks)."""
    nblocks = -(-og // block)
    kind, per_channel = _bias_per_channel(k, bias, groups * og)
    if per_channel is None:
        return kind, None
    arranged_b = np.zeros((groups, nblocks, block), F32)
    pb = per_channel.reshape(groups, og)
    for b in range(nblocks):
        valid = min(block, og - b * block)
        arranged_b[:, b, :valid] = pb[:, b * block:b * block + valid]
    return kind, k.const_array(f"B_{bias.label or k.function}_ob{block}", arranged_b, "float",
                               f"bias of {k.op.name} per output channel block ({block} lanes, zero padded)",
                               source=bias.label, layout={"kind": "bias_blocks", "groups": groups, "og": og,
                                                          "block": block} if bias.label else {})


def _bias_vectors(k: Kernel, kind: str, bname: str | None, bias: Operand, gvar: str, bvar: str, og: int,
                  block: int, valid: int) -> None:
    """bias0 .. bias{vb-1}: the bias of the channel block `bvar` as vectors (none for a zero bias)."""
    lanes = k.lanes
    vb = block // lanes
    nblocks = -(-og // block)
    if kind in ("channel", "scalar"):
        for v in range(vb):
            k.line(f"const nnef_vf bias{v} = nnef_vload({bname} + ({gvar} * {nblocks} + {bvar}) * {block} + {v * lanes});")
    elif kind == "tensor_scalar":
        for v in range(vb):
            k.line(f"const nnef_vf bias{v} = nnef_vset1({bias.c}[0]);")
    elif kind == "tensor_channel":
        k.line(f"float bt[{block}] = {{0}};")
        k.open(f"for (int q = 0; q < {valid}; ++q)")
        k.line(f"bt[q] = {bias.c}[{gvar} * {og} + {bvar} * {block} + q];")
        k.close()
        for v in range(vb):
            k.line(f"const nnef_vf bias{v} = nnef_vload(bt + {v * lanes});")


def _store_positions(k: Kernel, accs: list[list[str]], kind: str, block: int, valid: int, where: list[str]) -> None:
    """Store an across-channels tile: position p's `block` channels (bias added last, unless
    zero) to og[where[p]], `q` the channel, through a scratch array so that a partial block
    writes only its `valid` channels."""
    lanes = k.lanes
    k.line(f"float t[{len(accs)}][{block}];")
    for p, row in enumerate(accs):
        for v, acc in enumerate(row):
            value = acc if kind == "zero" else f"nnef_vadd({acc}, bias{v})"
            k.line(f"nnef_vstore(t[{p}]{f' + {v * lanes}' if v else ''}, {value});")   # no dead + 0 (MISRA 2.2)
    k.open(f"for (int q = 0; q < {valid}; ++q)")
    for p, index in enumerate(where):
        k.line(f"og[{index}] = t[{p}][q];")
    k.close()


# Measured, not derived (Zen 3, gcc 12, ResNet-18's 512-channel stage, variants alternated in one session):
# a software prefetch of every weight line 1 KiB ahead of the whole-plane kernel's linear stream took the
# 256 -> 512-channel stride-2 layer 325-489 -> 264-318 us and left the 512-channel ones at 521-707 us
# against 555-691 without it; 512 B, 2 and 4 KiB ahead were no better. 0: none. Only for weights of at
# least PREFETCH_MIN_BYTES (the second-level cache of Zen 3: smaller ones stay in the caches between inferences).
PREFETCH_BYTES = 1024
PREFETCH_MIN_BYTES = 512 * 1024
WHOLE_PLANE_TERMS = 64  # at most this many (tap, output position) pairs written out per input channel


def _whole_plane(k: Kernel, x: Operand, f: Operand, groups: int, border: str, finite: bool) -> tuple[int, int] | None:
    """(channel vectors, output rows per band) where the across-channels tile covers whole output rows
    (ResNet-18's 2x2 and 4x4 outputs): all positions of the plane when they fit one tile, else bands
    of rows (BAND_*). The taps are then written out per input channel, each with the positions it
    reaches inside the input known at generation time. Needs finite weights where the window pads (a
    skipped padded tap would add w * 0 = +-0 to a sum that is never -0, which changes nothing;
    with an infinite weight it would be NaN) and a fill border (the other borders read real
    values there). None where the shape does not qualify."""
    win = _window(k, x, f)
    ho, wo = win.out_shape
    total = ho * wo
    if total < 2:  # one position: the across-channels tile is the same (the SE blocks' 1x1 layers stay as they were)
        return None
    pads = any(p or q for p, q in win.padding)
    if pads and not (finite and border in FILL_BORDERS):
        return None
    taps = f.shape[2] * f.shape[3]
    vb = channels_tile(f.shape[0] // groups, k.lanes, total, whole=True)[0]
    if vb and total * taps <= WHOLE_PLANE_TERMS:
        return vb, ho
    rows = MAX_CHANNEL_ACCUMULATORS // wo
    if total <= BAND_MAX_POSITIONS and rows and rows * wo * taps <= BAND_TERMS:
        return 1, rows
    return None


# Measured, not derived (Zen 3, gcc 12, ResNet-18's 256-channel 4x4 3x3 layers, variants alternated three
# times in one session, load average ~5): bands of 3 output rows (12 positions) x 1 channel vector took
# them from 359-501 us (the general across-channels tile, every padded tap computed) to 222-259 us; 2 rows
# x 1 vector 251-272, 1 row x 2 vectors 291-321, 2 rows x 2 vectors 263-324.
BAND_MAX_POSITIONS = 16  # planes up to 4x4 (larger ones: not measured)
BAND_TERMS = 108  # (tap, position) pairs written out per input channel in a band: 3 rows x 4 x 3 x 3


def _fast_whole_plane(k: Kernel, x: Operand, f: Operand, bias: Operand, groups: int, border: str,
                      vb: int, band: int) -> None:
    """Vectors across output channels, `band` whole output rows of a channel block in registers
    (all ho * wo positions where band = ho): per input channel c, for each tap (kh, kw) in order, the
    block's weight vectors are loaded once (the packed weights are read in one linear pass over the
    whole array when band = ho, so the hardware prefetcher streams them from memory) and acc[p] =
    acc[p] + w * x[c, y_p, x_p] for each position p whose tap falls inside the input, read from the
    input itself (no padded copy). The padded taps are skipped: with finite weights they would add
    +-0 to a sum that is never -0."""
    n_batch, channels, height, width = x.shape
    outs, cg, kh, kw = f.shape
    og = outs // groups
    win = _window(k, x, f)
    (s0, s1), (d0, d1) = win.stride, win.dilation
    (p0, _), (p1, _) = win.padding
    ho, wo = win.out_shape
    total = ho * wo
    lanes = k.lanes
    block = vb * lanes
    nblocks = -(-og // block)
    wname = _packed_weights(k, f, groups, block)
    kind, bname = _bias_blocks(k, bias, groups, og, block)
    tile = f"all {total} output positions" if band == ho else f"{band} output rows of {wo} positions"
    k.comment(f"output channels in blocks of {block} ({vb} vectors) times {tile} at a time, "
              "the taps written out with the positions each reaches inside the input; per output: acc = +0, then "
              "acc = acc + w * x for (c, kh, kw) in order (padded taps skipped: +-0 changes no sum), then + bias")
    loops = [(v, e) for v, e in (("n", n_batch), ("g", groups)) if e > 1]
    for var, extent in loops:
        k.open(f"for (int {var} = 0; {var} < {extent}; ++{var})")
    nvar = "n" if n_batch > 1 else "0"
    gvar = "g" if groups > 1 else "0"

    def band_tile(y0: int, rows: int, valid: int) -> None:
        positions = [(y, xo) for y in range(y0, y0 + rows) for xo in range(wo)]
        count = len(positions)
        accs = [[f"a{p}_{v}" for v in range(vb)] for p in range(count)]
        k.line("nnef_vf " + ", ".join(f"{a} = nnef_vzero()" for row in accs for a in row) + ";")
        k.reduce(f"for (int c = 0; c < {cg}; ++c)", cg)
        k.line(f"const float *const xc = xg + c * {height * width};")
        k.line(f"const float *const wc = wb + c * {kh * kw * block};")
        if y0 == 0 and PREFETCH_BYTES and math.prod(f.shape) * 4 >= PREFETCH_MIN_BYTES:
            for line in range(0, kh * kw * block * 4, LINE_BYTES):
                k.line(f"NNEF_PREFETCH(wc + {(PREFETCH_BYTES + line) // 4});")
        for i in range(kh):
            for j in range(kw):
                reach = [(p, (y * s0 + i * d0 - p0) * width + xo * s1 + j * d1 - p1)
                         for p, (y, xo) in enumerate(positions)
                         if 0 <= y * s0 + i * d0 - p0 < height and 0 <= xo * s1 + j * d1 - p1 < width]
                if not reach:
                    continue
                k.open("")
                for v in range(vb):
                    k.line(f"const nnef_vf w{v} = nnef_vload(wc + {(i * kw + j) * block + v * lanes});")
                for p, offset in reach:
                    k.line(f"const nnef_vf x{p} = nnef_vset1(xc[{offset}]);")
                    for v in range(vb):
                        k.line(f"{accs[p][v]} = nnef_vadd({accs[p][v]}, nnef_vmul(w{v}, x{p}));")
                k.close()
        k.close()
        _store_positions(k, accs, kind, block, valid, [f"q * {total} + {y0 * wo + p}" for p in range(count)])

    def channel_block(bvar: str, valid: int) -> None:
        k.line(f"const float *const wb = {wname} + ({gvar} * {nblocks} + {bvar}) * {cg * kh * kw * block};")
        _bias_vectors(k, kind, bname, bias, gvar, bvar, og, block, valid)
        k.line(f"const float *const xg = {x.c} + ({nvar} * {channels} + {gvar} * {cg}) * {height * width};")
        k.line(f"float *const og = {k.out.c} + ({nvar} * {outs} + {gvar} * {og} + {bvar} * {block}) * {total};")
        if band == ho:
            band_tile(0, ho, valid)
            return
        for y0 in range(0, ho, band):
            k.open("")
            band_tile(y0, min(band, ho - y0), valid)
            k.close()

    full = og // block
    if full:
        k.open(f"for (int b = 0; b < {full}; ++b)")
        channel_block("b", block)
        k.close()
    if og % block:
        k.open("")
        k.line(f"const int b = {full};")
        channel_block("b", og % block)
        k.close()
    for _ in loops:
        k.close()


def _general(k: Kernel, x: Operand, f: Operand, bias: Operand, groups: int, border: str) -> None:
    """Scalar loops in the reference order for any rank; skipped taps through index tables."""
    rank = len(x.shape) - 2
    outs, cg = f.shape[:2]
    og = outs // groups
    if cg * groups != x.shape[1] or outs % groups:
        raise k.fail(f"filter {list(f.shape)} with groups={groups} does not fit input channels {x.shape[1]}")
    win = _window(k, x, f)
    src, shape = x.c, tuple(x.shape)
    pads = list(win.padding)
    if border not in FILL_BORDERS and any(p or q for p, q in pads):
        padded_size = math.prod(x.shape[:2]) * math.prod(n + p + q for n, (p, q) in zip(x.shape[2:], pads))
        k.line(f"float *const xp = {k.scratch(padded_size)};")
        shape = emit_padded_copy(k, x.c, x.shape, [(0, 0), (0, 0)] + pads, border, None, "xp", "padded input")
        src, pads = "xp", [(0, 0)] * rank
    xst, wst = strides(shape), strides(f.shape)
    ost = strides(k.out.shape)
    wref = f.c
    if f.is_constant:
        wref = k.const_array(f"W_{f.label or f.name}", np.asarray(f.value, F32), "float",
                             f"{f.label or f.name} as in its tensor file (row-major)", source=f.label,
                             layout={"kind": "identity"})
    tables = []
    for axis in range(rank):
        n, kk, s, d = shape[2 + axis], f.shape[2 + axis], win.stride[axis], win.dilation[axis]
        p = pads[axis][0]
        lo, hi = [], []
        for y in range(win.out_shape[axis]):
            valid = [j for j in range(kk) if 0 <= y * s + j * d - p < n]
            lo.append(valid[0] if valid else 0)
            hi.append(valid[-1] + 1 if valid else 0)
        tables.append((k.const_array(f"IX_{k.function}_lo{axis}", np.asarray(lo, np.int32), "int",
                                     f"first tap inside the input, per output position of axis {axis}"),
                       k.const_array(f"IX_{k.function}_hi{axis}", np.asarray(hi, np.int32), "int",
                                     f"one past the last tap inside the input, axis {axis}")))
    kind, bref = bias_array(k, bias, outs)
    k.comment("general path: per output, acc = +0, then acc = acc + w * x over (c, taps) in order, "
              "padded taps skipped, then + bias")
    ys = [f"y{a}" for a in range(rank)]
    js = [f"j{a}" for a in range(rank)]
    k.open(f"for (int n = 0; n < {x.shape[0]}; ++n)")
    k.open(f"for (int o = 0; o < {outs}; ++o)")
    for y, extent in zip(ys, win.out_shape):
        k.open(f"for (int {y} = 0; {y} < {extent}; ++{y})")
    k.line("float acc = 0.0f;")
    k.reduce(f"for (int c = 0; c < {cg}; ++c)", cg)
    for axis, (j, y) in enumerate(zip(js, ys)):
        lo, hi = tables[axis]
        k.reduce(f"for (int {j} = {lo}[{y}]; {j} < {hi}[{y}]; ++{j})", f.shape[2 + axis])
    x_index = " + ".join([f"(n * {shape[1]} + o / {og} * {cg} + c) * {xst[1]}"]
                         + [f"({y} * {win.stride[a]} + {j} * {win.dilation[a]} - {pads[a][0]}) * {xst[2 + a]}"
                            for a, (y, j) in enumerate(zip(ys, js))])
    w_index = " + ".join([f"o * {wst[0]}", f"c * {wst[1]}"] + [f"{j} * {wst[2 + a]}" for a, j in enumerate(js)])
    k.line(f"acc = acc + {wref}[{w_index}] * {src}[{x_index}];")
    for _ in range(rank + 1):
        k.close()
    o_index = " + ".join([f"n * {ost[0]}", f"o * {ost[1]}"] + [f"{y} * {ost[2 + a]}" for a, y in enumerate(ys)])
    store_plus_bias(k, o_index, kind, bref, bias)
    for _ in range(rank + 2):
        k.close()

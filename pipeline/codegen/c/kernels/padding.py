"""Padded copies of a tensor: the border handling shared by conv, pooling, LRN and pad.

`constant`/`ignore` borders: the padded positions hold one value (the one that makes a
padded tap vanish or lose: +0 for sums and conv with finite weights, -inf for max_pool with
`ignore`, +0 for max_pool with `constant`, the `value` of pad) and the input rows are copied
inside; where only the last two axes are padded (every 2-D window here) plane by plane, each
element written once, else by a fill of the whole copy and the rows copied over it. Adding a +0 term never changes a sum that started at +0 (it is never -0),
so this equals skipping the tap (docs/semantics/sliding_window.md). `replicate`, `reflect`
and `reflect-even` read real input elements through per-axis index tables computed here
(independently of the reference's implementation) and gathered by fixed loops.
"""

from __future__ import annotations

import numpy as np

from pipeline.codegen.c.kernels.common import Kernel, flit, strides

FILL_BORDERS = ("constant", "ignore")
MAP_BORDERS = ("replicate", "reflect", "reflect-even")


def source_index(n: int, before: int, after: int, border: str) -> list[int]:
    """For each padded position -before .. n + after - 1: the input index it reads."""
    result = []
    for j in range(-before, n + after):
        if border == "replicate":
            result.append(min(max(j, 0), n - 1))
        elif border == "reflect":
            if n == 1:
                result.append(0)
            else:
                period = 2 * (n - 1)
                m = j % period
                result.append(m if m < n else period - m)
        elif border == "reflect-even":
            period = 2 * n
            m = j % period
            result.append(m if m < n else period - 1 - m)
        else:
            raise ValueError(border)
    return result


def _emit_fill(k: Kernel, dst: str, size: int, fill: float) -> None:
    """`dst[0 .. size)` = fill: whole vectors, then the remainder element by element."""
    k.line(f"const nnef_vf fill = nnef_vset1({flit(fill)});")
    _emit_range(k, dst, "", size, fill)


def _emit_range(k: Kernel, dst: str, start: str, size: int, fill: float) -> None:
    """`dst[start .. start + size)` = fill (the vector `fill` declared by the caller where size >= lanes):
    whole vectors, then the remainder element by element; nothing for an empty range. An empty
    `start` is 0."""
    lanes = k.lanes
    end = size - size % lanes
    at = f"{start} + i" if start else "i"
    if end:
        k.open(f"for (int i = 0; i < {end}; i += {lanes})")
        k.line(f"nnef_vstore({dst} + {at}, fill);")
        k.close()
    if end < size:
        k.open(f"for (int i = {end}; i < {size}; ++i)")
        k.line(f"{dst}[{at}] = {flit(fill)};")
        k.close()


def _emit_plane_copy(k: Kernel, src: str, shape: tuple[int, ...], pads: list[tuple[int, int]], fill: float,
                     dst: str, what: str) -> None:
    """The fill-border copy where only the last two axes are padded, plane by plane: the padded rows
    above, then per input row its left padding, the row (memcpy) and its right padding, then the
    padded rows below. Each element of the copy is written once, in address order, while its
    plane is in the first-level cache (filling the whole copy first and then copying the input over
    it wrote the interior twice and, for copies larger than L1, streamed it through L2 twice: the
    64 x 34 x 34 -inf copy of ResNet-18's stride-2 max pool 34 -> 30 µs alone)."""
    h, w = shape[-2], shape[-1]
    (top, bottom), (left, right) = pads[-2], pads[-1]
    hp, wp = h + top + bottom, w + left + right
    planes = int(np.prod(shape[:-2], dtype=np.int64))
    k.comment(f"{what}: plane by plane, the {fill!r} border and the input rows, each element written once")
    if max(top * wp, left, right, bottom * wp) >= k.lanes:
        k.line(f"const nnef_vf fill = nnef_vset1({flit(fill)});")
    k.open(f"for (int a0 = 0; a0 < {planes}; ++a0)")
    k.line(f"float *const d = {dst} + a0 * {hp * wp};")
    _emit_range(k, "d", "0", top * wp, fill)
    k.open(f"for (int a1 = 0; a1 < {h}; ++a1)")
    k.line(f"float *const r = d + (a1 + {top}) * {wp};")
    _emit_range(k, "r", "0", left, fill)
    k.line(f"(void)memcpy(r + {left}, {src} + (a0 * {h} + a1) * {w}, {w}u * sizeof(float));")
    _emit_range(k, "r", str(left + w), right, fill)
    k.close()
    _emit_range(k, "d", str((top + h) * wp), bottom * wp, fill)
    k.close()


def emit_padded_copy(k: Kernel, src: str, shape: tuple[int, ...], pads: list[tuple[int, int]], border: str,
                     fill: float | None, dst: str, what: str) -> tuple[int, ...]:
    """Copy the tensor at `src` (shape `shape`) into `dst` padded by `pads` per axis; returns the
    padded shape. `fill` is the value of padded positions for constant/ignore borders."""
    if any(p < 0 or q < 0 for p, q in pads):
        raise k.fail(f"negative padding {pads} is not supported")
    padded = tuple(n + p + q for n, (p, q) in zip(shape, pads))
    size = int(np.prod(padded))
    pst, sst = strides(padded), strides(shape)
    rank = len(shape)
    if border in FILL_BORDERS and rank >= 2 and not any(p or q for p, q in pads[:-2]):
        _emit_plane_copy(k, src, shape, pads, fill, dst, what)
        return padded
    if border in FILL_BORDERS:
        k.comment(f"{what}: fill the padded copy with {fill!r}, then copy the input inside it")
        _emit_fill(k, dst, size, fill)
        variables = [f"a{axis}" for axis in range(rank - 1)]
        for var, n in zip(variables, shape[:-1]):
            k.open(f"for (int {var} = 0; {var} < {n}; ++{var})")
        d_off = " + ".join([f"({v} + {p}) * {s}" for v, (p, _), s in zip(variables, pads[:-1], pst[:-1])]
                           + [str(pads[-1][0])])
        s_off = " + ".join([f"{v} * {s}" for v, s in zip(variables, sst[:-1])] or ["0"])
        k.line(f"(void)memcpy({dst} + {d_off}, {src} + {s_off}, {shape[-1]}u * sizeof(float));")
        for _ in variables:
            k.close()
        return padded
    tables = []
    for axis, (n, (p, q)) in enumerate(zip(shape, pads)):
        if p == 0 and q == 0:
            tables.append(None)
            continue
        index = np.asarray(source_index(n, p, q, border), dtype=np.int32)
        tables.append(k.const_array(f"IX_{k.function}_{axis}", index, "int",
                                    f"{what}: input index read by each padded position of axis {axis} ({border})"))
    k.comment(f"{what}: padded copy with border '{border}' (per-axis index tables)")
    variables = [f"a{axis}" for axis in range(rank)]
    for var, n in zip(variables, padded):
        k.open(f"for (int {var} = 0; {var} < {n}; ++{var})")
    d_off = " + ".join(f"{v} * {s}" for v, s in zip(variables, pst))
    s_terms = []
    for var, table, s in zip(variables, tables, sst):
        s_terms.append(f"{table}[{var}] * {s}" if table else f"{var} * {s}")
    k.line(f"{dst}[{d_off}] = {src}[{' + '.join(s_terms)}];")
    for _ in variables:
        k.close()
    return padded


def emit_phase_split_copy(k: Kernel, src: str, shape: tuple[int, ...], pads: list[tuple[int, int]], fill: float,
                          dst: str, what: str) -> tuple[int, ...]:
    """Copy the 4-D tensor at `src` into `dst` padded by `pads` (axes 2 and 3) with `fill`, each
    padded row stored as its even columns, then its odd columns: a window of width stride 2 then
    reads the column 2x + j of output column x at (j odd) * ceil(wp / 2) + x + j // 2, so the
    inputs of consecutive outputs are consecutive floats (one load, no shuffle per tap). Only
    addresses change; every element is copied bit for bit. Returns the padded shape."""
    n, c, h, w = shape
    (top, bottom), (left, right) = pads[2], pads[3]
    if any(p or q for p, q in pads[:2]) or min(top, bottom, left, right) < 0:
        raise k.fail(f"padding {pads} is not supported by the phase-split copy")
    hp, wp = h + top + bottom, w + left + right
    half = (wp + 1) // 2
    lanes = k.lanes
    k.comment(f"{what}: plane by plane, the {fill!r} rows above and below and each input row with its {fill!r} "
              f"columns, padded columns 0, 2, 4, ... first and 1, 3, 5, ... from offset {half} (stride-2 windows "
              "read consecutive floats); each element written once")
    if max(top, bottom) * wp >= lanes:
        k.line(f"const nnef_vf fill = nnef_vset1({flit(fill)});")
    k.open(f"for (int a0 = 0; a0 < {n * c}; ++a0)")
    k.line(f"float *const p = {dst} + a0 * {hp * wp};")
    _emit_range(k, "p", "0", top * wp, fill)
    _emit_range(k, "p", str((top + h) * wp), bottom * wp, fill)
    k.open(f"for (int a2 = 0; a2 < {h}; ++a2)")
    k.line(f"const float *const s = {src} + (a0 * {h} + a2) * {w};")
    k.line(f"float *const d = p + (a2 + {top}) * {wp};")
    for column in list(range(left)) + list(range(left + w, wp)):
        k.line(f"d[{(column & 1) * half + (column >> 1)}] = {flit(fill)};")
    chunk = 2 * lanes
    full = w - w % chunk
    if full:
        # input column c is padded column c + left: the even ones go to the first half, at
        # (c + left) / 2, the odd ones to the second, at half + (c + left - 1) / 2
        if left % 2 == 0:
            even_at, odd_at = f"(c0 + {left}) / 2", f"{half} + (c0 + {left}) / 2"
        else:
            even_at, odd_at = f"{half} + (c0 + {left - 1}) / 2", f"(c0 + {left + 1}) / 2"
        k.open(f"for (int c0 = 0; c0 < {full}; c0 += {chunk})")
        k.line(f"nnef_vstore(d + {even_at}, nnef_vload_even(s + c0));")
        k.line(f"nnef_vstore(d + {odd_at}, nnef_vload_odd(s + c0));")
        k.close()
    if full < w:
        k.open(f"for (int c1 = {full}; c1 < {w}; ++c1)")
        k.line(f"d[((c1 + {left}) % 2) * {half} + ((c1 + {left}) / 2)] = s[c1];")   # >= 0: MISRA 10.1
        k.close()
    k.close()
    k.close()
    return (n, c, hp, wp)

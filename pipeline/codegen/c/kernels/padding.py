"""Padded copies of a tensor: the border handling shared by conv, pooling, LRN and pad.

`constant`/`ignore` borders: the copy is first filled with one value (the one that makes a
padded tap vanish or lose: +0 for sums and conv with finite weights, -inf for max_pool with
`ignore`, +0 for max_pool with `constant`, the `value` of pad), then the input rows are
copied inside. Adding a +0 term never changes a sum that started at +0 (it is never -0),
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
    if border in FILL_BORDERS:
        k.comment(f"{what}: fill the padded copy with {fill!r}, then copy the input inside it")
        lanes = k.lanes
        end = size - size % lanes
        k.line(f"const nnef_vf fill = nnef_vset1({flit(fill)});")
        if end:
            k.open(f"for (int i = 0; i < {end}; i += {lanes})")
            k.line(f"nnef_vstore({dst} + i, fill);")
            k.close()
        if end < size:
            k.open(f"for (int i = {end}; i < {size}; ++i)")
            k.line(f"{dst}[i] = {flit(fill)};")
            k.close()
        variables = [f"a{axis}" for axis in range(rank - 1)]
        for var, n in zip(variables, shape[:-1]):
            k.open(f"for (int {var} = 0; {var} < {n}; ++{var})")
        d_off = " + ".join([f"({v} + {p}) * {s}" for v, (p, _), s in zip(variables, pads[:-1], pst[:-1])]
                           + [str(pads[-1][0])])
        s_off = " + ".join([f"{v} * {s}" for v, s in zip(variables, sst[:-1])] or ["0"])
        k.line(f"memcpy({dst} + {d_off}, {src} + {s_off}, {shape[-1]} * sizeof(float));")
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

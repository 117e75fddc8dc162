"""max_pool, avg_pool, box: a window over every axis, taps in row-major order.

max_pool  m = -inf; for each tap t in row-major order: m = t if t > m or t is the first NaN
box       acc = +0; acc = acc + t for each tap in row-major order
avg_pool  box / D, one IEEE division; D = window volume, or for border `ignore` the number
          of taps inside the input (exact integer, at least 1)
(docs/semantics/sliding_window.md). Padded taps: the input is copied into a padded buffer
holding +0 (box and avg: a +0 term changes no sum from +0; max with `constant`: a real +0
tap) or -inf (max with `ignore`: never selected, i.e. skipped), or the border elements.
The last output axis with more than one position is computed NNEF_VL outputs at a time
(strided loads when the window stride is not 1), in register tiles of up to 8 such vectors
(several vectors of a row times several positions of the loop axis before it) whose
accumulators interleave tap by tap: lanes are independent outputs, each running its own taps
in order.
"""

from __future__ import annotations

import math

import numpy as np

from pipeline.codegen.c.kernels.common import F32, Kernel, emitter, flit, strides
from pipeline.codegen.c.kernels.padding import FILL_BORDERS, emit_padded_copy
from pipeline.codegen.c.kernels.geometry import BORDERS, kernel_window


# Independent output vectors per register tile (rows of the last loop axis x vectors of the
# vector axis): the chain of a running maximum (compare, and-not, select) or sum is several cycles
# per tap, so one accumulator left the pipes idle (ResNet-18's 3x3/2 max pool: 8 accumulators
# took its compute from about 24 to 17 µs).
POOL_ACCUMULATORS = 8


def _counts(n: int, k: int, s: int, d: int, p: int, out: int) -> list[int]:
    """Per output position of one axis: how many taps fall inside the input."""
    return [sum(1 for j in range(k) if 0 <= y * s + j * d - p < n) for y in range(out)]


@emitter("max_pool", "avg_pool", "box")
def pool(k: Kernel) -> None:
    x = k.operand("input")
    op = k.op.name
    border = str(k.op.attribs["border"])
    if border not in BORDERS:
        raise k.fail(f"border '{border}'")
    size = [int(v) for v in k.op.attribs["size"]]
    if len(size) != len(x.shape):
        raise k.fail(f"'size' {size} must have one item per input axis ({len(x.shape)})")
    win = kernel_window(k, x.shape, size, slice(None))
    is_max = op == "max_pool"
    normalize = op == "avg_pool" or (op == "box" and bool(k.op.attribs.get("normalize", False)))
    rank = len(x.shape)
    src, shape = x.c, tuple(x.shape)
    if any(p or q for p, q in win.padding):
        fill = (float("-inf") if border == "ignore" else 0.0) if is_max else 0.0
        padded = tuple(n + p + q for n, (p, q) in zip(x.shape, win.padding))
        k.line(f"float *const xp = {k.scratch(math.prod(padded))};")
        shape = emit_padded_copy(k, x.c, x.shape, list(win.padding), border, fill if border in FILL_BORDERS else None,
                                 "xp", "padded input")
        src = "xp"
    pst, ost = strides(shape), strides(win.out_shape)
    # the divisor
    divisor: list[str] = []
    table = None
    if normalize:
        if border == "ignore" and any(p or q for p, q in win.padding):
            counts = [_counts(n, kk, s, d, p, o) for n, kk, s, d, (p, _), o in
                      zip(x.shape, size, win.stride, win.dilation, win.padding, win.out_shape)]
            if any(0 in c for c in counts):
                full = np.ones(win.out_shape, np.int64)
                for axis, c in enumerate(counts):
                    shape_a = [1] * rank
                    shape_a[axis] = len(c)
                    full = full * np.asarray(c, np.int64).reshape(shape_a)
                table = k.const_array(f"D_{k.function}", np.maximum(full, 1).astype(F32), "float",
                                      "avg_pool divisor per output position: taps inside the input (at least 1)")
            else:
                for axis, c in enumerate(counts):
                    if any(p or q for p, q in [win.padding[axis]]):
                        divisor.append(k.const_array(f"D_{k.function}_{axis}", np.asarray(c, F32), "float",
                                                     f"taps inside the input per output position of axis {axis}"))
    volume = flit(F32(math.prod(size)))
    out_axes = [a for a in range(rank) if win.out_shape[a] > 1]
    vaxis = out_axes[-1] if out_axes else None
    loop_axes = [a for a in out_axes if a != vaxis]
    tap_axes = [a for a in range(rank) if size[a] > 1]
    what = "running maximum (first maximum wins, NaN propagates) from -inf" if is_max else "sum from +0"
    k.comment(f"{op}: per output, {what} over the window taps in row-major order"
              + (", then one division by the tap count" if normalize else ""))
    ys = {a: f"y{a}" for a in range(rank)}
    ra = loop_axes[-1] if loop_axes else None   # the loop axis a tile spans several positions of
    for a in loop_axes[:-1]:
        k.open(f"for (int {ys[a]} = 0; {ys[a]} < {win.out_shape[a]}; ++{ys[a]})")

    def y_of(a: int, row: int) -> str:
        return f"({ys[a]} + {row})" if a == ra and row else ys[a]

    def offset(lane_var: str | None, row: int = 0) -> str:
        terms = []
        for a in range(rank):
            y = y_of(a, row) if (a in loop_axes or a == vaxis) else None
            parts = []
            if a == vaxis and lane_var is not None:
                parts.append(f"{lane_var} * {win.stride[a]}")
            elif y is not None:
                parts.append(f"{y} * {win.stride[a]}")
            if a in tap_axes:
                parts.append(f"t{a} * {win.dilation[a]}")
            if parts:
                terms.append(f"({' + '.join(parts)}) * {pst[a]}")
        return " + ".join(terms) or "0"

    def out_offset(lane_var: str | None, row: int = 0) -> str:
        terms = [f"{y_of(a, row)} * {ost[a]}" for a in loop_axes]
        if vaxis is not None and lane_var is not None:
            terms.append(f"{lane_var} * {ost[vaxis]}")
        return " + ".join(terms) or "0"

    def divisor_expr(vector: bool, lane_var: str | None, row: int = 0) -> str:
        if table:
            idx = out_offset(lane_var, row)
            return f"nnef_vload({table} + {idx})" if vector else f"{table}[{idx}]"
        if not divisor:
            return f"nnef_vset1({volume})" if vector else volume
        constant = math.prod(size[a] for a in range(rank) if not (win.padding[a][0] or win.padding[a][1]))
        factors = [f"nnef_vset1({flit(F32(constant))})" if vector else flit(F32(constant))] if constant != 1 else []
        padded_axes = [a for a in range(rank) if win.padding[a][0] or win.padding[a][1]]
        for name, a in zip(divisor, padded_axes):
            if a == vaxis and lane_var is not None:
                factors.append(f"nnef_vload({name} + {lane_var})" if vector else f"{name}[{lane_var}]")
            else:
                y = y_of(a, row) if a in loop_axes else "0"
                factors.append(f"nnef_vset1({name}[{y}])" if vector else f"{name}[{y}]")
        expr = factors[0]
        for factor in factors[1:]:
            expr = f"nnef_vmul({expr}, {factor})" if vector else f"({expr} * {factor})"
        return expr

    def vector_load(off: str) -> str:
        lane_stride = win.stride[vaxis] * pst[vaxis] if vaxis is not None else 0
        if lane_stride == 1:
            return f"nnef_vload({src} + {off})"
        if lane_stride == 2 and max_offset + 2 * k.lanes - 1 < buffer_size:
            return f"nnef_vload_even({src} + {off})"
        if lane_stride == 2 and min_offset >= 1:
            return f"nnef_vload_odd({src} + {off} - 1)"
        return f"nnef_vload_strided({src} + {off}, {lane_stride})"

    def vector_tile(outputs: list[tuple[int, str]]) -> None:
        """One accumulator per (row of axis ra, first lane) in `outputs`: independent outputs whose
        running maxima or sums interleave (the latency of one chain of selections or additions is
        hidden by the others); each lane still takes its own taps in row-major order."""
        init = "nnef_vset1(nnef_float(0xff800000u))" if is_max else "nnef_vzero()"
        k.line("nnef_vf " + ", ".join(f"acc{n} = {init}" for n in range(len(outputs))) + ";")
        for a in tap_axes:
            k.open(f"for (int t{a} = 0; t{a} < {size[a]}; ++t{a})")
        for n, (row, lane) in enumerate(outputs):
            load = vector_load(offset(lane, row))
            k.line(f"acc{n} = nnef_vmax_update({load}, acc{n});" if is_max else f"acc{n} = nnef_vadd(acc{n}, {load});")
        for _ in tap_axes:
            k.close()
        for n, (row, lane) in enumerate(outputs):
            value = f"nnef_vdiv(acc{n}, {divisor_expr(True, lane, row)})" if normalize else f"acc{n}"
            k.line(f"nnef_vstore({k.out.c} + {out_offset(lane, row)}, {value});")

    def scalar_body(lane_var: str, row: int = 0) -> None:
        k.line(f"float acc = {'nnef_float(0xff800000u)' if is_max else '0.0f'};")
        for a in tap_axes:
            k.open(f"for (int t{a} = 0; t{a} < {size[a]}; ++t{a})")
        k.line(f"const float t = {src}[{offset(lane_var, row)}];")
        k.line("acc = nnef_max_update(t, acc);" if is_max else "acc = acc + t;")
        for _ in tap_axes:
            k.close()
        if normalize:
            k.line(f"acc = acc / {divisor_expr(False, lane_var, row)};")
        k.line(f"*({k.out.c} + {out_offset(lane_var, row)}) = acc;")

    buffer_size = math.prod(shape)
    min_offset = 0
    max_offset = 0
    if vaxis is not None:
        last_vector = win.out_shape[vaxis] - win.out_shape[vaxis] % k.lanes - k.lanes
        for a in range(rank):
            top = last_vector if a == vaxis else (win.out_shape[a] - 1 if a in loop_axes else 0)
            max_offset += (top * win.stride[a] + (size[a] - 1) * win.dilation[a]) * pst[a]
    if vaxis is None:
        k.open("")
        scalar_body("0")
        k.close()
    else:
        extent = win.out_shape[vaxis]
        end = extent - extent % k.lanes
        vectors = end // k.lanes
        per_row = min(vectors, POOL_ACCUMULATORS)
        rows = min(win.out_shape[ra], POOL_ACCUMULATORS // per_row) if ra is not None and per_row else 1
        yv = ys[vaxis]

        def tile_rows(count: int) -> None:
            """The outputs of `count` rows of axis ra from ys[ra] on: `per_row` vectors of each row
            per tile, then the vectors left over one per row, then the columns past the last vector."""
            whole = vectors - vectors % per_row if per_row else 0
            if whole:
                k.open(f"for (int {yv} = 0; {yv} < {whole * k.lanes}; {yv} += {per_row * k.lanes})")
                vector_tile([(row, f"{yv} + {j * k.lanes}" if j else yv) for row in range(count)
                             for j in range(per_row)])
                k.close()
            if whole < vectors:
                k.open(f"for (int {yv} = {whole * k.lanes}; {yv} < {end}; {yv} += {k.lanes})")
                vector_tile([(row, yv) for row in range(count)])
                k.close()
            if end < extent:
                k.open(f"for (int {yv} = {end}; {yv} < {extent}; ++{yv})")
                for row in range(count):
                    k.open("")
                    scalar_body(yv, row)
                    k.close()
                k.close()

        if ra is None:
            tile_rows(1)
        else:
            height = win.out_shape[ra]
            full = height - height % rows
            y = ys[ra]
            if full:
                k.open(f"for (int {y} = 0; {y} < {full}; {y} += {rows})")
                tile_rows(rows)
                k.close()
            if full < height:
                k.open(f"for (int {y} = {full}; {y} < {height}; ++{y})")
                tile_rows(1)
                k.close()
    for _ in loop_axes[:-1]:
        k.close()

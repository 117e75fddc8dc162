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
in order. The outputs past the last whole vector of a row (all of a row shorter than a vector:
an 8x8 plane at 16 lanes) are one partial vector whose lanes past the row are computed from
whatever lies there and never stored (nnef_vstore_n), when every read stays inside the source
(a padded copy gets the slack); else one output at a time.
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
    _Pool(k).emit()


class _Pool:
    """One pooling instruction: its window, source buffer and divisors, then the loops over the
    outputs. The stages are methods so that each can be read on its own; the C they write is in
    the order the instruction runs."""

    def __init__(self, k: Kernel) -> None:
        self.k = k
        x = k.operand("input")
        op = k.op.name
        self.op = op
        border = str(k.op.attribs["border"])
        if border not in BORDERS:
            raise k.fail(f"border '{border}'")
        size = [int(v) for v in k.op.attribs["size"]]
        if len(size) != len(x.shape):
            raise k.fail(f"'size' {size} must have one item per input axis ({len(x.shape)})")
        self.x, self.border, self.size = x, border, size
        self.win = kernel_window(k, x.shape, size, slice(None))
        self.is_max = op == "max_pool"
        self.normalize = op == "avg_pool" or (op == "box" and bool(k.op.attribs.get("normalize", False)))
        self.rank = len(x.shape)
        self.src, self.shape = x.c, tuple(x.shape)
        self.divisor: list[str] = []
        self.table: str | None = None
        out_shape = self.win.out_shape
        self.out_axes = [a for a in range(self.rank) if out_shape[a] > 1]
        self.vaxis = self.out_axes[-1] if self.out_axes else None
        self.loop_axes = [a for a in self.out_axes if a != self.vaxis]
        self.tap_axes = [a for a in range(self.rank) if size[a] > 1]
        self.ys = {a: f"y{a}" for a in range(self.rank)}
        self.ra = self.loop_axes[-1] if self.loop_axes else None   # the loop axis a tile spans several positions of

    def emit(self) -> None:
        k, win = self.k, self.win
        self._padded_source()
        self.pst, self.ost = strides(self.shape), strides(win.out_shape)
        if self.normalize:
            self._divisors()
        self.volume = flit(F32(math.prod(self.size)))
        what = "running maximum (first maximum wins, NaN propagates) from -inf" if self.is_max else "sum from +0"
        k.comment(f"{self.op}: per output, {what} over the window taps in row-major order"
                  + (", then one division by the tap count" if self.normalize else ""))
        for a in self.loop_axes[:-1]:
            k.open(f"for (int {self.ys[a]} = 0; {self.ys[a]} < {win.out_shape[a]}; ++{self.ys[a]})")
        self.buffer_size = math.prod(self.shape) + (self._slack(self.shape) if self.src == "xp" else 0)
        self.max_offset = self._max_offset()
        if self.vaxis is None:
            k.open("")
            self._scalar_body("0")
            k.close()
        else:
            self._outputs()
        for _ in self.loop_axes[:-1]:
            k.close()

    def _padded_source(self) -> None:
        """Padded taps: the input copied into a buffer with its border (or the fill) around it."""
        k, x, win = self.k, self.x, self.win
        if not any(p or q for p, q in win.padding):
            return
        border = self.border
        fill = (float("-inf") if border == "ignore" else 0.0) if self.is_max else 0.0
        padded = tuple(n + p + q for n, (p, q) in zip(x.shape, win.padding))
        k.line(f"float *const xp = {k.scratch(math.prod(padded) + self._slack(padded))};")
        self.shape = emit_padded_copy(k, x.c, x.shape, list(win.padding), border,
                                      fill if border in FILL_BORDERS else None, "xp", "padded input")
        self.src = "xp"

    def _slack(self, padded: tuple[int, ...]) -> int:
        """Floats past the padded copy that a partial vector at the end of its last row may read (0 when
        the rows are whole vectors or a divisor table rules partial vectors out)."""
        if self.vaxis is None or self._partial_blocked():
            return 0
        extent = self.win.out_shape[self.vaxis]
        if extent % self.k.lanes == 0:
            return 0
        return max(0, self._tail_reach(extent - extent % self.k.lanes, strides(padded)) + 1 - math.prod(padded))

    def _partial_blocked(self) -> bool:
        """Whether the divisors are read from tables (avg_pool, border `ignore`, padding: `_divisors`),
        which a partial vector would read past (known before the tables are made)."""
        return self.normalize and self.border == "ignore" and any(p or q for p, q in self.win.padding)

    def _tail_reach(self, first: int, pst: tuple[int, ...] | list[int]) -> int:
        """The largest source offset a partial vector whose first lane is output `first` of the vector
        axis reads, over every row of the loop axes and every tap."""
        win, vaxis = self.win, self.vaxis
        total = 0
        for a in range(self.rank):
            top = first if a == vaxis else (win.out_shape[a] - 1 if a in self.loop_axes else 0)
            total += (top * win.stride[a] + (self.size[a] - 1) * win.dilation[a]) * pst[a]
        return total + (self.k.lanes - 1) * win.stride[vaxis] * pst[vaxis]   # type: ignore[index]

    def _partial(self, first: int) -> bool:
        """Whether the outputs from `first` to the end of each row are one partial vector (module docstring)."""
        return not self._partial_blocked() and self._tail_reach(first, self.pst) < self.buffer_size

    def _divisors(self) -> None:
        """avg_pool's divisor: the window volume, or with border `ignore` the taps inside the input,
        as one table per output position when some position has none, else one table per padded axis."""
        k, win, x = self.k, self.win, self.x
        if not (self.border == "ignore" and any(p or q for p, q in win.padding)):
            return
        counts = [_counts(n, kk, s, d, p, o) for n, kk, s, d, (p, _), o in
                  zip(x.shape, self.size, win.stride, win.dilation, win.padding, win.out_shape)]
        if any(0 in c for c in counts):
            full = np.ones(win.out_shape, np.int64)
            for axis, c in enumerate(counts):
                shape_a = [1] * self.rank
                shape_a[axis] = len(c)
                full = full * np.asarray(c, np.int64).reshape(shape_a)
            self.table = k.const_array(f"D_{k.function}", np.maximum(full, 1).astype(F32), "float",
                                       "avg_pool divisor per output position: taps inside the input (at least 1)")
            return
        for axis, c in enumerate(counts):
            if any(p or q for p, q in [win.padding[axis]]):
                self.divisor.append(k.const_array(f"D_{k.function}_{axis}", np.asarray(c, F32), "float",
                                                  f"taps inside the input per output position of axis {axis}"))

    def _max_offset(self) -> int:
        """The largest input offset a whole vector of the vector axis loads (0 without one)."""
        win, vaxis = self.win, self.vaxis
        if vaxis is None:
            return 0
        last_vector = win.out_shape[vaxis] - win.out_shape[vaxis] % self.k.lanes - self.k.lanes
        total = 0
        for a in range(self.rank):
            top = last_vector if a == vaxis else (win.out_shape[a] - 1 if a in self.loop_axes else 0)
            total += (top * win.stride[a] + (self.size[a] - 1) * win.dilation[a]) * self.pst[a]
        return total

    def _y(self, a: int, row: int) -> str:
        return f"({self.ys[a]} + {row})" if a == self.ra and row else self.ys[a]

    def _offset(self, lane_var: str | None, row: int = 0) -> str:
        """The input offset of tap (t...) of the output at (y..., lane_var) in row `row` of the tile."""
        win, terms = self.win, []
        for a in range(self.rank):
            y = self._y(a, row) if (a in self.loop_axes or a == self.vaxis) else None
            parts = []
            if a == self.vaxis and lane_var is not None:
                parts.append(f"{lane_var} * {win.stride[a]}")
            elif y is not None:
                parts.append(f"{y} * {win.stride[a]}")
            if a in self.tap_axes:
                parts.append(f"t{a} * {win.dilation[a]}")
            if parts:
                terms.append(f"({' + '.join(parts)}) * {self.pst[a]}")
        return " + ".join(terms) or "0"

    def _out_offset(self, lane_var: str | None, row: int = 0) -> str:
        terms = [f"{self._y(a, row)} * {self.ost[a]}" for a in self.loop_axes]
        if self.vaxis is not None and lane_var is not None:
            terms.append(f"{lane_var} * {self.ost[self.vaxis]}")
        return " + ".join(terms) or "0"

    def _divisor(self, vector: bool, lane_var: str | None, row: int = 0) -> str:
        """The C expression of the divisor of one output (vector: of NNEF_VL outputs)."""
        win, size = self.win, self.size
        if self.table:
            idx = self._out_offset(lane_var, row)
            return f"nnef_vload({self.table} + {idx})" if vector else f"{self.table}[{idx}]"
        if not self.divisor:
            return f"nnef_vset1({self.volume})" if vector else self.volume
        constant = math.prod(size[a] for a in range(self.rank) if not (win.padding[a][0] or win.padding[a][1]))
        factors = [f"nnef_vset1({flit(F32(constant))})" if vector else flit(F32(constant))] if constant != 1 else []
        padded_axes = [a for a in range(self.rank) if win.padding[a][0] or win.padding[a][1]]
        for name, a in zip(self.divisor, padded_axes):
            if a == self.vaxis and lane_var is not None:
                factors.append(f"nnef_vload({name} + {lane_var})" if vector else f"{name}[{lane_var}]")
            else:
                y = self._y(a, row) if a in self.loop_axes else "0"
                factors.append(f"nnef_vset1({name}[{y}])" if vector else f"{name}[{y}]")
        expr = factors[0]
        for factor in factors[1:]:
            expr = f"nnef_vmul({expr}, {factor})" if vector else f"({expr} * {factor})"
        return expr

    def _vector_load(self, off: str, partial: bool = False) -> str:
        vaxis = self.vaxis
        lane_stride = self.win.stride[vaxis] * self.pst[vaxis] if vaxis is not None else 0
        if lane_stride == 1:
            return f"nnef_vload({self.src} + {off})"
        if lane_stride == 2 and not partial and self.max_offset + 2 * self.k.lanes - 1 < self.buffer_size:
            return f"nnef_vload_even({self.src} + {off})"
        return f"nnef_vload_strided({self.src} + {off}, {lane_stride})"

    def _vector_tile(self, outputs: list[tuple[int, str]], stored: int | None = None) -> None:
        """One accumulator per (row of axis ra, first lane) in `outputs`: independent outputs whose
        running maxima or sums interleave (the latency of one chain of selections or additions is
        hidden by the others); each lane still takes its own taps in row-major order. `stored`: a
        partial vector, only its first `stored` lanes written."""
        k = self.k
        init = "nnef_vset1(nnef_float(0xff800000u))" if self.is_max else "nnef_vzero()"
        k.line("nnef_vf " + ", ".join(f"acc{n} = {init}" for n in range(len(outputs))) + ";")
        for a in self.tap_axes:
            k.open(f"for (int t{a} = 0; t{a} < {self.size[a]}; ++t{a})")
        for n, (row, lane) in enumerate(outputs):
            load = self._vector_load(self._offset(lane, row), partial=stored is not None)
            k.line(f"acc{n} = nnef_vmax_update({load}, acc{n});" if self.is_max
                   else f"acc{n} = nnef_vadd(acc{n}, {load});")
        for _ in self.tap_axes:
            k.close()
        for n, (row, lane) in enumerate(outputs):
            value = f"nnef_vdiv(acc{n}, {self._divisor(True, lane, row)})" if self.normalize else f"acc{n}"
            if stored is None:
                k.line(f"nnef_vstore({k.out.c} + {self._out_offset(lane, row)}, {value});")
            else:
                k.line(f"nnef_vstore_n({k.out.c} + {self._out_offset(lane, row)}, {value}, {stored});")

    def _scalar_body(self, lane_var: str, row: int = 0) -> None:
        k = self.k
        k.line(f"float acc = {'nnef_float(0xff800000u)' if self.is_max else '0.0f'};")
        for a in self.tap_axes:
            k.open(f"for (int t{a} = 0; t{a} < {self.size[a]}; ++t{a})")
        k.line(f"const float t = {self.src}[{self._offset(lane_var, row)}];")
        k.line("acc = nnef_max_update(t, acc);" if self.is_max else "acc = acc + t;")
        for _ in self.tap_axes:
            k.close()
        if self.normalize:
            k.line(f"acc = acc / {self._divisor(False, lane_var, row)};")
        k.line(f"*({k.out.c} + {self._out_offset(lane_var, row)}) = acc;")

    def _outputs(self) -> None:
        """The vector axis in tiles of `rows` rows of axis ra times `per_row` vectors."""
        k, win, vaxis, ra = self.k, self.win, self.vaxis, self.ra
        extent = win.out_shape[vaxis]
        end = extent - extent % k.lanes
        vectors = end // k.lanes
        per_row = min(vectors, POOL_ACCUMULATORS)
        # a row shorter than a vector is one partial vector: tiles of several rows of it
        tile = per_row or (1 if self._partial(0) else 0)
        rows = min(win.out_shape[ra], POOL_ACCUMULATORS // tile) if ra is not None and tile else 1
        if ra is None:
            self._tile_rows(1, extent, end, vectors, per_row)
            return
        height = win.out_shape[ra]
        full = height - height % rows
        y = self.ys[ra]
        if full:
            k.open(f"for (int {y} = 0; {y} < {full}; {y} += {rows})")
            self._tile_rows(rows, extent, end, vectors, per_row)
            k.close()
        if full < height:
            k.open(f"for (int {y} = {full}; {y} < {height}; ++{y})")
            self._tile_rows(1, extent, end, vectors, per_row)
            k.close()

    def _tile_rows(self, count: int, extent: int, end: int, vectors: int, per_row: int) -> None:
        """The outputs of `count` rows of axis ra from ys[ra] on: `per_row` vectors of each row
        per tile, then the vectors left over one per row, then the columns past the last vector."""
        k, lanes, yv = self.k, self.k.lanes, self.ys[self.vaxis]
        whole = vectors - vectors % per_row if per_row else 0
        if whole:
            k.open(f"for (int {yv} = 0; {yv} < {whole * lanes}; {yv} += {per_row * lanes})")
            self._vector_tile([(row, f"{yv} + {j * lanes}" if j else yv) for row in range(count)
                               for j in range(per_row)])
            k.close()
        if whole < vectors:
            k.open(f"for (int {yv} = {whole * lanes}; {yv} < {end}; {yv} += {lanes})")
            self._vector_tile([(row, yv) for row in range(count)])
            k.close()
        if end < extent and self._partial(end):
            k.comment(f"outputs {end} to {extent - 1} of the row: one partial vector, {extent - end} of its lanes stored")
            k.open("")
            self._vector_tile([(row, str(end)) for row in range(count)], stored=extent - end)
            k.close()
        elif end < extent:
            k.open(f"for (int {yv} = {end}; {yv} < {extent}; ++{yv})")
            for row in range(count):
                k.open("")
                self._scalar_body(yv, row)
                k.close()
            k.close()

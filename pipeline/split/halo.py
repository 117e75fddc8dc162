"""Halo arithmetic of the layer-parallel rewrite, along one axis (the height).

A chain of layers (a convolution, then pooling/activation layers) is cut into k parts
by cutting the *last* layer's output rows into k contiguous ranges; each part then
needs a range of each earlier layer's rows, found backwards layer by layer. For a
window layer (size K, stride s, dilation d, padding (p0, p1), input extent H), output
rows [a, b) read the padded rows

    r_min = a*s - p0            r_max = (b - 1)*s - p0 + d*(K - 1)      (inclusive)

The part reads the real rows [max(r_min, 0), min(r_max, H - 1) + 1) and pads
max(0, -r_min) rows before and max(0, r_max - (H - 1)) after. Its padded extent is
r_max - r_min + 1 = (b - a - 1)*s + d*(K - 1) + 1, so it produces exactly b - a rows, and
its j-th window starts at padded row r_min + j*s = (a + j)*s - p0 of the original: the
same taps, hence the same sums in the same order, hence bit-identical rows. A pointwise
layer needs exactly its output rows. docs/split.md has a worked example.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence


@dataclass(frozen=True)
class Window:
    """Geometry of one sliding-window layer along the split axis."""

    size: int
    stride: int
    dilation: int
    pad_before: int
    pad_after: int
    in_extent: int

    @property
    def span(self) -> int:
        """Rows covered by one (dilated) window."""
        return self.dilation * (self.size - 1) + 1

    @property
    def out_extent(self) -> int:
        return (self.in_extent + self.pad_before + self.pad_after - self.span) // self.stride + 1


@dataclass(frozen=True)
class LayerPart:
    """What one part computes of one layer: output rows, real input rows read, padding."""

    out_begin: int
    out_end: int
    in_begin: int
    in_end: int
    pad_before: int
    pad_after: int


def split_rows(extent: int, parts: int) -> list[tuple[int, int]]:
    """`extent` rows in `parts` contiguous ranges, the first `extent % parts` one row longer."""
    if not 1 <= parts <= extent:
        raise ValueError(f"cannot cut {extent} rows into {parts} non-empty parts")
    base, extra = divmod(extent, parts)
    ranges, start = [], 0
    for index in range(parts):
        end = start + base + (1 if index < extra else 0)
        ranges.append((start, end))
        start = end
    return ranges


def window_part(window: Window, out_begin: int, out_end: int) -> LayerPart:
    """The input rows and padding a window layer needs for output rows [out_begin, out_end)."""
    r_min = out_begin * window.stride - window.pad_before
    r_max = (out_end - 1) * window.stride - window.pad_before + window.dilation * (window.size - 1)
    return LayerPart(out_begin, out_end, max(r_min, 0), min(r_max, window.in_extent - 1) + 1,
                     max(0, -r_min), max(0, r_max - (window.in_extent - 1)))


def chain_parts(layers: Sequence[Window | None], out_begin: int, out_end: int) -> list[LayerPart]:
    """Per layer (first to last) what a part producing the last layer's rows [out_begin, out_end)
    computes; `None` stands for a pointwise layer (rows map one to one, no padding)."""
    result: list[LayerPart] = []
    begin, end = out_begin, out_end
    for layer in reversed(layers):
        part = LayerPart(begin, end, begin, end, 0, 0) if layer is None else window_part(layer, begin, end)
        result.append(part)
        begin, end = part.in_begin, part.in_end
    return result[::-1]

"""Pictures in SVG, written directly (no plotting library), as deterministic text.

`histogram_svg`: the distribution of measured times. Time runs on a logarithmic axis with
logarithmic bins, so that a tail of rare slow runs (a preempted inference, 100x the median)
does not squeeze the bulk into one bar; counts run on a logarithmic axis too, so that a bin
holding one run is still visible. The axis always reaches every mark (median, p99, the
budget), so the budget line is drawn even when every run is far below it, which is the
margin an auditor wants to see; the runs above the budget are counted in the picture.

`ratio_plot_svg`: each deployment's numeric error as a fraction of what it is allowed (its
tolerance or its computed bound), on a logarithmic axis with the limit (1) drawn; a check
that requires bit identity is drawn as such, not as a ratio.

The same data always give the same bytes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence
from xml.sax.saxutils import escape

WIDTH, HEIGHT = 640, 320
LEFT, RIGHT, TOP, BOTTOM = 60, 20, 40, 50
COLOURS = ("#c0392b", "#27ae60", "#8e44ad", "#d35400")
BAR = "#4a7ab5"


def _fmt(value: float) -> str:
    if value == 0:
        return "0"
    if abs(value) >= 1000:
        return f"{value:.0f}"
    if abs(value) < 0.001:
        return f"{value:.2g}"
    return f"{value:.3f}".rstrip("0").rstrip(".")


def _svg_open(width: int, height: int, title: str) -> list[str]:
    return [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11" role="img">',
            f"<title>{escape(title)}</title>",
            f'<rect width="{width}" height="{height}" fill="white"/>',
            f'<text x="{width / 2:.1f}" y="20" text-anchor="middle" font-size="13">{escape(title)}</text>']


def _decades(lo: float, hi: float) -> list[float]:
    """Powers of ten within [lo, hi] (at least the two ends when none falls inside)."""
    first, last = math.ceil(math.log10(lo) - 1e-12), math.floor(math.log10(hi) + 1e-12)
    ticks = [10.0 ** k for k in range(first, last + 1)]
    return ticks if len(ticks) >= 2 else [lo, hi]


def histogram_svg(samples_us: Sequence[float], title: str, bins: int = 40,
                  marks: Sequence[tuple[str, float]] = (), limit_label: str = "budget") -> str:
    """An SVG document of the histogram of `samples_us` (see the module docstring).

    `marks`: labelled vertical lines (median, p99, budget); the axis is widened to hold every
    one. The runs above the mark labelled `limit_label` are counted under the title.
    """
    values = sorted(float(v) for v in samples_us if math.isfinite(float(v)))
    positive = [v for v in values if v > 0] + [v for _, v in marks if math.isfinite(v) and v > 0]
    lo, hi = (min(positive), max(positive)) if positive else (1.0, 10.0)
    if hi <= lo * 1.0001:
        lo, hi = lo / 2, hi * 2
    lo, hi = lo / 1.05, hi * 1.05           # the extreme runs and marks inside the frame, not on it
    llo, lhi = math.log10(lo), math.log10(hi)
    counts = [0] * bins
    for v in values:
        position = (math.log10(v) - llo) / (lhi - llo) if v > 0 else 0.0
        counts[min(bins - 1, max(0, int(position * bins)))] += 1
    top = max(counts) or 1
    ltop = math.log10(top) + 1                # a count of 1 is one unit high: never invisible
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(v: float) -> float:
        return LEFT + (math.log10(v) - llo) / (lhi - llo) * plot_w

    def y(c: float) -> float:
        return TOP + plot_h - ((math.log10(c) + 1) / ltop * plot_h if c > 0 else 0.0)

    limits = [v for label, v in marks if label == limit_label]
    above = sum(1 for v in values if limits and v > limits[0])
    parts = _svg_open(WIDTH, HEIGHT, title)
    if limits:
        parts.append(f'<text x="{WIDTH / 2:.1f}" y="34" text-anchor="middle" fill="{COLOURS[0]}">'
                     f"{above} of {len(values)} runs above the {escape(limit_label)}</text>")
    bar_w = plot_w / bins
    for i, c in enumerate(counts):
        if c:
            left = 10 ** (llo + (lhi - llo) * i / bins)
            right = 10 ** (llo + (lhi - llo) * (i + 1) / bins)
            parts.append(f'<rect x="{LEFT + i * bar_w:.2f}" y="{y(c):.2f}" width="{max(bar_w - 1, 0.5):.2f}" '
                         f'height="{TOP + plot_h - y(c):.2f}" fill="{BAR}"><title>{_fmt(left)}-{_fmt(right)} us: '
                         f"{c}</title></rect>")
    parts.append(f'<line x1="{LEFT}" y1="{TOP + plot_h}" x2="{LEFT + plot_w}" y2="{TOP + plot_h}" stroke="black"/>')
    parts.append(f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{TOP + plot_h}" stroke="black"/>')
    for v in _decades(lo, hi):
        parts.append(f'<line x1="{x(v):.2f}" y1="{TOP + plot_h}" x2="{x(v):.2f}" y2="{TOP + plot_h + 4}" stroke="black"/>')
        parts.append(f'<text x="{x(v):.1f}" y="{TOP + plot_h + 15}" text-anchor="middle">{_fmt(v)}</text>')
    for c in [10 ** k for k in range(0, int(math.log10(top)) + 1)]:
        parts.append(f'<text x="{LEFT - 5}" y="{y(c) + 4:.1f}" text-anchor="end">{c}</text>')
    parts.append(f'<text x="{LEFT + plot_w / 2:.1f}" y="{HEIGHT - 10}" text-anchor="middle">time per inference (us, '
                 f"log scale), {len(values)} runs; runs per bin on a log scale</text>")
    for n, (label, value) in enumerate(marks):
        if not (math.isfinite(value) and value > 0):
            continue
        colour = COLOURS[0] if label == limit_label else COLOURS[1 + n % (len(COLOURS) - 1)]
        anchor, dx = ("end", -3) if x(value) > LEFT + plot_w * 0.75 else ("start", 3)
        parts.append(f'<line x1="{x(value):.2f}" y1="{TOP}" x2="{x(value):.2f}" y2="{TOP + plot_h}" '
                     f'stroke="{colour}" stroke-width="2" stroke-dasharray="4 3" class="mark-{escape(label)}"/>')
        parts.append(f'<text x="{x(value) + dx:.2f}" y="{TOP + 12 + 12 * n}" fill="{colour}" text-anchor="{anchor}">'
                     f"{escape(label)} {_fmt(value)}</text>")
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


@dataclass(frozen=True)
class ErrorRow:
    """One deployment's numeric error against what it is allowed.

    `ratio`: error / allowed (None for a check that requires bit identity); `exact`: whether
    the outputs were bit-identical; `text`: the figures in words (shown beside the row).
    """

    label: str
    ratio: float | None
    exact: bool
    text: str


RATIO_LO, RATIO_HI = 1e-6, 10.0


def ratio_plot_svg(rows: Sequence[ErrorRow], title: str) -> str:
    """One row per deployment: error / allowed on a log axis, the limit (1) drawn (module docstring)."""
    label_w, text_w, row_h = 330, 260, 22
    width = 1100
    plot_w = width - label_w - text_w - 20
    height = TOP + 20 + row_h * max(len(rows), 1) + 30
    llo, lhi = math.log10(RATIO_LO), math.log10(RATIO_HI)

    def x(v: float) -> float:
        clipped = min(max(v, RATIO_LO), RATIO_HI)
        return label_w + (math.log10(clipped) - llo) / (lhi - llo) * plot_w

    parts = _svg_open(width, height, title)
    bottom = TOP + 10 + row_h * max(len(rows), 1)
    for k in range(int(llo), int(lhi) + 1):
        v = 10.0 ** k
        parts.append(f'<line x1="{x(v):.2f}" y1="{TOP}" x2="{x(v):.2f}" y2="{bottom}" stroke="#e0e0e0"/>')
        parts.append(f'<text x="{x(v):.1f}" y="{bottom + 14}" text-anchor="middle">{_fmt(v)}</text>')
    parts.append(f'<line x1="{x(1.0):.2f}" y1="{TOP - 4}" x2="{x(1.0):.2f}" y2="{bottom}" stroke="{COLOURS[0]}" '
                 f'stroke-width="2" class="limit"/>')
    parts.append(f'<text x="{x(1.0) + 3:.1f}" y="{TOP - 6}" fill="{COLOURS[0]}">limit</text>')
    parts.append(f'<text x="{label_w + plot_w / 2:.1f}" y="{bottom + 28}" text-anchor="middle">error / allowed '
                 "(log scale; 1 is the limit, left of it passes)</text>")
    for i, row in enumerate(rows):
        cy = TOP + 10 + row_h * i + row_h / 2
        parts.append(f'<text x="{label_w - 6}" y="{cy + 4:.1f}" text-anchor="end">{escape(row.label)}</text>')
        if row.ratio is None:
            colour = COLOURS[1] if row.exact else COLOURS[0]
            parts.append(f'<rect x="{label_w}" y="{cy - 6:.1f}" width="12" height="12" fill="{colour}" class="exact">'
                         f"<title>{escape(row.text)}</title></rect>")
        else:
            colour = COLOURS[1] if row.ratio <= 1 else COLOURS[0]
            end = x(row.ratio) if row.ratio > 0 else label_w
            parts.append(f'<line x1="{label_w}" y1="{cy:.1f}" x2="{end:.2f}" y2="{cy:.1f}" stroke="{BAR}" stroke-width="6"/>')
            parts.append(f'<circle cx="{end:.2f}" cy="{cy:.1f}" r="5" fill="{colour}" class="error">'
                         f"<title>{escape(row.text)}</title></circle>")
        parts.append(f'<text x="{label_w + plot_w + 10}" y="{cy + 4:.1f}">{escape(row.text)}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"

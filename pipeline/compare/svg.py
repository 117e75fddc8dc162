"""A histogram picture in SVG, written directly (no plotting library), deterministic text.

The bars count samples per bin over [min, max]; the axes carry the bin edges in
microseconds and the counts; vertical lines mark the median, the p99 and the budget when it
falls inside the range. The same data always give the same bytes.
"""

from __future__ import annotations

from typing import Sequence
from xml.sax.saxutils import escape

WIDTH, HEIGHT = 640, 320
LEFT, RIGHT, TOP, BOTTOM = 60, 20, 40, 50


def _fmt(value: float) -> str:
    return f"{value:.3f}".rstrip("0").rstrip(".") if abs(value) < 1000 else f"{value:.0f}"


def histogram_svg(samples_us: Sequence[float], title: str, bins: int = 40,
                  marks: Sequence[tuple[str, float]] = ()) -> str:
    """An SVG document of the histogram of `samples_us` with labelled vertical marks."""
    values = sorted(float(v) for v in samples_us)
    lo, hi = (values[0], values[-1]) if values else (0.0, 1.0)
    if hi <= lo:
        hi = lo + 1.0
    width = (hi - lo) / bins
    counts = [0] * bins
    for v in values:
        counts[min(bins - 1, int((v - lo) / width))] += 1
    top = max(counts) or 1
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(v: float) -> float:
        return LEFT + (v - lo) / (hi - lo) * plot_w

    def y(c: float) -> float:
        return TOP + plot_h - c / top * plot_h

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
             f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="11">',
             f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
             f'<text x="{WIDTH / 2:.1f}" y="20" text-anchor="middle" font-size="13">{escape(title)}</text>']
    bar_w = plot_w / bins
    for i, c in enumerate(counts):
        if c:
            parts.append(f'<rect x="{LEFT + i * bar_w:.2f}" y="{y(c):.2f}" width="{max(bar_w - 1, 0.5):.2f}" '
                         f'height="{TOP + plot_h - y(c):.2f}" fill="#4a7ab5"><title>{_fmt(lo + i * width)}-'
                         f'{_fmt(lo + (i + 1) * width)} us: {c}</title></rect>')
    parts.append(f'<line x1="{LEFT}" y1="{TOP + plot_h}" x2="{LEFT + plot_w}" y2="{TOP + plot_h}" stroke="black"/>')
    parts.append(f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{TOP + plot_h}" stroke="black"/>')
    for k in range(5):
        v = lo + (hi - lo) * k / 4
        parts.append(f'<text x="{x(v):.1f}" y="{TOP + plot_h + 15}" text-anchor="middle">{_fmt(v)}</text>')
        c = top * k / 4
        parts.append(f'<text x="{LEFT - 5}" y="{y(c) + 4:.1f}" text-anchor="end">{c:.0f}</text>')
    parts.append(f'<text x="{LEFT + plot_w / 2:.1f}" y="{HEIGHT - 10}" text-anchor="middle">time per inference (us), '
                 f'{len(values)} runs</text>')
    colours = ("#c0392b", "#27ae60", "#8e44ad", "#d35400")
    for n, (label, value) in enumerate(marks):
        if lo <= value <= hi:
            parts.append(f'<line x1="{x(value):.2f}" y1="{TOP}" x2="{x(value):.2f}" y2="{TOP + plot_h}" '
                         f'stroke="{colours[n % len(colours)]}" stroke-dasharray="4 3"/>')
            parts.append(f'<text x="{x(value) + 3:.2f}" y="{TOP + 12 + 12 * n}" fill="{colours[n % len(colours)]}">'
                         f'{escape(label)} {_fmt(value)}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"

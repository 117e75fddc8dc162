"""DOT pictures of the nets (items coloured), and SVG when Graphviz's `dot` is installed.

Places are circles labelled with their variable and tokens, transitions boxes labelled
with their operation and result; each item is a cluster in its own colour, sync
transitions are dashed, arcs of weight > 1 are labelled. The DOT text is deterministic;
SVG rendering is optional (Debian package graphviz): without `dot`, or for nets too large
to lay out usefully, it is skipped with a note.
"""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path
from typing import Iterator

from pipeline.diagnostics import PipelineError
from pipeline.files.atomic import write_bytes, write_text_pieces
from pipeline.petri.net import Net, PlaceKind, TransitionKind
from pipeline.toolchain import process

# The programs it runs, Graphviz (pipeline/ledger/dependencies.py).
TOOLS: tuple[str, ...] = ("dot",)

log = logging.getLogger(__name__)

# (stroke, fill) per item, in the order of the net's colours; control elements are grey.
PALETTE = (("#1f77b4", "#aec7e8"), ("#d62728", "#ff9896"), ("#2ca02c", "#98df8a"), ("#9467bd", "#c5b0d5"),
           ("#ff7f0e", "#ffbb78"), ("#8c564b", "#c49c94"), ("#e377c2", "#f7b6d2"), ("#17becf", "#9edae5"))
CONTROL = ("#7f7f7f", "#d9d9d9")
SVG_NODE_LIMIT = 2000
MAX_SVG_BYTES = 256 * 1024 * 1024   # what dot may print for 2,000 nodes (a few MB)


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _tokens(n: int) -> str:
    return "" if n == 0 else ("\n" + "\u25cf" * n if n <= 3 else f"\n{n}")


def dot_document(net: Net) -> str:
    """The DOT text of `net`."""
    return "".join(dot_pieces(net))


def dot_pieces(net: Net, lines_per_piece: int = 4096) -> Iterator[str]:
    """The DOT text of `net` in pieces of whole lines (a 100,000-operation net has a million lines)."""
    piece: list[str] = []
    for line in _dot_lines(net):
        piece.append(line)
        if len(piece) == lines_per_piece:
            yield "\n".join(piece) + "\n"
            piece = []
    if piece:
        yield "\n".join(piece) + "\n"


def _dot_lines(net: Net) -> Iterator[str]:
    colour_of = {c: PALETTE[i % len(PALETTE)] for i, c in enumerate(net.colours)}
    yield f"digraph {_quote(net.name)} {{"
    yield f"  graph [rankdir=LR, fontname=Helvetica, label={_quote(f'{net.name} ({net.encoding} encoding)')}];"
    yield "  node [fontname=Helvetica, fontsize=10];"
    yield "  edge [arrowsize=0.6];"
    # the nodes of each colour (places, then transitions), the colours in order of first appearance
    members: dict[str, tuple[list[int], list[int]]] = {}
    for p, place in enumerate(net.places):
        members.setdefault(place.colour, ([], []))[0].append(p)
    for t, transition in enumerate(net.transitions):
        members.setdefault(transition.colour, ([], []))[1].append(t)
    for colour, (places, transitions) in members.items():
        stroke, _ = colour_of.get(colour, CONTROL)
        if len(net.colours) > 1 and colour in colour_of:
            yield f"  subgraph {_quote('cluster_' + colour)} {{"
            yield f"    label={_quote(colour)}; color={_quote(stroke)}; style=rounded;"
            indent = "    "
        else:
            indent = "  "
        for p in places:
            place = net.places[p]
            style = "dashed" if place.kind in (PlaceKind.MISSING, PlaceKind.UNUSED) else "solid"
            shape = "doublecircle" if place.kind is PlaceKind.OUTPUT else "circle"
            yield (f"{indent}{_quote(place.id)} [shape={shape}, style={style}, color={_quote(stroke)}, "
                   f"label={_quote(place.variable + _tokens(place.initial))}];")
        _, fill = colour_of.get(colour, CONTROL)
        for t in transitions:
            transition = net.transitions[t]
            style = "filled,dashed" if transition.kind is TransitionKind.SYNC else "filled"
            label = f"sync\n{transition.name}" if transition.kind is TransitionKind.SYNC else f"{transition.op}\n{transition.name}"
            yield (f"{indent}{_quote(transition.id)} [shape=box, style={_quote(style)}, color={_quote(stroke)}, "
                   f"fillcolor={_quote(fill)}, label={_quote(label)}];")
        if indent == "    ":
            yield "  }"
    for source, target, weight in net.arcs():
        label = f" [label={_quote(str(weight))}]" if weight != 1 else ""
        yield f"  {_quote(source)} -> {_quote(target)}{label};"
    yield "}"


def write_dot(net: Net, path: str | os.PathLike[str]) -> Path:
    return write_text_pieces(path, dot_pieces(net))


def dot_version() -> str | None:
    """`dot -V` (e.g. '2.43.0'), None when Graphviz is not installed."""
    exe = shutil.which("dot")
    if exe is None:
        return None
    try:
        out = process.run([exe, "-V"], timeout=30)
    except PipelineError:
        return None
    words = (out.err or out.out).split()
    return next((w for w in words if w[:1].isdigit()), "unknown")


def render_svg(net: Net, dot_path: str | os.PathLike[str], svg_path: str | os.PathLike[str],
               node_limit: int = SVG_NODE_LIMIT) -> str | None:
    """Render `dot_path` to `svg_path`; returns None when written, else the note saying why not."""
    nodes = len(net.places) + len(net.transitions)
    if nodes > node_limit:
        return f"SVG skipped: {nodes} nodes is more than {node_limit}, too many to lay out usefully (see the DOT file)"
    exe = shutil.which("dot")
    if exe is None:
        return "SVG skipped: Graphviz 'dot' is not installed (Debian package graphviz)"
    try:
        out = process.run([exe, "-Tsvg", str(dot_path)], timeout=120, max_output=MAX_SVG_BYTES)
    except PipelineError as exc:
        return f"SVG skipped: dot failed: {exc.code}: {exc.message[:200]}"
    if out.returncode != 0:
        return f"SVG skipped: dot exited {out.returncode}: {out.err.strip()[:200]}"
    write_bytes(svg_path, out.stdout)
    log.info("wrote %s", svg_path)
    return None

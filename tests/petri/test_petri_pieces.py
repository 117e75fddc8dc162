"""PNML and DOT written piece by piece are the documents the writers gave for the whole net at once.

pipeline.petri.pnml serialises the page's children a few thousand at a time (a whole tree at
100,000 operations takes about a gigabyte); here the reference is ElementTree indenting and
serialising the whole tree, as the writer did before, with pieces of 1, 2 and 3 children so
that every boundary case (a piece ending on a place, a transition, an arc) is crossed.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from tests.petri import golden_cases

from pipeline.petri import dot, pnml
from pipeline.petri.dot import dot_document, dot_pieces, write_dot
from pipeline.petri.net import Net, PlaceKind, TransitionKind
from pipeline.petri.translate import translate


def whole_tree(net: Net) -> str:
    """The PNML document as one ElementTree (the writer's former code)."""
    ET.register_namespace("", pnml.NAMESPACE)
    root = ET.Element(f"{{{pnml.NAMESPACE}}}pnml")
    net_el = ET.SubElement(root, "net", {"id": "net", "type": pnml.PTNET})
    pnml._text(net_el, "name", f"{net.name} ({net.encoding} encoding)")
    info = pnml._tool(net_el, encoding=net.encoding)
    colours = ET.SubElement(info, "colours")
    for colour in net.colours:
        ET.SubElement(colours, "colour", {"name": colour})
    final = ET.SubElement(info, "finalMarking")
    for p, tokens in sorted(net.final.items()):
        ET.SubElement(final, "place", {"idref": net.places[p].id, "tokens": str(tokens)})
    page = ET.SubElement(net_el, "page", {"id": "page"})
    page.extend(pnml._page_children(net))
    ET.indent(root, space="  ")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def whole_dot(net: Net) -> str:
    """The DOT text as one list of lines (the writer's former code)."""
    colour_of = {c: dot.PALETTE[i % len(dot.PALETTE)] for i, c in enumerate(net.colours)}
    lines = [f"digraph {dot._quote(net.name)} {{",
             f"  graph [rankdir=LR, fontname=Helvetica, label={dot._quote(f'{net.name} ({net.encoding} encoding)')}];",
             "  node [fontname=Helvetica, fontsize=10];",
             "  edge [arrowsize=0.6];"]
    members: dict[str, list[str]] = {}
    for place in net.places:
        stroke, _ = colour_of.get(place.colour, dot.CONTROL)
        style = "dashed" if place.kind in (PlaceKind.MISSING, PlaceKind.UNUSED) else "solid"
        shape = "doublecircle" if place.kind is PlaceKind.OUTPUT else "circle"
        members.setdefault(place.colour, []).append(
            f"{dot._quote(place.id)} [shape={shape}, style={style}, color={dot._quote(stroke)}, "
            f"label={dot._quote(place.variable + dot._tokens(place.initial))}];")
    for transition in net.transitions:
        stroke, fill = colour_of.get(transition.colour, dot.CONTROL)
        style = "filled,dashed" if transition.kind is TransitionKind.SYNC else "filled"
        label = f"sync\n{transition.name}" if transition.kind is TransitionKind.SYNC else f"{transition.op}\n{transition.name}"
        members.setdefault(transition.colour, []).append(
            f"{dot._quote(transition.id)} [shape=box, style={dot._quote(style)}, color={dot._quote(stroke)}, "
            f"fillcolor={dot._quote(fill)}, label={dot._quote(label)}];")
    for colour, nodes in members.items():
        stroke, _ = colour_of.get(colour, dot.CONTROL)
        if len(net.colours) > 1 and colour in colour_of:
            lines.append(f"  subgraph {dot._quote('cluster_' + colour)} {{")
            lines.append(f"    label={dot._quote(colour)}; color={dot._quote(stroke)}; style=rounded;")
            lines.extend("    " + n for n in nodes)
            lines.append("  }")
        else:
            lines.extend("  " + n for n in nodes)
    for source, target, weight in net.arcs():
        label = f" [label={dot._quote(str(weight))}]" if weight != 1 else ""
        lines.append(f"  {dot._quote(source)} -> {dot._quote(target)}{label};")
    lines.append("}")
    return "\n".join(lines) + "\n"


NETS = [("empty", lambda: Net("empty", "ours"))] + [
    (f"{name}, {encoding}", lambda make=make, encoding=encoding: translate(make()["items"], encoding))
    for name, make in sorted(golden_cases._cases().items())[:6] for encoding in ("ours", "paper")]


@pytest.mark.parametrize("name,make", NETS, ids=[n for n, _ in NETS])
def test_pieces_are_the_whole_documents(name: str, make, monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    net = make()
    expected = whole_tree(net)
    for chunk in (1, 2, 3, 4096):
        monkeypatch.setattr(pnml, "CHUNK", chunk)
        assert pnml.pnml_document(net) == expected, chunk
    pnml.write_pnml(net, tmp_path / "n.pnml")
    assert (tmp_path / "n.pnml").read_text() == expected
    picture = whole_dot(net)
    assert dot_document(net) == picture
    for lines in (1, 2, 5):
        assert "".join(dot_pieces(net, lines)) == picture
    write_dot(net, tmp_path / "n.dot")
    assert (tmp_path / "n.dot").read_text() == picture

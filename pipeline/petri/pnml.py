"""PNML output (ISO/IEC 15909-2, P/T nets), so other Petri net tools can read our nets.

One net per document, of type ptnet (http://www.pnml.org/version-2009/grammar/ptnet):
places with a name (the NNEF variable) and an initial marking, transitions with a name
(operation and result), arcs with an inscription (their weight). Identifiers are the
net's own ids: deterministic, unique, valid `xsd:ID`.

The coloured net of a split is written as its P/T unfolding: every place and transition
carries one colour (an item), which goes into a `toolspecific` element
(tool "nn-certification-pipeline"), together with what PNML has no label for: the kind of
place, the NNEF source location, and, on the net, the colours and the final marking. A
P/T tool reads the unfolded net and ignores those annotations; our tests validate the
documents against the published RELAX NG grammar (tests/petri/data/pnml-grammar/).
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Iterator

from pipeline.files.atomic import write_text_pieces
from pipeline.petri.net import Net

NAMESPACE = "http://www.pnml.org/version-2009/grammar/pnml"
PTNET = "http://www.pnml.org/version-2009/grammar/ptnet"
TOOL = "nn-certification-pipeline"
TOOL_VERSION = "1"


def _text(parent: ET.Element, tag: str, value: str) -> ET.Element:
    element = ET.SubElement(parent, tag)
    ET.SubElement(element, "text").text = value
    return element


def _tool(parent: ET.Element, **fields: str) -> ET.Element:
    element = ET.SubElement(parent, "toolspecific", {"tool": TOOL, "version": TOOL_VERSION})
    for key, value in fields.items():
        if value:
            ET.SubElement(element, key).text = value
    return element


def pnml_document(net: Net) -> str:
    """The PNML text of `net` (deterministic: same net, same bytes)."""
    return "".join(pnml_pieces(net))


CHUNK = 4096          # page children serialised together
PAGE_CHILD = "\n" + "  " * 3   # the indentation of the page's children (pnml > net > page > child)


def pnml_pieces(net: Net) -> Iterator[str]:
    """The PNML text of `net` in pieces, as one ElementTree indented and serialised would give it.

    At 100,000 operations the page holds about a million places, transitions and arcs: the
    whole tree would take about a gigabyte. The skeleton (net, name, annotations, page) is
    serialised with one stand-in child in the page, and the page's children are serialised
    a few thousand at a time, indented at their level, in the stand-in's place.
    """
    ET.register_namespace("", NAMESPACE)
    root = ET.Element(f"{{{NAMESPACE}}}pnml")
    net_el = ET.SubElement(root, "net", {"id": "net", "type": PTNET})
    _text(net_el, "name", f"{net.name} ({net.encoding} encoding)")
    info = _tool(net_el, encoding=net.encoding)
    colours = ET.SubElement(info, "colours")
    for colour in net.colours:
        ET.SubElement(colours, "colour", {"name": colour})
    final = ET.SubElement(info, "finalMarking")
    for p, tokens in sorted(net.final.items()):
        ET.SubElement(final, "place", {"idref": net.places[p].id, "tokens": str(tokens)})
    page = ET.SubElement(net_el, "page", {"id": "page"})
    if not net.places and not net.transitions:   # an empty page: <page id="page" />
        ET.indent(root, space="  ")
        yield '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
        return
    stand_in = "<stand-in />"
    ET.SubElement(page, "stand-in")
    ET.indent(root, space="  ")
    skeleton = ET.tostring(root, encoding="unicode")
    head, tail = skeleton.split(stand_in)
    yield '<?xml version="1.0" encoding="UTF-8"?>\n' + head
    chunk: list[ET.Element] = []
    for element in _page_children(net):
        if len(chunk) == CHUNK:
            yield _children_text(chunk, last=False)
            chunk = []
        chunk.append(element)
    yield _children_text(chunk, last=True)
    yield tail + "\n"


def _children_text(children: list[ET.Element], last: bool) -> str:
    """Page children indented at their level, each followed by its tail (none after the page's last)."""
    holder = ET.Element("page")
    holder.extend(children)
    ET.indent(holder, space="  ", level=2)
    children[-1].tail = None if last else PAGE_CHILD
    text = ET.tostring(holder, encoding="unicode")
    return text[len("<page>") + len(PAGE_CHILD):-len("</page>")]


def _page_children(net: Net) -> Iterator[ET.Element]:
    for place in net.places:
        element = ET.Element("place", {"id": place.id})
        _text(element, "name", place.variable)
        if place.initial:
            _text(element, "initialMarking", str(place.initial))
        _tool(element, colour=place.colour, kind=place.kind.value)
        yield element
    for transition in net.transitions:
        element = ET.Element("transition", {"id": transition.id})
        label = f"sync {transition.name}" if transition.op == "sync" else f"{transition.op} {transition.name}"
        _text(element, "name", label)
        _tool(element, colour=transition.colour, kind=transition.kind.value, op=transition.op,
              source=str(transition.span) if transition.span else "")
        yield element
    for index, (source, target, weight) in enumerate(net.arcs()):
        arc = ET.Element("arc", {"id": f"arc.{index}", "source": source, "target": target})
        _text(arc, "inscription", str(weight))
        yield arc


def write_pnml(net: Net, path: str | os.PathLike[str]) -> Path:
    """Write the PNML document of `net` atomically, piece by piece."""
    return write_text_pieces(path, pnml_pieces(net))

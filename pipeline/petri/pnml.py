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

from pipeline.atomic import write_text
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
    for place in net.places:
        element = ET.SubElement(page, "place", {"id": place.id})
        _text(element, "name", place.variable)
        if place.initial:
            _text(element, "initialMarking", str(place.initial))
        _tool(element, colour=place.colour, kind=place.kind.value)
    for transition in net.transitions:
        element = ET.SubElement(page, "transition", {"id": transition.id})
        label = f"sync {transition.name}" if transition.op == "sync" else f"{transition.op} {transition.name}"
        _text(element, "name", label)
        _tool(element, colour=transition.colour, kind=transition.kind.value, op=transition.op,
              source=str(transition.span) if transition.span else "")
    for index, (source, target, weight) in enumerate(net.arcs()):
        arc = ET.SubElement(page, "arc", {"id": f"arc.{index}", "source": source, "target": target})
        _text(arc, "inscription", str(weight))
    ET.indent(root, space="  ")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def write_pnml(net: Net, path: str | os.PathLike[str]) -> Path:
    """Write the PNML document of `net` atomically."""
    return write_text(path, pnml_document(net))

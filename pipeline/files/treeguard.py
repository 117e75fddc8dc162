"""JSON and XML judged before they are built: nesting depth and node counts, in bounded time and memory.

A file within its byte limit can still cost far more once parsed. `json.loads` on 100,000
nested `[` recurses until RecursionError; a 90 MB JSON of small values builds tens of millions
of Python objects (1.8 GB before MemoryError); ElementTree builds an Element with an attribute
dictionary for every tag of a 96 MB JUnit file. So a document from a user (a baseline, a
package's manifest, records and signature envelope) is screened first, and refused with a
sentence (`TreeRefused`, a ValueError: callers turn it into their coded error) before any
object is built:

JSON  the text with every string replaced by `""` (one regular-expression pass; a string
      cannot hide brackets) gives the node count (containers, commas and colons: an upper
      bound on the values, keys included) with `bytes.count`, and only its brackets, removed
      innermost first (`[]` and `{}` pairs, one level per pass, at most `max_depth` passes),
      give the depth. Linear in the size, and only the brackets are scanned more than once.
XML   the number of `<` and of `=` bound the elements and the attributes before the parse; the
      parse itself (expat through ElementTree's pull parser, fed in chunks) counts the depth
      and stops at the first element past it. DOCTYPE and ENTITY declarations are refused
      (entities are never expanded).
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from typing import Any, Iterator

MAX_DEPTH = 64
_STRING = re.compile(rb'"[^"\\]*+(?:\\.[^"\\]*+)*+(?:"|\Z)', re.S)   # possessive: linear, never backtracks
_BLOCK = re.compile(rb'(?:[^"]++|"[^"\\]*+(?:\\.[^"\\]*+)*+(?:"|\Z)){1,4096}+', re.S)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_SQUARE = bytes.maketrans(b"{}", b"[]")
_DECLARATION = re.compile(r"<!(DOCTYPE|ENTITY)", re.I)
FEED = 1024 * 1024


class TreeRefused(ValueError):
    """A document refused before it is built: `reason` says which bound, `line`/`column` where (0: unknown)."""

    def __init__(self, reason: str, line: int = 0, column: int = 0) -> None:
        super().__init__(reason)
        self.reason = reason
        self.line = line
        self.column = column


def _blocks(data: bytes) -> Iterator[bytes]:
    """`data` with every string written `""`, in pieces cut between strings (a few thousand strings
    each: `re.sub` over the whole of 10 million strings held 20 million pieces, 1.8 GB)."""
    position = 0
    while position < len(data):
        end = _BLOCK.match(data, position).end()     # type: ignore[union-attr]  (always matches one run)
        yield _STRING.sub(b'""', data[position:end])
        position = end


def _depth(brackets: bytes, limit: int) -> int:
    """The nesting depth of a text of brackets only (`{}` written `[]`), found by removing innermost
    `[]` pairs, one level per pass, at most `limit` + 1 passes; what is left unbalanced counts its
    openers (the parser would descend into each before failing)."""
    depth = 0
    while brackets and depth <= limit:
        shorter = brackets.replace(b"[]", b"")
        if len(shorter) == len(brackets):
            return depth + brackets.count(b"[")
        depth += 1
        brackets = shorter
    return depth


def screen_json(data: bytes, max_depth: int = MAX_DEPTH, max_nodes: int = 0) -> None:
    """TreeRefused when the JSON text `data` nests deeper than `max_depth` or holds more than
    `max_nodes` values and keys (0: no count limit); bounded by the size of `data` in time and memory."""
    nodes = 1
    pieces = []
    for plain in _blocks(data):
        nodes += plain.count(b"[") + plain.count(b"{") + plain.count(b",") + plain.count(b":")
        if max_nodes and nodes > max_nodes:
            raise TreeRefused(f"more than {max_nodes} values and keys (the limit)")
        pieces.append(plain.translate(_SQUARE, _NOT_BRACKETS))
    if _depth(b"".join(pieces), max_depth) > max_depth:
        raise TreeRefused(f"nested deeper than {max_depth} arrays and objects")


def loads_json(data: bytes | str, max_depth: int = MAX_DEPTH, max_nodes: int = 0) -> Any:
    """`json.loads` of `data` after `screen_json` (TreeRefused first; json's ValueError for bad JSON)."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    screen_json(raw, max_depth, max_nodes)
    return json.loads(raw)


def parse_xml(text: str, max_depth: int = MAX_DEPTH, max_elements: int = 0, max_attributes: int = 0) -> ET.Element:
    """The root element of the XML `text`, bounded: TreeRefused for a DOCTYPE or ENTITY declaration,
    more than `max_elements` tags or `max_attributes` attributes (counted before the parse, 0: no
    limit), or nesting deeper than `max_depth` (counted while parsing); ET.ParseError for XML that is
    not well formed."""
    declaration = _DECLARATION.search(text)
    if declaration:
        line = text.count("\n", 0, declaration.start()) + 1
        raise TreeRefused(f"a <!{declaration.group(1)}> declaration: entities are never expanded here", line,
                          declaration.start() - text.rfind("\n", 0, declaration.start()))
    tags = text.count("<")
    if max_elements and tags > max_elements:
        raise TreeRefused(f"{tags} tags, more than the limit of {max_elements} elements")
    equals = text.count("=")
    if max_attributes and equals > max_attributes:
        raise TreeRefused(f"up to {equals} attributes, more than the limit of {max_attributes}")
    parser = ET.XMLPullParser(events=("start", "end"))
    depth = 0
    root: ET.Element | None = None
    for start in range(0, len(text), FEED):
        parser.feed(text[start:start + FEED])
        for event, element in parser.read_events():
            if event == "start":
                depth += 1
                if root is None:
                    root = element
                if depth > max_depth:
                    raise TreeRefused(f"elements nested deeper than {max_depth}")
            else:
                depth -= 1
    parser.close()
    for event, element in parser.read_events():
        if event == "start" and root is None:
            root = element
    if root is None:
        raise ET.ParseError("no element found")
    return root

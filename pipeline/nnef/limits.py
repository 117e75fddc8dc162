"""Bounds on what the NNEF front end accepts, so that hostile text is refused with a finding.

A description comes from many hands; the checker must answer every text with findings, in
time and memory bounded by the text's size, and never with a traceback. The recursive
parts of the front end (the flat parser, lark's tree transformer, lowering, the fragment
checks) are kept inside Python's recursion limit by refusing, before they run:

* brackets `( [ {` nested deeper than MAX_NESTING in the text (a pre-scan, outside
  comments and strings);
* integer literals outside 64-bit two's complement (Python would otherwise build, and then
  refuse to convert, arbitrarily long integers);
* expressions deeper than MAX_EXPRESSION_DEPTH (a long operator chain `x + x + ... + x` is
  as deep as it is long), measured iteratively on the AST;
* tensors of more than MAX_EXTENT elements along an axis or MAX_ELEMENTS in all (a
  declaration or an inferred shape), so that later steps never size an allocation from an
  unchecked product.

Each refusal is NNEF-E022 with the location. The limits are module constants (documented
in docs/nnef.md, "Limits"); raise them here if a real network needs more.
"""

from __future__ import annotations

import math
import re
from typing import Any, Iterator, Sequence

from pipeline.diagnostics import Finding, Severity, Span
from pipeline.nnef import ast

CODE = "NNEF-E022"
MAX_NESTING = 64
MAX_EXPRESSION_DEPTH = 100   # lowering uses about 4 Python frames per level
MAX_INTEGER = 2**63 - 1
MAX_EXTENT = 2**31 - 1
MAX_ELEMENTS = 2**32
MAX_TEXT_BYTES = 256 * 1024 * 1024  # a description file (regular files only); judged with stat before reading

_INTEGER = re.compile(r"(?<![\w.])\d+(?![\w.])")


class LimitExceeded(Exception):
    """Raised inside a parser when a literal exceeds a limit; parse_text turns it into findings."""


def integer(text: str) -> int:
    """The value of an integer literal, or LimitExceeded when it is outside 64 bits."""
    if len(text) > 19 or int(text) > MAX_INTEGER:
        raise LimitExceeded(text)
    return int(text)


def _code_segments(text: str) -> Iterator[tuple[int, str]]:
    """(offset, text) of the parts of `text` outside comments and string literals."""
    position = 0
    pattern = re.compile(r"#[^\n]*|'[^'\n]*'|\"[^\"\n]*\"")
    for match in pattern.finditer(text):
        yield position, text[position:match.start()]
        position = match.end()
    yield position, text[position:]


def _span(text: str, file: str, offset: int, length: int = 1) -> Span:
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return Span(file, line, column, line, column + length)


def text_findings(text: str, file: str) -> list[Finding]:
    """Nesting and integer-literal limits, found by a linear scan before any parser runs."""
    findings: list[Finding] = []
    depth = 0
    for offset, segment in _code_segments(text):
        for index, char in enumerate(segment):
            if char in "([{":
                depth += 1
                if depth > MAX_NESTING:
                    findings.append(Finding(CODE, Severity.ERROR, f"brackets nested deeper than {MAX_NESTING} levels",
                                            _span(text, file, offset + index)))
                    return findings
            elif char in ")]}":
                depth = max(0, depth - 1)
        for match in _INTEGER.finditer(segment):
            digits = match.group(0)
            if len(digits) > 19 or int(digits) > MAX_INTEGER:
                shown = digits if len(digits) <= 24 else f"{digits[:12]}...({len(digits)} digits)"
                findings.append(Finding(CODE, Severity.ERROR, f"integer literal {shown} is outside the 64-bit range",
                                        _span(text, file, offset + match.start(), len(digits))))
                if len(findings) >= 10:
                    return findings
    return findings


def children(expr: ast.Expr) -> tuple[Any, ...]:
    """The direct sub-expressions of `expr` (None for an absent optional one)."""
    if isinstance(expr, (ast.ArrayExpr, ast.TupleExpr)):
        return expr.items
    if isinstance(expr, ast.Invocation):
        return tuple(a.value for a in expr.args)
    if isinstance(expr, ast.Unary):
        return (expr.operand,)
    if isinstance(expr, ast.Binary):
        return (expr.left, expr.right)
    if isinstance(expr, ast.IfElse):
        return (expr.condition, expr.then, expr.otherwise)
    if isinstance(expr, ast.Subscript):
        return (expr.sequence, expr.begin, expr.end)
    if isinstance(expr, ast.Builtin):
        return (expr.arg,)
    if isinstance(expr, ast.Comprehension):
        return tuple(it.iterable for it in expr.iterators) + (expr.condition, expr.body)
    return ()


def expression_depth(expr: ast.Expr, limit: int = MAX_EXPRESSION_DEPTH) -> int:
    """The depth of `expr`'s tree, computed without recursion; stops counting past `limit`."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(expr, 1)]
    while stack:
        node, depth = stack.pop()
        if node is None:
            continue
        deepest = max(deepest, depth)
        if deepest > limit:
            return deepest
        stack.extend((child, depth + 1) for child in children(node))
    return deepest


def depth_finding(expr: ast.Expr) -> Finding | None:
    """NNEF-E022 when `expr` is deeper than MAX_EXPRESSION_DEPTH (checked before any recursive walk)."""
    if expression_depth(expr) <= MAX_EXPRESSION_DEPTH:
        return None
    return Finding(CODE, Severity.ERROR, f"expression nested deeper than {MAX_EXPRESSION_DEPTH} levels", expr.span)


def shape_problem(shape: Sequence[Any]) -> str | None:
    """Why a tensor shape exceeds the bounds (None when it is within them)."""
    extents = [int(e) for e in shape if isinstance(e, int) and not isinstance(e, bool)]
    if any(e > MAX_EXTENT for e in extents):
        return f"shape {list(shape)}: an extent exceeds {MAX_EXTENT}"
    if extents and math.prod(extents) > MAX_ELEMENTS:
        return f"shape {list(shape)}: {math.prod(extents)} elements exceed {MAX_ELEMENTS}"
    return None

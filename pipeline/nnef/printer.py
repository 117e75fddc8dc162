"""Canonical NNEF text from an AST.

One spelling per construct: 4-space indentation, one statement per line, single spaces
around `=` and binary operators, the fewest parentheses the precedence allows, scalar
literals as the shortest decimal that reads back to the same float32. Printing is
deterministic, and parse(print(doc)) == doc (spans aside), so print -> parse -> print
is a fixpoint; tests/nnef/test_printer.py checks both over the whole corpus.
"""

from __future__ import annotations

import math
from typing import Iterable

import numpy as np

from pipeline.nnef import ast
from pipeline.nnef.types import format_type

INDENT = "    "

# Binding strength of each operator (higher binds tighter); see grammar.lark.
_IF_ELSE = 0
_BINARY_PRECEDENCE = {
    "in": 1,
    "&&": 2, "||": 2,
    "<": 3, "<=": 3, ">": 3, ">=": 3, "==": 3, "!=": 3,
    "+": 4, "-": 4,
    "*": 5, "/": 5,
    "^": 6,
}
_UNARY = 7
_ATOM = 8


def format_scalar(value: float) -> str:
    """Shortest decimal text of `value` as a float32, always with a '.' or an exponent."""
    if not math.isfinite(value):
        raise ValueError(f"scalar literal {value!r} has no NNEF spelling")
    text = str(np.float32(abs(value)))
    if "." not in text and "e" not in text:
        text += ".0"
    if text.startswith("."):
        text = "0" + text
    return ("-" if math.copysign(1.0, value) < 0 else "") + text


def format_string(value: str) -> str:
    """A string literal; NNEF strings have no escapes, so pick the quote not in the text."""
    if "'" not in value:
        return f"'{value}'"
    if '"' not in value:
        return f'"{value}"'
    raise ValueError(f"string {value!r} contains both quote characters and cannot be written in NNEF")


def _precedence(expr: ast.Expr) -> int:
    if isinstance(expr, ast.IfElse):
        return _IF_ELSE
    if isinstance(expr, ast.Binary):
        return _BINARY_PRECEDENCE[expr.op]
    if isinstance(expr, ast.Unary):
        return _UNARY
    if isinstance(expr, ast.Literal) and expr.kind in ("integer", "scalar") and expr.value < 0:
        return _UNARY  # printed with a leading '-'
    return _ATOM


def _wrap(expr: ast.Expr, parenthesize: bool) -> str:
    text = format_expr(expr)
    return f"({text})" if parenthesize else text


def format_expr(expr: ast.Expr) -> str:
    """Canonical text of an expression (rvalue or lvalue)."""
    if isinstance(expr, ast.Literal):
        if expr.kind == "integer":
            return str(int(expr.value))
        if expr.kind == "scalar":
            return format_scalar(float(expr.value))
        if expr.kind == "string":
            return format_string(str(expr.value))
        return "true" if expr.value else "false"
    if isinstance(expr, ast.Identifier):
        return expr.name
    if isinstance(expr, ast.ArrayExpr):
        return "[" + ", ".join(format_expr(e) for e in expr.items) + "]"
    if isinstance(expr, ast.TupleExpr):
        return "(" + ", ".join(format_expr(e) for e in expr.items) + ")"
    if isinstance(expr, ast.Invocation):
        generic = f"<{expr.type_arg}>" if expr.type_arg else ""
        args = ", ".join(
            (f"{a.name.value} = " if a.name else "") + format_expr(a.value) for a in expr.args
        )
        return f"{expr.name.value}{generic}({args})"
    if isinstance(expr, ast.Unary):
        operand = _wrap(expr.operand, _precedence(expr.operand) < _UNARY)
        return f"{expr.op}{operand}"
    if isinstance(expr, ast.Binary):
        level = _BINARY_PRECEDENCE[expr.op]
        left = _wrap(expr.left, _precedence(expr.left) < level)
        right = _wrap(expr.right, _precedence(expr.right) <= level)
        return f"{left} {expr.op} {right}"
    if isinstance(expr, ast.IfElse):
        then = _wrap(expr.then, _precedence(expr.then) == _IF_ELSE)
        return f"{then} if {format_expr(expr.condition)} else {format_expr(expr.otherwise)}"
    if isinstance(expr, ast.Subscript):
        sequence = _wrap(expr.sequence, _precedence(expr.sequence) < _ATOM)
        if not expr.is_range:
            return f"{sequence}[{format_expr(expr.begin)}]"
        begin = format_expr(expr.begin) if expr.begin is not None else ""
        end = format_expr(expr.end) if expr.end is not None else ""
        return f"{sequence}[{begin}:{end}]"
    if isinstance(expr, ast.Builtin):
        return f"{expr.function}({format_expr(expr.arg)})"
    if isinstance(expr, ast.Comprehension):
        iterators = ", ".join(
            f"{format_expr(it.target)} in {_wrap(it.iterable, _precedence(it.iterable) == _IF_ELSE)}"
            for it in expr.iterators
        )
        condition = f" if {format_expr(expr.condition)}" if expr.condition is not None else ""
        return f"[for {iterators}{condition} yield {format_expr(expr.body)}]"
    raise TypeError(f"not an NNEF expression: {expr!r}")


def format_lvalue(expr: ast.Expr) -> str:
    """An assignment's left side: a top-level tuple is written without parentheses."""
    if isinstance(expr, ast.TupleExpr):
        return ", ".join(format_expr(e) for e in expr.items)
    return format_expr(expr)


def format_assignment(assignment: ast.Assignment) -> str:
    return f"{format_lvalue(assignment.lhs)} = {format_expr(assignment.rhs)};"


def _body(assignments: Iterable[ast.Assignment]) -> list[str]:
    return ["{", *(INDENT + format_assignment(a) for a in assignments), "}"]


def format_fragment(fragment: ast.Fragment) -> str:
    generic = ""
    if fragment.generic:
        generic = f"<? = {fragment.generic_default}>" if fragment.generic_default else "<?>"
    params = ", ".join(
        f"{p.name.value}: {format_type(p.type)}" + (f" = {format_expr(p.default)}" if p.default is not None else "")
        for p in fragment.params
    )
    results = ", ".join(f"{r.name.value}: {format_type(r.type)}" for r in fragment.results)
    header = f"fragment {fragment.name.value}{generic}( {params} ) -> ( {results} )"
    if fragment.body is None:
        return header + ";"
    return "\n".join([header, *_body(fragment.body)])


def _names(names: Iterable[ast.Name]) -> str:
    listed = ", ".join(n.value for n in names)
    return f"( {listed} )" if listed else "()"


def format_graph(graph: ast.GraphDef) -> str:
    keyword = f"graphitem {graph.item.value} " if graph.item is not None else "graph "
    header = f"{keyword}{graph.name.value}{_names(graph.params)} -> {_names(graph.results)}"
    return "\n".join([header, *_body(graph.body)])


def print_document(document: ast.Document) -> str:
    """The canonical text of a whole document, ending with a newline."""
    lines = [f"version {document.version.major}.{document.version.minor};"]
    lines += [f"extension {', '.join(n.value for n in ext.names)};" for ext in document.extensions]
    blocks = [format_fragment(f) for f in document.fragments] + [format_graph(g) for g in document.graphs]
    return "\n\n".join(["\n".join(lines), *blocks]) + "\n"

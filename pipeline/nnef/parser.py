"""NNEF text -> AST with spans (lark LALR, grammar in grammar.lark).

The transformer builds AST nodes while parsing (one method per grammar rule), so no
intermediate parse tree is kept: this matters for 50,000-operation graphs.

Syntax errors become findings (NNEF-E001) with file, line and column. To report more
than the first error, the parser blanks the statement holding an error (keeping line
and column numbers) and parses again, up to `MAX_SYNTAX_ERRORS` times.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

import lark
import numpy as np
from lark import Token, Transformer

from pipeline.diagnostics import Finding, Severity, Span
from pipeline.files.readguard import TOO_LARGE, InputRefused, read_input
from pipeline.files.gcpause import gc_paused
from pipeline.nnef import ast, limits
from pipeline.nnef.flatparse import parse_flat

GRAMMAR_PATH = Path(__file__).with_name("grammar.lark")
MAX_SYNTAX_ERRORS = 20

CODE_SYNTAX = "NNEF-E001"

# How a terminal is named in a syntax error message.
_TERMINAL_DISPLAY = {
    "IDENTIFIER": "identifier",
    "DECIMAL": "integer literal",
    "FRACTIONAL": "scalar literal",
    "STRING": "string literal",
    "TYPE_ARG": "'<type>'",
    "$END": "end of file",
}


@dataclass
class ParseResult:
    """The AST of one file (None when it has syntax errors) and the syntax findings."""

    document: ast.Document | None
    findings: list[Finding]
    text: str


def _type_arg(token: Token) -> str:
    return token.value.strip("<> \t\r\n")


def _float32(text: str) -> float:
    """The float32 value of a scalar literal (NNEF scalars are float32, as in the Khronos parser)."""
    with np.errstate(over="ignore"):
        return float(np.float32(float(text)))


_PUNCTUATION = frozenset({"LPAR", "RPAR", "LSQB", "RSQB", "LBRACE", "RBRACE", "SEMI"})


def _rule(method: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap a rule method: compute the span over all children, then drop punctuation tokens."""

    def wrapped(self: "_AstBuilder", children: list[Any]) -> Any:
        span = self._cover(children)
        kept = [c for c in children if not (isinstance(c, Token) and c.type in _PUNCTUATION)]
        return method(self, kept, span)

    wrapped.__name__ = method.__name__
    return wrapped


class _AstBuilder(Transformer):
    """One method per grammar rule, each given the kept children and the rule's span."""

    file = "<string>"

    # -- spans

    def _cover(self, children: list[Any]) -> Span:
        """The span from the first to the last positioned child (tokens or AST nodes)."""
        first = last = None
        for child in children:
            span = self._span_of(child)
            if span is not None:
                first = first or span
                last = span
        if first is None or last is None:
            return ast.NO_SPAN
        return Span(self.file, first.line, first.column, last.end_line, last.end_column)

    def _span_of(self, child: Any) -> Span | None:
        if isinstance(child, Token):
            return self._tok_span(child)
        span = getattr(child, "span", None)
        if span is not None and span is not ast.NO_SPAN:
            return span
        if isinstance(child, (list, tuple)) and child:
            first, last = self._span_of(child[0]), self._span_of(child[-1])
            if first and last:
                return Span(self.file, first.line, first.column, last.end_line, last.end_column)
        if isinstance(child, dict):
            return child.get("span")
        return None

    def _tok_span(self, token: Token) -> Span:
        return Span(self.file, token.line, token.column, token.end_line, token.end_column)

    def _name(self, token: Token) -> ast.Name:
        return ast.Name(token.value, self._tok_span(token))

    # -- document

    @_rule
    def start(self, c: list[Any], span: Span) -> ast.Document:
        return c[0]

    @_rule
    def document(self, c: list[Any], span: Span) -> ast.Document:
        version = c[0]
        extensions = tuple(x for x in c if isinstance(x, ast.Extension))
        fragments = tuple(x for x in c if isinstance(x, ast.Fragment))
        graphs = c[-1] if isinstance(c[-1], tuple) else ()
        return ast.Document(version, extensions, fragments, graphs, file=self.file)

    @_rule
    def graph_part(self, c: list[Any], span: Span) -> tuple[ast.GraphDef, ...]:
        return tuple(c)

    @_rule
    def version(self, c: list[Any], span: Span) -> ast.Version:
        text = c[1].value
        match = re.fullmatch(r"([0-9]{1,9})\.([0-9]{1,9})", text)
        major, minor = (int(match.group(1)), int(match.group(2))) if match else (-1, -1)
        return ast.Version(major, minor, self._tok_span(c[1]))

    @_rule
    def extension(self, c: list[Any], span: Span) -> ast.Extension:
        return ast.Extension(tuple(self._name(t) for t in c[1:]), span)

    # -- fragments

    @_rule
    def fragment_definition(self, c: list[Any], span: Span) -> ast.Fragment:
        decl = c[0]
        body = c[1]["assignments"] if len(c) > 1 else None
        return ast.Fragment(decl["name"], decl["generic"], decl["generic_default"], decl["params"],
                            decl["results"], body, span)

    @_rule
    def fragment_declaration(self, c: list[Any], span: Span) -> dict[str, Any]:
        generic = next((x for x in c if isinstance(x, tuple) and x and x[0] == "generic"), None)
        lists = [x for x in c if isinstance(x, list)]
        return {
            "name": self._name(c[1]),
            "generic": generic is not None,
            "generic_default": generic[1] if generic else None,
            "params": tuple(lists[0]),
            "results": tuple(lists[1]),
            "span": span,
        }

    @_rule
    def generic_declaration(self, c: list[Any], span: Span) -> tuple[str, str | None]:
        default = next((x.name for x in c if isinstance(x, ast.PrimitiveType)), None)
        return ("generic", default)

    @_rule
    def parameter_list(self, c: list[Any], span: Span) -> list[ast.Parameter]:
        return c

    @_rule
    def parameter(self, c: list[Any], span: Span) -> ast.Parameter:
        default = c[2] if len(c) > 2 else None
        return ast.Parameter(self._name(c[0]), c[1], default, span)

    @_rule
    def result_list(self, c: list[Any], span: Span) -> list[ast.Result]:
        return c

    @_rule
    def result(self, c: list[Any], span: Span) -> ast.Result:
        return ast.Result(self._name(c[0]), c[1], span)

    @_rule
    def type_name(self, c: list[Any], span: Span) -> ast.PrimitiveType:
        return ast.PrimitiveType(c[0].value, span)

    @_rule
    def tensor_type_bound(self, c: list[Any], span: Span) -> ast.TensorType:
        return ast.TensorType(_type_arg(c[1]), span)

    @_rule
    def tensor_type_generic(self, c: list[Any], span: Span) -> ast.TensorType:
        return ast.TensorType("?", span)

    @_rule
    def tensor_type_any(self, c: list[Any], span: Span) -> ast.TensorType:
        return ast.TensorType(None, span)

    @_rule
    def array_type_spec(self, c: list[Any], span: Span) -> ast.ArrayType:
        return ast.ArrayType(c[0], span)

    @_rule
    def tuple_type_spec(self, c: list[Any], span: Span) -> ast.TupleType:
        return ast.TupleType(tuple(c), span)

    @_rule
    def negative_literal(self, c: list[Any], span: Span) -> ast.Unary:
        return ast.Unary("-", c[1], span)

    @_rule
    def array_literal(self, c: list[Any], span: Span) -> ast.ArrayExpr:
        return ast.ArrayExpr(tuple(x for x in c if x is not None), span)

    @_rule
    def tuple_literal(self, c: list[Any], span: Span) -> ast.TupleExpr:
        return ast.TupleExpr(tuple(c), span)

    # -- graphs

    @_rule
    def graph_definition(self, c: list[Any], span: Span) -> ast.GraphDef:
        decl = c[0]
        return ast.GraphDef(decl["name"], decl["params"], decl["results"], c[1]["assignments"], None, span)

    @_rule
    def graph_declaration(self, c: list[Any], span: Span) -> dict[str, Any]:
        return {"name": self._name(c[1]), "params": c[2], "results": c[3], "span": span}

    @_rule
    def graphitem_definition(self, c: list[Any], span: Span) -> ast.GraphDef:
        decl = c[0]
        return ast.GraphDef(decl["name"], decl["params"], decl["results"], c[1]["assignments"], decl["item"], span)

    @_rule
    def graphitem_declaration(self, c: list[Any], span: Span) -> dict[str, Any]:
        return {"item": self._name(c[1]), "name": self._name(c[2]), "params": c[3], "results": c[4], "span": span}

    @_rule
    def item_identifiers(self, c: list[Any], span: Span) -> tuple[ast.Name, ...]:
        return c[0] if c and c[0] is not None else ()

    bracketed_identifiers = item_identifiers

    @_rule
    def identifier_list(self, c: list[Any], span: Span) -> tuple[ast.Name, ...]:
        return tuple(self._name(t) for t in c)

    @_rule
    def body(self, c: list[Any], span: Span) -> dict[str, Any]:
        return {"assignments": tuple(c), "span": span}

    @_rule
    def assignment(self, c: list[Any], span: Span) -> ast.Assignment:
        return ast.Assignment(c[0], c[1], span)

    # -- lvalues and rvalues

    @_rule
    def identifier_lvalue(self, c: list[Any], span: Span) -> ast.Identifier:
        return ast.Identifier(c[0].value, span)

    identifier = identifier_lvalue

    @_rule
    def array_lvalue(self, c: list[Any], span: Span) -> ast.ArrayExpr:
        return ast.ArrayExpr(tuple(x for x in c if x is not None), span)

    array_rvalue_expr = array_lvalue

    @_rule
    def tuple_lvalue(self, c: list[Any], span: Span) -> ast.TupleExpr:
        return ast.TupleExpr(tuple(c), span)

    tuple_expr = tuple_lvalue

    @_rule
    def paren_expr(self, c: list[Any], span: Span) -> ast.Expr:
        return c[0]

    @_rule
    def if_else(self, c: list[Any], span: Span) -> ast.IfElse:
        then, _if, condition, _else, otherwise = c
        return ast.IfElse(condition, then, otherwise, span)

    @_rule
    def binary(self, c: list[Any], span: Span) -> ast.Binary:
        left, op, right = c
        return ast.Binary(op.value, left, right, span)

    @_rule
    def unary(self, c: list[Any], span: Span) -> ast.Unary:
        return ast.Unary(c[0].value, c[1], span)

    @_rule
    def subscript(self, c: list[Any], span: Span) -> ast.Subscript:
        return ast.Subscript(c[0], c[1], c[1], False, span)

    @_rule
    def slice_subscript(self, c: list[Any], span: Span) -> ast.Subscript:
        return ast.Subscript(c[0], c[1], c[2], True, span)

    @_rule
    def invocation(self, c: list[Any], span: Span) -> ast.Invocation:
        type_arg = _type_arg(c[1]) if len(c) == 3 else None
        return ast.Invocation(self._name(c[0]), type_arg, c[-1], span)

    @_rule
    def argument_list(self, c: list[Any], span: Span) -> tuple[ast.Argument, ...]:
        return tuple(c)

    @_rule
    def positional_argument(self, c: list[Any], span: Span) -> ast.Argument:
        return ast.Argument(None, c[0], span)

    @_rule
    def named_argument(self, c: list[Any], span: Span) -> ast.Argument:
        return ast.Argument(self._name(c[0]), c[1], span)

    @_rule
    def builtin_expr(self, c: list[Any], span: Span) -> ast.Builtin:
        return ast.Builtin(c[0].value, c[1], span)

    @_rule
    def comprehension_expr(self, c: list[Any], span: Span) -> ast.Comprehension:
        iterators = tuple(x for x in c if isinstance(x, ast.LoopIter))
        condition = None
        for index, child in enumerate(c):
            if isinstance(child, Token) and child.type == "IF":
                condition = c[index + 1]
        return ast.Comprehension(iterators, condition, c[-1], span)

    @_rule
    def loop_iter(self, c: list[Any], span: Span) -> ast.LoopIter:
        return ast.LoopIter(c[0], c[2], span)

    # -- literals

    @_rule
    def integer_literal(self, c: list[Any], span: Span) -> ast.Literal:
        return ast.Literal(limits.integer(c[0].value), "integer", span, c[0].value)

    @_rule
    def scalar_literal(self, c: list[Any], span: Span) -> ast.Literal:
        return ast.Literal(_float32(c[0].value), "scalar", span, c[0].value)

    @_rule
    def string_literal(self, c: list[Any], span: Span) -> ast.Literal:
        return ast.Literal(c[0].value[1:-1], "string", span, c[0].value)

    @_rule
    def true_literal(self, c: list[Any], span: Span) -> ast.Literal:
        return ast.Literal(True, "logical", span, "true")

    @_rule
    def false_literal(self, c: list[Any], span: Span) -> ast.Literal:
        return ast.Literal(False, "logical", span, "false")


_BUILDER = _AstBuilder()
_LOCK = threading.Lock()


@lru_cache(maxsize=1)
def _parser() -> lark.Lark:
    return lark.Lark(
        GRAMMAR_PATH.read_text(encoding="utf-8"),
        parser="lalr",
        lexer="basic",
        maybe_placeholders=True,
        transformer=_BUILDER,
    )


def _display(parser: lark.Lark, terminal: str) -> str:
    if terminal in _TERMINAL_DISPLAY:
        return _TERMINAL_DISPLAY[terminal]
    try:
        pattern = parser.get_terminal(terminal).pattern
    except KeyError:
        return terminal
    return f"'{pattern.value}'" if pattern.type == "str" else terminal.lower()


def _syntax_finding(parser: lark.Lark, error: lark.exceptions.UnexpectedInput, file: str, text: str) -> Finding:
    line, column = getattr(error, "line", 0), getattr(error, "column", 0)
    if isinstance(error, lark.exceptions.UnexpectedCharacters):
        char = text[error.pos_in_stream] if error.pos_in_stream < len(text) else ""
        if char in "'\"":
            message = f"unterminated string literal (no closing {char})"
        else:
            message = f"unexpected character {char!r}"
        end = column + 1
    elif isinstance(error, lark.exceptions.UnexpectedToken) and error.token.type != "$END":
        token = error.token
        expected = sorted({_display(parser, t) for t in error.expected})
        shown = ", ".join(expected[:12]) + (", ..." if len(expected) > 12 else "")
        shown_token = _display(parser, token.type)
        if not shown_token.startswith("'"):
            shown_token = f"{shown_token} '{token.value}'"
        message = f"unexpected {shown_token}; expected {shown}"
        end = token.end_column or column + 1
    else:
        lines = text.splitlines() or [""]
        line, column = len(lines), len(lines[-1]) + 1
        expected = sorted({_display(parser, t) for t in getattr(error, "expected", ())})
        message = "unexpected end of file" + (f"; expected {', '.join(expected[:12])}" if expected else "")
        end = column + 1
    return Finding(CODE_SYNTAX, Severity.ERROR, message, Span(file, line, column, line, end))


def _error_offset(error: lark.exceptions.UnexpectedInput) -> int | None:
    if isinstance(error, lark.exceptions.UnexpectedCharacters):
        return error.pos_in_stream
    if isinstance(error, lark.exceptions.UnexpectedToken) and error.token.type != "$END":
        return error.token.start_pos
    return None


def _blank_statement(text: str, offset: int) -> str | None:
    """Blank the statement holding `offset` (keeping newlines) so parsing can go on.

    Returns None when the error is outside any body (a header error: nothing sensible
    to skip) or when blanking would change nothing.
    """
    opening = text.rfind("{", 0, offset)
    if opening < 0:
        return None
    start = max(text.rfind(";", 0, offset), text.rfind("{", 0, offset), text.rfind("}", 0, offset)) + 1
    semicolon = text.find(";", offset)
    closing = text.find("}", offset)
    candidates = [p for p in (semicolon,) if p >= 0]
    if closing >= 0 and (not candidates or closing < candidates[0]):
        end = closing  # keep the closing brace
    elif candidates:
        end = candidates[0] + 1
    else:
        return None
    if end <= start:
        return None
    segment = text[start:end]
    blanked = re.sub(r"[^\r\n]", " ", segment)
    if blanked == segment:
        return None
    return text[:start] + blanked + text[end:]


def parse_text(text: str, file: str = "<string>") -> ParseResult:
    """Parse one NNEF document; on syntax errors, report up to MAX_SYNTAX_ERRORS of them.

    A text beyond the front end's limits (nesting, integer literals: pipeline/nnef/limits.py)
    gives NNEF-E022 findings with their locations instead of a recursion or conversion error.
    """
    try:
        return _parse_text(text, file)
    except (RecursionError, limits.LimitExceeded):
        found = limits.text_findings(text, file)
        return ParseResult(None, found or [Finding(limits.CODE, Severity.ERROR, "the text exceeds the parser's "
                                                   "nesting limits", Span(file, 1, 1))], text)


def _parse_text(text: str, file: str) -> ParseResult:
    with gc_paused():
        document = parse_flat(text, file)
    if document is not None:
        return ParseResult(document, [], text)
    parser = _parser()
    findings: list[Finding] = []
    current = text
    with _LOCK:
        _BUILDER.file = file
        for _ in range(MAX_SYNTAX_ERRORS):
            try:
                document = parser.parse(current)
            except lark.exceptions.UnexpectedInput as error:
                findings.append(_syntax_finding(parser, error, file, text))
                offset = _error_offset(error)
                retry = _blank_statement(current, offset) if offset is not None else None
                if retry is None:
                    break
                current = retry
                continue
            if findings:
                return ParseResult(None, findings, text)
            return ParseResult(document, [], text)
    return ParseResult(None, findings, text)


def parse_file(path: str | Path) -> ParseResult:
    """Parse the NNEF file at `path` (UTF-8); an unreadable file is a finding, not an exception."""
    text, problem = read_description(path)
    if problem is not None:
        return ParseResult(None, [problem], "")
    return parse_text(text, str(path))


def read_description(path: str | Path) -> tuple[str, Finding | None]:
    """The text of the NNEF file at `path`, or the NNEF-E003 finding saying why it cannot be read."""
    file = str(path)
    try:   # no link followed at the file itself, a regular file, bounded (pipeline/files/readguard.py)
        text = read_input(path, max_bytes=limits.MAX_TEXT_BYTES).decode("utf-8")
    except InputRefused as refused:
        reason = (f"{refused.size} bytes exceed the limit of {limits.MAX_TEXT_BYTES} (docs/nnef.md, Limits)"
                  if refused.kind == TOO_LARGE else refused.reason)
        return "", Finding("NNEF-E003", Severity.ERROR, f"cannot read file: {reason}", Span(file, 1, 1))
    except (OSError, UnicodeDecodeError) as error:
        return "", Finding("NNEF-E003", Severity.ERROR, f"cannot read file: {error}", Span(file, 1, 1))
    return text, None

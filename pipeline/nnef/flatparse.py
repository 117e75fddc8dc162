"""A fast path for flat NNEF: what exporters write, and what gets large.

The lark LALR parser (parser.py, grammar.lark) is the specification of the syntax. Its
cost is per grammar reduction, and every argument of a flat invocation climbs the whole
precedence chain of the expression grammar, so a 50,000-operation graph takes tens of
seconds. Flat documents (no fragment definitions, invocations whose arguments are
literals, identifiers, arrays and tuples) need none of that: this module tokenises them
with one regular expression and parses them by recursive descent into *exactly* the AST
the lark parser builds, spans included.

It gives up (returns None) on anything outside that subset, including every syntax
error, and the caller then runs the lark parser, which reports the error or handles the
compound construct. tests/nnef/test_nnef_flatparse.py checks that both parsers build equal
ASTs (spans compared) on the whole corpus and on randomly mutated documents.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from pipeline.diagnostics import Span
from pipeline.nnef import ast, limits

# Each match is (the whitespace and comments before a token, the token): re.split lists
# both in C, and their lengths give every offset (numpy cumulative sums), so no
# Python code runs per character and only a little per token. Whitespace is lark's WS
# set, so both parsers see the same tokens; the possessive `*+` keeps a run of trailing
# blanks (no token after them) from backtracking. The one-character punctuation that
# starts no other token is tried first (the commonest tokens). The last alternative
# catches any other character, so matches are contiguous; what is left at the end must
# be blanks only.
_TOKEN = re.compile(
    "([ \\t\\f\\r\\n]*+(?:#[^\\n\\r]*[ \\t\\f\\r\\n]*+)*+)"
    "([(),\\[\\]=;{}]|[A-Za-z_][A-Za-z0-9_]*"
    "|[0-9]+(?:\\.[0-9]*)?(?:[eE][+-]?[0-9]+)?|'[^'\\r\\n]*'|\"[^\"\\r\\n]*\""
    "|<[ \\t]*(?:integer|scalar|logical|string)[ \\t]*>|->|[^ \\t\\f\\r\\n])"
)
_TRAILING = re.compile("(?:[ \\t\\f\\r\\n]+|#[^\\n\\r]*)*+")
_KEYWORDS = frozenset({
    "version", "extension", "fragment", "graph", "graphitem", "tensor", "integer", "scalar",
    "logical", "string", "true", "false", "for", "in", "if", "else", "yield", "shape_of",
    "length_of", "range_of",
})

_VERSION = re.compile(r"([0-9]{1,9})\.([0-9]{1,9})")
_FRACTIONAL = re.compile(r"[0-9]+\.|[0-9]+[eE]")


# Kind of a token by its first character (a '-' is '-' or '->'); keywords are identifiers
# found in _KEYWORDS; a character starting no token has no kind.
_KIND: dict[str, str] = {c: "id" for c in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_"}
_KIND.update({c: "num" for c in "0123456789"})
_KIND.update({"'": "str", '"': "str", "<": "typ"})
_KIND.update({c: "punct" for c in "-=(),;[]{}"})


def _lines_and_columns(text: str, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """1-based line and column of each offset, lines counted by '\\n' as lark counts them."""
    if text.isascii():
        newlines = np.flatnonzero(np.frombuffer(text.encode("ascii"), dtype=np.uint8) == 10)
    else:
        newlines = np.array([m.start() for m in re.finditer("\n", text)], dtype=np.int64)
    index = np.searchsorted(newlines, offsets, side="left")
    line_starts = np.concatenate(([0], newlines + 1))
    offsets -= line_starts[index]
    offsets += 1
    index += 1
    return index, offsets


class _Kinds(dict):
    """The kind of each token text, remembered (up to a bound, for memory) as it is met:
    exporters repeat the same punctuation, numbers and names of operations."""

    def __missing__(self, text: str) -> str | None:
        kind = "kw" if text in _KEYWORDS else _KIND.get(text[0])
        if kind == "str" and len(text) < 2:
            kind = None  # a lone quote (the catch-all alternative): an unterminated string
        if len(self) < 262144:
            self[text] = kind
        return kind


_new_tuple = tuple.__new__

# The value and kind of each distinct number spelling: exporters repeat the same few
# (0, 1, 0.0, ...) hundreds of thousands of times.
_NUMBERS: dict[str, tuple[Any, str]] = {}


def _number_value(text: str) -> tuple[Any, str]:
    """(value, literal kind) of a number token, remembered in _NUMBERS (bounded)."""
    if _FRACTIONAL.match(text):
        known: tuple[Any, str] = (_float32(text), "scalar")
    else:
        known = (limits.integer(text), "integer")  # LimitExceeded is raised, never cached
    if len(_NUMBERS) < 65536:
        _NUMBERS[text] = known
    return known


class _GiveUp(Exception):
    """Not a flat document this fast path handles; the lark parser takes over."""


def _float32(text: str) -> float:
    with np.errstate(over="ignore"):
        return float(np.float32(float(text)))


def _tokenise(text: str) -> tuple[list[str], list[str | None], np.ndarray, str | None]:
    """(token texts, kinds, offsets, the blanks and comments after the last token) of
    `text`; kinds are None for a character no token starts with. The last is None when
    the text ends in a comment that holds more than blanks: `split` then searches on
    from inside the comment (no token follows it) and reads its characters as tokens."""
    # split, not findall: one flat list [before, gap, token, before, gap, token, ..., rest]
    # instead of a tuple per token (less memory, freed in one block)
    pieces = _TOKEN.split(text)
    texts = pieces[2::3]
    rest = pieces[-1]
    number = len(texts)
    starts = np.fromiter(map(len, pieces[1::3]), dtype=np.int32, count=number)  # gap lengths first
    del pieces
    # kinds looked up by text in C; the distinct texts (a few per statement) are
    # classified once, by _Kinds.__missing__
    kinds = list(map(_Kinds().__getitem__, texts))
    size = np.fromiter(map(len, texts), dtype=np.int32, count=number)
    starts += size
    np.cumsum(starts, out=starts)
    starts -= size  # now the offset of each token
    if number and int(starts[-1]) + len(texts[-1]) + len(rest) != len(text):
        return texts, kinds, starts, None  # characters were skipped: the search restarted in a comment
    return texts, kinds, starts, rest


class _FlatParser:
    def __init__(self, text: str, file: str) -> None:
        self.file = file
        texts, kinds, starts, rest = _tokenise(text)
        if rest is None or _TRAILING.fullmatch(rest) is None:  # contiguous matches: only blanks are left
            raise _GiveUp
        if None in kinds:
            raise _GiveUp  # a character no token starts with
        kinds.append("eof")
        texts.append("")
        lines, cols = _lines_and_columns(text, np.append(starts, len(text)))
        self.kinds, self.texts = kinds, texts
        self.lines, self.cols = lines.tolist(), cols.tolist()
        self.i = 0

    # ------------------------------------------------------------------ tokens

    def _span(self, first: int, last: int) -> Span:
        # tuple.__new__ directly: the named tuple's own __new__ is a Python-level function
        return _new_tuple(Span, (self.file, self.lines[first], self.cols[first], self.lines[last],
                                 self.cols[last] + len(self.texts[last])))

    def _expect(self, text: str) -> int:
        i = self.i
        if self.texts[i] != text or self.kinds[i] in ("str", "id"):
            raise _GiveUp
        self.i = i + 1
        return i

    def _identifier(self) -> int:
        i = self.i
        if self.kinds[i] != "id":
            raise _GiveUp
        self.i = i + 1
        return i

    def _name(self) -> ast.Name:
        i = self._identifier()
        return ast.Name(self.texts[i], self._span(i, i))

    # ------------------------------------------------------------------ document

    def document(self) -> ast.Document:
        self._expect("version")
        v = self.i
        if self.kinds[v] != "num" or not _FRACTIONAL.match(self.texts[v]):
            raise _GiveUp
        self.i += 1
        self._expect(";")
        version_match = _VERSION.fullmatch(self.texts[v])
        major, minor = (int(version_match.group(1)), int(version_match.group(2))) if version_match else (-1, -1)
        version = ast.Version(major, minor, self._span(v, v))
        extensions = []
        while self.texts[self.i] == "extension" and self.kinds[self.i] == "kw":
            first = self.i
            self.i += 1
            names = [self._name()]
            while self.texts[self.i] == ",":
                self.i += 1
                names.append(self._name())
            last = self._expect(";")
            extensions.append(ast.Extension(tuple(names), self._span(first, last)))
        graphs = []
        if self.texts[self.i] == "graph" and self.kinds[self.i] == "kw":
            graphs.append(self._graph(item=False))
        else:
            while self.texts[self.i] == "graphitem" and self.kinds[self.i] == "kw":
                graphs.append(self._graph(item=True))
            if not graphs:
                raise _GiveUp
        if self.kinds[self.i] != "eof":
            raise _GiveUp
        return ast.Document(version, tuple(extensions), (), tuple(graphs), file=self.file, flat=True)

    def _graph(self, item: bool) -> ast.GraphDef:
        """`graph[item] [ITEM] NAME ( params ) -> ( results ) { assignments }`."""
        first = self.i
        self.i += 1
        item_name = self._name() if item else None
        name = self._name()
        params = self._identifiers(item)
        self._expect("->")
        results = self._identifiers(item)
        self._expect("{")
        body = []
        while self.texts[self.i] != "}" or self.kinds[self.i] != "punct":
            body.append(self._assignment())
        last = self._expect("}")
        return ast.GraphDef(name, params, results, tuple(body), item_name, self._span(first, last))

    def _identifiers(self, item: bool) -> tuple[ast.Name, ...]:
        self._expect("(")
        bracketed = item and self.texts[self.i] == "[" and self.kinds[self.i] == "punct"
        if bracketed:
            self.i += 1
        names: list[ast.Name] = []
        closing = "]" if bracketed else ")"
        if not (item and self.texts[self.i] == closing and self.kinds[self.i] == "punct"):
            names.append(self._name())
            while self.texts[self.i] == ",":
                self.i += 1
                names.append(self._name())
        if bracketed:
            self._expect("]")
        self._expect(")")
        return tuple(names)

    # ------------------------------------------------------------------ statements

    def _assignment(self) -> ast.Assignment:
        first = self.i
        lhs = self._lvalue()
        if self.texts[self.i] == ",":
            items = [lhs]
            while self.texts[self.i] == ",":
                self.i += 1
                items.append(self._lvalue())
            lhs = ast.TupleExpr(tuple(items), Span(self.file, lhs.span.line, lhs.span.column,
                                                   items[-1].span.end_line, items[-1].span.end_column))
        self._expect("=")
        rhs = self._invocation()
        last = self._expect(";")
        return ast.Assignment(lhs, rhs, self._span(first, last))

    def _lvalue(self) -> ast.Expr:
        i = self.i
        kind, text = self.kinds[i], self.texts[i]
        if kind == "id":
            self.i = i + 1
            return ast.Identifier(text, self._span(i, i))
        if kind == "punct" and text in "[(":
            closing = "]" if text == "[" else ")"
            self.i = i + 1
            items = []
            if not (text == "[" and self.texts[self.i] == "]"):
                items.append(self._lvalue())
                while self.texts[self.i] == ",":
                    self.i += 1
                    items.append(self._lvalue())
            last = self._expect(closing)
            if text == "(":
                if len(items) < 2:
                    raise _GiveUp
                return ast.TupleExpr(tuple(items), self._span(i, last))
            return ast.ArrayExpr(tuple(items), self._span(i, last))
        raise _GiveUp

    def _invocation(self) -> ast.Invocation:
        first = self._identifier()
        type_arg = None
        if self.kinds[self.i] == "typ":
            type_arg = self.texts[self.i].strip("<> \t")
            self.i += 1
        self._expect("(")
        args = [self._argument()]
        while self.texts[self.i] == "," and self.kinds[self.i] == "punct":
            self.i += 1
            args.append(self._argument())
        last = self._expect(")")
        return ast.Invocation(ast.Name(self.texts[first], self._span(first, first)), type_arg, tuple(args),
                              self._span(first, last))

    def _argument(self) -> ast.Argument:
        i = self.i
        if self.kinds[i] == "id" and self.texts[i + 1] == "=" and self.kinds[i + 1] == "punct":
            name = ast.Name(self.texts[i], self._span(i, i))
            self.i = i + 2
            value = self._value()
            return ast.Argument(name, value, Span(self.file, name.span.line, name.span.column,
                                                  value.span.end_line, value.span.end_column))
        value = self._value()
        return ast.Argument(None, value, value.span)

    def _value(self) -> Any:
        i = self.i
        kinds, texts = self.kinds, self.texts
        kind, text = kinds[i], texts[i]
        if kind == "num":
            self.i = i + 1
            return self._number(i)
        if kind == "id":
            if texts[i + 1] == "(" or kinds[i + 1] == "typ":
                raise _GiveUp  # nested invocation: compound syntax
            self.i = i + 1
            return ast.Identifier(text, self._span(i, i))
        if kind == "str":
            self.i = i + 1
            return ast.Literal(text[1:-1], "string", self._span(i, i), text)
        if kind == "kw" and text in ("true", "false"):
            self.i = i + 1
            return ast.Literal(text == "true", "logical", self._span(i, i), text)
        if kind == "punct":
            if text == "-" and kinds[i + 1] == "num":
                self.i = i + 2
                return ast.Unary("-", self._number(i + 1), self._span(i, i + 1))
            if text == "[" or text == "(":
                self.i = i + 1
                items = []
                if text == "(" or texts[self.i] != "]":
                    items.append(self._value())
                    while texts[self.i] == "," and kinds[self.i] == "punct":
                        self.i += 1
                        items.append(self._value())
                if text == "[":
                    last = self._expect("]")
                    return ast.ArrayExpr(tuple(items), self._span(i, last))
                last = self._expect(")")
                if len(items) < 2:
                    raise _GiveUp  # a parenthesised expression
                return ast.TupleExpr(tuple(items), self._span(i, last))
        raise _GiveUp

    def _number(self, i: int) -> ast.Literal:
        text = self.texts[i]
        known = _NUMBERS.get(text)
        if known is None:
            known = _number_value(text)
        line, column = self.lines[i], self.cols[i]
        return ast.Literal(known[0], known[1], _new_tuple(Span, (self.file, line, column, line, column + len(text))),
                           text)


def parse_flat(text: str, file: str) -> ast.Document | None:
    """The AST of a flat document, or None when the lark parser must handle the text."""
    try:
        parser = _FlatParser(text, file)
        document = parser.document()
    except (_GiveUp, IndexError):
        return None
    return document

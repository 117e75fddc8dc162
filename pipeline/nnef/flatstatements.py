"""Whole statements read by one regular expression, for the streaming checker.

Tokenising a 50,000-operation graph costs a list entry, a kind and an offset per token
(about 25 per statement) and then Python code per token (issue 13). Most statements an
exporter writes have one simple form, `name = op<type>(args);` on one line, whose
arguments are numbers, identifiers, strings and arrays of numbers or of number pairs.
`statement_tokens` finds those with one `finditer` over the document and makes each a
single entry (kind "stmt", text: the assigned name, with its match object); only the
text between them (headers, other statements, the closing brace) is tokenised as before.

The expression is a sub-language of the tokeniser's: every token it reads ends where the
tokeniser's would (each is followed by a blank or a punctuation mark that cannot extend
it), and it allows no comments or line breaks inside a statement, so a statement entry
stands for exactly the tokens the tokeniser would have produced, on one line. A match is
taken only where the token path would start a statement: right after a ';' or '{' token
or another statement entry, with nothing but complete blanks and comments between (a
match inside a comment or a string never qualifies); any other match is tokenised with
the text around it, each piece of text once.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from pipeline.nnef.flatparse import _TRAILING, _GiveUp, _Kinds, _tokenise

_GAP = "[ \\t\\f\\r\\n]*+(?:#[^\\n\\r]*[ \\t\\f\\r\\n]*+)*+"  # the tokeniser's blanks and comments
_S = "[ \\t]*+"  # blanks inside a statement: no line break, no comment
_ID = "[A-Za-z_][A-Za-z0-9_]*+"
_NUM = "-?[0-9]++(?:\\.[0-9]*+)?+(?:[eE][+-]?[0-9]++)?+"
_STR = "'[^'\\r\\n]*+'|\"[^\"\\r\\n]*+\""
_ITEM = f"(?:{_NUM}|\\({_S}{_NUM}{_S},{_S}{_NUM}{_S}\\))"
_VALUE = f"(?:{_NUM}|{_ID}|{_STR}|\\[{_S}(?:{_ITEM}{_S}(?:,{_S}{_ITEM}{_S})*+)?\\])"
_NAMED = f"{_ID}{_S}={_S}{_VALUE}"
_POSITIONAL = f"{_VALUE}(?!{_S}=)"  # a name followed by '=' starts the named arguments
_TYPE = "<[ \\t]*(?:integer|scalar|logical|string)[ \\t]*>"

# groups: 1 gap, 2 target, 3 operation, 4 type argument, 5 positional arguments, 6 named
# arguments, 7 the closing ')'; 5 and 6 are each None when absent
STATEMENT = re.compile(
    f"({_GAP})({_ID}){_S}={_S}({_ID}){_S}({_TYPE})?{_S}\\({_S}"
    f"({_POSITIONAL}{_S}(?:,{_S}{_POSITIONAL}{_S})*+)?(?:(?(5),{_S})({_NAMED}{_S}(?:,{_S}{_NAMED}{_S})*+))?"
    f"(\\)){_S};"
)
# one argument of group 5 or 6: (name or '', value text)
ARGUMENT = re.compile(f"(?:({_ID}){_S}={_S})?({_VALUE})")
# one item of an array value: (first, second) of a pair, or ('', '', number)
ITEM = re.compile(f"\\({_S}({_NUM}){_S},{_S}({_NUM}){_S}\\)|({_NUM})")


def _open_comment(rest: str) -> bool:
    """True when the blanks and comments `rest` end inside a comment (no line break after
    its last '#'): the comment would run on into what follows."""
    return rest.rfind("#") > max(rest.rfind("\n"), rest.rfind("\r"))


def _line_end(text: str, at: int) -> int:
    """Offset of the first line break at or after `at` (the end of the text if none)."""
    ends = [end for end in (text.find("\n", at), text.find("\r", at)) if end >= 0]
    return min(ends) if ends else len(text)


def statement_tokens(text: str) -> tuple[list[str], list[Any], np.ndarray, dict[int, re.Match[str]]]:
    """Texts, kinds and offsets of the document's tokens, each matched statement one entry
    (kind "stmt", text its target, offset its target's), and the match of each such entry
    by index. Raises _GiveUp where the tokeniser finds a character no token starts with.

    The text before a match (a piece) is tokenised and kept when its tokens are certainly
    those the whole text's tokenisation has there: it ends in complete blanks and comments
    or in a punctuation mark (no token or comment runs on into the match). Otherwise the
    match may start inside a comment or a string (a lone quote is a character no token
    starts with), both of which end with their line: the piece is kept up to the start of
    that line (a line break is always between tokens), and matches before the line's end
    are skipped. A match whose piece does not end a statement is skipped too (its text
    goes with the next piece). Each character is thus tokenised once, or once more within
    its line."""
    kinds_of = _Kinds()
    texts: list[str] = []
    kinds: list[Any] = []
    chunks: list[Any] = []  # offsets: arrays for tokenised pieces, lists for statement entries
    entries: list[int] = []
    matches: dict[int, re.Match[str]] = {}

    def keep(piece_texts: list[str], piece_kinds: list[Any], piece_starts: np.ndarray, offset: int) -> None:
        nonlocal entries
        if entries:
            chunks.append(entries)
            entries = []
        texts.extend(piece_texts)
        kinds.extend(piece_kinds)
        piece_starts += offset
        chunks.append(piece_starts)

    pending = 0  # where the text not yet tokenised starts
    search = STATEMENT.search
    at = 0
    while True:
        match = search(text, at)
        if match is None:
            break
        start = match.start()
        at = match.end()  # no statement starts inside a match (its only ';' is its last character)
        if start > pending:
            piece = _tokenise(text[pending:start], kinds_of)
            piece_texts, piece_kinds, _, rest = piece
            if (rest is None or _open_comment(rest) or None in piece_kinds
                    or (not rest and piece_texts and piece_kinds[-1] != "punct")):
                line = max(text.rfind("\n", pending, start), text.rfind("\r", pending, start)) + 1
                if line > pending:  # the lines before are certainly tokenised alike
                    before = _tokenise(text[pending:line], kinds_of)
                    if before[3] is None or None in before[1]:
                        raise _GiveUp  # a character no token starts with (or a comment cut: impossible)
                    keep(before[0], before[1], before[2], pending)
                    pending = line
                at = _line_end(text, start + 1)  # past `start` in any case: the search moves on
                continue
            keep(piece_texts, piece_kinds, piece[2], pending)
            pending = start
        kind = kinds[-1] if kinds else None  # a statement starts after ';', '{' or a statement read whole
        if kind != "stmt" and (kind != "punct" or texts[-1] not in (";", "{")):
            continue
        matches[len(texts)] = match
        texts.append(match.group(2))
        kinds.append("stmt")
        entries.append(match.start(2))
        pending = match.end()
    piece_texts, piece_kinds, piece_starts, rest = _tokenise(text[pending:], kinds_of)
    if rest is None or _TRAILING.fullmatch(rest) is None:
        raise _GiveUp
    keep(piece_texts, piece_kinds, piece_starts, pending)
    if None in kinds:
        raise _GiveUp
    return texts, kinds, np.concatenate([np.asarray(c, dtype=np.int64) for c in chunks]), matches

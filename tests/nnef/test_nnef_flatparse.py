"""The flat fast path builds exactly the lark parser's AST, spans included.

The lark grammar is the specification; the fast path must never accept what it rejects
nor build anything different. Compared on the corpus and on randomly mutated texts.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.nnef.nnef_corpus import valid_cases
from pipeline.nnef import parser as lark_front
from pipeline.nnef.flatparse import parse_flat


def deep(node: Any) -> Any:
    """Structure with spans (AST equality ignores them; here they must match too)."""
    if dataclasses.is_dataclass(node):
        return (type(node).__name__,) + tuple((f.name, deep(getattr(node, f.name))) for f in dataclasses.fields(node)
                                              if f.name != "flat")
    if isinstance(node, (list, tuple)):
        return tuple(deep(x) for x in node)
    return node


def lark_parse(text: str) -> Any:
    lark_front._BUILDER.file = "f"
    try:
        return lark_front._parser().parse(text)
    except Exception:  # noqa: BLE001 - any lark error means "rejected"
        return None


def test_flat_corpus_takes_the_fast_path_and_matches() -> None:
    fast = 0
    for case in valid_cases():
        flat = parse_flat(case.text, "f")
        if flat is None:
            continue
        fast += 1
        assert deep(flat) == deep(lark_parse(case.text)), case.name
    assert fast >= 120  # every flat case (the compound ones fall back)


MUTATIONS = st.sampled_from([";", ",", "(", ")", "[", "]", "=", "-", "1", "1.5", "x", " ", "\n", "'a'", "<scalar>",
                             "graph", "->", "{", "}", "#c\n", "e5", "true"])


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=st.sampled_from([c for c in valid_cases() if parse_flat(c.text, "f") is not None]),
       position=st.floats(0, 1), cut=st.integers(0, 3), insert=MUTATIONS)
def test_mutated_texts_agree_with_lark(case: Any, position: float, cut: int, insert: str) -> None:
    text = case.text
    at = int(position * len(text))
    mutated = text[:at] + insert + text[at + cut:]
    flat = parse_flat(mutated, "f")
    if flat is None:
        return  # fell back to lark: nothing to compare
    reference = lark_parse(mutated)
    assert reference is not None, "the fast path accepted a text the grammar rejects"
    assert deep(flat) == deep(reference)

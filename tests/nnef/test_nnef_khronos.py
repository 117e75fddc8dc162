"""Our checker against the Khronos NNEF parser (PyPI `nnef`), which nobody here wrote.

On a generated corpus (one graph per standard operation, compound documents, invalid
variants) the accept/reject verdicts agree, and for accepted texts the graphs agree:
operations, attribute values (defaults filled in), inputs, outputs, inferred shapes.
Deliberate differences are listed in the corpus with their reason.
"""

from __future__ import annotations

import pytest

from tests.nnef.nnef_corpus import KHRONOS_LIMITATIONS, STRICTER_THAN_KHRONOS, invalid_cases, valid_cases
from tests.nnef.nnef_khronos import khronos_verdict, our_verdict, user_fragments
from pipeline.nnef.checker import check_text
from pipeline.nnef.catalogue import standard_catalogue


@pytest.mark.parametrize("case", valid_cases(), ids=lambda c: c.name)
def test_valid_descriptions_build_the_same_graph(case) -> None:
    theirs = khronos_verdict(case.text, user_fragments(case.text))
    ours = our_verdict(case.text)
    assert theirs.accepted, theirs.message
    assert ours.accepted, ours.message
    assert ours.graph == theirs.graph


def test_corpus_covers_every_standard_operation() -> None:
    invoked = {case.name for case in valid_cases()}
    standard = {name for name, sig in standard_catalogue().items() if sig.origin == "standard"}
    assert standard <= invoked, sorted(standard - invoked)
    assert len(standard) == 119


@pytest.mark.parametrize("name,text,code", invalid_cases(), ids=[c[0] for c in invalid_cases()])
def test_invalid_descriptions_are_rejected_by_both(name: str, text: str, code: str) -> None:
    theirs = khronos_verdict(text, user_fragments(text))
    assert not theirs.accepted, f"Khronos accepted {name}"
    codes = {f.code for f in check_text(text, "graph.nnef", profile="standard").findings if f.is_error}
    assert code in codes


@pytest.mark.parametrize("name,text,code", STRICTER_THAN_KHRONOS, ids=[c[0] for c in STRICTER_THAN_KHRONOS])
def test_deliberately_stricter_than_khronos(name: str, text: str, code: str) -> None:
    assert khronos_verdict(text, user_fragments(text)).accepted
    codes = {f.code for f in check_text(text, "graph.nnef", profile="standard").findings if f.is_error}
    assert code in codes


@pytest.mark.parametrize("name,text,message", KHRONOS_LIMITATIONS, ids=[c[0] for c in KHRONOS_LIMITATIONS])
def test_valid_nnef_the_khronos_parser_cannot_read(name: str, text: str, message: str) -> None:
    theirs = khronos_verdict(text, user_fragments(text))
    assert not theirs.accepted and message in theirs.message
    assert our_verdict(text).accepted

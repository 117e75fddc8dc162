"""The verdicts, counterexamples and net files of small passing and failing cases are those of before the speed-up.

tests/petri/golden_cases.py builds the cases (a deadlock, a missing producer, leftover
tokens, a wrong producer, a schedule and a trace out of order, depth 0, the paper
encoding) and the golden file was written by the implementation before issue 13's
rewrite of net construction and of the analyses' inner loops.
"""

from __future__ import annotations

import json

import pytest

from tests.petri import golden_cases

GOLDEN = json.loads(golden_cases.GOLDEN.read_text())


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_verification_is_unchanged(name: str) -> None:
    case = golden_cases._cases()[name]()
    assert golden_cases.verification_of(case) == GOLDEN[name]


def test_the_cases_include_each_kind_of_failure() -> None:
    codes = {o.get("code") for case in GOLDEN.values() for o in case["report"]["analyses"].values()}
    assert {"PETRI-E102", "PETRI-E103", "PETRI-E104", "PETRI-E112", "PETRI-E121", "PETRI-E131", "PETRI-E140",
            "PETRI-E141", "PETRI-E105"} <= codes

"""Fuzzing the checker: mutated valid files only ever produce findings, never exceptions."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.nnef.nnef_corpus import valid_cases
from pipeline.diagnostics import Finding
from pipeline.nnef.checker import check_text
from pipeline.nnef.findings import CODES

TOKENS = ["x", "y", "1", "-1", "0", "1.5", "'constant'", "'ignore'", "[", "]", "(", ")", ",", ";", "=", "+", "*",
          "relu", "conv", "true", "[]", "[(1, 1)]", "axes", "shape", "<scalar>", "<integer>", "#", "\n", " ",
          "graphitem", "fragment", "if", "else", "for", "in", "yield", "send_var", "get_var", "variablesync"]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=st.sampled_from(valid_cases()), edits=st.lists(
    st.tuples(st.floats(0, 1), st.integers(0, 6), st.sampled_from(TOKENS)), min_size=1, max_size=4))
def test_checker_only_reports_findings(case: Any, edits: list[tuple[float, int, str]]) -> None:
    text = case.text
    for position, cut, insert in edits:
        at = int(position * len(text))
        text = text[:at] + insert + text[at + cut:]
    for profile in ("certification", "standard"):
        report = check_text(text, "fuzz.nnef", profile=profile)
        for finding in report.findings:
            assert isinstance(finding, Finding) and finding.code in CODES
            assert finding.span is not None and finding.span.line >= 1

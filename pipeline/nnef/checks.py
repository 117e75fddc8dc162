"""The checks of the NNEF front end, and how findings become their verdicts.

Each check owns a set of finding codes; its verdict on a description is `fail` when one
of its codes is reported as an error (the reason names the first one with its location),
`pass` otherwise. Syntax errors stop everything after them, so when the text does not
parse the semantic checks are `not run`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from pipeline.diagnostics import Finding
from pipeline.ledger.checks import CheckResult, Verdict, register_check

STEP = "check"


@dataclass(frozen=True)
class FindingCheck:
    """A check whose verdict is decided by the findings of some codes."""

    check_id: str
    codes: frozenset[str]


def _codes(*ranges: tuple[int, int]) -> frozenset[str]:
    return frozenset(f"NNEF-E{n:03d}" for low, high in ranges for n in range(low, high + 1))


SYNTAX = FindingCheck("nnef.syntax", _codes((1, 4), (7, 7)))
SEMANTICS = FindingCheck("nnef.semantics", _codes((5, 6), (8, 21), (40, 42)))
EXPLICIT = FindingCheck("nnef.explicit", _codes((60, 62)))
TENSORS = FindingCheck("nnef.tensors", _codes((30, 34)))   # E033 labels, E034 non-finite data (issue 28)
MULTI_ITEM = FindingCheck("nnef.multiitem", _codes((70, 80)))

register_check(SYNTAX.check_id, "The description parses with the NNEF 1.0.5 grammar (+ multi-item extension)",
               STEP, ["HLR-FMT-001", "LLR-FMT-002"],
               "Our lark LALR grammar of NNEF 1.0.5; every syntax error located by file, line and column.")
register_check(SEMANTICS.check_id, "The description is statically well formed (identifiers, SSA, signatures, types, shapes)",
               STEP, ["HLR-FMT-002", "LLR-FMT-003", "LLR-FMT-004"],
               "All findings of the semantic checker: undeclared or reassigned identifiers, unknown operations, "
               "argument names, order and types, enumerations, shape rules.")
register_check(EXPLICIT.check_id, "Every operation attribute is written explicitly",
               STEP, ["HLR-FMT-003", "LLR-FMT-001"],
               "The certification profile's explicitness rule: no parameter left to its default, no empty padding, "
               "stride or dilation, no implicit element type.")
register_check(TENSORS.check_id, "Every variable's tensor file exists and matches its declaration",
               STEP, ["HLR-FMT-004", "LLR-FMT-006"],
               "Header fields, data length, shape and item type of each <label>.dat, its label inside the "
               "folder, its data finite (no NaN, no infinity).")
register_check(MULTI_ITEM.check_id, "Items exchange values only through matching send_var/get_var",
               "split", ["HLR-SPL-002", "LLR-FMT-005"],
               "Cross-item rules of the multi-item extension over all graphitems of a split.")

ALL = (SYNTAX, SEMANTICS, EXPLICIT, TENSORS, MULTI_ITEM)


def verdicts(findings: Iterable[Finding], subject: str, checks: Iterable[FindingCheck],
             read: list[str], written: list[str], measured: dict[str, object] | None = None) -> list[CheckResult]:
    """One result per check from the findings of a checker run."""
    findings = list(findings)
    syntax_failed = any(f.is_error and f.code in SYNTAX.codes for f in findings)
    results = []
    for check in checks:
        errors = [f for f in findings if f.is_error and f.code in check.codes]
        if errors:
            first = errors[0]
            where = f"{first.span}: " if first.span else ""
            more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
            verdict, reason = Verdict.FAIL, f"{where}{first.code}: {first.message}{more}"
        elif syntax_failed and check is not SYNTAX:
            verdict, reason = Verdict.NOT_RUN, "the description has syntax errors; its semantics were not checked"
        else:
            verdict, reason = Verdict.PASS, ""
        values = {"errors": len(errors), **(measured or {})}
        results.append(CheckResult(check.check_id, subject, verdict, reason, values, list(read), list(written)))
    return results

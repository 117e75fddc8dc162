"""Reading what the steps left: check results per model and step, as verdict outcomes.

A step that produced no `checks.json` for a model did not verify anything: each of its
registered checks becomes `not run` with the reason "no results produced", never `pass`.
Several results of one check on one model (one per item or file) aggregate to one outcome:
`fail` if any failed, else `not run` if any did not run, else `emulated` if any was
emulated, else `pass` if any passed, else `n/a` (the check applies to none of its subjects:
a result that does not apply never lowers or raises the others).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from pipeline.diagnostics import Finding, Severity, Span
from pipeline.ledger.checks import CheckResult, CheckSpec, Verdict
from pipeline.ledger.hashing import relative_posix
from pipeline.project.layout import STEPS, checks_path
from pipeline.files.schema import validate
from pipeline.evidence.paths import package_check_path  # noqa: F401 (re-exported)

E_RESULTS_INVALID = "EVID-E022"

# Worst first: the aggregate verdict of several results is the first present in this order.
VERDICT_ORDER: tuple[Verdict, ...] = (Verdict.FAIL, Verdict.NOT_RUN, Verdict.EMULATED, Verdict.PASS,
                                       Verdict.NOT_APPLICABLE)
MAX_REASON = 600


@dataclass
class StoredResult:
    """A result as written, with the requirement IDs it recorded when it was produced."""

    result: CheckResult
    recorded_requirements: tuple[str, ...]
    source: str


@dataclass
class Outcome:
    """One check on one model: aggregate verdict, reason, and the results behind it."""

    model: str
    check_id: str
    step: str
    verdict: Verdict
    reason: str
    results: list[StoredResult] = field(default_factory=list)
    source: str = ""

    @property
    def artifacts_read(self) -> list[str]:
        return sorted({p for r in self.results for p in r.result.read})

    @property
    def artifacts_written(self) -> list[str]:
        return sorted({p for r in self.results for p in r.result.written})

    def to_json(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "check_id": self.check_id,
            "step": self.step,
            "verdict": self.verdict.value,
            "reason": self.reason,
            "source": self.source,
            "results": [
                {
                    "subject": r.result.subject,
                    "verdict": r.result.verdict.value,
                    "reason": r.result.reason,
                    "measured": r.result.measured,
                    "read": sorted(r.result.read),
                    "written": sorted(r.result.written),
                    "recorded_requirements": list(r.recorded_requirements),
                    "obtained": r.result.obtained.to_json() if r.result.obtained else None,
                }
                for r in self.results
            ],
        }


def aggregate(model: str, check_id: str, step: str, results: list[StoredResult], source: str) -> Outcome:
    """The outcome of several results of one check (see module docstring)."""
    verdicts = {r.result.verdict for r in results}
    verdict = next(v for v in VERDICT_ORDER if v in verdicts)
    reasons = [f"{r.result.subject}: {r.result.reason}" if len(results) > 1 else r.result.reason for r in results if r.result.verdict is verdict and r.result.reason]
    reason = "; ".join(reasons)
    if len(reason) > MAX_REASON:
        reason = reason[: MAX_REASON - 3] + "..."
    return Outcome(model, check_id, step, verdict, reason, sorted(results, key=lambda r: r.result.subject), source)


def read_results_file(path: Path, root: Path) -> tuple[list[StoredResult] | None, list[Finding]]:
    """Parse one checks.json (checks-1.schema.json); a bad file or a bad item is a finding, never an exception."""
    rel = relative_posix(path, root)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return None, [Finding(E_RESULTS_INVALID, Severity.ERROR, f"unreadable check results: {exc}", Span(rel, 1, 1))]
    problems = validate(data, "checks-1", E_RESULTS_INVALID)
    bad_items = {int(m.group(1)) for p in problems if (m := _ITEM.match(p.path))}
    findings = [Finding(E_RESULTS_INVALID, Severity.ERROR, f"{p.path}: {p.message}" if p.path else p.message,
                        Span(rel, 1, 1)) for p in problems]
    if any(not _ITEM.match(p.path) for p in problems):
        return None, findings
    stored: list[StoredResult] = []
    for index, item in enumerate(data["results"]):
        if index in bad_items:
            continue
        try:  # the schema says what CheckResult requires; this keeps "never an exception" if they drift apart
            stored.append(StoredResult(CheckResult.from_json(item), tuple(item.get("requirements", [])), rel))
        except (KeyError, ValueError, TypeError) as exc:
            findings.append(Finding(E_RESULTS_INVALID, Severity.ERROR, f"results[{index}]: invalid result: {exc}",
                                    Span(rel, 1, 1)))
    return stored, findings


_ITEM = re.compile(r"^results\[([0-9]+)\]")


@dataclass
class ModelResults:
    """Every outcome of one model, plus results of checks the registry does not know."""

    model: str
    outcomes: dict[str, Outcome] = field(default_factory=dict)
    unregistered: dict[str, Outcome] = field(default_factory=dict)
    steps_present: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)


def collect_model(
    model: str,
    specs: Mapping[str, CheckSpec],
    root: str | Path = ".",
    extra: Iterable[StoredResult] = (),
) -> ModelResults:
    """Outcomes of every registered check for `model` from artifacts/<model>/*/checks.json.

    `extra` adds results produced outside the steps (the evidence builder's own checks).
    """
    base = Path(root)
    collected = ModelResults(model)
    by_check: dict[str, list[StoredResult]] = {}
    sources: dict[str, str] = {}
    for step in STEPS:
        path = checks_path(model, step, base)
        if not path.is_file():
            continue
        stored, findings = read_results_file(path, base)
        collected.findings.extend(findings)
        if stored is None:
            continue
        collected.steps_present.append(step)
        for item in stored:
            by_check.setdefault(item.result.check_id, []).append(item)
            sources[item.result.check_id] = item.source
    for item in extra:
        by_check.setdefault(item.result.check_id, []).append(item)
        sources[item.result.check_id] = item.source
    for check_id, spec in specs.items():
        results = by_check.get(check_id)
        if results:
            collected.outcomes[check_id] = aggregate(model, check_id, spec.step, results, sources[check_id])
            continue
        if spec.step in STEPS:
            rel = relative_posix(checks_path(model, spec.step, base), base)
            if spec.step in collected.steps_present:
                reason = f"no result for this check in {rel}"
            else:
                reason = f"no results produced ({rel} missing or unreadable)"
        else:
            reason = "no results produced"
        collected.outcomes[check_id] = Outcome(model, check_id, spec.step, Verdict.NOT_RUN, reason)
    for check_id in sorted(set(by_check) - set(specs)):
        collected.unregistered[check_id] = aggregate(model, check_id, "?", by_check[check_id], sources[check_id])
    return collected

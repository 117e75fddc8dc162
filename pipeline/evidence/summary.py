"""The end-of-run summary: model x step verdicts, what is still owed, and the findings, on a terminal.

Works from reports/trace.json (the document `TraceMatrix.to_json` writes), so `doit verify`
can print it in milliseconds without re-hashing anything. Whether the run passes is decided
here too: it fails when the trace has any error finding (a failed, unverified or unchecked
requirement, a stale link, a changed artifact, a refused model folder, ...). Requirements
open for the target (verified on the target, not verifiable here) are listed; they are
errors only in the `strict` mode (pipeline/evidence/matrix.py).

The text fits a terminal: one line per requirement that is not verified (its ID, what it
still owes, on how many models, which checks, why in brief), a legend under the table that
says what a cell counts (checks: one per check and model, as the doit progress lines count
them), no line longer than `MAX_LINE` and nothing cut inside a word; every finding printed is
at most `MAX_FINDING` characters, with its fix on the line under it. The counts are the ones
the HTML report shows (`finding_counts`).
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any, Iterable, Mapping

from pipeline.project.layout import STEPS
from pipeline.evidence.runsummary import summary_lines as run_rule_lines
from pipeline.project.oneline import MAX_LINE, shorten  # noqa: F401 (re-exported)

COLUMNS: tuple[str, ...] = STEPS + ("evidence",)
ORDER = ("fail", "not run", "emulated", "pass", "n/a")
MAX_FINDING = 200       # a finding's line (location, code, message), and its fix's
WHERE_ORDER = ("target", "host", "emulation")
REPORT = "reports/trace-matrix.html"
# The step whose deployments run (no checks of its own: compare judges what it produced).
RUN_STEP = "execute"

LEGEND = (
    "Cells count checks: one per check and model, its verdict the worst over the check's deployments and items",
    "(as the progress lines count). pass; emulated (on an emulator, never a pass); not run (could not run here,",
    "the report says why); fail; n/a (does not apply to the model: counted apart, never coverage). execute: the",
    "deployments run, one each, by where they ran (host, emulation, target), judged under compare. step failed:",
    "see the errors. -: no results.",
)


def _counts(values: Iterable[str], order: tuple[str, ...]) -> str:
    found = Counter(values)
    return " ".join(f"{v} {found[v]}" for v in order if found[v])


def _cell(verdicts: list[str]) -> str:
    """`pass 3`, or the counts of every verdict present, worst first."""
    return _counts(verdicts, ORDER) if verdicts else "-"


def deployment_places(document: Mapping[str, Any]) -> dict[str, dict[str, str]]:
    """model -> deployment subject -> where it ran (target, emulation or host), from the compare results.

    A deployment with any result obtained by emulation ran (in part) on an emulator; one with a
    result obtained on the target ran there; otherwise on the host that ran the pipeline.
    """
    places: dict[str, dict[str, set[str]]] = {}
    for outcome in document.get("outcomes", []):
        if outcome.get("step") != "compare":
            continue
        for result in outcome.get("results", []):
            # a deployment is a subject `<model>/<deployment>`; a model-level result (n/a, a check over the
            # model) names no deployment and is not one
            if not str(result.get("subject", "")).startswith(f"{outcome['model']}/"):
                continue
            if result.get("verdict") == "n/a":
                continue
            obtained = result.get("obtained") or {}
            where = obtained.get("where") or ("emulation" if result.get("verdict") == "emulated" else "host")
            places.setdefault(outcome["model"], {}).setdefault(result.get("subject", ""), set()).add(where)
    def place(found: set[str]) -> str:
        return "emulation" if "emulation" in found else "target" if "target" in found else "host"

    return {model: {subject: place(found) for subject, found in subjects.items()} for model, subjects in places.items()}


def step_table(document: Mapping[str, Any]) -> list[list[str]]:
    """Rows: header, then one row per model with one cell per step."""
    by_cell: dict[tuple[str, str], list[str]] = {}
    for outcome in document.get("outcomes", []):
        by_cell.setdefault((outcome["model"], outcome["step"]), []).append(outcome["verdict"])
    for outcome in document.get("unregistered", []):
        by_cell.setdefault((outcome["model"], "?"), []).append("fail")
    places = deployment_places(document)
    states = document.get("step_states", {})
    steps = list(COLUMNS) + (["?"] if document.get("unregistered") else [])
    rows = [["model"] + steps]
    for model in document.get("models", []):
        row = [model]
        for step in steps:
            state = states.get(model, {}).get(step, "")
            if state == "failed":
                row.append("step failed")
            elif step == RUN_STEP and not by_cell.get((model, step)):
                ran = places.get(model, {})
                row.append(_counts(ran.values(), WHERE_ORDER) if ran else ("ran" if state == "ran" else "-"))
            else:
                row.append(_cell(by_cell.get((model, step), [])))
        rows.append(row)
    return rows


def format_table(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def error_count(document: Mapping[str, Any]) -> int:
    return sum(1 for f in document.get("findings", []) if f.get("severity") == "error")


def finding_counts(severities: Iterable[str]) -> dict[str, int]:
    """errors, warnings and notes: the same three counts on the console and in the HTML report."""
    found = Counter(severities)
    return {"errors": found["error"], "warnings": found["warning"], "notes": found["note"]}


def finding_counts_text(counts: Mapping[str, int]) -> str:
    return f"{counts['errors']} errors, {counts['warnings']} warnings, {counts['notes']} notes"


# What a requirement that is not verified still owes, by its status (matrix.STATUS_ORDER).
OWES = {
    "failed": "a fix: it fails",
    "no check": "a check that verifies it",
    "not verified": "a passing result",
    "partially verified": "a pass on every model",
    "verified only on host or by emulation": "a pass on the target",
}


def owed(requirement: Mapping[str, Any]) -> str:
    """What `requirement` still owes (a target requirement owes a result on its platform)."""
    if requirement.get("open_for_target"):
        return "a pass on the target"
    return OWES.get(requirement["status"], requirement["status"])


def _model_counts(per_model: Mapping[str, str]) -> str:
    """`emulated 4, not run 1 of 5` (the models where the requirement is not passed)."""
    found = Counter(v for v in per_model.values() if v != "pass")
    order = ("fail", "no check", "not run", "emulated", "partial", "pass off target")
    judged = sum(1 for v in per_model.values() if v != "n/a")
    text = ", ".join(f"{status} {found[status]}" for status in order if found[status])
    na = f" (n/a {found['n/a']})" if found["n/a"] else ""
    return (f"{text} of {judged}" if text else f"none of {judged}") + na


def owed_rows(document: Mapping[str, Any]) -> tuple[list[list[str]], list[str]]:
    """One row per requirement judged on its own checks that is not verified: its ID, what it still owes, on
    how many models, the checks that are not `pass` on some model, why in brief, its anchor in the report;
    and the parents judged through them."""
    rows, parents = [], []
    short = {o["check_id"] for o in document.get("outcomes", []) if o.get("verdict") not in ("pass", "n/a")}
    for req in document.get("requirements", []):
        if req.get("status") in ("verified", "not applicable"):
            continue
        if req.get("via_children"):
            parents.append(req["id"])
            continue
        # the checks that owe something (a verdict other than pass on some model); all of them when none is known
        owing = [c for c in req.get("checks", []) if c in short] or req.get("checks", [])
        checks = ", ".join(owing) or "none"
        rows.append([req["id"], owed(req), _model_counts(req.get("per_model", {})), checks, req.get("why", ""),
                     f"#req-{req['id']}"])
    return rows, parents


def _aligned(rows: list[list[str]], indent: str = "  ") -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return [shorten(indent + "  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip()) for row in rows]


_INSTALL = re.compile(r"apt-get install ([a-z0-9][a-z0-9 .+-]*[a-z0-9+])")


def missing_packages(document: Mapping[str, Any]) -> list[str]:
    """The Debian packages whose absence made checks `not run` here (their reasons name them)."""
    found: set[str] = set()
    for outcome in document.get("outcomes", []):
        for result in outcome.get("results", []):
            if result.get("verdict") == "not run":
                for match in _INSTALL.finditer(str(result.get("reason", ""))):
                    found.update(match.group(1).split())
    return sorted(found)


def finding_lines(finding: Mapping[str, Any]) -> list[str]:
    """A finding as the console shows it: `  file:line: CODE: message`, then `    fix: ...` when it says one;
    each line at most MAX_FINDING characters (the full text is in trace.json and on the model's page)."""
    span = finding.get("span")
    where = f"{span['file']}:{span['line']}: " if span else ""
    lines = [shorten(f"  {where}{finding['code']}: {finding['message']}", MAX_FINDING)]
    if finding.get("fix"):
        lines.append(shorten(f"    fix: {finding['fix']}", MAX_FINDING))
    return lines


def summary_text(document: Mapping[str, Any], max_findings: int = 20) -> str:
    """What `doit verify` prints."""
    cov = document["coverage"]
    by = cov["by_status"]
    models = document.get("models", [])
    refused = document.get("refused", [])
    head = f"Models: {', '.join(models) if models else 'none under models/'}"
    if refused:
        head += f"; refused: {', '.join(r['model'] for r in refused)} (see the errors below)"
    lines = [shorten(head), f"Mode: {document.get('mode', 'development')}", ""]
    if models:
        lines += [format_table(step_table(document)), *LEGEND, ""]
    levels = sorted(cov.get("by_level", {}).items(),
                    key=lambda kv: ("SYS", "HLR", "LLR").index(kv[0]) if kv[0] in ("SYS", "HLR", "LLR") else 9)
    per_level = ", ".join(f"{level} {counts['verified']}/{sum(counts.values())}" for level, counts in levels)
    lines += [f"Requirements: {cov['total']} total: {by['verified']} verified on their platform, "
              f"{by.get('verified only on host or by emulation', 0)} only on host or by emulation, "
              f"{by['partially verified']} partially verified,",
              f"  {by['failed']} failed, {by['not verified']} not verified, {by['no check']} with no check"
              + (f" ({per_level} verified)" if per_level else "")
              + (f"; {by.get('not applicable', 0)} apply to no model (n/a, counted apart)"
                 if by.get("not applicable") else "")]
    rows, parents = owed_rows(document)
    if rows:
        open_count = sum(1 for r in document.get("requirements", []) if r.get("open_for_target"))
        lines += ["", f"Not verified: {len(rows)} requirements, {open_count} of them open for the target (`doit verify "
                      f"strict=1` on the target requires them); details: {REPORT}#req-<ID>"]
        lines += _aligned([["requirement", "still owes", "models", "checks short of pass", "why", "report"]] + rows)
        if parents:
            lines.append(shorten(f"  and through them: {', '.join(parents)}"))
    packages = missing_packages(document)
    if packages:
        lines += ["", shorten(f"Not installed here: {' '.join(packages)}; the checks that need them say `not run` (the "
                              "host's verdicts stand). Install them: `sudo apt-get install "
                              f"{' '.join(packages)}` or `bash tools/setup verify` (docs/setup.md)")]
    findings = document.get("findings", [])
    lines += run_rule_lines(document)   # models that did not run, excluded models, the baseline (runverdict.py)
    counts = finding_counts(f.get("severity", "") for f in findings)
    errors = [f for f in findings if f.get("severity") == "error"]
    lines += ["", f"Findings: {finding_counts_text(counts)} (details: {REPORT}#findings)"]
    for finding in errors[:max_findings]:
        lines += finding_lines(finding)
    if len(errors) > max_findings:
        lines.append(f"  ... and {len(errors) - max_findings} more errors")
    lines += ["", "VERIFY FAILED" if errors else "VERIFY PASSED"]
    return "\n".join(lines)

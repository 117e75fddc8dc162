"""The end-of-run summary: model x step verdicts and requirement coverage figures.

Works from reports/trace.json (the document `TraceMatrix.to_json` writes), so `doit verify`
can print it in milliseconds without re-hashing anything. Whether the run passes is decided
here too: it fails when the trace has any error finding (a failed, unverified or unchecked
requirement, a stale link, a changed artifact, ...). Requirements open for the target
(verified on the target, not verifiable here) are listed; they are errors only in the
`strict` mode (pipeline/evidence/matrix.py).
"""

from __future__ import annotations

from typing import Any, Mapping

from pipeline.layout import STEPS
from pipeline.evidence.runsummary import summary_lines as run_rule_lines

COLUMNS: tuple[str, ...] = STEPS + ("evidence",)
ORDER = ("fail", "not run", "emulated", "pass")


def _cell(verdicts: list[str]) -> str:
    """`pass 3`, or the worst verdict with the counts of the non-passing ones."""
    if not verdicts:
        return "-"
    counts = {v: verdicts.count(v) for v in ORDER if v in verdicts}
    if list(counts) == ["pass"]:
        return f"pass {counts['pass']}"
    return " ".join(f"{v} {n}" for v, n in counts.items())


def step_table(document: Mapping[str, Any]) -> list[list[str]]:
    """Rows: header, then one row per model with one cell per step."""
    by_cell: dict[tuple[str, str], list[str]] = {}
    for outcome in document.get("outcomes", []):
        by_cell.setdefault((outcome["model"], outcome["step"]), []).append(outcome["verdict"])
    for outcome in document.get("unregistered", []):
        by_cell.setdefault((outcome["model"], "?"), []).append("fail")
    steps = list(COLUMNS) + (["?"] if document.get("unregistered") else [])
    rows = [["model"] + steps]
    for model in document.get("models", []):
        rows.append([model] + [_cell(by_cell.get((model, step), [])) for step in steps])
    return rows


def format_table(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def error_count(document: Mapping[str, Any]) -> int:
    return sum(1 for f in document.get("findings", []) if f.get("severity") == "error")


def summary_text(document: Mapping[str, Any], max_findings: int = 20) -> str:
    """What `doit verify` prints."""
    cov = document["coverage"]
    by = cov["by_status"]
    models = document.get("models", [])
    lines = [f"Models: {', '.join(models) if models else 'none under models/'}",
             f"Mode: {document.get('mode', 'development')}", ""]
    if models:
        lines += [format_table(step_table(document)), ""]
    lines.append(
        f"Requirements: {cov['total']} total; {by['verified']} verified on their platform, {by.get('verified only on host or by emulation', 0)} verified only on host or by "
        f"emulation, {by['partially verified']} partially verified, {by['failed']} failed, "
        f"{by['not verified']} not verified, {by['no check']} with no check"
    )
    for level, counts in sorted(cov.get("by_level", {}).items(), key=lambda kv: ("SYS", "HLR", "LLR").index(kv[0]) if kv[0] in ("SYS", "HLR", "LLR") else 9):
        total = sum(counts.values())
        lines.append(f"  {level}: {counts['verified']}/{total} verified")
    findings = document.get("findings", [])
    open_notes = [f for f in findings if f["code"] == "EVID-E026" and f["severity"] != "error"]
    if open_notes:
        lines += ["", f"Open for the target ({len(open_notes)} requirements verified on the target platform, "
                      "not here; `doit verify strict=1` on the target fails until they pass there):"]
        lines += [f"  {f['message']}" for f in open_notes]
    lines += run_rule_lines(document)   # models that did not run, excluded models, the baseline (runverdict.py)
    errors = [f for f in findings if f["severity"] == "error"]
    warnings = sum(1 for f in findings if f["severity"] == "warning")
    lines += ["", f"Findings: {len(errors)} errors, {warnings} warnings (details: reports/trace-matrix.html)"]
    for finding in errors[:max_findings]:
        span = finding.get("span")
        where = f"{span['file']}:{span['line']}: " if span else ""
        lines.append(f"  {where}{finding['code']}: {finding['message']}")
    if len(errors) > max_findings:
        lines.append(f"  ... and {len(errors) - max_findings} more errors")
    lines += ["", "VERIFY FAILED" if errors else "VERIFY PASSED"]
    return "\n".join(lines)

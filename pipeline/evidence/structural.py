"""The structural coverage section of a model's page: what execute.coverage measured, per deployment and file.

The verdicts table shows the check's verdict and reason; a reviewer of Table A-7 evidence needs the
figures themselves: the lines executed and the branch arcs taken in each generated file, the runtime
and the harness, and every runtime line left unexecuted with the reviewed reason that allows it
(pipeline/execute/uncovered.json). They come from the results' `measured` (checks.json), nothing else.
"""

from __future__ import annotations

from html import escape

from pipeline.evidence.html_parts import cell, table, verdict
from pipeline.evidence.matrix import TraceMatrix

COVERAGE_CHECK = "execute.coverage"     # pipeline/execute/coverage.py
ROLES = ("generated", "proxy", "runtime", "harness")     # pipeline/execute/coverage.py role(); any other last


def _rank(role: object) -> int:
    """A file's place by its role: generated code first; a role this page does not know last, not an error."""
    return ROLES.index(role) if role in ROLES else len(ROLES)


def _figure(done: int, total: int) -> str:
    return f"{done}/{total} ({100.0 * done / total:.1f} %)" if total else "none"


def structural_section(matrix: TraceMatrix, model: str) -> str:
    """One row per measured file of every deployment; the listed unexecuted lines with their reasons below."""
    outcome = matrix.outcomes.get((model, COVERAGE_CHECK))
    results = [stored.result for stored in (outcome.results or [])] if outcome is not None else []
    rows, reasons = [], []
    for result in sorted(results, key=lambda r: r.subject):
        files = result.measured.get("files") or {}
        if not files:
            rows.append("<tr>" + cell(result.subject) + cell(verdict(result.verdict.value), raw=True)
                        + cell(result.reason or "nothing measured") + cell("") + cell("") + cell("") + cell("") + "</tr>")
            continue
        for path, figures in sorted(files.items(), key=lambda f: (_rank(f[1].get("role")), f[0])):
            rows.append("<tr>" + cell(result.subject) + cell(verdict(result.verdict.value), raw=True)
                        + cell(f"<code>{escape(path)}</code>", path, raw=True) + cell(str(figures.get("role", "")))
                        + cell(_figure(figures.get("lines_executed", 0), figures.get("lines", 0)),
                               figures.get("line_percent", 0))
                        + cell(_figure(figures.get("branches_taken", 0), figures.get("branches", 0)),
                               figures.get("branch_percent", 0))
                        + cell(str(len(figures.get("unexecuted_lines", [])))) + "</tr>")
        for key, listed in sorted((result.measured.get("listed") or {}).items()):
            reasons.append("<tr>" + cell(result.subject) + cell(f"<code>{escape(key)}</code>", key, raw=True)
                           + cell(", ".join(listed.get("lines", []))) + cell(str(listed.get("reason", ""))) + "</tr>")
    if not rows:
        return "<p>No structural coverage was measured for this model (execute.coverage has no result).</p>"
    intro = ('<p class="small">gcov on the coverage build (the qualified flags plus --coverage), run on the '
             "validation and the robustness vectors. Every generated line must run; a runtime or harness line may stay "
             "unexecuted only with a reviewed reason (listed below). Branches are reported, not judged: the generated "
             "code decides through branch-free masks, whose conditions unit tests exercise one by one "
             "(docs/execute.md \"Coverage\").</p>")
    listed = (table("coverage-listed-table", ["Subject", "Entry (file:function: line)", "Lines", "Reason"], reasons,
                    filterable=True) if reasons else "<p>No unexecuted line needed a reason.</p>")
    return (intro + table("coverage-table", ["Subject", "Verdict", "File", "Role", "Lines executed", "Branch arcs taken",
                                             "Unexecuted lines"], rows, filterable=True)
            + "<h3>Unexecuted runtime and harness lines, with their reviewed reasons</h3>" + listed)

"""The trace matrix as CSV (for spreadsheets and scripts) and Markdown (for review diffs).

CSV: one row per (requirement, check, model); a requirement without checks gets one row with
empty check columns, so every requirement appears. Each row says where its verdict was
obtained (`obtained`: host, emulation, target; `obtained_detail`: the machine or emulator)
and lists its artifacts as `path@sha256:<digest>`, a folder as `path/@listing-sha256:<digest>`
(pipeline.evidence.matrix.listing_digest). Markdown: the index's sections, then the verdicts
with where they were obtained. Neither holds a timestamp.
"""

from __future__ import annotations

import csv
import io
from typing import Sequence

from pipeline.evidence.collect import Outcome
from pipeline.evidence.matrix import TraceMatrix

CSV_COLUMNS = (
    "requirement_id",
    "level",
    "requirement_title",
    "requirement_status",
    "requirement_fingerprint",
    "parents",
    "check_id",
    "step",
    "model",
    "verdict",
    "obtained",
    "obtained_detail",
    "reason",
    "stale_link",
    "artifacts",
)


def artifact_entry(path: str, matrix: TraceMatrix) -> str:
    """`path@sha256:<digest>`; a folder `path/@listing-sha256:<digest>`; `missing` only for what does not exist."""
    info = matrix.artifacts.get(path)
    if info is not None and info.kind == "folder":
        return f"{path.rstrip('/')}/@listing-sha256:{info.sha256}"
    return f"{path}@sha256:{info.sha256 if info and info.sha256 else 'missing'}"


def obtained(outcome: Outcome) -> tuple[str, str]:
    """Where the results behind `outcome` were obtained: (host/emulation/target, the labels), each distinct and sorted."""
    places = sorted({r.result.obtained.where.value for r in outcome.results if r.result.obtained})
    labels = sorted({r.result.obtained.label() for r in outcome.results if r.result.obtained})
    return " ".join(places), "; ".join(labels)


# A cell a spreadsheet would run as a formula (OWASP "CSV Injection"): one starting with = + - @, a
# tab or a carriage return. Reasons come from shards and models, so every cell is neutralised with a
# leading ' (shown as text, the rest of the cell unchanged).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: object) -> str:
    """`value` as a CSV cell no spreadsheet evaluates (FORMULA_STARTS)."""
    text = str(value)
    return "'" + text if text.startswith(FORMULA_STARTS) else text


class _Cells:
    """A csv writer whose every cell goes through csv_cell."""

    def __init__(self, out: io.StringIO) -> None:
        self.writer = csv.writer(out, lineterminator="\n")

    def writerow(self, row: Sequence[object]) -> None:
        self.writer.writerow([csv_cell(cell) for cell in row])


def render_csv(matrix: TraceMatrix) -> str:
    out = io.StringIO()
    writer = _Cells(out)
    writer.writerow(CSV_COLUMNS)
    for req in matrix.requirements:
        st = matrix.statuses[req.id]
        base = [req.id, req.level, req.title, st.status, req.fingerprint, " ".join(req.parents)]
        rows = 0
        for check_id in st.checks:
            stale = any(l.source == f"check:{check_id}" and l.target == req.id for l in matrix.stale_links)
            for model in matrix.models:
                outcome = matrix.outcomes[(model, check_id)]
                arts = [artifact_entry(path, matrix) for path in sorted(set(outcome.artifacts_read) | set(outcome.artifacts_written))]
                where, detail = obtained(outcome)
                writer.writerow(base + [check_id, matrix.specs[check_id].step, model, outcome.verdict.value, where, detail,
                                        outcome.reason, "yes" if stale else "no", " ".join(arts)])
                rows += 1
            if not matrix.models:
                writer.writerow(base + [check_id, matrix.specs[check_id].step, "", "", "", "", "no model results",
                                        "yes" if stale else "no", ""])
                rows += 1
        if rows == 0:
            writer.writerow(base + ["", "", "", "", "", "", st.detail, "", ""])
    return out.getvalue()


def _short_entry(entry: str) -> str:
    """`path (digest prefix)` from an artifact entry (`path@sha256:...`)."""
    path, _, digest = entry.rpartition("@")
    kind, _, value = digest.partition(":")
    return f"{path} ({'listing ' if kind.startswith('listing') else ''}{value[:16]})"


def _md(text: object) -> str:
    return str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def _table(headers: list[str], rows: Sequence[Sequence[object]]) -> list[str]:
    lines = ["| " + " | ".join(_md(h) for h in headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(_md(c) for c in row) + " |" for row in rows]
    return lines + [""]


def render_markdown(matrix: TraceMatrix, title: str = "Trace matrix") -> str:
    git = matrix.git
    source = f"git commit `{git.commit}`{' (uncommitted changes)' if git.dirty else ''}" if git.commit else f"no git commit ({git.reason})"
    cov = matrix.coverage()
    lines = [f"# {title}", "", f"Source: {source}. Models: {', '.join(matrix.models) or 'none'}.", ""]
    lines += ["## Coverage", "", f"{cov['total']} requirements. Only a passing check is coverage.", ""]
    lines += _table(["Status", "All", "SYS", "HLR", "LLR"], [
        [s, cov["by_status"][s]] + [cov["by_level"].get(lv, {}).get(s, 0) for lv in ("SYS", "HLR", "LLR")] for s in cov["by_status"]
    ])
    lines += ["## DO-178C objectives", ""]
    lines += _table(["Objective", "Title", "Requirements", "Status"], [
        [o["objective"], o["title"], ", ".join(o["requirements"]) or "none", o["status"] or "-"] for o in matrix.objectives()
    ])
    lines += ["## Findings", ""]
    if matrix.findings:
        lines += _table(["Severity", "Code", "Location", "Message"], [
            [f.severity.value, f.code, str(f.span) if f.span else "", f.message] for f in matrix.findings
        ])
    else:
        lines += ["No findings.", ""]
    lines += ["## Requirements -> checks -> verdict per model", ""]
    rows = []
    for req in matrix.requirements:
        st = matrix.statuses[req.id]
        checks = ", ".join(st.checks) or (f"via {', '.join(st.children)}" if st.via_children else "none")
        rows.append([req.id, req.title, st.status, checks] + [st.per_model.get(m, "") for m in matrix.models])
    lines += _table(["Requirement", "Title", "Status", "Checks"] + matrix.models, rows)
    lines += ["## Verdicts -> reasons -> artifacts", ""]
    rows = []
    for (model, check_id), outcome in sorted(matrix.outcomes.items()):
        arts = [_short_entry(artifact_entry(p, matrix)) for p in sorted(set(outcome.artifacts_read) | set(outcome.artifacts_written))]
        rows.append([model, check_id, ", ".join(matrix.specs[check_id].requirements), outcome.verdict.value,
                     obtained(outcome)[0], outcome.reason, "; ".join(arts)])
    for (model, check_id), outcome in sorted(matrix.unregistered.items()):
        rows.append([model, check_id, "UNREGISTERED", outcome.verdict.value, obtained(outcome)[0], outcome.reason, ""])
    lines += _table(["Model", "Check", "Requirements", "Verdict", "Obtained on", "Reason", "Artifacts (SHA-256 prefix)"],
                    rows) if rows else ["No models.", ""]
    lines += ["## Checks -> requirements", ""]
    lines += _table(["Check", "Step", "Title", "Requirements"] + matrix.models, [
        [s.id, s.step, s.title, ", ".join(s.requirements) or "NONE"] + [matrix.outcomes[(m, s.id)].verdict.value for m in matrix.models]
        for s in matrix.specs.values()
    ])
    lines += ["## Artifacts -> checks -> requirements", ""]
    rows = []
    for path in sorted(matrix.artifacts):
        data = matrix.artifacts[path].to_json(matrix.specs)
        rows.append([path + ("/ (folder, listing digest)" if data["kind"] == "folder" else ""), data["model"], data["step"],
                     data["sha256"] or "missing", data["size"] if data["size"] is not None else "",
                     ", ".join(data["read_by"] + data["written_by"]), ", ".join(data["requirements"])])
    lines += _table(["Artifact", "Model", "Step", "SHA-256", "Bytes", "Checks", "Requirements"], rows) if rows else ["No recorded artifacts.", ""]
    lines += ["## Code trace", ""]
    rows = [[t.model, t.item, t.target, f"{t.nnef_file}:{e.nnef_line}", e.instruction, f"{e.code_file}:{e.first_line}-{e.last_line}"]
            for t in matrix.code_traces for e in t.entries]
    lines += _table(["Model", "Item", "Target", "NNEF line", "Instruction", "Code lines"], rows) if rows else ["No code trace data.", ""]
    return "\n".join(lines)

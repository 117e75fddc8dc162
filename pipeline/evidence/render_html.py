"""The trace matrix as one self-contained HTML page: no network, sortable, printable.

Everything is inline (CSS, a small script that sorts a table when a header is clicked), so
the file opens from an evidence package on an auditor's offline machine. The page holds no
timestamp: rendering the same matrix twice gives the same bytes.
"""

from __future__ import annotations

from html import escape
from typing import Iterable, Sequence

from pipeline.evidence.matrix import MODEL_STATUS_ORDER, STATUS_ORDER, TraceMatrix

VERDICT_ORDER = ("fail", "not run", "emulated", "pass")

STYLE = """
:root { --pass:#1b7f3b; --fail:#b3261e; --warn:#9a6700; --muted:#5f6368; --line:#d0d7de; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0 2rem 3rem; color: #1f2328; }
h1 { margin: 1.2rem 0 .2rem; font-size: 1.6rem; }
h2 { margin-top: 2.2rem; border-bottom: 2px solid var(--line); padding-bottom: .2rem; font-size: 1.25rem; }
.meta { color: var(--muted); margin: 0 0 1rem; }
nav a { margin-right: 1rem; }
table { border-collapse: collapse; width: 100%; margin: .5rem 0 1rem; }
th, td { border: 1px solid var(--line); padding: .25rem .45rem; text-align: left; vertical-align: top; }
thead th { background: #f6f8fa; position: sticky; top: 0; }
table.sortable thead th { cursor: pointer; user-select: none; white-space: nowrap; }
table.sortable thead th::after { content: " \\2195"; color: #8c959f; font-size: .8em; }
table.sortable thead th[aria-sort="ascending"]::after { content: " \\25B2"; color: #1f2328; }
table.sortable thead th[aria-sort="descending"]::after { content: " \\25BC"; color: #1f2328; }
code, .hash { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: .85em; }
.hash { word-break: break-all; }
.v { display: inline-block; padding: 0 .4rem; border-radius: .6rem; font-size: .85em; white-space: nowrap; border: 1px solid currentColor; margin: 1px 0; }
.v-pass, .s-verified { color: var(--pass); }
.v-fail, .s-failed, .sev-error { color: var(--fail); font-weight: 600; }
.v-not-run, .v-no-check, .s-not-verified, .s-no-check { color: var(--muted); }
.v-emulated, .v-partial, .s-partially-verified, .sev-warning { color: var(--warn); }
.small { font-size: .85em; color: var(--muted); }
.nowrap { white-space: nowrap; }
dl.req dt { font-weight: 600; margin-top: .8rem; }
dl.req dd { margin: .1rem 0 .3rem 1.2rem; }
@media print {
  body { margin: 0; font-size: 9pt; }
  nav, .no-print { display: none; }
  thead { display: table-header-group; }
  thead th { position: static; }
  tr, dl.req dd { page-break-inside: avoid; }
  table.sortable thead th::after { content: ""; }
  h2 { page-break-after: avoid; }
  a { color: inherit; text-decoration: none; }
  .v { border: none; padding: 0; }
}
"""

SCRIPT = """
(function () {
  "use strict";
  function key(cell) {
    var v = cell.getAttribute("data-sort");
    return v === null ? cell.textContent.trim() : v;
  }
  function compare(a, b) {
    var na = Number(a), nb = Number(b);
    if (a !== "" && b !== "" && !isNaN(na) && !isNaN(nb)) { return na - nb; }
    return a.localeCompare(b, undefined, { numeric: true, sensitivity: "base" });
  }
  function sortBy(table, index, th) {
    var ascending = th.getAttribute("aria-sort") !== "ascending";
    Array.prototype.forEach.call(th.parentNode.cells, function (c) { c.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (r1, r2) {
      var d = compare(key(r1.cells[index]), key(r2.cells[index]));
      return ascending ? d : -d;
    });
    rows.forEach(function (r) { body.appendChild(r); });
  }
  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), function (table) {
    if (!table.tHead || !table.tBodies.length) { return; }
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, index) {
      th.tabIndex = 0;
      th.title = "Sort by this column";
      th.addEventListener("click", function () { sortBy(table, index, th); });
      th.addEventListener("keydown", function (e) {
        if (e.key === "Enter" || e.key === " ") { e.preventDefault(); sortBy(table, index, th); }
      });
    });
  });
}());
"""


def _cls(value: str) -> str:
    return value.replace(" ", "-")


def _verdict(value: str, title: str = "") -> str:
    tip = f' title="{escape(title)}"' if title else ""
    return f'<span class="v v-{_cls(value)}"{tip}>{escape(value)}</span>'


def _cell(content: str, sort: str | int | None = None, raw: bool = False) -> str:
    attr = f' data-sort="{escape(str(sort))}"' if sort is not None else ""
    return f"<td{attr}>{content if raw else escape(content)}</td>"


def _table(table_id: str, headers: Sequence[str], rows: Iterable[str], caption: str = "") -> str:
    head = "".join(f'<th scope="col">{escape(h)}</th>' for h in headers)
    body = "\n".join(rows)
    cap = f"<caption class=\"small\">{escape(caption)}</caption>" if caption else ""
    return f'<table class="sortable" id="{table_id}">{cap}<thead><tr>{head}</tr></thead>\n<tbody>\n{body}\n</tbody></table>'


def _short(sha: str | None) -> str:
    return sha[:16] if sha else "missing"


def render_html(matrix: TraceMatrix, title: str = "Trace matrix") -> str:
    """The page for `matrix` (see module docstring)."""
    models = matrix.models
    git = matrix.git
    source = f"git commit {git.commit}{' (uncommitted changes)' if git.dirty else ''}" if git.commit else f"no git commit ({git.reason})"
    cov = matrix.coverage()
    errors = sum(1 for f in matrix.findings if f.is_error)
    warnings = len(matrix.findings) - errors

    cov_rows = [
        "<tr>" + _cell(status, STATUS_ORDER.index(status)) + _cell(str(cov["by_status"][status]), cov["by_status"][status])
        + "".join(_cell(str(cov["by_level"].get(level, {}).get(status, 0))) for level in ("SYS", "HLR", "LLR")) + "</tr>"
        for status in STATUS_ORDER
    ]
    coverage = _table("coverage-table", ["Status", "All", "SYS", "HLR", "LLR"], cov_rows, f"{cov['total']} requirements")

    finding_rows = []
    for f in matrix.findings:
        where = str(f.span) if f.span else ""
        finding_rows.append(
            "<tr>" + _cell(f'<span class="sev-{f.severity.value}">{escape(f.severity.value)}</span>', 0 if f.is_error else 1, raw=True)
            + _cell(f'<span class="nowrap">{escape(f.code)}</span>', f.code, raw=True)
            + _cell(f'<span class="nowrap">{escape(where)}</span>', where, raw=True) + _cell(f.message) + "</tr>"
        )
    findings = _table("findings-table", ["Severity", "Code", "Location", "Message"], finding_rows) if finding_rows else "<p>No findings.</p>"

    req_rows = []
    for req in matrix.requirements:
        st = matrix.statuses[req.id]
        per_model = []
        for model in models:
            badges = [_verdict(st.per_model.get(model, "not run"))]
            for check_id in st.checks:
                outcome = matrix.outcomes[(model, check_id)]
                badges.append(f"<br><code>{escape(check_id)}</code> " + _verdict(outcome.verdict.value, outcome.reason))
            per_model.append(_cell("".join(badges), MODEL_STATUS_ORDER.index(st.per_model.get(model, "not run")), raw=True))
        checks = ", ".join(f"<code>{escape(c)}</code>" for c in st.checks) or (
            "via " + ", ".join(f'<a href="#req-{escape(c)}">{escape(c)}</a>' for c in st.children) if st.via_children else "<em>none</em>"
        )
        req_rows.append(
            "<tr>" + _cell(f'<a href="#req-{escape(req.id)}">{escape(req.id)}</a>', req.id, raw=True) + _cell(req.level)
            + _cell(req.title) + _cell(f'<span class="s-{_cls(st.status)}">{escape(st.status)}</span>', STATUS_ORDER.index(st.status), raw=True)
            + _cell(", ".join(req.parents)) + _cell(checks, raw=True) + "".join(per_model) + "</tr>"
        )
    requirements = _table("requirements-table", ["Requirement", "Level", "Title", "Status", "Parents", "Checks"] + models, req_rows)

    outcome_rows = []
    for (model, check_id), outcome in sorted(matrix.outcomes.items()):
        spec = matrix.specs[check_id]
        arts = []
        for path in sorted(set(outcome.artifacts_read) | set(outcome.artifacts_written)):
            info = matrix.artifacts.get(path)
            arts.append(f'<code>{escape(path)}</code> <span class="hash">{escape(_short(info.sha256 if info else None))}</span>')
        outcome_rows.append(
            "<tr>" + _cell(model) + _cell(f"<code>{escape(check_id)}</code>", check_id, raw=True) + _cell(spec.step)
            + _cell(_verdict(outcome.verdict.value), VERDICT_ORDER.index(outcome.verdict.value), raw=True) + _cell(outcome.reason)
            + _cell(", ".join(spec.requirements)) + _cell("<br>".join(arts), raw=True) + "</tr>"
        )
    for (model, check_id), outcome in sorted(matrix.unregistered.items()):
        outcome_rows.append(
            "<tr>" + _cell(model) + _cell(f"<code>{escape(check_id)}</code>", check_id, raw=True) + _cell("?")
            + _cell(_verdict(outcome.verdict.value), VERDICT_ORDER.index(outcome.verdict.value), raw=True)
            + _cell(outcome.reason) + _cell("UNREGISTERED: traces to no requirement") + _cell("") + "</tr>"
        )
    outcomes = _table("outcomes-table", ["Model", "Check", "Step", "Verdict", "Reason", "Requirements", "Artifacts (SHA-256)"], outcome_rows) if outcome_rows else "<p>No models.</p>"

    check_rows = []
    for spec in matrix.specs.values():
        stale = sorted(l.target for l in matrix.stale_links if l.source == f"check:{spec.id}")
        reqs = ", ".join(
            f'<a href="#req-{escape(r)}">{escape(r)}</a>' + (" <strong>(stale)</strong>" if r in stale else "") for r in spec.requirements
        ) or "<em>none</em>"
        verdicts = [
            _cell(_verdict(matrix.outcomes[(m, spec.id)].verdict.value, matrix.outcomes[(m, spec.id)].reason),
                  VERDICT_ORDER.index(matrix.outcomes[(m, spec.id)].verdict.value), raw=True)
            for m in models
        ]
        check_rows.append(
            "<tr>" + _cell(f"<code>{escape(spec.id)}</code>", spec.id, raw=True) + _cell(spec.step) + _cell(spec.title)
            + _cell(reqs, raw=True) + "".join(verdicts) + "</tr>"
        )
    checks = _table("checks-table", ["Check", "Step", "Title", "Requirements"] + models, check_rows)

    art_rows = []
    for path in sorted(matrix.artifacts):
        info = matrix.artifacts[path]
        data = info.to_json(matrix.specs)
        art_rows.append(
            "<tr>" + _cell(f"<code>{escape(path)}</code>", path, raw=True) + _cell(info.model) + _cell(info.step)
            + _cell(f'<span class="hash">{escape(info.sha256 or "missing")}</span>', info.sha256 or "", raw=True)
            + _cell(str(info.size) if info.size is not None else "", info.size if info.size is not None else -1)
            + _cell(", ".join(data["read_by"])) + _cell(", ".join(data["written_by"])) + _cell(", ".join(data["requirements"])) + "</tr>"
        )
    artifacts = _table("artifacts-table", ["Artifact", "Model", "Step", "SHA-256", "Bytes", "Read by", "Written by", "Requirements"], art_rows) if art_rows else "<p>No recorded artifacts.</p>"

    trace_rows = []
    for trace in matrix.code_traces:
        for entry in trace.entries:
            trace_rows.append(
                "<tr>" + _cell(trace.model) + _cell(trace.item) + _cell(trace.target)
                + _cell(f"{trace.nnef_file}:{entry.nnef_line}", f"{trace.nnef_file}:{entry.nnef_line:08d}")
                + _cell(f"<code>{escape(entry.instruction)}</code>", entry.instruction, raw=True)
                + _cell(f"{entry.code_file}:{entry.first_line}-{entry.last_line}", f"{entry.code_file}:{entry.first_line:08d}") + "</tr>"
            )
    code_trace = _table("code-trace-table", ["Model", "Item", "Target", "NNEF line", "Instruction", "Generated code lines"], trace_rows) if trace_rows else "<p>No code trace data (artifacts/&lt;model&gt;/codegen/**/trace.json).</p>"

    details = []
    for req in matrix.requirements:
        st = matrix.statuses[req.id]
        params = ", ".join(f"{k} = {v}" for k, v in req.parameters.items())
        details.append(
            f'<dt id="req-{escape(req.id)}">{escape(req.id)} — {escape(req.title)} '
            f'<span class="s-{_cls(st.status)}">[{escape(st.status)}]</span></dt>'
            f"<dd>{escape(' '.join(req.text.split()))}</dd>"
            f"<dd class=\"small\">Rationale: {escape(' '.join(req.rationale.split()))}</dd>"
            + (f'<dd class="small">Parameters: {escape(params)}</dd>' if params else "")
            + f"<dd class=\"small\">Verification: {escape(', '.join(req.verification))} · Parents: {escape(', '.join(req.parents) or ('derived' if req.derived else '—'))}"
            f" · Children: {escape(', '.join(st.children) or '—')} · Defined at {escape(str(req.span))}</dd>"
            f"<dd class=\"small\">Source: {escape('; '.join(req.source))}</dd>"
            f'<dd class="small">Fingerprint: <span class="hash">{escape(req.fingerprint)}</span></dd>'
        )

    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{escape(title)}</title>
<style>{STYLE}</style>
</head>
<body>
<header>
<h1>{escape(title)}</h1>
<p class="meta">Source: {escape(source)} · Models: {escape(", ".join(models) or "none")} · Requirement files: {escape(", ".join(matrix.requirements.files))} · Findings: {errors} errors, {warnings} warnings</p>
<nav class="no-print"><a href="#coverage">Coverage</a><a href="#findings">Findings</a><a href="#requirements">Requirements</a><a href="#outcomes">Verdicts</a><a href="#checks">Checks</a><a href="#artifacts">Artifacts</a><a href="#code-trace">Code trace</a><a href="#texts">Requirement text</a></nav>
</header>
<main>
<section id="coverage"><h2>Coverage</h2>
<p class="small">Only a passing check is coverage. A requirement without checks of its own is judged through its children.</p>
{coverage}</section>
<section id="findings"><h2>Findings</h2>
{findings}</section>
<section id="requirements"><h2>Requirements → checks → verdict per model</h2>
{requirements}</section>
<section id="outcomes"><h2>Verdicts → reasons → artifacts</h2>
{outcomes}</section>
<section id="checks"><h2>Checks → requirements (reverse trace)</h2>
{checks}</section>
<section id="artifacts"><h2>Artifacts → checks → requirements</h2>
{artifacts}</section>
<section id="code-trace"><h2>Code trace: NNEF instruction → generated code</h2>
{code_trace}</section>
<section id="texts"><h2>Requirement text</h2>
<dl class="req">
{chr(10).join(details)}
</dl></section>
</main>
<script>{SCRIPT}</script>
</body>
</html>
"""

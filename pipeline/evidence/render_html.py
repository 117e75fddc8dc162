"""The auditor's report: an index page (trace-matrix.html) and one page per model.

The index holds what spans the models: the model x step table (the console's, with its
legend), coverage, what is still owed, the findings, the requirements with one verdict
badge per model (each a link to the model's page), the checks, and the requirement texts.
Each model's page (`<model>/report.html` beside the index: pipeline/evidence/render_model.py)
holds the pictures and the detail: every verdict with its reason, where it was obtained and
its artifacts as links.

Both are self-contained (pipeline/evidence/html_parts.py): no network, sortable, filterable,
printable, no timestamp.
"""

from __future__ import annotations

from html import escape

from pipeline.evidence import summary
from pipeline.evidence.html_parts import cell, css_class, page, table, verdict
from pipeline.evidence.matrix import MODEL_STATUS_ORDER, STATUS_ORDER, TraceMatrix
from pipeline.evidence.paths import MODEL_REPORT_FILE

VERDICT_ORDER = ("fail", "not run", "emulated", "pass", "n/a")


def model_page_href(model: str) -> str:
    """The link from the index to a model's page (the same inside an evidence package)."""
    return f"{model}/{MODEL_REPORT_FILE}"


def _source(matrix: TraceMatrix) -> str:
    git = matrix.git
    return f"git commit {git.commit}{' (uncommitted changes)' if git.dirty else ''}" if git.commit else f"no git commit ({git.reason})"


def counts_text(matrix: TraceMatrix) -> str:
    """`0 errors, 7 warnings, 6 notes`: the console's counts (pipeline/evidence/summary.py)."""
    return summary.finding_counts_text(summary.finding_counts(f.severity.value for f in matrix.findings))


def models_section(matrix: TraceMatrix, document: dict) -> str:
    rows = summary.step_table(document)
    body = []
    for row in rows[1:]:
        model = row[0]
        cells = [cell(f'<a href="{escape(model_page_href(model))}">{escape(model)}</a>', model, raw=True)]
        for value in row[1:]:
            worst = next((v for v in ("step failed", "fail", "not run", "emulated", "pass", "n/a") if value.startswith(v)), "")
            cells.append(cell(f'<span class="v-{css_class(worst)}">{escape(value)}</span>', raw=True))
        body.append("<tr>" + "".join(cells) + "</tr>")
    refused = "".join(f"<li><strong>{escape(m)}</strong>: <code>{escape(f.code)}</code> {escape(f.message)}</li>"
                      for m, f in sorted(matrix.refused.items()))
    legend = " ".join(summary.LEGEND)
    return (table("models-table", rows[0], body, "model x step: " + legend) if body else "<p>No models.</p>") + (
        f'<p class="sev-error">Model folders not run:</p><ul>{refused}</ul>' if refused else "")


def owed_section(document: dict) -> str:
    rows, parents = summary.owed_rows(document)
    if not rows:
        return "<p>Every requirement is verified on its platform.</p>"
    body = ["<tr>" + cell(f'<a href="#req-{escape(r[0])}">{escape(r[0])}</a>', r[0], raw=True)
            + "".join(cell(c) for c in r[1:5]) + "</tr>" for r in rows]
    note = f"<p class=\"small\">Judged through these: {escape(', '.join(parents))}.</p>" if parents else ""
    return table("owed-table", ["Requirement", "Still owes", "Models", "Checks", "Why"], body) + note


def coverage_section(matrix: TraceMatrix) -> str:
    """Requirements per status, overall and per level."""
    cov = matrix.coverage()
    cov_rows = [
        "<tr>" + cell(status, STATUS_ORDER.index(status)) + cell(str(cov["by_status"][status]), cov["by_status"][status])
        + "".join(cell(str(cov["by_level"].get(level, {}).get(status, 0))) for level in ("SYS", "HLR", "LLR")) + "</tr>"
        for status in STATUS_ORDER
    ]
    return table("coverage-table", ["Status", "All", "SYS", "HLR", "LLR"], cov_rows, f"{cov['total']} requirements")


def objectives_section(matrix: TraceMatrix) -> str:
    """DO-178C Annex A objective -> the requirements serving it (links), and the worst of their statuses."""
    rows = []
    for row in matrix.objectives():
        reqs = ", ".join(f'<a href="#req-{escape(r)}">{escape(r)}</a>' for r in row["requirements"])
        status = row["status"]
        table_number, number = row["objective"][2:].split(".")
        rows.append(
            "<tr>" + cell(row["objective"], f"{int(table_number):02d}.{int(number):02d}") + cell(row["title"]) + cell(" ".join(row["sections"]))
            + cell(reqs or "<em>no requirement of this pipeline</em>", raw=True)
            + (cell(f'<span class="s-{css_class(status)}">{escape(status)}</span>', STATUS_ORDER.index(status), raw=True)
               if status else cell("—", len(STATUS_ORDER))) + "</tr>")
    return table("objectives-table", ["Objective", "Title", "Section", "Requirements", "Status"], rows, filterable=True)


def findings_section(matrix: TraceMatrix) -> str:
    """One row per finding: its message and its fix each cut to summary.MAX_FINDING characters (the whole
    reason of a gap is on the model's page), its location the input that caused it."""
    finding_rows = []
    for f in matrix.findings:
        where = f"{f.span.file}:{f.span.line}" if f.span else ""
        finding_rows.append(
            "<tr>" + cell(f'<span class="sev-{f.severity.value}">{escape(f.severity.value)}</span>',
                          ("error", "warning", "note").index(f.severity.value), raw=True)
            + cell(f'<span class="nowrap">{escape(f.code)}</span>', f.code, raw=True)
            + cell(f'<span class="nowrap">{escape(where)}</span>', where, raw=True)
            + cell(summary.shorten(f.message, summary.MAX_FINDING))
            + cell(f'<span class="fix">{escape(summary.shorten(f.fix, summary.MAX_FINDING))}</span>' if f.fix else "",
                   raw=True) + "</tr>"
        )
    return (table("findings-table", ["Severity", "Code", "Location", "Message", "Fix"], finding_rows, filterable=True)
            if finding_rows else "<p>No findings.</p>")


def requirements_section(matrix: TraceMatrix) -> str:
    """Requirement -> checks -> a verdict badge per model (each a link to the model's page)."""
    models = matrix.models
    req_rows = []
    for req in matrix.requirements:
        st = matrix.statuses[req.id]
        per_model = []
        for model in models:
            status = st.per_model.get(model, "not run")
            link = f"{model_page_href(model)}#req-{req.id}"
            per_model.append(cell(f'<a href="{escape(link)}">{verdict(status, f"{model}: details")}</a>',
                                  MODEL_STATUS_ORDER.index(status), raw=True))
        checks = ", ".join(f'<a href="#check-{escape(c)}"><code>{escape(c)}</code></a>' for c in st.checks) or (
            "via " + ", ".join(f'<a href="#req-{escape(c)}">{escape(c)}</a>' for c in st.children) if st.via_children
            else "<em>none</em>")
        req_rows.append(
            "<tr>" + cell(f'<a href="#text-{escape(req.id)}" id="req-{escape(req.id)}">{escape(req.id)}</a>', req.id, raw=True)
            + cell(req.level) + cell(req.title)
            + cell(f'<span class="s-{css_class(st.status)}">{escape(st.status)}</span>', STATUS_ORDER.index(st.status), raw=True)
            + cell(checks, raw=True) + "".join(per_model) + "</tr>"
        )
    return table("requirements-table", ["Requirement", "Level", "Title", "Status", "Checks"] + models, req_rows,
                 filterable=True)


def checks_section(matrix: TraceMatrix) -> str:
    """Check -> requirements (the reverse trace) and its verdict per model; unregistered checks last."""
    models = matrix.models
    check_rows = []
    for spec in matrix.specs.values():
        stale = sorted(l.target for l in matrix.stale_links if l.source == f"check:{spec.id}")
        reqs = ", ".join(
            f'<a href="#req-{escape(r)}">{escape(r)}</a>' + (" <strong>(stale)</strong>" if r in stale else "") for r in spec.requirements
        ) or "<em>none</em>"
        verdicts = []
        for m in models:
            outcome = matrix.outcomes[(m, spec.id)]
            link = f"{model_page_href(m)}#check-{spec.id}"
            verdicts.append(cell(f'<a href="{escape(link)}">{verdict(outcome.verdict.value, outcome.reason)}</a>',
                                 VERDICT_ORDER.index(outcome.verdict.value), raw=True))
        check_rows.append(
            "<tr>" + cell(f'<code id="check-{escape(spec.id)}">{escape(spec.id)}</code>', spec.id, raw=True) + cell(spec.step)
            + cell(spec.title) + cell(reqs, raw=True) + "".join(verdicts) + "</tr>"
        )
    for (model, check_id), outcome in sorted(matrix.unregistered.items()):
        check_rows.append(
            "<tr>" + cell(f"<code>{escape(check_id)}</code>", check_id, raw=True) + cell("?")
            + cell(f"UNREGISTERED ({model}): {outcome.reason}") + cell("traces to no requirement")
            + "".join(cell(verdict(outcome.verdict.value), raw=True) if m == model else cell("") for m in models) + "</tr>"
        )
    return table("checks-table", ["Check", "Step", "Title", "Requirements"] + models, check_rows, filterable=True)


def texts_section(matrix: TraceMatrix) -> str:
    """Every requirement's text, rationale, parameters, verification, links, definition and fingerprint."""
    details = []
    for req in matrix.requirements:
        st = matrix.statuses[req.id]
        params = ", ".join(f"{k} = {v}" for k, v in req.parameters.items())
        details.append(
            f'<dt id="text-{escape(req.id)}">{escape(req.id)} — {escape(req.title)} '
            f'<span class="s-{css_class(st.status)}">[{escape(st.status)}]</span></dt>'
            f"<dd>{escape(' '.join(req.text.split()))}</dd>"
            f"<dd class=\"small\">Rationale: {escape(' '.join(req.rationale.split()))}</dd>"
            + (f'<dd class="small">Parameters: {escape(params)}</dd>' if params else "")
            + f"<dd class=\"small\">Verification: {escape(', '.join(req.verification))} · Verified on: {escape(req.verified_on)}"
            f" · Parents: {escape(', '.join(req.parents) or ('derived' if req.derived else '—'))}"
            f" · Children: {escape(', '.join(st.children) or '—')} · Defined at {escape(str(req.span))}</dd>"
            f"<dd class=\"small\">Source: {escape('; '.join(req.source))}</dd>"
            + (f'<dd class="small">DO-178C objectives: {escape(", ".join(req.objectives))}</dd>' if req.objectives else "")
            + f'<dd class="small">Fingerprint: <span class="hash">{escape(req.fingerprint)}</span></dd>'
        )
    return chr(10).join(details)


def render_html(matrix: TraceMatrix, title: str = "Trace matrix") -> str:
    """The index page for `matrix` (see module docstring): its sections in order."""
    models = matrix.models
    document = matrix.to_json()
    meta = (f"Source: {escape(_source(matrix))} · Mode: {escape(matrix.mode)} · Models: "
            + (", ".join(f'<a href="{escape(model_page_href(m))}">{escape(m)}</a>' for m in models) or "none")
            + f" · Requirement files: {escape(', '.join(matrix.requirements.files))} · Findings: {escape(counts_text(matrix))}")
    nav = [("Models", "#models"), ("Coverage", "#coverage"), ("DO-178C", "#objectives"), ("Still owed", "#owed"),
           ("Findings", "#findings"),
           ("Requirements", "#requirements"), ("Checks", "#checks"), ("Requirement text", "#texts")]
    body = f"""<section id="models"><h2>Models and steps</h2>
<p class="small">Each model's page holds its pictures (numeric error, MET histograms, Petri nets), every verdict with its reason and where it was obtained, and its artifacts as links.</p>
{models_section(matrix, document)}</section>
<section id="coverage"><h2>Coverage</h2>
<p class="small">Only a passing check is coverage. A requirement without checks of its own is judged through its children.</p>
{coverage_section(matrix)}</section>
<section id="objectives"><h2>DO-178C objectives</h2>
<p class="small">Each Annex A objective (Tables A-2 to A-8) with the requirements whose verification gives evidence for it, and the worst of their statuses. An objective without requirements is one this pipeline gives no evidence for: the applicant meets it otherwise.</p>
{objectives_section(matrix)}</section>
<section id="owed"><h2>Still owed</h2>
{owed_section(document)}</section>
<section id="findings"><h2>Findings</h2>
{findings_section(matrix)}</section>
<section id="requirements"><h2>Requirements → checks → verdict per model</h2>
<p class="small">A badge is the requirement's status on that model; it links to the model's page.</p>
{requirements_section(matrix)}</section>
<section id="checks"><h2>Checks → requirements (reverse trace)</h2>
{checks_section(matrix)}</section>
<section id="texts"><h2>Requirement text</h2>
<dl class="req">
{texts_section(matrix)}
</dl></section>"""
    return page(title, meta, nav, body)

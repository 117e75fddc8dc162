"""One model's page of the auditor's report: pictures, every verdict, every artifact as a link.

Written as `<model>/report.html` beside the index (reports/ in the project, evidence/ in the
model's package), so a link to an artifact is `../../<project-relative path>` in both. The
pictures are embedded (numeric error against its tolerance or bound, drawn here; the MET
histograms and Petri nets the steps drew, as `data:` URIs), so the page shows them offline
and on paper; each also links to its file.
"""

from __future__ import annotations

from html import escape
from pathlib import Path

from pipeline.compare.svg import ratio_plot_svg
from pipeline.evidence import summary
from pipeline.evidence.html_parts import cell, css_class, file_link, page, short_hash, svg_data_uri, table, verdict
from pipeline.evidence.matrix import MODEL_STATUS_ORDER, STATUS_ORDER, ArtifactInfo, TraceMatrix
from pipeline.evidence.pictures import Picture, error_rows, met_pictures, petri_pictures
from pipeline.evidence.render_html import VERDICT_ORDER, counts_text
from pipeline.evidence.codepages import line_href
from pipeline.evidence.structural import structural_section
from pipeline.ledger.checks import CheckResult, Verdict, Where
from pipeline.project.layout import REPORT_FILES

PREFIX = "../../"                         # from <reports or evidence>/<model>/report.html to the project root
INDEX = "../" + REPORT_FILES["html"]      # the index page beside the model's folder
CODE_TRACE_CHECK = "codegen.trace"        # the check whose requirements every instruction's lines serve
MAX_CODE_LINKS = 6


def artifact_cell(path: str, info: ArtifactInfo | None) -> str:
    """A link to the artifact with its SHA-256 prefix (a folder: its file count and listing digest)."""
    if info is not None and info.kind == "folder":
        return (f"{file_link(path + '/', PREFIX, path + '/')} <span class=\"small\">folder, {len(info.files)} files, "
                f'listing</span> <span class="hash">{escape(short_hash(info.sha256))}</span>')
    return f'{file_link(path, PREFIX)} <span class="hash">{escape(short_hash(info.sha256 if info else None))}</span>'


def _figure(picture: Picture, root: Path | None, what: str) -> str:
    link = file_link(picture.path, PREFIX)
    uri = svg_data_uri(picture.path, root) if root is not None else None
    image = (f'<img src="{uri}" alt="{escape(what)}: {escape(picture.caption)}" class="{escape(what)}">' if uri
             else '<p class="small">(not embedded: the file is missing, too large or not an SVG document)</p>')
    return f"<figure>{image}<figcaption>{escape(picture.caption)} · {link}</figcaption></figure>"


def pictures_section(matrix: TraceMatrix, model: str, root: Path | None) -> str:
    rows = error_rows(matrix, model)
    numeric = (f'<figure class="numeric-error">{ratio_plot_svg(rows, f"{model}: numeric error / allowed")}'
               "<figcaption>Each comparison's largest error as a fraction of what it is allowed: its tolerance "
               "(deploy.yaml or the computed justification, docs/compare.md) or its computed error bound. "
               "Right of the red line fails; a bit-identity check is a square (green: identical).</figcaption></figure>"
               if rows else "<p>No numeric comparison was measured for this model.</p>")
    met = met_pictures(matrix, model)
    met_html = ('<div class="pictures">' + "".join(_figure(p, root, "met-histogram") for p in met) + "</div>" if met
                else "<p>No MET histogram: the compare step measured no timing campaign for this model.</p>")
    petri = petri_pictures(matrix, model)
    petri_ran = matrix.step_states.get(model, {}).get("petri") == "ran"
    petri_html = ('<div class="pictures">' + "".join(_figure(p, root, "petri-net") for p in petri) + "</div>" if petri
                  else "<p>No Petri net pictures: Graphviz (<code>dot</code>) was not installed when the petri step "
                  "ran; the nets are in the .pnml and .dot files.</p>" if petri_ran
                  else "<p>No Petri net pictures: the petri step has not run for this model.</p>")
    return (f'<section id="numeric"><h2>Numeric error against its tolerance or bound</h2>{numeric}</section>\n'
            f'<section id="met"><h2>Measured execution time</h2><p class="small">Time on a log axis: the budget line is '
            f"always drawn, and the runs above it are counted.</p>{met_html}</section>\n"
            f'<section id="petri"><h2>Petri nets</h2>{petri_html}</section>')


def requirements_section(matrix: TraceMatrix, model: str) -> str:
    rows = []
    code = requirement_code(matrix, model)
    for req in matrix.requirements:
        st = matrix.statuses[req.id]
        status = st.per_model.get(model, "not run")
        checks = " ".join(f'<a href="#check-{escape(c)}"><code>{escape(c)}</code></a> '
                          + verdict(matrix.outcomes[(model, c)].verdict.value) for c in st.checks) or (
            "via " + ", ".join(f'<a href="#req-{escape(c)}">{escape(c)}</a>' for c in st.children) if st.via_children
            else "<em>none</em>")
        rows.append("<tr>" + cell(f'<a id="req-{escape(req.id)}" href="{escape(INDEX)}#text-{escape(req.id)}">'
                                  f"{escape(req.id)}</a>", req.id, raw=True)
                    + cell(req.title) + cell(verdict(status), MODEL_STATUS_ORDER.index(status), raw=True)
                    + cell(f'<span class="s-{css_class(st.status)}">{escape(st.status)}</span>',
                           STATUS_ORDER.index(st.status), raw=True)
                    + cell(checks, raw=True) + cell(_code_cell(code.get(req.id, [])), raw=True) + "</tr>")
    return table("model-requirements-table", ["Requirement", "Title", f"On {model}", "Over all models", "Checks",
                                              "Code lines (first range per file, +more in it)"], rows, filterable=True)


NOWHERE = "nowhere: no result was produced"


def obtained_on(result: CheckResult) -> str:
    """Where a result was obtained, in words: the place its figures or its verdict come from (an `n/a`
    result was obtained nowhere: the check does not apply)."""
    if result.verdict is Verdict.NOT_APPLICABLE:
        return "nowhere: does not apply"
    if result.obtained is None:
        return NOWHERE
    label = result.obtained.label()
    if result.verdict is Verdict.NOT_RUN and result.obtained.where is Where.HOST and not result.measured:
        return f"{label}: decided here, nothing measured"
    return label


def verdicts_section(matrix: TraceMatrix, model: str) -> str:
    rows = []
    for (m, check_id), outcome in sorted(matrix.outcomes.items()):
        if m != model:
            continue
        spec = matrix.specs[check_id]
        results = outcome.results or []
        anchor = f' id="check-{escape(check_id)}"'
        reqs = ", ".join(f'<a href="#req-{escape(r)}">{escape(r)}</a>' for r in spec.requirements)
        if not results:
            rows.append(f"<tr{anchor}>" + cell(f"<code>{escape(check_id)}</code>", check_id, raw=True) + cell(spec.step)
                        + cell(model) + cell(verdict(outcome.verdict.value), VERDICT_ORDER.index(outcome.verdict.value), raw=True)
                        + cell(NOWHERE) + cell(outcome.reason) + cell(reqs, raw=True) + cell("") + "</tr>")
            continue
        for index, stored in enumerate(results):
            result = stored.result
            where = obtained_on(result)
            arts = [artifact_cell(p, matrix.artifacts.get(p)) for p in sorted(set(result.read) | set(result.written))]
            rows.append(f"<tr{anchor if index == 0 else ''}>" + cell(f"<code>{escape(check_id)}</code>", check_id, raw=True)
                        + cell(spec.step) + cell(result.subject)
                        + cell(verdict(result.verdict.value), VERDICT_ORDER.index(result.verdict.value), raw=True)
                        + cell(where) + cell(result.reason) + cell(reqs, raw=True)
                        + cell("<br>".join(arts), raw=True) + "</tr>")
    for (m, check_id), outcome in sorted(matrix.unregistered.items()):
        if m == model:
            rows.append("<tr>" + cell(f"<code>{escape(check_id)}</code>", check_id, raw=True) + cell("?") + cell(model)
                        + cell(verdict(outcome.verdict.value), raw=True) + cell("") + cell(outcome.reason)
                        + cell("UNREGISTERED: traces to no requirement") + cell("") + "</tr>")
    return table("verdicts-table", ["Check", "Step", "Subject", "Verdict", "Obtained on", "Reason", "Requirements",
                                    "Artifacts (SHA-256 prefix)"], rows, filterable=True)


def artifacts_section(matrix: TraceMatrix, model: str) -> str:
    rows = []
    for path in sorted(matrix.artifacts):
        info = matrix.artifacts[path]
        if info.model != model:
            continue
        data = info.to_json(matrix.specs)
        shown = path + "/" if info.kind == "folder" else path
        rows.append("<tr>" + cell(file_link(shown, PREFIX), path, raw=True) + cell(info.kind if info.kind == "folder" else "")
                    + cell(info.step)
                    + cell(f'<span class="hash">{escape(info.sha256 or "missing")}</span>', info.sha256 or "", raw=True)
                    + cell(str(info.size) if info.size is not None else "", info.size if info.size is not None else -1)
                    + cell(", ".join(data["read_by"])) + cell(", ".join(data["written_by"]))
                    + cell(", ".join(data["requirements"])) + "</tr>")
    if not rows:
        return "<p>No recorded artifacts.</p>"
    return table("artifacts-table", ["Artifact", "Kind", "Step", "SHA-256 (a folder: of its listing)", "Bytes", "Read by",
                                     "Written by", "Requirements"], rows, filterable=True)


def _line_link(path: str, first: int, last: int | None = None) -> str:
    """A link to lines [first, last] of `path`'s code page (pipeline/evidence/codepages.py)."""
    shown = f"{path}:{first}" + (f"-{last}" if last is not None and last != first else "")
    return f'<a href="{escape(line_href(path, first, last))}"><code>{escape(shown)}</code></a>'


def code_trace_section(matrix: TraceMatrix, model: str) -> str:
    """Both directions of the code trace: each NNEF instruction and each infrastructure part with its lines,
    every cell a link to the line on the file's page."""
    rows = []
    seen: set[tuple[str, int, int, str]] = set()
    for trace in matrix.code_traces:
        if trace.model != model:
            continue
        for entry in trace.entries:
            rows.append("<tr>" + cell(trace.item) + cell(trace.target)
                        + cell(_line_link(trace.nnef_file, entry.nnef_line),
                               f"{trace.nnef_file}:{entry.nnef_line:08d}", raw=True)
                        + cell(f"<code>{escape(entry.instruction)}</code>", entry.instruction, raw=True)
                        + cell(_line_link(entry.code_file, entry.first_line, entry.last_line),
                               f"{entry.code_file}:{entry.first_line:08d}", raw=True) + "</tr>")
        for part in trace.parts:
            key = (part.code_file, part.first_line, part.last_line, part.name)
            if key in seen:
                continue
            seen.add(key)
            reqs = ", ".join(f'<a href="#req-{escape(r)}">{escape(r)}</a>' for r in part.requirements)
            rows.append("<tr>" + cell(trace.item if f"/{trace.item}/" in part.code_file else "(deployment)")
                        + cell(trace.target) + cell("<em>infrastructure</em>", "~", raw=True)
                        + cell(f"<em>{escape(part.name)}</em> ({reqs})", part.name, raw=True)
                        + cell(_line_link(part.code_file, part.first_line, part.last_line),
                               f"{part.code_file}:{part.first_line:08d}", raw=True) + "</tr>")
    if not rows:
        return "<p>No code trace data (artifacts/&lt;model&gt;/codegen/**/trace.json).</p>"
    return table("code-trace-table", ["Item", "Target", "NNEF line", "Instruction, or infrastructure part (requirements)",
                                      "Generated code lines"], rows, filterable=True)


def requirement_code(matrix: TraceMatrix, model: str) -> dict[str, list[tuple[str, int, int, int]]]:
    """requirement -> (code file, first, last, ranges in that file) of the lines that serve it on `model`: the
    infrastructure parts naming it and, for a requirement its code-trace check verifies, the instructions' lines."""
    traced = {r for spec in matrix.specs.values() if spec.id == CODE_TRACE_CHECK for r in spec.requirements}
    ranges: dict[str, dict[str, list[tuple[int, int]]]] = {}
    for trace in matrix.code_traces:
        if trace.model != model:
            continue
        for part in trace.parts:
            for req in part.requirements:
                ranges.setdefault(req, {}).setdefault(part.code_file, []).append((part.first_line, part.last_line))
        for entry in trace.entries:
            for req in traced:
                ranges.setdefault(req, {}).setdefault(entry.code_file, []).append((entry.first_line, entry.last_line))
    return {req: [(path, *min(found), len(set(found))) for path, found in sorted(files.items())]
            for req, files in ranges.items()}


def _code_cell(found: list[tuple[str, int, int, int]]) -> str:
    if not found:
        return ""
    shown = [f'{_line_link(path, first, last)}{f" (+{count - 1})" if count > 1 else ""}'
             for path, first, last, count in found[:MAX_CODE_LINKS]]
    more = f' … <a href="#code-trace">{len(found) - MAX_CODE_LINKS} more files</a>' if len(found) > MAX_CODE_LINKS else ""
    return "<br>".join(shown) + more


def render_model_page(matrix: TraceMatrix, model: str, root: Path | None = None, title: str = "") -> str:
    """The page of `model` (module docstring); `root`: the project folder the pictures are read from."""
    document = matrix.to_json()
    rows = summary.step_table(document)
    row = next((r for r in rows[1:] if r[0] == model), None)
    steps = (table("model-steps-table", rows[0], ["<tr>" + "".join(cell(c) for c in row) + "</tr>"],
                   " ".join(summary.LEGEND)) if row else "<p>No results for this model.</p>")
    git = matrix.git
    source = f"git commit {git.commit}{' (uncommitted changes)' if git.dirty else ''}" if git.commit else f"no git commit ({git.reason})"
    meta = (f'<a href="{escape(INDEX)}">Index: all models</a> · Source: {escape(source)} · Mode: {escape(matrix.mode)}'
            f" · Findings over the run: {escape(counts_text(matrix))}")
    nav = [("Index", INDEX), ("Steps", "#steps"), ("Numeric error", "#numeric"), ("MET", "#met"), ("Petri nets", "#petri"),
           ("Requirements", "#requirements"), ("Verdicts", "#verdicts"), ("Artifacts", "#artifacts"),
           ("Code trace", "#code-trace"), ("Structural coverage", "#structural-coverage")]
    body = (f'<section id="steps"><h2>Steps</h2>{steps}</section>\n'
            + pictures_section(matrix, model, root)
            + f'\n<section id="requirements"><h2>Requirements on {escape(model)}</h2>{requirements_section(matrix, model)}</section>'
            f'\n<section id="verdicts"><h2>Verdicts → reasons → artifacts</h2><p class="small">One row per result; '
            f"artifact links open the files (the same relative paths inside the evidence package).</p>"
            f"{verdicts_section(matrix, model)}</section>"
            f'\n<section id="artifacts"><h2>Artifacts → checks → requirements</h2>{artifacts_section(matrix, model)}</section>'
            f'\n<section id="code-trace"><h2>Code trace: NNEF instruction → generated code</h2>'
            f"{code_trace_section(matrix, model)}</section>"
            f'\n<section id="structural-coverage"><h2>Structural coverage of the C programs</h2>'
            f"{structural_section(matrix, model)}</section>")
    return page(title or f"Model {model}", meta, nav, body)

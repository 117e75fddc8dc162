"""The `check` step: check a model's exported NNEF description and its tensor files.

Reads artifacts/<m>/export/ (graph.nnef and the .dat files), writes
artifacts/<m>/check/report.json (every finding, the graph's summary) and checks.json, then
the step's artifact record. The verdicts come from pipeline.nnef.checks.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from pipeline.files.atomic import write_json
from pipeline.ledger.checks import CheckResult, Verdict, results_document
from pipeline.ledger.records import record_step
from pipeline.project.layout import CHECK_REPORT_FILE, checks_path, export_data, project_relative, step_dir
from pipeline.nnef import checks
from pipeline.nnef.checker import GRAPH_FILE, CheckReport, check_paths

log = logging.getLogger(__name__)

SCHEMA_VERSION = 1
REPORT_FILE = CHECK_REPORT_FILE


def report_document(report: CheckReport, root: Path) -> dict[str, Any]:
    """report.json: findings and graph summaries, paths relative to the project root."""
    def relative_span(span: Any) -> Any:
        if span is None:
            return None
        data = span.to_json()
        data["file"] = project_relative(Path(data["file"]), root)
        return data

    findings = []
    for finding in report.findings:
        data = finding.to_json()
        data["span"] = relative_span(finding.span)
        data["related"] = [{"message": m, "span": relative_span(s)} for m, s in finding.related]
        findings.append(data)
    return {
        "schema_version": SCHEMA_VERSION,
        "ok": report.ok,
        "findings": findings,
        "graphs": [
            {
                "name": g.name,
                "item": g.item,
                "source": project_relative(Path(g.source), root),
                "inputs": g.inputs,
                "outputs": g.outputs,
                "operations": len(g.operations),
                "operation_counts": _counts(op.name for op in g.operations),
                "tensors": {name: {"dtype": t.dtype, "shape": t.shape} for name, t in sorted(g.tensors.items())},
            }
            for g in report.graphs
        ],
    }


def _counts(names: Any) -> dict[str, int]:
    counts: dict[str, int] = {}
    for name in names:
        counts[name] = counts.get(name, 0) + 1
    return dict(sorted(counts.items()))


def _semantics_order(report: CheckReport, export: Path, base: Path, model: str, read: list[str]) -> CheckResult:
    """The scalar-oracle check of the reference semantics on this model (needs a clean graph)."""
    from pipeline.semantics.checks import ORDER, model_order_check  # NumPy and the interpreter: only when run

    deploy = base / "models" / model / "deploy.yaml"
    if not report.ok or len(report.graphs) != 1:
        return CheckResult(ORDER, model, Verdict.NOT_RUN, "the exported description has errors", {}, read, [])
    return model_order_check(report.graphs[0], export, deploy, model, read + [project_relative(deploy, base)])


def run_check_step(model: str, root: Path | str = ".") -> list[CheckResult]:
    """Check artifacts/<model>/export/graph.nnef in the certification profile; write report and results."""
    base = Path(root)
    export = step_dir(model, "export", base)
    out = step_dir(model, "check", base)
    graph_file = export / GRAPH_FILE
    report = check_paths([export], profile="certification", tensors=True, finite=True)
    report_file = out / REPORT_FILE
    write_json(report_file, report_document(report, base))
    operations = sum(len(g.operations) for g in report.graphs)
    variables = sum(1 for g in report.graphs for op in g.operations if op.name == "variable")
    read = [project_relative(graph_file, base), project_relative(export, base)]
    written = [project_relative(report_file, base)]
    results = checks.verdicts(
        report.findings, model, (checks.SYNTAX, checks.SEMANTICS, checks.EXPLICIT, checks.TENSORS),
        read, written, {"operations": operations, "tensor_files": variables},
    )
    results.append(_semantics_order(report, export, base, model, read))
    write_json(checks_path(model, "check", base), results_document(results))
    record_step(model, "check", inputs=export_data(model, base), command=["python", "-m", "pipeline", "check", project_relative(export, base)],
                parameters={"profile": "certification"}, root=base)
    log.info("check %s: %d finding(s), %d operation(s)", model, len(report.findings), operations)
    return results

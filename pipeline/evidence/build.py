"""Building the evidence: one package per model, then the run-wide reports.

`build_model_package` packages one model and records the verdict of `evidence.package` in
reports/<model>/package-check.json; `build_reports` writes the trace matrix (HTML, CSV,
Markdown, JSON) and the JUnit XML for every model. Both are what the doit tasks and the
`evidence build` command call.
"""

from __future__ import annotations

import hashlib
import logging
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from pipeline.files.atomic import canonical_json, write_json, write_text
from pipeline.diagnostics import sorted_findings
from pipeline.evidence.completeness import excluded_models
from pipeline.evidence.regression import Snapshot
from pipeline.evidence.runverdict import run_findings
from pipeline.evidence import selfchecks
from pipeline.ledger.checks import CheckResult, Verdict, results_document
from pipeline.evidence.collect import package_check_path
from pipeline.evidence.junit import junit_xml
from pipeline.evidence.matrix import DEVELOPMENT, TraceMatrix, build_matrix
from pipeline.evidence.package import VerifyReport, build_package, package_path, write_package
from pipeline.evidence.render_html import render_html
from pipeline.evidence.codepages import CODE_DIR, render_code_pages
from pipeline.evidence.gaps import with_fixes
from pipeline.evidence.render_model import INDEX, render_model_page
from pipeline.files.names import confined
from pipeline.evidence.render_text import render_csv, render_markdown
from pipeline.ledger.tools import GitState, git_state
from pipeline.project.tasking import runnable_models
from pipeline.evidence.paths import REPORT_FILES, model_report_path, report_paths  # noqa: F401 (re-exported)

LOG = logging.getLogger(__name__)



@dataclass
class PackageOutcome:
    model: str
    path: Path
    verify: VerifyReport
    reproducibility: dict[str, object]
    result: CheckResult


def build_model_package(model: str, root: str | Path = ".", git: GitState | None = None,
                        mode: str = DEVELOPMENT) -> PackageOutcome:
    """Package `model`, verify the written archive, and judge evidence.package."""
    base = Path(root)
    git = git if git is not None else git_state(base)
    matrix = build_matrix(base, [model], package_results="placeholder", git=git, mode=mode)
    built = build_package(model, matrix, base)
    path, report, note = write_package(model, built, base)
    measured = {
        "package_bytes": len(built.data),
        "entries_verified": report.checked,
        "previous_build_compared": bool(note["compared"]),
        "identical_to_previous_build": note["identical"],
        "sha256": hashlib.sha256(built.data).hexdigest(),
    }
    rel = path.relative_to(base).as_posix()
    if not report.ok:
        reason = "; ".join(f.message for f in report.findings[:3])
        result = CheckResult(selfchecks.PACKAGE, model, Verdict.FAIL, f"{rel} does not verify: {reason}", measured=measured, written=[rel])
    elif note["compared"] and not note["identical"]:
        result = CheckResult(selfchecks.PACKAGE, model, Verdict.FAIL, f"{rel}: {note['reason']} (not reproducible)", measured=measured, written=[rel])
    else:
        result = CheckResult(selfchecks.PACKAGE, model, Verdict.PASS, "", measured=measured, written=[rel])
    write_json(package_check_path(model, base), results_document([result]))
    LOG.info("%s: %s (%d bytes, %s)", model, rel, len(built.data), note["reason"])
    return PackageOutcome(model, path, report, note, result)


def build_reports(root: str | Path = ".", models: list[str] | None = None, git: GitState | None = None,
                  mode: str = DEVELOPMENT, *, exclude: Iterable[str] = (), baseline: Snapshot | None = None) -> TraceMatrix:
    """Write reports/trace-matrix.{html,csv,md}, reports/<model>/report.html, reports/trace.json and reports/junit.xml.

    The run-level rules (pipeline/evidence/runverdict.py) add their findings first: models
    excluded by their deploy.yaml or by `exclude`, and the comparison with `baseline`.
    """
    base = Path(root)
    matrix = build_matrix(base, models, package_results="read", git=git, mode=mode)
    excluded = excluded_models(base, matrix.models, exclude)
    matrix.findings = sorted_findings(with_fixes(matrix.findings + run_findings(matrix, excluded, baseline)))
    paths = report_paths(base)
    write_text(paths["html"], render_html(matrix))
    for model in matrix.models:
        write_text(model_report_path(model, base), render_model_page(matrix, model, base))
        write_code_pages(matrix, model, base)
    write_text(paths["csv"], render_csv(matrix))
    write_text(paths["md"], render_markdown(matrix))
    write_text(paths["json"], canonical_json(matrix.to_json()))
    write_text(paths["junit"], junit_xml(matrix))
    return matrix


def write_code_pages(matrix: TraceMatrix, model: str, root: Path) -> None:
    """reports/<model>/code/<path>.html for every file the model's code traces name (pipeline/evidence/codepages.py);
    the pages of an earlier run go first, so that no page outlives its file."""
    folder = model_report_path(model, root).parent / CODE_DIR
    if folder.is_symlink() or folder.is_file():
        folder.unlink()
    elif folder.is_dir():
        shutil.rmtree(folder)
    traces = [t for t in matrix.code_traces if t.model == model]
    for name, text in render_code_pages(traces, root, INDEX).items():
        write_text(confined(folder.parent, *name.split("/")), text)


def build_all(root: str | Path = ".", models: list[str] | None = None, mode: str = DEVELOPMENT, *,
              exclude: Iterable[str] = (), baseline: Snapshot | None = None) -> tuple[list[PackageOutcome], TraceMatrix]:
    """Every package, then the reports (which read the packages' verdicts)."""
    base = Path(root)
    git = git_state(base)
    chosen = runnable_models(base) if models is None else models
    packages = [build_model_package(m, base, git, mode) for m in chosen]
    return packages, build_reports(base, chosen, git, mode, exclude=exclude, baseline=baseline)


__all__ = ["build_all", "build_model_package", "build_reports", "package_path", "report_paths"]

"""Where the evidence step writes: named here so `doit` can list its targets cheaply.

The builders (package, matrix, renderers) import jsonschema and the whole check
registry; the task module only needs these paths.
"""

from __future__ import annotations

from pathlib import Path

from pipeline.project.layout import REPORT_FILES, REPORTS_DIR, REQUIREMENTS_DIR  # noqa: F401 (REPORT_FILES re-exported)
PACKAGE_FILE = "evidence.zip"
PACKAGE_CHECK_FILE = "package-check.json"
MODEL_REPORT_FILE = "report.html"   # reports/<model>/report.html: the model's page of the trace matrix
BASELINE_FILE = "links.lock.json"


def report_paths(root: str | Path = ".") -> dict[str, Path]:
    return {kind: Path(root) / REPORTS_DIR / name for kind, name in REPORT_FILES.items()}


def package_path(model: str, root: str | Path = ".") -> Path:
    return Path(root) / REPORTS_DIR / model / PACKAGE_FILE


def model_report_path(model: str, root: str | Path = ".") -> Path:
    """The model's report page, beside the index (reports/trace-matrix.html links to it)."""
    return Path(root) / REPORTS_DIR / model / MODEL_REPORT_FILE


def package_check_path(model: str, root: str | Path = ".") -> Path:
    """Where the evidence builder stores the result of checking a model's package."""
    return Path(root) / REPORTS_DIR / model / PACKAGE_CHECK_FILE


def baseline_path(root: str | Path = ".") -> Path:
    """The reviewed link baseline (requirements/links.lock.json)."""
    return Path(root) / REQUIREMENTS_DIR / BASELINE_FILE

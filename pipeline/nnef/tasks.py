"""doit tasks of the check step: `check:<model>` for every exported model."""

from __future__ import annotations

from typing import Any, Iterator

from pipeline.layout import checks_path, model_names, step_dir
from pipeline.nnef.step import REPORT_FILE, run_check_step


def _run(model: str) -> bool:
    run_check_step(model)
    return True  # the verdicts are evidence; a failing check fails `verify`, not this task


def task_check() -> Iterator[dict[str, Any]]:
    """Check each model's exported NNEF description (syntax, semantics, explicitness, tensor files)."""
    for model in model_names():
        export = step_dir(model, "export")
        out = step_dir(model, "check")
        yield {
            "name": model,
            "actions": [(_run, [model])],
            "file_dep": [str(export / "graph.nnef"), str(export / "provenance.json")],
            "targets": [str(out / REPORT_FILE), str(checks_path(model, "check")), str(out / "record.json")],
            "clean": True,
        }

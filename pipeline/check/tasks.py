"""doit tasks of the check step: `check:<model>` for every exported model, and
`check:examples` for the hand-written descriptions shipped under examples/nnef/. Their code and
tools are added by dodo.py (pipeline/ledger/dependencies.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

from doit.exceptions import TaskFailed

from pipeline.ledger.freshness import coded_action, step_action
from pipeline.project.tasking import runnable_models
from pipeline.project.layout import ARTIFACTS_DIR, CHECK_REPORT_FILE, checks_path, step_dir

EXAMPLES = Path("examples") / "nnef"
EXAMPLES_REPORT = Path(ARTIFACTS_DIR) / "examples" / "check" / CHECK_REPORT_FILE


def _run(model: str) -> bool:
    from pipeline.check.step import run_check_step

    run_check_step(model)
    return True  # the verdicts are evidence; a failing check fails `verify`, not this task


def _check_examples(paths: list[str]) -> TaskFailed | None:
    """The shipped examples document the language: they must be free of errors."""
    from pipeline.files.atomic import write_json
    from pipeline.nnef.checker import check_paths
    from pipeline.check.step import report_document

    report = check_paths(paths, tensors=False)
    write_json(EXAMPLES_REPORT, report_document(report, Path(".")))
    errors = [f for f in report.findings if f.is_error]
    if errors:
        first = errors[0]
        return TaskFailed(f"{len(errors)} error(s) in examples/nnef; first: {first.span}: {first.code}: {first.message}")
    return None


def task_check() -> Iterator[dict[str, Any]]:
    """Check each model's exported NNEF description (syntax, semantics, explicitness, tensor files)."""
    for model in runnable_models("."):
        export = step_dir(model, "export")
        out = step_dir(model, "check")
        yield {
            "name": model,
            "actions": [(step_action("check", _run), [model])],
            "file_dep": [str(export / "graph.nnef"), str(export / "provenance.json")],
            "targets": [str(out / CHECK_REPORT_FILE), str(checks_path(model, "check")), str(out / "record.json")],
            "clean": True,
        }
    examples = sorted(str(p) for p in EXAMPLES.glob("*.nnef"))
    if examples:
        yield {
            "name": "examples",
            "actions": [(coded_action(_check_examples, "check:examples"), [examples])],
            "file_dep": examples,
            "targets": [str(EXAMPLES_REPORT)],
            "clean": True,
        }

"""doit tasks of the split step: `split:<model>` for every shipped model.

Each sub-task splits every deployment of models/<m>/deploy.yaml over its items and
verifies the split (pipeline.split.step). It depends on the spec and the export
(graph.nnef and provenance.json, which holds the sha256 of every tensor file), so doit runs
the export first and re-runs the split when any of them changes; its code and tools are
added by dodo.py (pipeline/ledger/dependencies.py). Without an export task
(the exporter not installed) and no export on disk, the task still runs and records
every check as `not run`.
"""

from __future__ import annotations

import importlib.util
from typing import Any, Iterator

from pipeline.project.tasking import runnable_models
from pipeline.project.layout import model_dir, step_dir
from pipeline.split.outputs import split_targets
from pipeline.ledger.freshness import step_action

__all__ = ["split_targets", "task_split"]

EXPORT_FILES = ("graph.nnef", "provenance.json")


def _export_available(model: str) -> bool:
    """Whether export outputs exist or a doit task can make them."""
    if all((step_dir(model, "export") / name).is_file() for name in EXPORT_FILES):
        return True
    try:
        return importlib.util.find_spec("pipeline.export.tasks") is not None
    except (ImportError, ValueError):
        return False


def _split(model: str) -> None:
    from pipeline.split.step import run_split_step

    run_split_step(model, ".")  # an error: step_action removes the outputs and fails the task with its code
    return None  # the verdicts are evidence; a failing check fails `verify`, not this task


def task_split() -> Iterator[dict[str, Any]]:
    """Split each model over the items of its deployments and verify the split."""
    for model in runnable_models("."):
        export = step_dir(model, "export")
        file_dep = [(model_dir(model) / "deploy.yaml").as_posix()]
        if _export_available(model):
            file_dep += [(export / name).as_posix() for name in EXPORT_FILES]
        yield {
            "name": model,
            "doc": f"split {model} over the items of its deployments and verify the split",
            "actions": [(step_action("split", _split), [model])],
            "file_dep": file_dep,
            "targets": split_targets(model),
            "clean": True,
        }

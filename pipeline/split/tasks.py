"""doit tasks of the split step: `split:<model>` for every shipped model.

Each sub-task splits every deployment of models/<m>/deploy.yaml over its items and
verifies the split (pipeline.split.step). It depends on the spec, the export
(graph.nnef and provenance.json, which holds the sha256 of every tensor file) and the
sources of the split, the NNEF front end and the reference semantics, so doit runs the
export first and re-runs the split when any of them changes. Without an export task
(the exporter not installed) and no export on disk, the task still runs and records
every check as `not run`.
"""

from __future__ import annotations

import importlib.util
from typing import Any, Iterator

from pipeline.project.tasking import deploy_outline, package_sources, runnable_models
from pipeline.project.layout import RECORD_FILE, checks_path, model_dir, step_dir
from pipeline.split.outputs import PLAN_FILE, REWRITTEN_FILE, SCHEDULE_FILE, TRACE_FILE
from pipeline.ledger.freshness import step_action

SOURCE_GLOBS = ("split", "semantics", "nnef", "numerics/vectors.py", "project/deploy.py", "files/atomic.py", "diagnostics.py", "project/layout.py")
EXPORT_FILES = ("graph.nnef", "provenance.json")


def _export_available(model: str) -> bool:
    """Whether export outputs exist or a doit task can make them."""
    if all((step_dir(model, "export") / name).is_file() for name in EXPORT_FILES):
        return True
    try:
        return importlib.util.find_spec("pipeline.export.tasks") is not None
    except (ImportError, ValueError):
        return False


def split_targets(model: str) -> list[str]:
    """The files the step will write for `model`, known from the spec before splitting.

    Later steps depend on this list (not on a glob of what exists), so their file_dep is the
    same before and after the split ran and a no-op re-run of `doit verify` stays a no-op.
    """
    out = step_dir(model, "split")
    targets = [checks_path(model, "split"), out / RECORD_FILE]
    outline = deploy_outline(model)
    for name, deployment in (outline or {}).items():
        folder = out / name
        targets += [folder / PLAN_FILE, folder / SCHEDULE_FILE, folder / TRACE_FILE]
        if deployment.rewritten:
            targets.append(folder / REWRITTEN_FILE)
        targets += [folder / f"{item}.nnef" for item in deployment.item_files]
    return [t.as_posix() for t in targets]


def _split(model: str) -> None:
    from pipeline.split.step import run_split_step

    run_split_step(model, ".")  # an error: step_action removes the outputs and fails the task with its code
    return None  # the verdicts are evidence; a failing check fails `verify`, not this task


def task_split() -> Iterator[dict[str, Any]]:
    """Split each model over the items of its deployments and verify the split."""
    sources = package_sources(SOURCE_GLOBS)
    for model in runnable_models("."):
        export = step_dir(model, "export")
        file_dep = [(model_dir(model) / "deploy.yaml").as_posix()] + sources
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

"""doit tasks of the Petri step: `petri:<model>` for every shipped model.

Inputs: the exported description, the deployment spec, and everything the split step
declares it writes (plans, schedules, item files, rewritten descriptions, interpreter
traces), so doit runs the split first and the file_dep does not change once it ran. Its
code and tools are added by dodo.py (pipeline/ledger/dependencies.py).
"""

from __future__ import annotations

from typing import Any, Iterator

from pipeline.project.layout import EXPORT_GRAPH_FILE, checks_path, model_dir, step_dir
from pipeline.split.outputs import split_targets
from pipeline.ledger.freshness import step_action
from pipeline.project.tasking import spec_deployments, runnable_models

# The step's file names (pipeline.petri.step), spelled here so that listing tasks imports no step code.
ORIGINAL = "original"
REPORT_FILE = "report.json"


def _run(model: str) -> bool:
    from pipeline.petri.step import run_petri_step

    run_petri_step(model)
    return True  # the verdicts are evidence; a failing check fails `verify`, not this task


def task_petri() -> Iterator[dict[str, Any]]:
    """Translate each model's description and splits to Petri nets and verify the execution model."""
    for model in runnable_models("."):
        export = step_dir(model, "export")
        out = step_dir(model, "petri")
        file_dep = [str(export / EXPORT_GRAPH_FILE), str(model_dir(model) / "deploy.yaml")]
        targets = [str(out / REPORT_FILE), str(checks_path(model, "petri")), str(out / "record.json"),
                   str(out / f"{ORIGINAL}.pnml"), str(out / f"{ORIGINAL}.dot")]
        file_dep += split_targets(model)
        for deployment in spec_deployments(model):
            targets += [str(out / f"{deployment}.pnml"), str(out / f"{deployment}.dot")]
        yield {
            "name": model,
            "actions": [(step_action("petri", _run), [model])],
            "file_dep": sorted(set(file_dep)),
            "targets": targets,
            "clean": True,
        }

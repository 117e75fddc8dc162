"""doit tasks of the Petri step: `petri:<model>` for every shipped model.

Inputs: the exported description, the deployment spec, and everything the split step
declares it writes (plans, schedules, item files, rewritten descriptions, interpreter
traces), so doit runs the split first and the file_dep does not change once it ran.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

from pipeline.layout import checks_path, model_dir, model_names, step_dir
from pipeline.petri.step import GRAPH_FILE, ORIGINAL, REPORT_FILE, deployments, run_petri_step
from pipeline.split.tasks import split_targets


def _run(model: str) -> bool:
    run_petri_step(model)
    return True  # the verdicts are evidence; a failing check fails `verify`, not this task


def task_petri() -> Iterator[dict[str, Any]]:
    """Translate each model's description and splits to Petri nets and verify the execution model."""
    for model in model_names():
        export = step_dir(model, "export")
        out = step_dir(model, "petri")
        file_dep = [str(export / GRAPH_FILE), str(model_dir(model) / "deploy.yaml")]
        targets = [str(out / REPORT_FILE), str(checks_path(model, "petri")), str(out / "record.json"),
                   str(out / f"{ORIGINAL}.pnml"), str(out / f"{ORIGINAL}.dot")]
        file_dep += split_targets(model)
        names, _ = deployments(model, Path("."))
        for deployment in names:
            targets += [str(out / f"{deployment}.pnml"), str(out / f"{deployment}.dot")]
        yield {
            "name": model,
            "actions": [(_run, [model])],
            "file_dep": sorted(set(file_dep)),
            "targets": targets,
            "clean": True,
        }

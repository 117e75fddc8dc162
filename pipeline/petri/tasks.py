"""doit tasks of the Petri step: `petri:<model>` for every shipped model.

Inputs: the exported description, the deployment spec, and per deployment the split
step's plan, schedule, item files, original (rewritten) description and interpreter trace
(all targets of `split:<model>`, so doit runs the split first).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

from pipeline.layout import checks_path, model_dir, model_names, step_dir
from pipeline.petri.plan import load_plan
from pipeline.petri.step import GRAPH_FILE, ORIGINAL, REPORT_FILE, deployments, run_petri_step
from pipeline.split.plan import PLAN_FILE, SCHEDULE_FILE, TRACE_FILE


def _run(model: str) -> bool:
    run_petri_step(model)
    return True  # the verdicts are evidence; a failing check fails `verify`, not this task


def _split_inputs(model: str, deployment: str) -> list[str]:
    """file_dep of one deployment: what the split step writes for it."""
    split = step_dir(model, "split") / deployment
    plan = split / PLAN_FILE
    deps = [str(plan), str(split / SCHEDULE_FILE), str(split / TRACE_FILE)]
    if plan.is_file():
        try:
            parsed = load_plan(plan)
        except Exception:  # noqa: BLE001 - a malformed plan: the step reports it
            parsed = None
        if parsed is not None:
            deps += [str(p) for p in parsed.item_files]
            if parsed.original is not None:
                deps.append(str(parsed.original))
    return deps


def task_petri() -> Iterator[dict[str, Any]]:
    """Translate each model's description and splits to Petri nets and verify the execution model."""
    for model in model_names():
        export = step_dir(model, "export")
        out = step_dir(model, "petri")
        file_dep = [str(export / GRAPH_FILE), str(model_dir(model) / "deploy.yaml")]
        targets = [str(out / REPORT_FILE), str(checks_path(model, "petri")), str(out / "record.json"),
                   str(out / f"{ORIGINAL}.pnml"), str(out / f"{ORIGINAL}.dot")]
        names, _ = deployments(model, Path("."))
        for deployment in names:
            file_dep += _split_inputs(model, deployment)
            targets += [str(out / f"{deployment}.pnml"), str(out / f"{deployment}.dot")]
        yield {
            "name": model,
            "actions": [(_run, [model])],
            "file_dep": sorted(set(file_dep)),
            "targets": targets,
            "clean": True,
        }

"""doit tasks of the Petri step: `petri:<model>` for every shipped model."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any, Iterator

from pipeline.layout import checks_path, model_dir, model_names, step_dir
from pipeline.petri.plan import load_plan
from pipeline.petri.step import GRAPH_FILE, ORIGINAL, REPORT_FILE, deployments, run_petri_step, trace_files


def _run(model: str) -> bool:
    run_petri_step(model)
    return True  # the verdicts are evidence; a failing check fails `verify`, not this task


def _split_task_exists() -> bool:
    """Whether the split step defines its tasks (then its outputs are targets doit can build)."""
    try:
        return importlib.util.find_spec("pipeline.split.tasks") is not None
    except (ImportError, ValueError):
        return False


def _declared_traces(model: str) -> set[str] | None:
    """The trace files the run step declares as targets (None when it defines no tasks).

    Depending on them, rather than on the traces that happen to exist, makes doit run the
    run step first, so the replay never lags one invocation behind.
    """
    try:
        if importlib.util.find_spec("pipeline.target.tasks") is None:
            return None
        from pipeline.target.tasks import task_target
    except (ImportError, ValueError):
        return None
    for task in task_target():
        if task.get("name") == model:
            return {t for t in task.get("targets", []) if Path(t).name.startswith("trace") and t.endswith(".json")}
    return set()


def _split_inputs(model: str, deployment: str, splitter: bool, traces: set[str] | None) -> tuple[list[str], bool]:
    """file_dep of one deployment, and whether its nets will be written."""
    split = step_dir(model, "split") / deployment
    plan, schedule = split / "plan.json", split / "schedule.json"
    deps: list[str] = []
    if splitter or plan.is_file():
        deps += [str(plan), str(schedule)] if splitter or schedule.is_file() else [str(plan)]
    if plan.is_file():
        try:
            parsed = load_plan(plan)
        except Exception:  # a malformed plan: the step reports it; doit only needs the existing files
            parsed = None
        if parsed is not None:
            deps += [str(p) for p in parsed.item_files if p.is_file()]
            if parsed.original is not None and parsed.original.is_file():
                deps.append(str(parsed.original))
    run = step_dir(model, "run") / deployment
    if traces is None:
        deps += [str(p) for p in trace_files(model, deployment, Path("."))]
    else:
        deps += sorted(t for t in traces if Path(t).parent == run)
    return deps, bool(deps)


def task_petri() -> Iterator[dict[str, Any]]:
    """Translate each model's description and splits to Petri nets and verify the execution model."""
    splitter = _split_task_exists()
    for model in model_names():
        traces = _declared_traces(model)
        export = step_dir(model, "export")
        out = step_dir(model, "petri")
        file_dep = [str(export / GRAPH_FILE), str(model_dir(model) / "deploy.yaml")]
        targets = [str(out / REPORT_FILE), str(checks_path(model, "petri")), str(out / "record.json"),
                   str(out / f"{ORIGINAL}.pnml"), str(out / f"{ORIGINAL}.dot")]
        names, _ = deployments(model, Path("."))
        for deployment in names:
            deps, nets = _split_inputs(model, deployment, splitter, traces)
            file_dep += deps
            if nets:
                targets += [str(out / f"{deployment}.pnml"), str(out / f"{deployment}.dot")]
        yield {
            "name": model,
            "actions": [(_run, [model])],
            "file_dep": sorted(set(file_dep)),
            "targets": targets,
            "clean": True,
        }

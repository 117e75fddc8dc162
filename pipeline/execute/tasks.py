"""doit tasks of the execute step: `execute:<model>` for every shipped model.

The step is named `execute` everywhere (package, task group, artifacts/<m>/execute/, the
evidence's grouping): doit reserves `run` (one of its commands) as a task name, and tools
read a folder named `target/` as build output.

Each sub-task builds and runs every generated deployment (pipeline.execute.step). It depends
on the spec (vectors, seed, MET runs) and on codegen's status.json (which holds the sha256 of
every generated file); its code (the runtime, the builder, the runner) and tools (compilers,
emulators, valgrind) are added by dodo.py (pipeline/ledger/dependencies.py). Its targets
include the trace files, which the Petri step replays when they exist.
"""

from __future__ import annotations

from typing import Any, Iterator

from pipeline.project.targets import code_kind
from pipeline.project.layout import RECORD_FILE, checks_path, model_dir, step_dir
from pipeline.execute.outputs import NOISE_SEEDS, RUN_FILE, STEP
from pipeline.ledger.freshness import step_action
from pipeline.project.tasking import spec_deployments, runnable_models


def _run(model: str) -> bool:
    from pipeline.execute.step import run_execute_step

    run_execute_step(model, ".")
    return True  # measurements; the compare step judges them


def task_execute() -> Iterator[dict[str, Any]]:
    """Build, run, trace (with and without noise), time and count instructions of each deployment."""
    for model in runnable_models("."):
        out = step_dir(model, STEP)
        targets = [checks_path(model, STEP).as_posix(), (out / RECORD_FILE).as_posix()]
        for name, targets_of_items in spec_deployments(model).items():
            folder = out / name
            targets.append((folder / RUN_FILE).as_posix())
            # the C program's deployments (cpu and cuda items, docs/execute.md) are traced
            if code_kind(targets_of_items) == "program":
                targets += [(folder / f"trace-{kind}.json").as_posix()
                            for kind in ["plain"] + [f"noise-{seed}" for seed in NOISE_SEEDS]]
        yield {
            "name": model,
            "doc": f"build and run {model}'s generated code: outputs, traces, timings, instruction counts",
            "actions": [(step_action("execute", _run), [model])],
            "file_dep": [(model_dir(model) / "deploy.yaml").as_posix(),
                         (step_dir(model, "codegen") / "status.json").as_posix()],
            "targets": targets,
            "clean": True,
        }



"""doit tasks of the codegen step: `codegen:<model>` for every shipped model.

Each sub-task generates the code of every deployment of models/<m>/deploy.yaml that has a
generator (C programs, with .cu items next to the cpu items of a mixed deployment; one-item
CUDA deployments) and checks it (pipeline.codegen.step). It depends on the spec, every file
the split step declares (plans, schedules, item files) and the export (graph and
provenance.json, which holds the sha256 of every tensor file); its code (the generator, its
runtime, the reference programs it emits, the validators) and tools (the compilers, nvcc) are
added by dodo.py (pipeline/ledger/dependencies.py). status.json (a target) holds the sha256
of every generated file, so the execute step re-runs on any change.
"""

from __future__ import annotations

from typing import Any, Iterator

from pipeline.project.layout import RECORD_FILE, checks_path, model_dir, step_dir
from pipeline.split.outputs import split_targets
from pipeline.ledger.freshness import step_action
from pipeline.project.tasking import runnable_models


def _generate(model: str) -> bool:
    from pipeline.codegen.step import run_codegen_step

    run_codegen_step(model, ".")
    return True  # the verdicts are evidence; a failing check fails `verify`, not this task


def task_codegen() -> Iterator[dict[str, Any]]:
    """Generate and check the code of every deployment of each model that has a generator."""
    for model in runnable_models("."):
        export = step_dir(model, "export")
        file_dep = [(model_dir(model) / "deploy.yaml").as_posix(), (export / "graph.nnef").as_posix(),
                    (export / "provenance.json").as_posix()]
        file_dep += split_targets(model)
        out = step_dir(model, "codegen")
        yield {
            "name": model,
            "doc": f"generate and check the code of {model}'s deployments",
            "actions": [(step_action("codegen", _generate), [model])],
            "file_dep": sorted(set(file_dep)),
            "targets": [checks_path(model, "codegen").as_posix(), (out / "status.json").as_posix(),
                        (out / RECORD_FILE).as_posix()],
            "clean": True,
        }

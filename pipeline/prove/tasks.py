"""doit tasks of the prove step: `prove:<model>` for every shipped model.

Each sub-task runs Frama-C's EVA on the generated C items of the model's deployments
(pipeline.prove.step). It depends on the spec (the input ranges) and on codegen's status.json,
which holds the sha256 of every generated file; its code (the driver, the verdict rules, the
justified assertions) and tools (frama-c) are added by dodo.py (pipeline/ledger/dependencies.py).
The time limits are pipeline/prove/step.py's ITEM_LIMIT_S and MODEL_BUDGET_S (docs/prove.md "Time").
"""

from __future__ import annotations

from typing import Any, Iterator

from pipeline.ledger.freshness import step_action
from pipeline.project.layout import RECORD_FILE, checks_path, model_dir, step_dir
from pipeline.project.tasking import runnable_models


def _prove(model: str) -> bool:
    from pipeline.prove.step import run_prove_step

    run_prove_step(model, ".")
    return True  # the verdicts are evidence; a failing check fails `verify`, not this task


def task_prove() -> Iterator[dict[str, Any]]:
    """Prove the generated C of each model free of run-time errors over its input ranges (Frama-C EVA)."""
    for model in runnable_models("."):
        codegen = step_dir(model, "codegen")
        out = step_dir(model, "prove")
        yield {
            "name": model,
            "doc": f"prove {model}'s generated C free of run-time errors (Frama-C EVA)",
            "actions": [(step_action("prove", _prove), [model])],
            "file_dep": [(model_dir(model) / "deploy.yaml").as_posix(), (codegen / "status.json").as_posix()],
            "targets": [checks_path(model, "prove").as_posix(), (out / RECORD_FILE).as_posix()],
            "clean": True,
        }

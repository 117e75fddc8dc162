"""Split: a deployment spec -> one graphitem description per hardware/software item.

    deploy.yaml + export --allocation.py (semantics, rewrites: layer_parallel.py, halo.py)--> Deployment
    Deployment --splitter.py--> Split --emit.py / plan.py / schedule.py--> <ITEM>.nnef, plan.json, schedule.json
    files --union.py, checker, plain_nnef.py, workers.py, checks.py--> check results (step.py, tasks.py, command.py)

What the split preserves: the items together compute exactly what the description
computes (HLR-SPL-001..003), communicating only through declared sync variables. The
splitter and the rewrite are generators and are not trusted; the validators read the
files they write: the checker with its multi-item rules (nnef.multiitem), the union
check (union.py), the Khronos parser (plain_nnef.py), the executable split semantics against
the unsplit interpreter (workers.py), the rewrite check, and the Petri-net equivalence
(pipeline.petri). docs/split.md is the user documentation.
"""

from typing import Any

# Public names, imported on first use (PEP 562): doit's task generator imports this package
# and must not pay for the splitter, the interpreter and numpy on a no-op run.
_PUBLIC = {
    "Deployment": "pipeline.split.allocation",
    "resolve_deployment": "pipeline.split.allocation",
    "ExecutionResult": "pipeline.split.workers",
    "compare_with_reference": "pipeline.split.workers",
    "execute_split": "pipeline.split.workers",
    "trace_document": "pipeline.split.workers",
    "LayerParallelSpec": "pipeline.split.layer_parallel",
    "layer_parallel": "pipeline.split.layer_parallel",
    "rewrite_graph": "pipeline.split.layer_parallel",
    "Schedule": "pipeline.split.plan",
    "load_plan": "pipeline.split.plan",
    "load_schedule": "pipeline.split.plan",
    "plan_document": "pipeline.split.plan",
    "schedule_document": "pipeline.split.plan",
    "Split": "pipeline.split.splitter",
    "split_deployment": "pipeline.split.splitter",
    "run_split_step": "pipeline.split.step",
    "split_to_directory": "pipeline.split.step",
}


def __getattr__(name: str) -> Any:
    if name in _PUBLIC:
        import importlib

        return getattr(importlib.import_module(_PUBLIC[name]), name)
    raise AttributeError(f"module 'pipeline.split' has no attribute {name!r}")


__all__ = [
    "Deployment", "resolve_deployment", "ExecutionResult", "compare_with_reference", "execute_split",
    "trace_document", "LayerParallelSpec", "layer_parallel", "rewrite_graph", "Schedule", "load_plan",
    "load_schedule", "plan_document", "schedule_document", "Split", "split_deployment", "run_split_step",
    "split_to_directory",
]

"""Split: a deployment spec -> one graphitem description per hardware/software item.

    deploy.yaml + export --allocation.py (semantics, rewrites: layer_parallel.py, halo.py)--> Deployment
    Deployment --splitter.py--> Split --emit.py / plan.py / schedule.py--> <ITEM>.nnef, plan.json, schedule.json
    files --union.py, checker, khronos.py, execute.py, checks.py--> check results (step.py, tasks.py, command.py)

What the split preserves: the items together compute exactly what the description
computes (HLR-SPL-001..003), communicating only through declared sync variables. The
splitter and the rewrite are generators and are not trusted; the validators read the
files they write: the checker with its multi-item rules (nnef.multiitem), the union
check (union.py), the Khronos parser (khronos.py), the executable split semantics against
the unsplit interpreter (execute.py), the rewrite check, and the Petri-net equivalence
(pipeline.petri). docs/split.md is the user documentation.
"""

from pipeline.split.allocation import Deployment, resolve_deployment
from pipeline.split.execute import ExecutionResult, compare_with_reference, execute_split, trace_document
from pipeline.split.layer_parallel import LayerParallelSpec, layer_parallel, rewrite_graph
from pipeline.split.plan import Schedule, load_plan, load_schedule, plan_document, schedule_document
from pipeline.split.splitter import Split, split_deployment
from pipeline.split.step import run_split_step, split_to_directory

__all__ = [
    "Deployment", "resolve_deployment", "ExecutionResult", "compare_with_reference", "execute_split",
    "trace_document", "LayerParallelSpec", "layer_parallel", "rewrite_graph", "Schedule", "load_plan",
    "load_schedule", "plan_document", "schedule_document", "Split", "split_deployment", "run_split_step",
    "split_to_directory",
]

"""The files the split step writes per deployment: named here so task listing stays light.

The doit tasks of split, petri and codegen need these names to declare targets and inputs;
importing them from the planner would load NumPy and the NNEF checker on every `doit` start,
and importing them from `pipeline.split.tasks` would make the split step's code part of
theirs (pipeline/project/closure.py).
"""

from __future__ import annotations

from pipeline.project.layout import RECORD_FILE, checks_path, step_dir
from pipeline.project.tasking import deploy_outline

PLAN_FILE = "plan.json"
SCHEDULE_FILE = "schedule.json"
TRACE_FILE = "trace-interpreter.json"
REWRITTEN_FILE = "rewritten.nnef"
WHOLE_DLA_FILE = "whole-dla.json"  # split/: whether the whole network fits one DLA item (read by compare)


def split_targets(model: str) -> list[str]:
    """The files the step will write for `model`, known from the spec before splitting.

    Later steps depend on this list (not on a glob of what exists), so their file_dep is the
    same before and after the split ran and a no-op re-run of `doit verify` stays a no-op.
    """
    out = step_dir(model, "split")
    targets = [checks_path(model, "split"), out / RECORD_FILE, out / WHOLE_DLA_FILE]
    outline = deploy_outline(model)
    for name, deployment in (outline or {}).items():
        folder = out / name
        targets += [folder / PLAN_FILE, folder / SCHEDULE_FILE, folder / TRACE_FILE]
        if deployment.rewritten:
            targets.append(folder / REWRITTEN_FILE)
        targets += [folder / f"{item}.nnef" for item in deployment.item_files]
    return [t.as_posix() for t in targets]

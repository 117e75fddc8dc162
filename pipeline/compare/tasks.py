"""doit tasks of the compare step: `compare:<model>` for every shipped model.

Each sub-task judges the execute step's measurements (pipeline.compare.step): against the
reference semantics and onnxruntime, traces on the Petri net, MET against the budget and the
accepted baseline, instruction counts. It depends on run.json of every deployment (which
holds the sha256 of everything the run measured), the spec, the accepted MET baseline when
there is one, the model, the export and the requirements (the MET budget); its code (the
comparison, the reference semantics, the Petri trace replay) and tools (onnxruntime, numpy)
are added by dodo.py (pipeline/ledger/dependencies.py).
"""

from __future__ import annotations

from typing import Any, Iterator

from pipeline.project.layout import MET_BASELINE_FILE, RECORD_FILE, checks_path, model_dir, step_dir
from pipeline.ledger.freshness import step_action
from pipeline.project.tasking import spec_deployments, runnable_models


def _compare(model: str) -> bool:
    from pipeline.compare.step import run_compare_step

    run_compare_step(model, ".")
    return True  # the verdicts are evidence; a failing check fails `verify`, not this task


def task_compare() -> Iterator[dict[str, Any]]:
    """Numeric, trace and MET verdicts of each model's executed code."""
    deps = ["requirements/hlr.yaml"]
    for model in runnable_models("."):
        run = step_dir(model, "execute")
        export = step_dir(model, "export")
        file_dep = [(model_dir(model) / "deploy.yaml").as_posix(), (model_dir(model) / "model.onnx").as_posix(),
                    (export / "graph.nnef").as_posix(), (export / "provenance.json").as_posix(),
                    (export / "validation.json").as_posix(), (run / RECORD_FILE).as_posix()]
        file_dep += [(run / name / "run.json").as_posix() for name in spec_deployments(model)]
        baseline = model_dir(model) / MET_BASELINE_FILE
        if baseline.is_file():
            file_dep.append(baseline.as_posix())
        out = step_dir(model, "compare")
        yield {
            "name": model,
            "doc": f"compare {model}'s executed code with the references; traces; MET",
            "actions": [(step_action("compare", _compare), [model])],
            "file_dep": sorted(set(file_dep)) + deps,
            "targets": [checks_path(model, "compare").as_posix(), (out / RECORD_FILE).as_posix()],
            "clean": True,
        }

"""doit tasks of the export step: `export:<model>` for every shipped model.

Each sub-task exports models/<m>/model.onnx to artifacts/<m>/export/, validates it
against onnxruntime on the vectors of models/<m>/deploy.yaml and writes checks.json
(pipeline.export.step). It re-runs when the model or its deployment spec changes, and
when its code (the exporter, the reference semantics, the NNEF front end, the shared
vector/metric modules) or tools (onnx, onnxruntime, numpy) change: dodo.py adds those
(pipeline/ledger/dependencies.py). The tensor files are listed (with their sha256) in provenance.json, a
target: a later task depending on provenance.json sees every tensor change.
"""

from __future__ import annotations

from typing import Any, Iterator

from pipeline.ledger.freshness import step_action
from pipeline.project.tasking import runnable_models
from pipeline.project.layout import (EXPORT_GRAPH_FILE, EXPORT_PROVENANCE_FILE, EXPORT_VALIDATION_FILE, checks_path, model_dir,
                             step_dir)


def _export(model: str) -> None:
    from pipeline.export.step import run_export_step

    run_export_step(model, ".")


def task_export() -> Iterator[dict[str, Any]]:
    """Export each model to NNEF, validate it against onnxruntime, record the checks."""
    for model in runnable_models("."):
        out = step_dir(model, "export")
        yield {
            "name": model,
            "doc": f"export {model} to NNEF and validate it",
            "actions": [(step_action("export", _export), [model])],
            "file_dep": [(model_dir(model) / "model.onnx").as_posix(), (model_dir(model) / "deploy.yaml").as_posix()]
            + sorted(p.as_posix() for p in model_dir(model).glob("*.np[yz]")),  # trained_reference files
            "targets": [(out / name).as_posix() for name in (EXPORT_GRAPH_FILE, EXPORT_PROVENANCE_FILE, EXPORT_VALIDATION_FILE)]
            + [checks_path(model, "export").as_posix(), (out / "record.json").as_posix()],
            "clean": True,
        }

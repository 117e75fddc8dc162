"""The export step for one shipped model: export, validate, check, write the evidence.

    models/<m>/model.onnx + deploy.yaml  ->  artifacts/<m>/export/
        graph.nnef, <label>.dat, provenance.json   (pipeline.export.exporter)
        validation.json                            (pipeline.export.validate)
        checks.json                                (pipeline.export.checks)
        record.json                                (pipeline.ledger.records: hashes, tools)

An unsupported model raises ExportError and writes nothing; a numeric disagreement is a
`fail` verdict recorded in checks.json (the step itself completes, so that the evidence
step can report it).
"""

from __future__ import annotations

import logging
import os
from dataclasses import replace
from pathlib import Path

from pipeline.files.atomic import write_json
from pipeline.project.deploy import check_inputs_match, load_deploy
from pipeline.ledger.checks import CheckResult, results_document
from pipeline.ledger.records import record_step
from pipeline.export import checks, trained
from pipeline.export.exporter import GRAPH_FILE, PROVENANCE_FILE, ExportResult, convert, publish
from pipeline.export.validate import VALIDATION_FILE, settings_from_spec, validate_export
from pipeline.project.layout import CHECKS_FILE, checks_path, model_dir, step_dir

log = logging.getLogger(__name__)

STEP = "export"


def _relative(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()


def io_shape(result: ExportResult, onnx_name: str) -> list[int]:
    """The static shape of a graph input or output of an export (its NNEF tensor's)."""
    nnef = result.inputs.get(onnx_name) or result.outputs[onnx_name]
    return list(result.graph.tensors[nnef].shape or [])


def run_export_step(model: str, root: str | os.PathLike[str] = ".") -> list[CheckResult]:
    """Export, validate and check `model`; returns the check results written to checks.json."""
    base = Path(root)
    onnx_path = model_dir(model, base) / "model.onnx"
    deploy_path = model_dir(model, base) / "deploy.yaml"
    out = step_dir(model, STEP, base)
    spec = load_deploy(deploy_path)
    result = convert(onnx_path)
    check_inputs_match(spec.inputs, {name: result.graph.tensors[nnef].shape or [] for name, nnef in result.inputs.items()},
                       spec.path)
    publish(result.files, out)
    settings = replace(settings_from_spec(spec), source=_relative(deploy_path, base))
    report = validate_export(onnx_path, out, settings, model)
    write_json(out / VALIDATION_FILE, report.to_json())
    rel = lambda p: _relative(p, base)  # noqa: E731
    sources = [rel(onnx_path), rel(deploy_path)]
    exported = [rel(out / name) for name in sorted(result.files)]
    graph_files = [rel(out / name) for name in sorted(result.files) if name != PROVENANCE_FILE]
    results = [
        checks.numeric_result(model, report, sources + graph_files, [rel(out / VALIDATION_FILE)]),
        checks.tolerance_result(model, report, sources + graph_files, [rel(out / VALIDATION_FILE)]),
        *checks.bound_results(model, report, sources + graph_files, [rel(out / VALIDATION_FILE)]),
        checks.discriminating_result(model, report, sources + graph_files, [rel(out / VALIDATION_FILE)]),
        checks.explicit_result(model, out, graph_files),
        checks.trace_result(model, out, onnx_path, sources[:1] + exported),
        checks.khronos_result(model, out, graph_files),
        checks.finite_result(model, result.model, sources[:1] + graph_files, out),
        checks.reject_result(model),
        trained.trained_result(model, spec.trained, model_dir(model, base), onnx_path, out, result.inputs,
                               result.outputs, {n: io_shape(result, n) for n in result.inputs},
                               {n: io_shape(result, n) for n in result.outputs},
                               sources + [rel(model_dir(model, base) / f) for f in trained.reference_files(spec.trained)]
                               + graph_files),
    ]
    write_json(checks_path(model, STEP, base), results_document(results))
    record_step(model, STEP, inputs=sources + [rel(model_dir(model, base) / f)
                                                for f in trained.reference_files(spec.trained)], command=["doit", f"export:{model}"], root=base,
                parameters={"vectors": settings.vectors, "seed": settings.seed,
                            "max_abs_error": settings.tolerance.max_abs_error,
                            "max_rel_error": settings.tolerance.max_rel_error})
    log.info("export %s: %s", model, ", ".join(f"{r.check_id} {r.verdict.value}" for r in results))
    return results


__all__ = ["run_export_step", "GRAPH_FILE", "PROVENANCE_FILE", "VALIDATION_FILE", "CHECKS_FILE"]

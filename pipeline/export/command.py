"""`python -m pipeline export MODEL.onnx OUTDIR [--deploy deploy.yaml] [--vectors N] [--seed S] [--no-validate]`.

Writes OUTDIR/graph.nnef, one <label>.dat per variable and provenance.json, then (unless
--no-validate) runs the ONNX model (onnxruntime) and the NNEF (reference semantics) on
the same seeded vectors, writes OUTDIR/validation.json and prints one row per output.
Vectors, seed, input distribution and tolerance come from --deploy (a deploy.yaml), else
the defaults: uniform [0, 1) inputs, 100 vectors, seed 0, max abs error 1e-5.
Exit status: 0 exported (and validated), 1 validation failed, 2 bad input (unsupported
construct, bad deployment spec, unusable OUTDIR): the error, and nothing written. A
validation that cannot complete (a coded error, an internal error, an interrupt) removes
the export it was validating: a failed export leaves no OUTDIR behind.
"""

from __future__ import annotations

import argparse
import shutil
from typing import Any

from pipeline.files.atomic import write_json
from pipeline.project.deploy import check_inputs_match, load_deploy
from pipeline.diagnostics import PipelineError
from pipeline.export.exporter import convert, publish
from pipeline.export.validate import VALIDATION_FILE, default_settings, settings_from_spec, validate_export
from pipeline.terminal import EXIT_FAILED, EXIT_OK, fail_usage, report_error, say


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "export",
        help="export an ONNX model to NNEF and validate it",
        description="Export an ONNX model to NNEF (graph.nnef + .dat tensors + provenance.json in OUTDIR), then "
                    "validate it against onnxruntime on seeded random inputs.",
    )
    parser.add_argument("model", metavar="MODEL.onnx", help="the ONNX model")
    parser.add_argument("outdir", metavar="OUTDIR", help="output directory (created; a previous export is replaced)")
    parser.add_argument("--deploy", metavar="deploy.yaml", help="deployment spec: inputs, vectors, seed, tolerance")
    parser.add_argument("--vectors", type=int, metavar="N", help="number of validation vectors (default: spec or 100)")
    parser.add_argument("--seed", type=int, metavar="S", help="seed of the validation vectors (default: spec or 0)")
    parser.add_argument("--no-validate", action="store_true", help="export only")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.vectors is not None and args.vectors <= 0:
        return fail_usage("--vectors must be positive")
    if args.seed is not None and args.seed < 0:
        return fail_usage("--seed must be non-negative")
    try:
        spec = load_deploy(args.deploy) if args.deploy else None
        result = convert(args.model)
        shapes = {onnx_name: result.graph.tensors[nnef].shape or [] for onnx_name, nnef in result.inputs.items()}
        if spec is not None:
            check_inputs_match(spec.inputs, shapes, spec.path)
        publish(result.files, args.outdir)
    except PipelineError as exc:
        return report_error(exc)
    tensors = len(result.files) - 2
    say(f"exported {len(result.model.nodes)} ONNX nodes (opset {result.model.opset}) to "
          f"{len(result.graph.operations)} NNEF operations and {tensors} tensor files in {args.outdir}")
    if args.no_validate:
        return EXIT_OK
    settings = (settings_from_spec(spec, args.vectors, args.seed) if spec is not None
                else default_settings(shapes, args.vectors, args.seed))
    try:
        report = validate_export(args.model, args.outdir, settings)
        write_json(f"{args.outdir}/{VALIDATION_FILE}", report.to_json())
    except PipelineError as exc:
        _remove_export(args.outdir)
        return report_error(exc)
    except BaseException:   # an internal error (reported by the CLI) or an interrupt: no half export left
        _remove_export(args.outdir)
        raise
    say(report.table())
    return EXIT_OK if report.passed else EXIT_FAILED


def _remove_export(outdir: str) -> None:
    """Remove the export this command published (a failed export leaves nothing that looks like one)."""
    shutil.rmtree(outdir, ignore_errors=True)

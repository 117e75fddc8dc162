"""The NVDLA part of the compare step: an emulated NVDLA run judged against HLR-NUM-004 (the network's FP16
bound, pipeline.compare.nvdla_bound), which layers to move when it fails, and why a model without an nvdla
item has none (as the split step recorded it: compare does not legalize)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np

from pipeline.compare import checks, fp16_layers, nvdla_bound
from pipeline.compare.checks import result
from pipeline.compare.context import Run
from pipeline.compare.numeric import compare
from pipeline.compare.reference import read_inputs
from pipeline.files.atomic import write_json
from pipeline.ledger.checks import CheckResult, Obtained, Verdict
from pipeline.ledger.requirements import load_requirements
from pipeline.nnef.checker import check_paths
from pipeline.nnef.tensorfile import read_tensor
from pipeline.project.layout import project_relative, step_dir
from pipeline.semantics import load_variables
from pipeline.split.outputs import WHOLE_DLA_FILE

log = logging.getLogger(__name__)


def judge_nvdla(run: Run, reference: dict[str, np.ndarray]) -> CheckResult:
    """compare.nvdla_reference on an emulated NVDLA run: HLR-NUM-004, every output within the network's
    FP16 error bound of its exact value (pipeline.compare.nvdla_bound), or within the absolute
    parameter where the bound is unavailable or does not discriminate; the distance to the float32
    reference is recorded too."""
    subject, doc, folder, root = run.subject, run.doc, run.folder, run.root
    requirement = run.spec.deployments[run.name].fp16  # the deployment's stated FP16 requirement, if any
    requirements = load_requirements(root)
    precision = doc["precision"]
    parameter = {"fp16": "fp16_max_abs_error", "int8": "int8_max_abs_error"}[precision]
    tolerance = float(requirements.parameter("HLR-NUM-004", parameter))
    read = list(doc["outputs"].values())
    outputs = {n: read_tensor(root / p) for n, p in doc["outputs"].items()}
    comparison = compare(outputs, reference, max_abs_error=tolerance)
    model = doc.get("model") or subject.split("/")[0]
    judged, why = None, f"no {precision} bound rule"
    if precision == "fp16":
        try:
            judged = nvdla_bound.judge_run(model, root, outputs, tolerance, requirement, doc.get("deployment"),
                                           list(doc.get("nvdla_items") or []), doc.get("target") != "mixed")
        except Exception as error:  # no enclosure of the exact value: the absolute parameter, and why
            log.warning("compare %s: no exact value: %s", subject, error)
            why = f"no enclosure of the exact value ({type(error).__name__}: {error})"
    # without a judgement (INT8, no exact value): the absolute parameter against the float32 reference
    bound_doc = judged.to_json() if judged else {"basis": nvdla_bound.ABSOLUTE, "why": why}
    path = write_json(folder / "nvdla-numeric.json", {
        "schema_version": 1, "emulation": doc["emulation"], "mode": doc["mode"], "mode_meaning": doc["mode_meaning"],
        "precision": precision, "tolerance": {"requirement": "HLR-NUM-004", "parameter": parameter,
                                              "max_abs_error": tolerance, "basis": bound_doc["basis"]},
        "bound": bound_doc, **comparison.to_json()})
    obtained = Obtained.emulation(doc["emulation"])
    stats = comparison.measured()
    measured = {"vectors": doc["vectors"], "precision": precision, "tolerance_max_abs_error": tolerance,
                "tolerance_parameter": f"HLR-NUM-004 {parameter}", "mode": doc["mode"],
                "configuration": doc["configuration"], **stats,
                "tolerance_basis": bound_doc["basis"]}
    if judged is not None:
        # max_abs_error_to_float64: the same figure under its name before issue 41, which
        # pipeline/evidence/pictures.py reads (issues 36/39 own it): an alias until it reads the new one
        measured.update({"max_abs_error_to_exact": judged.max_abs_error,
                         "max_abs_error_to_float64": judged.max_abs_error, "max_bound": judged.max_bound,
                         "max_error_to_bound": judged.max_ratio, "elements_beyond": judged.beyond,
                         **{f"{n}.tolerance_basis": o["basis"] for n, o in sorted(judged.outputs.items())}})
        for limit, entry in sorted(((judged.requirement or {}).get("limits") or {}).items()):
            measured.update({f"fp16_requirement.{limit}": entry["limit"], f"fp16_requirement.{limit}.dla": entry["dla"],
                             f"fp16_requirement.{limit}.independent_fp16": entry["independent_fp16"]})
    written = [project_relative(path, root)]
    applied = f"precision {precision.upper()}, emulator mode {doc['mode']}, {doc['vectors']} vectors"
    if judged is None:
        failure = comparison.first_failure()
        verdict_ok, clause = failure is None, (f"absolute tolerance {parameter} = {tolerance:g} against the float32 "
                                               f"reference, {why} ({failure.reason if failure else 'within'})")
    else:
        verdict_ok, clause = judged.passed, nvdla_bound.describe(judged)
    clause += f" (HLR-NUM-004; against the float32 reference: max |error| {stats['max_abs_error']:.3g})"
    if not verdict_ok:
        limit = float((requirement or {}).get("max_abs_error") or tolerance)
        ranking = _fp16_layers(model, run.name, root, limit)
        if isinstance(ranking, str):
            clause += f"; which layers to move was not evaluated: {ranking}"
        else:
            written.append(project_relative(write_json(folder / "fp16-layers.json",
                                                       {"schema_version": 1, **ranking.to_json()}), root))
            measured.update({"fp16_layers_to_move": ", ".join(ranking.move) or None,
                             "fp16_layers_error_after_move": ranking.remaining})
            clause += f"; {ranking.describe()}"
        return result(checks.NVDLA_REFERENCE, subject, Verdict.FAIL, f"{applied}: {clause}", measured, read,
                      written, obtained)
    return result(checks.NVDLA_REFERENCE, subject, Verdict.EMULATED,
                  f"{applied}: {clause}; top-1 agreement {stats['top1_agreement']:.0%}; no NVDLA here, so never pass",
                  measured, read, written, obtained)


def _fp16_layers(model: str, deployment: str, root: Path, tolerance: float) -> fp16_layers.LayerRanking | str:
    """The layers of a deployment's nvdla items ranked by their FP16 error, and the set to move
    (pipeline.compare.fp16_layers), on the execute step's vectors; why not, as a string."""
    try:
        split_dir = step_dir(model, "split", root) / deployment
        plan = json.loads((split_dir / "plan.json").read_text(encoding="utf-8"))
        on_dla: set[str] = set()
        for item in plan["items"]:
            if item.get("target") == "nvdla":
                graph = check_paths([split_dir / f"{item['name']}.nnef"], tensors=False).graphs[0]
                on_dla.update(ref.name for op in graph.operations if op.name not in ("external", "variable", "get_var")
                              for ref in op.output_refs())
        export = step_dir(model, "export", root)
        graph = check_paths([export / "graph.nnef"], tensors=False).graphs[0]
        inputs = read_inputs(model, root)
        count = next(iter(inputs.values())).shape[0]
        vectors = [{name: array[v] for name, array in inputs.items()} for v in range(count)]
        return fp16_layers.rank(graph, load_variables(graph, export), vectors, on_dla, tolerance)
    except Exception as error:  # noqa: BLE001 - a diagnosis must not stop the comparison it explains
        return f"{type(error).__name__}: {error}"


def whole_dla_refusal(model: str, root: Path) -> str:
    """Why the whole network could not be one DLA item, as the split step recorded it (else "")."""
    path = step_dir(model, "split", root) / WHOLE_DLA_FILE
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        return f" (whether the whole network fits one DLA item was not recorded by split: {type(error).__name__})"
    if not doc.get("evaluated"):
        return f" (whether the whole network fits one DLA item was not evaluated: {doc.get('why', 'no reason given')})"
    if doc.get("fits"):
        return ""
    return f" (the whole network on one DLA item is refused: {doc.get('code')}: {doc.get('message')})"

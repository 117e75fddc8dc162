"""The compare step: judge what the execute step measured, per deployment (docs/compare.md).

artifacts/<m>/compare/
    reference/<output>.dat          the reference semantics on the run's N vectors
    onnxruntime/<output>.dat        onnxruntime (one thread) on the same vectors
    <deployment>/numeric.json       per output: against the reference and against onnxruntime
    <deployment>/traces.json        replay verdict of every captured trace
    <deployment>/met.json           whole-network and per-step statistics, budget, jitter, drift
    <deployment>/met.md             the paper's table layout
    <deployment>/met-histogram.svg  distribution of the whole-network times
    <deployment>/path.json          instruction counts per input
    checks.json, record.json
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.files.atomic import write_json, write_text
from pipeline.files.names import confined
from pipeline.compare import checks, fp16_layers, nvdla_bound
from pipeline.compare.checks import result
from pipeline.compare.met import jitter_ratio, load_baseline, markdown_table, step_rows, stats_us
from pipeline.compare.numeric import compare
from pipeline.compare.reference import onnxruntime_outputs, read_inputs, reference_outputs
from pipeline.compare.svg import histogram_svg
from pipeline.compare.traces import replay_traces
from pipeline.project.deploy import DeploySpec, load_deploy
from pipeline.diagnostics import PipelineError
from pipeline.ledger.checks import CheckResult, Obtained, Verdict, results_document
from pipeline.ledger.records import record_step
from pipeline.ledger.requirements import load_requirements
from pipeline.numerics.tolerance import EffectiveTolerance, effective_tolerance
from pipeline.project.layout import checks_path, model_dir, project_relative, step_dir
from pipeline.nnef.checker import check_paths
from pipeline.nnef.tensorfile import read_tensor, write_arrays
from pipeline.semantics import load_variables
from pipeline.split.outputs import WHOLE_DLA_FILE

log = logging.getLogger(__name__)

STEP = "compare"
PLATFORM_VARIABLE = "NNCERT_PLATFORM"  # the name of the timing platform this machine is (docs/compare.md)


def _parameters(root: Path) -> dict[str, float]:
    """Normative values read from the requirements (not copied)."""
    requirements = load_requirements(root)
    return {"max_ulp": int(requirements.parameter("HLR-NUM-001", "max_ulp")),
            "max_jitter_ratio": float(requirements.parameter("HLR-MET-002", "max_jitter_ratio")),
            "max_drift_ratio": float(requirements.parameter("HLR-MET-002", "max_drift_ratio"))}


def output_tolerances(model: str, spec: DeploySpec, root: Path) -> dict[str, EffectiveTolerance]:
    """Per NNEF output, pipeline.numerics.tolerance's rule on the export validation's computed bound and measured
    rounding (validation.json) and this deploy.yaml's limit: the same function export applied."""
    path = step_dir(model, "export", root) / "validation.json"
    document = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {"outputs": []}
    limit = spec.validation.tolerance.max_abs_error
    rules = {}
    for output in document.get("outputs", []):
        recorded = output.get("tolerance") or {}
        yard = document.get("yardstick", {})
        why = (yard.get("bound") or {}).get("unavailable", "") or yard.get("unavailable", "")
        computed, rounding = recorded.get("computed_max_abs_error"), recorded.get("measured_rounding_max_abs_error")
        rules[output["nnef"]] = effective_tolerance(limit, None if computed is None else float(computed),
                                                    None if rounding is None else float(rounding), why)
    return rules


def _numeric(subject: str, outputs: dict[str, np.ndarray], reference: dict[str, np.ndarray],
             ort: dict[str, np.ndarray], spec: DeploySpec, rules: dict[str, EffectiveTolerance], folder: Path,
             read: list[str], root: Path) -> list[CheckResult]:
    exact = compare(outputs, reference, exact=True)
    limit = spec.validation.tolerance.max_abs_error
    rel = spec.validation.tolerance.max_rel_error
    per_output = {name: rule.effective for name, rule in rules.items()}
    versus = compare(outputs, ort, max_abs_error=limit, max_rel_error=rel, max_abs_errors=per_output)
    path = write_json(folder / "numeric.json", {
        "schema_version": 2, "reference": exact.to_json(),
        "onnxruntime": {**versus.to_json(), "tolerance": {"max_abs_error": limit, "max_rel_error": rel,
                                                          "deploy_max_abs_error": limit,
                                                          "outputs": {n: r.to_json() for n, r in sorted(rules.items())}}}})
    written = [project_relative(path, root)]
    failure = exact.first_failure()
    results = [result(checks.REFERENCE, subject, Verdict.PASS if exact.passed else Verdict.FAIL,
                      failure.reason if failure else "", exact.measured(), read, written)]
    failure = versus.first_failure()
    measured = {**versus.measured(), "tolerance_max_abs_error": max(per_output.values(), default=limit),
                "tolerance_max_rel_error": rel,
                **{f"{n}.tolerance_basis": r.basis for n, r in sorted(rules.items())}}
    reason = failure.reason if failure else ""
    if failure is not None and failure.name in rules:
        reason += f" (tolerance {rules[failure.name].basis}: {rules[failure.name].reason})"
    results.append(result(checks.ONNXRUNTIME, subject, Verdict.PASS if versus.passed else Verdict.FAIL,
                          reason, measured, read, written))
    return results


def _cuda_reference(subject: str, doc: dict[str, Any], reference: dict[str, np.ndarray], folder: Path,
                    root: Path) -> CheckResult:
    """compare.cuda_reference on an emulated run: both orders 0 ULP -> emulated, else fail."""
    read = [*doc["outputs"].values(), *doc["outputs_shuffled"].values()]
    orders = {"in order": doc["outputs"], f"shuffled (seed {doc['shuffle_seed']})": doc["outputs_shuffled"]}
    comparisons = {order: compare({n: read_tensor(root / p) for n, p in paths.items()}, reference, exact=True)
                   for order, paths in orders.items()}
    path = write_json(folder / "cuda-numeric.json", {"schema_version": 1, "emulation": doc["emulation"],
                                                     **{o: c.to_json() for o, c in comparisons.items()}})
    obtained = Obtained.emulation("CUDA host emulation (g++ -ffp-contract=off, nnef_cuda_emulate.h)")
    measured = {"vectors": doc["vectors"], "emulation": doc["emulation"], "gpu": doc["gpu"]["run"],
                **{o: c.measured() for o, c in comparisons.items()}}
    for order, comparison in comparisons.items():
        failure = comparison.first_failure()
        if failure is not None:
            return result(checks.CUDA_REFERENCE, subject, Verdict.FAIL, f"host emulation, blocks and threads {order}: "
                          f"{failure.reason}", measured, read, [project_relative(path, root)], obtained)
    gpu = doc.get("gpu") or {}
    if gpu.get("status") == "failed":
        return result(checks.CUDA_REFERENCE, subject, Verdict.FAIL, f"GPU run {gpu['run']}", measured, read,
                      [project_relative(path, root)], Obtained.target(gpu["obtained"].removeprefix("target:")))
    if gpu.get("status") == "ran":       # on the GPU: pass or fail there (the emulation agreed above)
        on_gpu = Obtained.target(gpu["obtained"].removeprefix("target:"))
        count = int(gpu["vectors"])
        ran = compare({n: read_tensor(root / p) for n, p in gpu["outputs"].items()},
                      {n: r[:count] for n, r in reference.items() if n in gpu["outputs"]}, exact=True)
        written = [project_relative(path, root), project_relative(
            write_json(folder / "gpu-numeric.json", {"schema_version": 1, "device": gpu["device"], **ran.to_json()}), root)]
        measured = {**measured, "gpu_vectors": count, **{f"gpu_{k}": v for k, v in ran.measured().items()}}
        failure = ran.first_failure()
        if failure is not None:
            return result(checks.CUDA_REFERENCE, subject, Verdict.FAIL, f"on the GPU: {failure.reason}", measured,
                          read + list(gpu["outputs"].values()), written, on_gpu)
        return result(checks.CUDA_REFERENCE, subject, Verdict.PASS, "", measured, read + list(gpu["outputs"].values()),
                      written, on_gpu)
    return result(checks.CUDA_REFERENCE, subject, Verdict.EMULATED,
                  f"{doc['emulation']}: 0 ULP on {doc['vectors']} vectors, blocks and threads in order and shuffled; "
                  f"GPU run {doc['gpu']['run']}", measured, read, [project_relative(path, root)], obtained)


def _gpu_runs(model: str, name: str, subject: str, spec: DeploySpec, doc: dict[str, Any], params: dict[str, float],
              folder: Path, root: Path) -> list[CheckResult]:
    """compare.traces, met.budget and met.stability of the runs on the GPU (pipeline/execute/gpu.py): the
    traces replayed on the net and the MET figures, obtained on the GPU; the figures judged only where the
    GPU is the timing platform (deploy.yaml met.platform = NNCERT_PLATFORM), else reported."""
    gpu = doc["gpu"]
    on_gpu = Obtained.target(gpu["obtained"].removeprefix("target:"))
    run_dir = root / gpu["folder"]
    split_dir = step_dir(model, "split", root) / name
    traces = _traces(subject, split_dir, run_dir, gpu, folder / "gpu", root)
    traces = result(checks.TRACES, subject, traces.verdict, traces.reason, traces.measured, traces.read, traces.written,
                    on_gpu if traces.verdict is not Verdict.NOT_RUN else None)
    timing, why = timing_platform(spec)
    judged_on = (on_gpu, "") if timing is not None else (None, f"the GPU is not the timing platform ({why})")
    return [traces, *_met(model, name, subject, spec, run_dir, gpu, split_dir, params, folder / "gpu", root, judged_on,
                          on_gpu)]


def _mixed(model: str, name: str, subject: str, spec: DeploySpec, doc: dict[str, Any], params: dict[str, float],
           folder: Path, root: Path) -> list[CheckResult]:
    """The C program's other judgements on a mixed deployment whose cuda items ran on the host emulation
    or whose nvdla items on the emulator server: traces replayed on the net (emulated: those items'
    steps did not run on their hardware), MET figures reported but never judged (host figures say
    nothing about a GPU or a DLA; with nvdla items none are measured), no instruction-count verdict."""
    run_dir = step_dir(model, "execute", root) / name
    split_dir = step_dir(model, "split", root) / name
    dla = doc.get("nvdla_items", [])
    what = " and ".join(([f"cuda items ({', '.join(doc['cuda_items'])}) on the CUDA host emulation"]
                         if doc.get("cuda_items") else [])
                        + ([f"nvdla items ({', '.join(dla)}) on the NVDLA emulator server"] if dla else []))
    emulation = Obtained.emulation(f"C program with its {what}")
    traces = _traces(subject, split_dir, run_dir, doc, folder, root)
    if traces.verdict is Verdict.PASS:
        traces = result(checks.TRACES, subject, Verdict.EMULATED, f"every trace a valid path of the net, the {what}",
                        traces.measured, traces.read, traces.written, emulation)
    if dla:
        met = [result(c, subject, Verdict.NOT_RUN, doc.get("met", "not measured")) for c in (checks.BUDGET,
                                                                                              checks.STABILITY)]
        path = result(checks.PATH, subject, Verdict.NOT_RUN, doc.get("met", "not measured"))
        return [traces, *met, path]
    if (doc.get("gpu") or {}).get("status") == "ran" and traces.verdict is not Verdict.FAIL:
        gpu_traces, *gpu_met = _gpu_runs(model, name, subject, spec, doc, params, folder, root)
        path = result(checks.PATH, subject, Verdict.NOT_RUN, "instruction counts are not taken for a program with cuda "
                      "items (valgrind does not see a GPU)")
        return [gpu_traces, *gpu_met, path]
    met = _met(model, name, subject, spec, run_dir, doc, split_dir, params, folder, root)
    why = "the cuda items ran on the host emulation: these are host figures, not a GPU timing"
    met = [result(r.check_id, subject, Verdict.NOT_RUN,
                  f"{why}; {r.reason}" if r.reason else why, r.measured, r.read, r.written,
                  emulation if r.measured else None) for r in met]     # figures of the emulation, when measured
    path = result(checks.PATH, subject, Verdict.NOT_RUN, "instruction counts are not taken on the host emulation of "
                  "cuda items (they say nothing about a GPU)")
    return [traces, *met, path]


def _on_platform(model: str, name: str, subject: str, spec: DeploySpec, doc: dict[str, Any],
                 reference: dict[str, np.ndarray], params: dict[str, float], folder: Path, root: Path
                 ) -> list[CheckResult]:
    """A deployment run on a platform other than the host (docs/execute.md "Platforms"): its outputs
    against the reference on the vectors it ran (0 ULP, NaN = NaN: NaN bit patterns differ across
    platforms), its traces, its MET figures (judged only on a timing platform reached as a target:
    an emulator's are reported, never judged) and its instruction counts. Emulated runs never pass."""
    platform = doc["platform"]
    where = platform["obtained"]["where"]
    obtained = (Obtained.emulation(platform["obtained"]["detail"]) if where == "emulation"
                else Obtained.target(platform["name"]) if where == "target" else Obtained.host())
    vectors = int(doc["vectors"])
    run_dir = step_dir(model, "execute", root) / name
    split_dir = step_dir(model, "split", root) / name
    outputs = {n: read_tensor(root / p) for n, p in doc["outputs"].items()}
    exact = compare(outputs, {n: r[:vectors] for n, r in reference.items() if n in outputs}, exact=True)
    written = [project_relative(write_json(folder / "numeric.json", {"schema_version": 2, "platform": platform,
                                                                     "vectors": vectors, "reference": exact.to_json()}),
                                root)]
    read = list(doc["outputs"].values()) + [project_relative(step_dir(model, "compare", root) / "reference", root)]
    failure = exact.first_failure()
    said = f"on {platform['obtained']['detail']}, {vectors} vectors"
    if failure is not None:
        numbers = result(checks.PLATFORM_REFERENCE, subject, Verdict.FAIL, f"{said}: {failure.reason}", exact.measured(),
                         read, written, obtained)
    elif where == "emulation":
        numbers = result(checks.PLATFORM_REFERENCE, subject, Verdict.EMULATED, f"{said}: 0 ULP against the reference "
                         "(NaN = NaN); emulated, so never pass", exact.measured(), read, written, obtained)
    else:
        numbers = result(checks.PLATFORM_REFERENCE, subject, Verdict.PASS, "", exact.measured(), read, written, obtained)
    traces = _traces(subject, split_dir, run_dir, doc, folder, root)
    verdict = Verdict.EMULATED if traces.verdict is Verdict.PASS and where == "emulation" else traces.verdict
    traces = result(checks.PLATFORM_TRACES, subject, verdict,
                    f"{said}: every trace a valid path of the net, outputs identical across the runs"
                    if verdict is Verdict.EMULATED else traces.reason, traces.measured, traces.read, traces.written,
                    obtained if traces.verdict is not Verdict.NOT_RUN else None)
    if platform.get("timing") and where == "target":
        judged_on: tuple[Obtained | None, str] = (obtained, "")
    elif where == "emulation":
        judged_on = (None, f"measured on {platform['obtained']['detail']}: an emulator's timings are reported, never "
                           "judged")
    else:
        judged_on = (None, f"platform {platform['name']} is not a timing platform (deploy.yaml `timing: true`)")
    met = _met(model, name, subject, spec, run_dir, doc, split_dir, params, folder, root, judged_on, obtained)
    return [numbers, traces, *met, _path(subject, run_dir, folder, root, checks.PLATFORM_PATH)]


def _nvdla_reference(subject: str, doc: dict[str, Any], reference: dict[str, np.ndarray], folder: Path,
                     root: Path, requirement: dict[str, float | None] | None = None) -> CheckResult:
    """compare.nvdla_reference on an emulated NVDLA run: HLR-NUM-004, every output within the network's
    FP16 error bound of its float64 value (pipeline.compare.nvdla_bound), or within the absolute
    parameter where the bound is unavailable or does not discriminate; the distance to the float32
    reference is recorded too."""
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
            judged = nvdla_bound.judge_run(model, root, outputs, tolerance, requirement)
        except Exception as error:  # onnx.reference refusing the model: the absolute parameter, and why
            log.warning("compare %s: no float64 yardstick: %s", subject, error)
            why = f"no float64 yardstick ({type(error).__name__}: {error})"
    # without a judgement (INT8, no yardstick): the absolute parameter against the float32 reference
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
        measured.update({"max_abs_error_to_float64": judged.max_abs_error, "max_bound": judged.max_bound,
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
        ranking = _fp16_layers(model, subject.split("/", 1)[1], root, limit)
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


def _whole_dla_refusal(model: str, root: Path) -> str:
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


def _traces(subject: str, split_dir: Path, run_dir: Path, run_doc: dict[str, Any], folder: Path, root: Path
            ) -> CheckResult:
    traces = sorted(run_dir.glob("trace-*.json"))
    read = [project_relative(p, root) for p in traces] + [project_relative(split_dir / "schedule.json", root)]
    if not traces:
        return result(checks.TRACES, subject, Verdict.NOT_RUN, "the execute step captured no trace", read=read)
    verdicts = replay_traces(split_dir, traces, root)
    different = [r["name"] for r in run_doc.get("traced_runs", []) if not r.get("outputs_identical_to_plain")]
    noisy = sum(1 for r in run_doc.get("traced_runs", []) if r.get("noise_seed") is not None)
    path = write_json(folder / "traces.json", {"schema_version": 1, "traces": [v.to_json() for v in verdicts],
                                               "runs_with_different_outputs": different})
    measured = {"traces": len(verdicts), "noise_runs": noisy, "valid": sum(v.passed for v in verdicts),
                "events": sum(v.measured.get("events", 0) for v in verdicts),
                "inferences_per_trace": max((v.measured.get("inferences", 0) for v in verdicts), default=0),
                "outputs_identical_across_runs": not different}
    failed = next((v for v in verdicts if not v.passed), None)
    if failed:
        return result(checks.TRACES, subject, Verdict.FAIL, f"{failed.trace}: {failed.reason}", measured, read,
                      [project_relative(path, root)])
    if different:
        return result(checks.TRACES, subject, Verdict.FAIL, f"outputs of {', '.join(different)} differ from the "
                      "uninstrumented run", measured, read, [project_relative(path, root)])
    if not noisy:
        return result(checks.TRACES, subject, Verdict.NOT_RUN, "no run under temporal noise was captured", measured,
                      read, [project_relative(path, root)])
    return result(checks.TRACES, subject, Verdict.PASS, "", measured, read, [project_relative(path, root)])


def _met(model: str, deployment: str, subject: str, spec: DeploySpec, run_dir: Path, run_doc: dict[str, Any],
         split_dir: Path, params: dict[str, float], folder: Path, root: Path,
         judged_on: tuple[Obtained | None, str] | None = None,
         measured_on: Obtained | None = None) -> list[CheckResult]:
    """MET figures of one run, judged where they were measured on the timing platform: `judged_on`
    (where, and why not) for a run on a named platform, else the host rule (timing_platform).
    `measured_on`: where the figures come from (default the host), said by a `not run` too."""
    timing_path, steps_path = run_dir / "timing.json", run_dir / "step-timing.json"
    read = [project_relative(p, root) for p in (timing_path, steps_path) if p.is_file()]
    if not timing_path.is_file():
        reason = "the execute step measured no execution time"
        return [result(c, subject, Verdict.NOT_RUN, reason, read=read) for c in (checks.BUDGET, checks.STABILITY)]
    timing = json.loads(timing_path.read_text(encoding="utf-8"))
    whole = stats_us(timing["ns"])
    schedule = json.loads((split_dir / "schedule.json").read_text(encoding="utf-8"))
    rows = step_rows(json.loads(steps_path.read_text(encoding="utf-8")), schedule) if steps_path.is_file() else []
    budget = spec.met.budget_us
    jitter = jitter_ratio(whole)
    build = (run_doc.get("builds") or [{}])[0]
    baseline = load_baseline(model, root)
    base = (baseline or {}).get("deployments", {}).get(deployment)
    drift = None if not base else whole["median_us"] / base["median_us"] - 1.0
    document = {"schema_version": 1, "model": model, "deployment": deployment, "whole_network": whole,
                "steps": rows, "budget_us": budget, "jitter_ratio": round(jitter, 4),
                "max_jitter_ratio": params["max_jitter_ratio"], "drift_ratio": None if drift is None else round(drift, 4),
                "max_drift_ratio": params["max_drift_ratio"], "baseline": base,
                "compiler": run_doc.get("compiler", ""), "flags": build.get("flags", []),
                "host_isa": run_doc.get("host_isa", ""), "method": {
                    "warmup": timing.get("warmup"), "runs": timing.get("runs"), "clock": "CLOCK_MONOTONIC",
                    "whole_network": "uninstrumented build, start to end barrier of each inference",
                    "steps": "instrumented build, start/end events of each schedule step"}}
    written = [write_json(folder / "met.json", document),
               write_text(folder / "met.md", markdown_table(model, deployment, whole, rows, budget)),
               write_text(folder / "met-histogram.svg", histogram_svg(
                   [n / 1e3 for n in timing["ns"]], f"{model}/{deployment}: time per inference ({whole['runs']} runs)",
                   marks=[("median", whole["median_us"]), ("p99", whole["p99_us"]), ("budget", budget)]))]
    written_rel = [project_relative(p, root) for p in written]
    measured = {key: whole[key] for key in ("runs", "mean_us", "min_us", "max_us", "std_us", "median_us", "p99_us")}
    platform, why = judged_on or timing_platform(spec)
    if platform is None:
        figures = (f"measured here: max {whole['max_us']} us (budget {budget} us), median {whole['median_us']} us, "
                   f"jitter {jitter:.3f} (bound {params['max_jitter_ratio']})")
        reason = (f"{why}; figures: {figures.removeprefix('measured here: ')}" if judged_on
                  else f"host is not the timing platform ({why}); {figures}")
        return [result(checks.BUDGET, subject, Verdict.NOT_RUN, reason, {**measured, "budget_us": budget}, read,
                       written_rel, measured_on),
                result(checks.STABILITY, subject, Verdict.NOT_RUN, reason,
                       {**measured, "jitter_ratio": round(jitter, 4), "max_jitter_ratio": params["max_jitter_ratio"]},
                       read, written_rel, measured_on)]
    return _met_verdicts(model, deployment, subject, whole, budget, jitter, drift, base, params, read, written_rel,
                         measured, root, platform)


def timing_platform(spec: DeploySpec) -> tuple[Obtained | None, str]:
    """The target platform this run measures on, or None and why this host is not it.

    A machine is the timing platform of a model when deploy.yaml names one (`met.platform`)
    and the environment variable NNCERT_PLATFORM carries the same name: set it on the
    target, on the isolated core the inference is pinned to (docs/compare.md).
    """
    declared = spec.met.platform
    here = os.environ.get(PLATFORM_VARIABLE, "")
    if not declared:
        return None, "deploy.yaml declares no met.platform"
    if here != declared:
        return None, f"{PLATFORM_VARIABLE}={here or '(unset)'}, deploy.yaml met.platform={declared}"
    return Obtained.target(declared), ""


def _met_verdicts(model: str, deployment: str, subject: str, whole: dict[str, Any], budget: float, jitter: float,
                  drift: float | None, base: dict[str, Any] | None, params: dict[str, float], read: list[str],
                  written_rel: list[str], measured: dict[str, Any], root: Path, obtained: Obtained) -> list[CheckResult]:
    """Budget and stability verdicts of a campaign measured on the timing platform (`obtained`)."""
    out = []
    if whole["max_us"] <= budget:
        out.append(result(checks.BUDGET, subject, Verdict.PASS, "", {**measured, "budget_us": budget}, read, written_rel, obtained))
    else:
        out.append(result(checks.BUDGET, subject, Verdict.FAIL, f"max {whole['max_us']} us exceeds the budget {budget} us "
                          f"(median {whole['median_us']} us)", {**measured, "budget_us": budget}, read, written_rel, obtained))
    stability = {**measured, "jitter_ratio": round(jitter, 4), "max_jitter_ratio": params["max_jitter_ratio"],
                 "drift_ratio": None if drift is None else round(drift, 4), "max_drift_ratio": params["max_drift_ratio"]}
    jitter_ok = jitter <= params["max_jitter_ratio"]
    baseline_rel = project_relative(model_dir(model, root) / "met-baseline.json", root)
    if not jitter_ok:
        out.append(result(checks.STABILITY, subject, Verdict.FAIL, f"jitter (p99 - median) / median = {jitter:.3f} exceeds "
                          f"{params['max_jitter_ratio']} (median {whole['median_us']} us, p99 {whole['p99_us']} us)",
                          stability, read, written_rel, obtained))
    elif drift is None:
        out.append(result(checks.STABILITY, subject, Verdict.NOT_RUN,
                          f"jitter {jitter:.3f} <= {params['max_jitter_ratio']} passed, but the drift check did not run: "
                          f"no accepted baseline for {deployment} in {baseline_rel} (accept with "
                          f"`python -m pipeline compare accept-met {model}`)", stability, read, written_rel, obtained))
    elif drift > params["max_drift_ratio"]:
        out.append(result(checks.STABILITY, subject, Verdict.FAIL, f"median {whole['median_us']} us drifted by "
                          f"{drift:+.1%} from the accepted {base['median_us']} us (bound {params['max_drift_ratio']:.0%})",
                          stability, read + [baseline_rel], written_rel, obtained))
    else:
        out.append(result(checks.STABILITY, subject, Verdict.PASS, "", stability, read + [baseline_rel], written_rel, obtained))
    return out


def _path(subject: str, run_dir: Path, folder: Path, root: Path, check_id: str = checks.PATH) -> CheckResult:
    path = run_dir / "instructions.json"
    if not path.is_file():
        return result(check_id, subject, Verdict.NOT_RUN, "the execute step counted no instructions")
    data = json.loads(path.read_text(encoding="utf-8"))
    read = [project_relative(path, root)]
    if data.get("status") != "ran":
        return result(check_id, subject, Verdict.NOT_RUN, data.get("reason", "instruction counting did not run"),
                      read=read)
    counts = {e["input"]: e["instructions"] for e in data["inputs"]}
    written = [project_relative(write_json(folder / "path.json", {"schema_version": 1, "tool": data.get("tool"),
                                                                  "counts": counts}), root)]
    measured = {"inputs": len(counts), "instructions": sorted(set(counts.values())), "tool": data.get("tool")}
    if len(counts) < 2:
        return result(check_id, subject, Verdict.NOT_RUN, "fewer than two inputs counted", measured, read, written)
    if len(set(counts.values())) != 1:
        first = next(iter(counts.items()))
        other = next((k, v) for k, v in counts.items() if v != first[1])
        return result(check_id, subject, Verdict.FAIL, f"instruction counts differ: {first[0]} {first[1]}, "
                      f"{other[0]} {other[1]}", measured, read, written)
    return result(check_id, subject, Verdict.PASS, "", measured, read, written)


def run_compare_step(model: str, root: str | os.PathLike[str] = ".") -> list[CheckResult]:
    """Compare every deployment's run with the references; write checks.json and record.json."""
    base = Path(root)
    deploy_path = model_dir(model, base) / "deploy.yaml"
    spec = load_deploy(deploy_path)
    out = step_dir(model, STEP, base)
    run = step_dir(model, "execute", base)
    out.mkdir(parents=True, exist_ok=True)
    for child in out.iterdir():
        if child.is_dir() and child.name not in spec.deployments and child.name not in ("reference", "onnxruntime"):
            shutil.rmtree(child)
    params = _parameters(base)
    rules = output_tolerances(model, spec, base)
    results: list[CheckResult] = []
    inputs_read: list[Path] = [deploy_path]
    documents = {name: (run / name / "run.json") for name in spec.deployments}
    ran = {name: json.loads(p.read_text(encoding="utf-8")) for name, p in documents.items() if p.is_file()}
    reference = ort = None
    if any(doc.get("status") in ("ran", "emulated") for doc in ran.values()):
        try:
            inputs = read_inputs(model, base)
            if not inputs:
                raise PipelineError("COMPARE-E001", "no input vectors under artifacts/<m>/execute/inputs")
            reference = reference_outputs(model, base, inputs)
            ort, _runner = onnxruntime_outputs(model, base, inputs)
        except PipelineError as error:
            if not error.code.startswith("COMPARE-"):
                error = PipelineError("COMPARE-E002", f"a reference could not be computed: {error.code}: "
                                      f"{error.message}", error.location)
            raise error
        write_arrays(reference, out / "reference")
        write_arrays(ort, out / "onnxruntime")
        inputs_read += [run / "inputs", step_dir(model, "export", base), model_dir(model, base) / "model.onnx"]
    for name in spec.deployments:
        subject = f"{model}/{name}"
        doc = ran.get(name)
        folder = confined(out, name)
        elsewhere = spec.deployments[name].platform != "host"   # a named platform's checks (checks.PLATFORM_ALL)
        if doc is None:
            results += [result(c, subject, Verdict.NOT_RUN, "the execute step did not run this deployment")
                        for c in (checks.PLATFORM_ALL if elsewhere else checks.ALL)]
            continue
        inputs_read.append(run / name)
        if elsewhere and doc.get("platform") and doc.get("status") in ("ran", "emulated"):
            assert reference is not None
            results += _on_platform(model, name, subject, spec, doc, reference, params, folder, base)
            continue
        if doc.get("status") == "emulated":
            assert reference is not None
            fp16 = spec.deployments[name].fp16  # the deployment's stated FP16 requirement, if any
            if doc.get("target") == "nvdla":
                results.append(_nvdla_reference(subject, doc, reference, folder, base, fp16))
                continue
            if doc.get("nvdla_items"):   # FP16 on the DLA: HLR-NUM-004's tolerance, never 0 ULP (HLR-NUM-001)
                results.append(_nvdla_reference(subject, doc, reference, folder, base, fp16))
                results += _mixed(model, name, subject, spec, doc, params, folder, base)
                continue
            results.append(_cuda_reference(subject, doc, reference, folder, base))
            if doc.get("target") == "mixed":
                results += _mixed(model, name, subject, spec, doc, params, folder, base)
            elif (doc.get("gpu") or {}).get("status") == "ran":    # one cuda item: its program form ran on the GPU
                results += _gpu_runs(model, name, subject, spec, doc, params, folder, base)
            continue
        if doc.get("status") != "ran":
            verb = "did not run" if doc.get("status") == "not run" else "failed"
            results += [result(c, subject, Verdict.NOT_RUN, f"the run {verb}: {doc.get('reason', '')}",
                               read=[project_relative(documents[name], base)])
                        for c in (checks.PLATFORM_ALL if elsewhere else checks.ALL)]
            continue
        assert reference is not None and ort is not None
        run_dir = run / name
        outputs = {n: read_tensor(base / p) for n, p in doc["outputs"].items()}
        read = [project_relative(base / p, base) for p in doc["outputs"].values()] + \
            [project_relative(out / "reference", base), project_relative(out / "onnxruntime", base)]
        split_dir = step_dir(model, "split", base) / name
        try:
            results += _numeric(subject, outputs, reference, ort, spec, rules, folder, read, base)
            results.append(_traces(subject, split_dir, run_dir, doc, folder, base))
            results += _met(model, name, subject, spec, run_dir, doc, split_dir, params, folder, base)
            results.append(_path(subject, run_dir, folder, base))
        except (PipelineError, ValueError, KeyError) as error:
            log.error("compare %s: %s", subject, error)
            done = {r.check_id for r in results if r.subject == subject}
            results += [result(c, subject, Verdict.FAIL, f"comparison failed: {error}") for c in checks.ALL
                        if c not in done]
    if not any(r.check_id == checks.NVDLA_REFERENCE for r in results):
        with_dla = [n for n, d in spec.deployments.items() if any(i.target == "nvdla" for i in d.items)]
        if with_dla:
            results.append(result(checks.NVDLA_REFERENCE, model, Verdict.NOT_RUN,
                                  f"no nvdla deployment of this model ran ({', '.join(with_dla)}: see the execute "
                                  "step's run.json)"))
        else:
            results.append(result(checks.NVDLA_REFERENCE, model, Verdict.NOT_APPLICABLE,
                                  "no deployment of this model has an nvdla item" + _whole_dla_refusal(model, base)))
    results += _not_applicable(model, spec, results)
    write_json(checks_path(model, STEP, base), results_document(results))
    baseline = model_dir(model, base) / "met-baseline.json"
    record_step(model, STEP, inputs=[p for p in inputs_read + [baseline] if p.exists()],
                command=["doit", f"compare:{model}"], root=base,
                parameters={**params, "deploy_max_abs_error": spec.validation.tolerance.max_abs_error,
                            "deploy_max_rel_error": spec.validation.tolerance.max_rel_error,
                            "budget_us": spec.met.budget_us})
    return results


def _not_applicable(model: str, spec: DeploySpec, results: list[CheckResult]) -> list[CheckResult]:
    """`n/a` for the checks no deployment of `model` gives a subject: compare.cuda_reference without a cuda
    item, the platform checks without a deployment on a platform other than the host."""
    done = {r.check_id for r in results}
    cuda = any(i.target == "cuda" for d in spec.deployments.values() for i in d.items)
    elsewhere = any(d.platform not in (None, "host") for d in spec.deployments.values())
    reasons = {checks.CUDA_REFERENCE: (cuda, "no deployment of this model has a cuda item")}
    for check_id in (checks.PLATFORM_REFERENCE, checks.PLATFORM_TRACES, checks.PLATFORM_PATH):
        reasons[check_id] = (elsewhere, "every deployment of this model runs on the host platform (no `platform:` "
                                        "in deploy.yaml names another)")
    return [result(check_id, model, Verdict.NOT_APPLICABLE, why)
            for check_id, (applies, why) in reasons.items() if check_id not in done and not applies]


def current_met_documents(model: str, root: str | os.PathLike[str] = ".") -> dict[str, dict[str, Any]]:
    """The met.json of every deployment the last compare step measured."""
    out = step_dir(model, STEP, Path(root))
    return {p.parent.name: json.loads(p.read_text(encoding="utf-8")) for p in sorted(out.glob("*/met.json"))}



"""The compare step: judge what the execute step measured, per deployment (docs/compare.md).

This module walks the deployments and hands each run (pipeline.compare.context.Run: its names and
folders computed once) to the part that judges it: numbers.py (host runs against the reference and
onnxruntime), traces.py, timing.py (MET and instruction counts), gpu.py (cuda and mixed deployments),
nvdla.py (emulated NVDLA runs) and platform.py (runs on another platform). compare reads what the
earlier steps recorded; it never calls the exporter, the legalization or a generator
(tests/compare/test_judge_only.py).

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

from pipeline.compare import checks
from pipeline.compare.checks import result
from pipeline.compare.context import STEP, Run, parameters
from pipeline.compare.gpu import gpu_runs, judge_cuda, mixed
from pipeline.compare.numbers import judge_outputs, output_tolerances
from pipeline.compare.nvdla import judge_nvdla, whole_dla_refusal
from pipeline.compare.platform import judge_platform
from pipeline.compare.reference import onnxruntime_outputs, read_inputs, reference_outputs
from pipeline.compare.timing import judge_met, judge_path
from pipeline.compare.traces import judge_traces
from pipeline.diagnostics import PipelineError
from pipeline.files.atomic import write_json
from pipeline.ledger.checks import CheckResult, Verdict, results_document
from pipeline.ledger.records import record_step
from pipeline.nnef.tensorfile import read_tensor, write_arrays
from pipeline.project.deploy import DeploySpec, load_deploy
from pipeline.project.layout import checks_path, model_dir, project_relative, step_dir

log = logging.getLogger(__name__)


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
    params = parameters(base)
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
        elsewhere = spec.deployments[name].platform != "host"   # a named platform's checks (checks.PLATFORM_ALL)
        if doc is None:
            results += [result(c, subject, Verdict.NOT_RUN, "the execute step did not run this deployment")
                        for c in (checks.PLATFORM_ALL if elsewhere else checks.ALL)]
            continue
        inputs_read.append(run / name)
        deployed = Run.of(model, name, spec, doc, params, base)
        if elsewhere and doc.get("platform") and doc.get("status") in ("ran", "emulated"):
            assert reference is not None
            results += judge_platform(deployed, reference)
            continue
        if doc.get("status") == "emulated":
            assert reference is not None
            if doc.get("target") == "nvdla":
                results.append(judge_nvdla(deployed, reference))
                continue
            if doc.get("nvdla_items"):   # FP16 on the DLA: HLR-NUM-004's tolerance, never 0 ULP (HLR-NUM-001)
                results.append(judge_nvdla(deployed, reference))
                results += mixed(deployed)
                continue
            results.append(judge_cuda(deployed, reference))
            if doc.get("target") == "mixed":
                results += mixed(deployed)
            elif (doc.get("gpu") or {}).get("status") == "ran":    # one cuda item: its program form ran on the GPU
                results += gpu_runs(deployed)
            continue
        if doc.get("status") != "ran":
            verb = "did not run" if doc.get("status") == "not run" else "failed"
            results += [result(c, subject, Verdict.NOT_RUN, f"the run {verb}: {doc.get('reason', '')}",
                               read=[project_relative(documents[name], base)])
                        for c in (checks.PLATFORM_ALL if elsewhere else checks.ALL)]
            continue
        assert reference is not None and ort is not None
        outputs = {n: read_tensor(base / p) for n, p in doc["outputs"].items()}
        read = [project_relative(base / p, base) for p in doc["outputs"].values()] + \
            [project_relative(out / "reference", base), project_relative(out / "onnxruntime", base)]
        try:
            results += judge_outputs(deployed, outputs, reference, ort, rules, read)
            results.append(judge_traces(subject, deployed.split_dir, deployed.run_dir, doc, deployed.folder, base))
            results += judge_met(deployed)
            results.append(judge_path(subject, deployed.run_dir, deployed.folder, base))
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
                                  "no deployment of this model has an nvdla item" + whole_dla_refusal(model, base)))
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

"""Issue 42: the compare step's verdict functions (pipeline/compare/step.py and the parts it hands each run to) on planted run documents.

Light fixtures (arrays written as tensor files in a temporary project, no build, no run) so the mutation
run (benchmarks/mutation_bench.py) can afford them once per mutant. Each planted defect is the one the
check exists to catch: an executed output off the reference or beyond the onnxruntime tolerance, a CUDA
run off in shuffled order or on the GPU, an emulated run that must never pass, a platform run off the
reference, a time over the budget, a jitter or a drift over its bound at the boundary, instruction
counts that differ, a host that is not the timing platform.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pipeline.compare import checks
from pipeline.compare import step, timing
from pipeline.compare.gpu import judge_cuda, mixed
from pipeline.compare.numbers import judge_outputs
from pipeline.compare.nvdla import judge_nvdla
from pipeline.compare.platform import judge_platform
from pipeline.compare.context import Run
from pipeline.nnef.tensorfile import write_arrays
from pipeline.ledger.checks import Obtained, Verdict, Where
from pipeline.numerics.tolerance import effective_tolerance
from pipeline.project.deploy import MetSpec, Tolerance, load_deploy

REPO = Path(__file__).resolve().parents[2]
PARAMS = {"max_ulp": 0, "max_jitter_ratio": 0.5, "max_drift_ratio": 0.1}


def _spec(max_rel_error: float | None = None, platform: str | None = None):  # type: ignore[no-untyped-def]
    spec = load_deploy(REPO / "models/lenet5/deploy.yaml")
    validation = dataclasses.replace(spec.validation, tolerance=Tolerance(1e-5, max_rel_error))
    return dataclasses.replace(spec, validation=validation, met=MetSpec(runs=10, budget_us=100.0, platform=platform))


def _run(name: str, spec: Any, doc: dict[str, Any], folder: Path, root: Path, run_dir: Path | None = None,
         split_dir: Path | None = None) -> Run:
    """The run of deployment `name` of model m as the compare step hands it to a part, its judgements in `folder`."""
    run = Run.of("m", name, spec, doc, PARAMS, root)
    return dataclasses.replace(run, folder=folder, run_dir=run_dir or run.run_dir, split_dir=split_dir or run.split_dir)


def _reference() -> dict[str, np.ndarray]:
    return {"a": np.arange(6, dtype=np.float32).reshape(3, 2) + 1, "b": np.ones((3, 4), np.float32)}


def _write(root: Path, folder: str, arrays: dict[str, np.ndarray]) -> dict[str, str]:
    return {n: str(p.relative_to(root)) for n, p in write_arrays(arrays, root / folder).items()}


# ---------------------------------------------------------------------------------------------- _numeric

def _numeric(tmp_path: Path, outputs: dict[str, np.ndarray], ort: dict[str, np.ndarray] | None = None,
             spec: Any = None, rules: dict | None = None) -> dict[str, Any]:  # type: ignore[type-arg]
    folder = tmp_path / "compare" / "single"
    folder.mkdir(parents=True, exist_ok=True)
    found = judge_outputs(_run("single", spec or _spec(), {}, folder, tmp_path), outputs, _reference(),
                                  ort if ort is not None else _reference(), rules or {}, ["in"])
    return {r.check_id: r for r in found}


def test_numeric_both_checks_pass_on_identical_outputs(tmp_path: Path) -> None:
    found = _numeric(tmp_path, _reference())
    assert [found[c].verdict for c in (checks.REFERENCE, checks.ONNXRUNTIME)] == [Verdict.PASS, Verdict.PASS]
    document = json.loads((tmp_path / "compare/single/numeric.json").read_text())
    assert document["onnxruntime"]["tolerance"]["max_abs_error"] == 1e-5
    assert found[checks.ONNXRUNTIME].measured["tolerance_max_abs_error"] == 1e-5
    assert found[checks.REFERENCE].written == ["compare/single/numeric.json"]


def test_numeric_one_output_off_by_one_ulp_fails_the_reference_only(tmp_path: Path) -> None:
    outputs = _reference()
    outputs["b"][2, 3] = np.nextafter(np.float32(1), np.float32(2))
    found = _numeric(tmp_path, outputs)
    assert found[checks.REFERENCE].verdict is Verdict.FAIL and "vector 2, element [3]" in found[checks.REFERENCE].reason
    assert found[checks.ONNXRUNTIME].verdict is Verdict.PASS
    document = json.loads((tmp_path / "compare/single/numeric.json").read_text())
    assert [o["verdict"] for o in document["reference"]["outputs"]] == ["pass", "fail"]


def test_numeric_beyond_the_tolerance_and_the_relative_tolerance_fails_onnxruntime(tmp_path: Path) -> None:
    outputs = _reference()
    outputs["a"][1, 0] += 0.5
    found = _numeric(tmp_path, outputs)
    assert found[checks.ONNXRUNTIME].verdict is Verdict.FAIL and "output a: max abs error" in found[checks.ONNXRUNTIME].reason
    # a per-output tolerance (the computed bound) replaces the deploy.yaml limit, and is named in the reason
    rule = effective_tolerance(1e-5, 1e-6)
    found = _numeric(tmp_path, outputs, rules={"a": rule, "b": rule})
    assert found[checks.ONNXRUNTIME].verdict is Verdict.FAIL
    assert "(tolerance computed bound: computed bound 1.000e-06" in found[checks.ONNXRUNTIME].reason
    assert found[checks.ONNXRUNTIME].measured["tolerance_max_abs_error"] == 1e-6
    loose = effective_tolerance(1.0, None, 1e-7)
    assert _numeric(tmp_path, outputs, rules={"a": loose, "b": loose})[checks.ONNXRUNTIME].verdict is Verdict.PASS
    relative = _reference()
    relative["a"][2, 1] *= np.float32(1.01)     # 6.0 -> 6.06: within 1.0 absolute, 1 % relative
    found = _numeric(tmp_path, relative, spec=_spec(max_rel_error=1e-3), rules={"a": loose, "b": loose})
    assert found[checks.ONNXRUNTIME].verdict is Verdict.FAIL and "relative" in found[checks.ONNXRUNTIME].reason
    assert found[checks.ONNXRUNTIME].measured["tolerance_max_rel_error"] == 1e-3


# --------------------------------------------------------------------------------------- _cuda_reference

def _cuda_doc(root: Path, in_order: dict[str, np.ndarray], shuffled: dict[str, np.ndarray],
              gpu: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"outputs": _write(root, "run/in", in_order), "outputs_shuffled": _write(root, "run/shuffled", shuffled),
            "shuffle_seed": 5, "emulation": "host emulation", "vectors": 3,
            "gpu": gpu or {"run": "no GPU here", "status": "not run"}}


def test_cuda_reference_is_emulated_never_pass_and_fails_on_a_shuffled_divergence(tmp_path: Path) -> None:
    folder = tmp_path / "compare/cuda"
    folder.mkdir(parents=True)
    good = judge_cuda(_run("cuda", _spec(), _cuda_doc(tmp_path, _reference(), _reference()), folder, tmp_path), _reference())
    assert good.verdict is Verdict.EMULATED and good.obtained.where is Where.EMULATION
    assert "0 ULP on 3 vectors" in good.reason
    shuffled = _reference()
    shuffled["a"][0, 1] = -0.0 if shuffled["a"][0, 1] == 0 else shuffled["a"][0, 1] + 1
    bad = judge_cuda(_run("cuda", _spec(), _cuda_doc(tmp_path, _reference(), shuffled), folder, tmp_path), _reference())
    assert bad.verdict is Verdict.FAIL and bad.reason.startswith("host emulation, blocks and threads shuffled (seed 5)")


def test_cuda_reference_on_the_gpu_passes_there_or_fails_there(tmp_path: Path) -> None:
    folder = tmp_path / "compare/cuda"
    folder.mkdir(parents=True)
    on_gpu = {k: v[:2] for k, v in _reference().items()}
    gpu = {"run": "ran", "status": "ran", "obtained": "target:orin", "vectors": 2, "device": "Orin",
           "outputs": _write(tmp_path, "run/gpu", on_gpu)}
    good = judge_cuda(_run("cuda", _spec(), _cuda_doc(tmp_path, _reference(), _reference(), gpu), folder, tmp_path), _reference())
    assert good.verdict is Verdict.PASS and good.obtained == Obtained.target("orin")
    assert good.measured["gpu_vectors"] == 2 and good.measured["gpu_max_ulp"] == 0
    on_gpu["b"][1, 0] = 2.0
    gpu["outputs"] = _write(tmp_path, "run/gpu", on_gpu)
    bad = judge_cuda(_run("cuda", _spec(), _cuda_doc(tmp_path, _reference(), _reference(), gpu), folder, tmp_path), _reference())
    assert bad.verdict is Verdict.FAIL and bad.reason.startswith("on the GPU: ") and bad.obtained.where is Where.TARGET
    failed = dict(gpu, status="failed", run="the kernel launch failed")
    crashed = judge_cuda(_run("cuda", _spec(), _cuda_doc(tmp_path, _reference(), _reference(), failed), folder, tmp_path), _reference())
    assert crashed.verdict is Verdict.FAIL and crashed.reason == "GPU run the kernel launch failed"


# ------------------------------------------------------------------------------------------ MET verdicts

def _whole(max_us: float, median_us: float = 50.0, p99_us: float = 60.0) -> dict[str, Any]:
    return {"max_us": max_us, "median_us": median_us, "p99_us": p99_us}


def _met(whole: dict[str, Any], jitter: float, drift: float | None) -> dict[str, Any]:
    base = None if drift is None else {"median_us": 50.0}
    found = timing._verdicts("m", "single", "m/single", whole, 100.0, jitter, drift, base, PARAMS, ["t"], ["w"],
                               {"runs": 10}, REPO, Obtained.target("orin"))
    return {r.check_id: r for r in found}


def test_met_budget_at_its_boundary() -> None:
    assert _met(_whole(100.0), 0.1, 0.0)[checks.BUDGET].verdict is Verdict.PASS
    over = _met(_whole(100.5), 0.1, 0.0)[checks.BUDGET]
    assert over.verdict is Verdict.FAIL and over.reason == "max 100.5 us exceeds the budget 100.0 us (median 50.0 us)"
    assert over.obtained == Obtained.target("orin") and over.measured["budget_us"] == 100.0


def test_met_stability_jitter_and_drift_at_their_boundaries() -> None:
    assert _met(_whole(10), 0.5, 0.1)[checks.STABILITY].verdict is Verdict.PASS
    jitter = _met(_whole(10), 0.51, 0.0)[checks.STABILITY]
    assert jitter.verdict is Verdict.FAIL and jitter.reason.startswith("jitter (p99 - median) / median = 0.510 exceeds 0.5")
    drift = _met(_whole(10), 0.1, 0.11)[checks.STABILITY]
    assert drift.verdict is Verdict.FAIL and "drifted by +11.0% from the accepted 50.0 us (bound 10%)" in drift.reason
    assert _met(_whole(10), 0.1, -0.5)[checks.STABILITY].verdict is Verdict.PASS      # faster is no drift failure
    unknown = _met(_whole(10), 0.1, None)[checks.STABILITY]
    assert unknown.verdict is Verdict.NOT_RUN and "no accepted baseline for single" in unknown.reason
    assert unknown.measured["drift_ratio"] is None and unknown.measured["max_jitter_ratio"] == 0.5
    figures = _met(_whole(10), 0.123456, 0.0123456)[checks.STABILITY].measured
    assert (figures["jitter_ratio"], figures["drift_ratio"], figures["max_drift_ratio"]) == (0.1235, 0.0123, 0.1)


def test_the_run_parameters_are_the_requirements_values_and_its_folders_the_layouts(tmp_path: Path) -> None:
    from pipeline.compare.context import parameters

    assert parameters(REPO) == {"max_ulp": 0, "max_jitter_ratio": 0.05, "max_drift_ratio": 0.1}
    run = Run.of("m", "single", _spec(), {"status": "ran"}, PARAMS, tmp_path)
    assert (run.model, run.name, run.doc, run.params, run.root, run.subject) == (
        "m", "single", {"status": "ran"}, PARAMS, tmp_path, "m/single")
    assert (run.folder, run.run_dir, run.split_dir) == (tmp_path / "artifacts/m/compare/single",
                                                        tmp_path / "artifacts/m/execute/single",
                                                        tmp_path / "artifacts/m/split/single")


def test_the_timing_platform_is_the_declared_one_named_by_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(timing.PLATFORM_VARIABLE, raising=False)
    assert timing.timing_platform(_spec()) == (None, "deploy.yaml declares no met.platform")
    assert timing.timing_platform(_spec(platform="orin"))[0] is None
    assert timing.timing_platform(_spec(platform="orin"))[1] == "NNCERT_PLATFORM=(unset), deploy.yaml met.platform=orin"
    monkeypatch.setenv(timing.PLATFORM_VARIABLE, "xavier")
    assert timing.timing_platform(_spec(platform="orin"))[0] is None
    monkeypatch.setenv(timing.PLATFORM_VARIABLE, "orin")
    assert timing.timing_platform(_spec(platform="orin")) == (Obtained.target("orin"), "")


def _timing_run(root: Path, ns: list[int]) -> tuple[Path, Path]:
    run_dir, split_dir = root / "run", root / "split"
    run_dir.mkdir(parents=True, exist_ok=True)
    split_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "timing.json").write_text(json.dumps({"ns": ns, "warmup": 1, "runs": len(ns)}))
    (split_dir / "schedule.json").write_text(json.dumps({"items": {}}))
    return run_dir, split_dir


def test_met_on_a_host_that_is_not_the_timing_platform_is_not_run_with_the_figures(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(timing.PLATFORM_VARIABLE, raising=False)
    run_dir, split_dir = _timing_run(tmp_path, [200_000] * 10)        # 200 us: over the 100 us budget
    folder = tmp_path / "compare"
    folder.mkdir()
    found = timing.judge_met(_run("single", _spec(platform="orin"), {}, folder, tmp_path, run_dir, split_dir))
    assert [r.verdict for r in found] == [Verdict.NOT_RUN, Verdict.NOT_RUN]
    assert "host is not the timing platform" in found[0].reason and "max 200.0 us (budget 100.0 us)" in found[0].reason
    monkeypatch.setenv(timing.PLATFORM_VARIABLE, "orin")
    found = timing.judge_met(_run("single", _spec(platform="orin"), {}, folder, tmp_path, run_dir, split_dir))
    assert found[0].verdict is Verdict.FAIL and found[0].obtained == Obtained.target("orin")
    none = timing.judge_met(_run("single", _spec(), {}, folder, tmp_path, tmp_path / "nothing", split_dir))
    assert [r.verdict for r in none] == [Verdict.NOT_RUN] * 2


# ------------------------------------------------------------------------------------------------ _path

def _counts(root: Path, document: dict[str, Any] | None) -> Any:
    run_dir = root / "run"
    run_dir.mkdir(parents=True, exist_ok=True)
    if document is not None:
        (run_dir / "instructions.json").write_text(json.dumps(document))
    folder = root / "compare"
    folder.mkdir(exist_ok=True)
    return timing.judge_path("m/single", run_dir, folder, root)


@pytest.mark.parametrize("document, verdict, reason", [
    (None, Verdict.NOT_RUN, "the execute step counted no instructions"),
    ({"status": "not run", "reason": "no valgrind"}, Verdict.NOT_RUN, "no valgrind"),
    ({"status": "ran", "inputs": [{"input": "v0", "instructions": 7}]}, Verdict.NOT_RUN, "fewer than two inputs counted"),
    ({"status": "ran", "inputs": [{"input": "v0", "instructions": 7}, {"input": "v1", "instructions": 7},
                                  {"input": "v2", "instructions": 8}]},
     Verdict.FAIL, "instruction counts differ: v0 7, v2 8"),
    ({"status": "ran", "tool": "valgrind", "inputs": [{"input": "v0", "instructions": 7},
                                                      {"input": "v1", "instructions": 7}]}, Verdict.PASS, ""),
], ids=["none", "not-ran", "one-input", "differ", "same"])
def test_instruction_counts_one_path_for_every_input(tmp_path: Path, document, verdict, reason) -> None:  # type: ignore[no-untyped-def]
    found = _counts(tmp_path, document)
    assert (found.check_id, found.verdict, found.reason) == (checks.PATH, verdict, reason)
    if verdict is Verdict.PASS:
        assert found.measured == {"inputs": 2, "instructions": [7], "tool": "valgrind"}
        assert json.loads((tmp_path / "compare/path.json").read_text()) == {
            "schema_version": 1, "tool": "valgrind", "counts": {"v0": 7, "v1": 7}}
        assert found.written == ["compare/path.json"] and found.read == ["run/instructions.json"]


# ----------------------------------------------------------------------------------------- n/a checks

def test_not_applicable_only_where_no_deployment_gives_the_check_a_subject() -> None:
    shipped = _spec()     # lenet5 has a cuda deployment and one on another platform: every check applies
    assert step._not_applicable("m", shipped, []) == []
    spec = dataclasses.replace(shipped, deployments={"single": shipped.deployments["single"]})
    found = {r.check_id: r for r in step._not_applicable("m", spec, [])}
    assert set(found) == {checks.CUDA_REFERENCE, checks.PLATFORM_REFERENCE, checks.PLATFORM_TRACES, checks.PLATFORM_PATH}
    assert all(r.verdict is Verdict.NOT_APPLICABLE for r in found.values())
    done = step._not_applicable("m", spec, [step.result(checks.CUDA_REFERENCE, "m/x", Verdict.FAIL, "planted")])
    assert checks.CUDA_REFERENCE not in {r.check_id for r in done}


# ------------------------------------------------------------------------------ platform and NVDLA runs

def _platform_run(root: Path, outputs: dict[str, np.ndarray], where: str) -> list[Any]:
    detail = {"emulation": "qemu-aarch64", "target": "board", "host": "x86_64 Linux"}[where]
    doc = {"platform": {"name": "board", "obtained": {"where": where, "detail": detail}, "timing": True},
           "vectors": 2, "outputs": _write(root, "run/platform", {n: a[:2] for n, a in outputs.items()})}
    folder = root / "compare/platform"
    folder.mkdir(parents=True, exist_ok=True)
    return judge_platform(_run("platform", _spec(), doc, folder, root), _reference())


def test_a_platform_run_is_judged_on_its_vectors_and_an_emulated_one_never_passes(tmp_path: Path) -> None:
    numbers, traces, budget, stability, path = _platform_run(tmp_path, _reference(), "emulation")
    assert numbers.check_id == checks.PLATFORM_REFERENCE and numbers.verdict is Verdict.EMULATED
    assert numbers.obtained == Obtained.emulation("qemu-aarch64") and "never pass" in numbers.reason
    assert [r.verdict for r in (traces, budget, stability, path)] == [Verdict.NOT_RUN] * 4
    assert path.check_id == checks.PLATFORM_PATH
    target = _platform_run(tmp_path, _reference(), "target")[0]
    assert target.verdict is Verdict.PASS and target.obtained == Obtained.target("board")
    off = _reference()
    off["a"][1, 1] = np.float32(-7.0)
    failed = _platform_run(tmp_path, off, "target")[0]
    assert failed.verdict is Verdict.FAIL and failed.reason.startswith("on board, 2 vectors: ")
    assert "vector 1, element [1]" in failed.reason
    assert _platform_run(tmp_path, off, "emulation")[0].verdict is Verdict.FAIL   # emulated: fail, never pass


def test_an_nvdla_run_within_the_absolute_parameter_is_emulated_and_beyond_it_fails(tmp_path: Path) -> None:
    import shutil

    shutil.copytree(REPO / "requirements", tmp_path / "requirements")
    folder = tmp_path / "compare/dla"
    folder.mkdir(parents=True)

    def judged(outputs: dict[str, np.ndarray]) -> Any:
        doc = {"precision": "int8", "outputs": _write(tmp_path, "run/dla", outputs), "emulation": "NVDLA emulator",
               "mode": "fp16", "mode_meaning": "", "vectors": 3, "configuration": "nv_full", "model": "m"}
        return judge_nvdla(_run("dla", spec, doc, folder, tmp_path), _reference())

    shipped = _spec()    # the deployment's own FP16 limit above HLR-NUM-004's 0.01: the ranking works to it
    dla = dataclasses.replace(shipped.deployments["dla"], fp16={"max_abs_error": 0.02, "top1_agreement": 1.0})
    spec = dataclasses.replace(shipped, deployments={**shipped.deployments, "dla": dla})
    good = judged(_reference())
    assert good.check_id == checks.NVDLA_REFERENCE and good.verdict is Verdict.EMULATED
    assert "no NVDLA here, so never pass" in good.reason and good.obtained.where is Where.EMULATION
    assert good.measured["tolerance_basis"] == "absolute tolerance" and good.measured["precision"] == "int8"
    off = _reference()
    off["b"][0, 0] += 1e3
    bad = judged(off)
    assert bad.verdict is Verdict.FAIL and "absolute tolerance int8_max_abs_error" in bad.reason
    assert "which layers to move was not evaluated" in bad.reason
    assert bad.obtained == Obtained.emulation("NVDLA emulator") and bad.written == ["compare/dla/nvdla-numeric.json"]
    assert bad.read == ["run/dla/a.dat", "run/dla/b.dat"]


# --------------------------------------------------------------------- mixed deployments and GPU runs

def _mixed_project(root: Path, ns: list[int]) -> None:
    run_dir = root / "artifacts/m/execute/mixed"
    split_dir = root / "artifacts/m/split/mixed"
    for folder in (run_dir, run_dir / "gpu", split_dir):
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "timing.json").write_text(json.dumps({"ns": ns, "warmup": 1, "runs": len(ns)}))
    (split_dir / "schedule.json").write_text(json.dumps({"items": {}}))


def test_host_figures_of_an_emulated_cuda_item_are_never_judged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(timing.PLATFORM_VARIABLE, "orin")          # even where the host is the timing platform
    _mixed_project(tmp_path, [10_000] * 10)                       # 10 us, well inside the 100 us budget
    folder = tmp_path / "artifacts/m/compare/mixed"
    folder.mkdir(parents=True)
    doc = {"cuda_items": ["GPU0"], "gpu": {"status": "not run"}}
    traces, budget, stability, path = mixed(_run("mixed", _spec(platform="orin"), doc, folder, tmp_path))
    assert (traces.check_id, traces.verdict) == (checks.TRACES, Verdict.NOT_RUN)
    assert [budget.check_id, stability.check_id, path.check_id] == [checks.BUDGET, checks.STABILITY, checks.PATH]
    assert [budget.verdict, stability.verdict, path.verdict] == [Verdict.NOT_RUN] * 3
    assert budget.reason.startswith("the cuda items ran on the host emulation: these are host figures")
    assert budget.measured["max_us"] == 10.0 and budget.obtained.where is Where.EMULATION
    assert "cuda items (GPU0) on the CUDA host emulation" in budget.obtained.detail
    dla = mixed(_run("mixed", _spec(platform="orin"), {"nvdla_items": ["DLA0"], "met": "no MET with DLA"}, folder, tmp_path))
    assert [r.verdict for r in dla] == [Verdict.NOT_RUN] * 4 and dla[1].reason == "no MET with DLA"


def test_gpu_figures_are_judged_only_where_the_gpu_is_the_timing_platform(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    _mixed_project(tmp_path, [200_000] * 10)                      # 200 us: over the budget
    folder = tmp_path / "artifacts/m/compare/mixed"
    folder.mkdir(parents=True)
    doc = {"cuda_items": ["GPU0"], "gpu": {"status": "ran", "obtained": "target:orin",
                                           "folder": "artifacts/m/execute/mixed/gpu"}}
    monkeypatch.delenv(timing.PLATFORM_VARIABLE, raising=False)
    traces, budget, stability, path = mixed(_run("mixed", _spec(platform="orin"), doc, folder, tmp_path))
    assert [r.verdict for r in (traces, budget, stability, path)] == [Verdict.NOT_RUN] * 4
    assert budget.reason.startswith("the GPU is not the timing platform (NNCERT_PLATFORM=(unset)")
    assert budget.obtained == Obtained.target("orin")          # figures measured on the GPU, not judged
    assert "valgrind does not see a GPU" in path.reason
    monkeypatch.setenv(timing.PLATFORM_VARIABLE, "orin")
    budget = mixed(_run("mixed", _spec(platform="orin"), doc, folder, tmp_path))[1]
    assert budget.verdict is Verdict.FAIL and budget.obtained == Obtained.target("orin")
    assert (folder / "gpu" / "met.json").is_file()
    monkeypatch.delenv(timing.PLATFORM_VARIABLE)
    mixed(_run("mixed", _spec(platform="orin"), {"cuda_items": ["GPU0"]}, folder, tmp_path))
    assert list(step.current_met_documents("m", tmp_path)) == ["mixed"]
    assert step.current_met_documents("m", tmp_path)["mixed"]["whole_network"]["max_us"] == 200.0


# ------------------------------------------------------------------------- the reported MET figures

def test_met_document_reports_every_figure_and_the_drift_from_the_accepted_baseline(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline.compare.met import accept_baseline

    monkeypatch.setenv(timing.PLATFORM_VARIABLE, "orin")
    run_dir, split_dir = _timing_run(tmp_path, [50_000] * 9 + [60_000])
    (split_dir / "schedule.json").write_text(json.dumps({"items": {"CPU0": [{"kind": "compute", "result": "y",
                                                                               "op": "relu"}]}}))
    (run_dir / "step-timing.json").write_text(json.dumps({"items": {"CPU0": [{"step": 0, "ns": [1000, 3000]}]}}))
    (tmp_path / "models/m").mkdir(parents=True)
    whole = {"runs": 10, "mean_us": 40.0, "median_us": 40.0, "p99_us": 40.0, "max_us": 40.0, "min_us": 40.0}
    accept_baseline("m", {"single": {"whole_network": whole}}, tmp_path)
    folder = tmp_path / "compare"
    folder.mkdir()
    doc = {"compiler": "gcc 12", "host_isa": "x86-64-v3", "builds": [{"flags": ["-O2"]}]}
    budget, stability = timing.judge_met(_run("single", _spec(platform="orin"), doc, folder, tmp_path, run_dir, split_dir))
    met = json.loads((folder / "met.json").read_text())
    assert (met["model"], met["deployment"], met["budget_us"]) == ("m", "single", 100.0)
    assert (met["compiler"], met["flags"], met["host_isa"]) == ("gcc 12", ["-O2"], "x86-64-v3")
    assert met["steps"][0]["layer"] == "y (relu)" and met["steps"][0]["item"] == "CPU0"
    assert met["jitter_ratio"] == round(met["whole_network"]["p99_us"] / met["whole_network"]["median_us"] - 1, 4)
    assert (met["drift_ratio"], met["max_drift_ratio"], met["max_jitter_ratio"]) == (0.25, 0.1, 0.5)
    assert met["baseline"]["median_us"] == 40.0 and met["method"]["runs"] == 10 and met["method"]["warmup"] == 1
    assert stability.verdict is Verdict.FAIL and "drifted by +25.0% from the accepted 40.0 us" in stability.reason
    assert stability.read == ["run/timing.json", "run/step-timing.json", "models/m/met-baseline.json"]
    assert budget.written == stability.written == ["compare/met.json", "compare/met.md", "compare/met-histogram.svg"]
    accept_baseline("m", {"single": {"whole_network": {**whole, "median_us": 50.0}}}, tmp_path)
    budget, stability = timing.judge_met(_run("single", _spec(platform="orin"), doc, folder, tmp_path, run_dir, split_dir))
    assert (budget.verdict, stability.verdict, stability.reason) == (Verdict.PASS, Verdict.PASS, "")
    assert stability.obtained == Obtained.target("orin") and stability.measured["drift_ratio"] == 0.0
    assert stability.read[-1] == "models/m/met-baseline.json" and stability.written == budget.written
    none = timing.judge_met(_run("single", _spec(), {}, folder, tmp_path, tmp_path / "nothing", split_dir))
    assert none[1].reason == "the execute step measured no execution time"


def test_instruction_counts_of_one_input_report_what_was_counted(tmp_path: Path) -> None:
    found = _counts(tmp_path, {"status": "ran", "tool": "valgrind", "inputs": [{"input": "v0", "instructions": 7}]})
    assert found.measured == {"inputs": 1, "instructions": [7], "tool": "valgrind"} and found.subject == "m/single"
    assert found.read == ["run/instructions.json"] and found.written == ["compare/path.json"]
    differ = _counts(tmp_path, {"status": "ran", "tool": "valgrind", "inputs": [
        {"input": "v0", "instructions": 7}, {"input": "v1", "instructions": 9}]})
    assert differ.measured["instructions"] == [7, 9] and differ.written == ["compare/path.json"]
    assert _counts(tmp_path, {"status": "not run"}).reason == "instruction counting did not run"


# ------------------------------------------------------------------------ the reported CUDA figures

def test_cuda_reference_reports_where_and_on_what_it_was_judged(tmp_path: Path) -> None:
    folder = tmp_path / "compare/cuda"
    folder.mkdir(parents=True)
    good = judge_cuda(_run("cuda", _spec(), _cuda_doc(tmp_path, _reference(), _reference()), folder, tmp_path), _reference())
    assert good.reason == "host emulation: 0 ULP on 3 vectors, blocks and threads in order and shuffled; GPU run no GPU here"
    assert good.read == ["run/in/a.dat", "run/in/b.dat", "run/shuffled/a.dat", "run/shuffled/b.dat"]
    assert good.written == ["compare/cuda/cuda-numeric.json"]
    assert good.obtained == Obtained.emulation("CUDA host emulation (g++ -ffp-contract=off, nnef_cuda_emulate.h)")
    assert good.measured["vectors"] == 3 and good.measured["gpu"] == "no GPU here"
    assert good.measured["in order"]["max_ulp"] == 0
    document = json.loads((folder / "cuda-numeric.json").read_text())
    assert document["schema_version"] == 1 and document["emulation"] == "host emulation"
    assert set(document) == {"schema_version", "emulation", "in order", "shuffled (seed 5)"}
    off = _reference()
    off["b"][0, 0] = 3.0
    bad = judge_cuda(_run("cuda", _spec(), _cuda_doc(tmp_path, off, _reference()), folder, tmp_path), _reference())
    assert bad.reason.startswith("host emulation, blocks and threads in order: not bit-identical: first divergence at output b")
    assert bad.obtained == good.obtained and bad.written == good.written and bad.read == good.read
    assert bad.subject == good.subject == "m/cuda"
    assert bad.measured["in order"]["max_ulp"] > 0
    on_gpu = {k: v[:2] for k, v in _reference().items()}
    gpu = {"run": "ran", "status": "ran", "obtained": "target:orin", "vectors": 2, "device": "Orin",
           "outputs": _write(tmp_path, "run/gpu", on_gpu)}
    ran = judge_cuda(_run("cuda", _spec(), _cuda_doc(tmp_path, _reference(), _reference(), gpu), folder, tmp_path), _reference())
    assert ran.reason == "" and ran.written == ["compare/cuda/cuda-numeric.json", "compare/cuda/gpu-numeric.json"]
    assert ran.read == good.read + ["run/gpu/a.dat", "run/gpu/b.dat"]
    assert json.loads((folder / "gpu-numeric.json").read_text())["device"] == "Orin"
    assert json.loads((folder / "gpu-numeric.json").read_text())["schema_version"] == 1
    on_gpu["a"][1, 1] = 0.0
    gpu["outputs"] = _write(tmp_path, "run/gpu", on_gpu)
    bad = judge_cuda(_run("cuda", _spec(), _cuda_doc(tmp_path, _reference(), _reference(), gpu), folder, tmp_path), _reference())
    assert bad.reason.startswith("on the GPU: not bit-identical: first divergence at output a") and "vector 1" in bad.reason
    assert bad.read == ran.read and bad.written == ran.written and bad.measured["gpu_vectors"] == 2
    failed = dict(gpu, status="failed", run="the kernel launch failed")
    crashed = judge_cuda(_run("cuda", _spec(), _cuda_doc(tmp_path, _reference(), _reference(), failed), folder, tmp_path),
                         _reference())
    assert crashed.obtained == Obtained.target("orin") and crashed.read == good.read
    assert crashed.written == ["compare/cuda/cuda-numeric.json"] and crashed.measured["vectors"] == 3


def test_gpu_traces_say_where_they_ran_and_a_mixed_run_reports_why_figures_are_not_judged(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline.compare import gpu as gpu_part
    from pipeline.compare.checks import result

    _mixed_project(tmp_path, [10_000] * 10)
    folder = tmp_path / "artifacts/m/compare/mixed"
    folder.mkdir(parents=True)
    verdict = [Verdict.NOT_RUN]
    monkeypatch.setattr(gpu_part, "judge_traces", lambda subject, *a: result(checks.TRACES, subject, verdict[0],
                                                                             "replayed", {"traces": 1}, ["r"], ["w"]))
    doc = {"cuda_items": ["GPU0"], "gpu": {"status": "ran", "obtained": "target:orin",
                                           "folder": "artifacts/m/execute/mixed/gpu"}}
    monkeypatch.delenv(timing.PLATFORM_VARIABLE, raising=False)
    assert mixed(_run("mixed", _spec(platform="orin"), doc, folder, tmp_path))[0].obtained == Obtained.host()
    verdict[0] = Verdict.PASS
    traces = gpu_part.gpu_runs(_run("mixed", _spec(platform="orin"), doc, folder, tmp_path))[0]
    assert (traces.verdict, traces.obtained, traces.read, traces.written) == (Verdict.PASS, Obtained.target("orin"),
                                                                             ["r"], ["w"])
    emulated = {"cuda_items": ["GPU0", "GPU1"], "gpu": {"status": "not run"}}
    traces, budget, stability, path = mixed(_run("mixed", _spec(), emulated, folder, tmp_path))
    assert traces.verdict is Verdict.EMULATED and traces.measured == {"traces": 1}
    assert traces.reason == "every trace a valid path of the net, the cuda items (GPU0, GPU1) on the CUDA host emulation"
    assert traces.obtained == Obtained.emulation("C program with its cuda items (GPU0, GPU1) on the CUDA host emulation")
    assert (traces.read, traces.written) == (["r"], ["w"])
    assert budget.reason.startswith("the cuda items ran on the host emulation: these are host figures, not a GPU timing; "
                                    "host is not the timing platform")
    assert budget.written == ["artifacts/m/compare/mixed/met.json", "artifacts/m/compare/mixed/met.md",
                              "artifacts/m/compare/mixed/met-histogram.svg"]
    assert budget.read == ["artifacts/m/execute/mixed/timing.json"] and budget.subject == stability.subject == "m/mixed"
    assert path.reason == ("instruction counts are not taken on the host emulation of cuda items (they say nothing "
                           "about a GPU)")
    verdict[0] = Verdict.FAIL      # a failed trace replay: the GPU's figures are not looked at, the failure stays
    traces = mixed(_run("mixed", _spec(), doc, folder, tmp_path))[0]
    assert (traces.verdict, traces.reason) == (Verdict.FAIL, "replayed")
    nothing = mixed(_run("mixed", _spec(), {"cuda_items": ["GPU0"]}, folder / "none", tmp_path / "none"))
    assert nothing[1].reason == "the cuda items ran on the host emulation: these are host figures, not a GPU timing" \
                                "; the execute step measured no execution time" and nothing[1].obtained == Obtained.host()
    dla = mixed(_run("mixed", _spec(), {"nvdla_items": ["DLA0"]}, folder, tmp_path))
    assert [r.reason for r in dla[1:]] == ["not measured"] * 3 and dla[3].check_id == checks.PATH
    verdict[0] = Verdict.PASS
    both = mixed(_run("mixed", _spec(), {"cuda_items": ["GPU0"], "nvdla_items": ["DLA0", "DLA1"]}, folder, tmp_path))[0]
    assert both.obtained.detail == ("C program with its cuda items (GPU0) on the CUDA host emulation and nvdla items "
                                    "(DLA0, DLA1) on the NVDLA emulator server")


# --------------------------------------------------------------------- the reported platform figures

def test_a_platform_run_reports_where_it_ran_and_judges_met_only_on_a_timing_target(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline.compare import platform as platform_part
    from pipeline.compare.checks import result

    seen: list[Any] = []
    monkeypatch.setattr(platform_part, "judge_traces", lambda subject, *a: result(
        checks.TRACES, subject, seen[-1], "replayed", {"traces": 1}, ["r"], ["w"]))
    monkeypatch.setattr(platform_part, "judge_met", lambda run, judged_on, obtained: seen.append(
        (judged_on, obtained)) or [])
    seen.append(Verdict.PASS)
    numbers, traces, path = _platform_run(tmp_path, _reference(), "emulation")
    assert numbers.reason == "on qemu-aarch64, 2 vectors: 0 ULP against the reference (NaN = NaN); emulated, so never pass"
    assert numbers.read == ["run/platform/a.dat", "run/platform/b.dat", "artifacts/m/compare/reference"]
    assert numbers.written == ["compare/platform/numeric.json"] and numbers.measured["max_ulp"] == 0
    document = json.loads((tmp_path / "compare/platform/numeric.json").read_text())
    assert (document["schema_version"], document["vectors"], document["platform"]["name"]) == (2, 2, "board")
    assert (traces.check_id, traces.verdict) == (checks.PLATFORM_TRACES, Verdict.EMULATED)
    assert traces.reason == "on qemu-aarch64, 2 vectors: every trace a valid path of the net, outputs identical across the runs"
    assert (traces.read, traces.written, traces.obtained) == (["r"], ["w"], Obtained.emulation("qemu-aarch64"))
    assert seen[-1] == ((None, "measured on qemu-aarch64: an emulator's timings are reported, never judged"),
                        Obtained.emulation("qemu-aarch64"))
    assert path.check_id == checks.PLATFORM_PATH and path.reason == "the execute step counted no instructions"
    seen.append(Verdict.PASS)
    numbers, traces, _ = _platform_run(tmp_path, _reference(), "target")
    assert (numbers.verdict, numbers.reason, numbers.obtained) == (Verdict.PASS, "", Obtained.target("board"))
    assert numbers.read == ["run/platform/a.dat", "run/platform/b.dat", "artifacts/m/compare/reference"]
    assert numbers.written == ["compare/platform/numeric.json"]
    assert (traces.verdict, traces.reason, traces.obtained) == (Verdict.PASS, "replayed", Obtained.target("board"))
    assert seen[-1] == ((Obtained.target("board"), ""), Obtained.target("board"))
    seen.append(Verdict.NOT_RUN)
    numbers, traces, _ = _platform_run(tmp_path, _reference(), "host")
    assert numbers.obtained == Obtained.host() and traces.obtained == Obtained.host()
    assert seen[-1] == ((None, "platform board is not a timing platform (deploy.yaml `timing: true`)"), Obtained.host())
    off = _reference()
    off["a"][0, 0] = 9.0
    seen.append(Verdict.FAIL)
    numbers, traces, _ = _platform_run(tmp_path, off, "emulation")
    assert (numbers.read, numbers.written) == (["run/platform/a.dat", "run/platform/b.dat", "artifacts/m/compare/reference"],
                                               ["compare/platform/numeric.json"])
    assert numbers.obtained == Obtained.emulation("qemu-aarch64") and numbers.measured["max_ulp"] > 0
    assert (traces.verdict, traces.reason) == (Verdict.FAIL, "replayed")


# ----------------------------------------------------------------- the FP16 judgement of an NVDLA run

class _Op:
    def __init__(self, name: str, outputs: list[str]) -> None:
        self.name, self._outputs = name, outputs

    def output_refs(self) -> list[Any]:
        return [dataclasses.make_dataclass("Ref", ["name"])(n) for n in self._outputs]


def test_an_fp16_nvdla_run_is_judged_by_the_bound_and_a_failure_names_the_layers_to_move(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    import shutil

    from pipeline.compare import fp16_layers, nvdla, nvdla_bound

    shutil.copytree(REPO / "requirements", tmp_path / "requirements")
    folder = tmp_path / "compare/dla"
    folder.mkdir(parents=True)
    calls: dict[str, Any] = {}
    judgement = nvdla_bound.BoundJudgement(
        nvdla_bound.BOUND, 0.05, vectors=3, max_abs_error=0.02, max_bound=0.03, max_ratio=0.7, beyond=0,
        outputs={"b": {"basis": nvdla_bound.BOUND}, "a": {"basis": nvdla_bound.ABSOLUTE, "why": "no bound"}},
        requirement={"limits": {"max_abs_error": {"limit": 0.01, "dla": 0.02, "independent_fp16": 0.005}}})

    def judge_run(*args: Any) -> Any:
        calls["judge_run"] = args
        return judgement

    monkeypatch.setattr(nvdla_bound, "judge_run", judge_run)
    split = tmp_path / "artifacts/m/split/dla"
    split.mkdir(parents=True)
    (split / "plan.json").write_text(json.dumps({"items": [{"name": "DLA0", "target": "nvdla"},
                                                           {"name": "CPU1", "target": "cpu"}]}))
    graphs = {"DLA0.nnef": [_Op("external", ["x"]), _Op("conv", ["c1"]), _Op("relu", ["r1"])],
              "graph.nnef": [_Op("conv", ["c1"]), _Op("relu", ["r1"]), _Op("linear", ["y"])]}

    def check_paths(paths: list[Path], tensors: bool) -> Any:
        assert tensors is False and len(paths) == 1
        calls.setdefault("checked", []).append(paths[0])
        graph = dataclasses.make_dataclass("G", ["operations"])(graphs[paths[0].name])
        return dataclasses.make_dataclass("R", ["graphs"])([graph])

    monkeypatch.setattr(nvdla, "check_paths", check_paths)
    monkeypatch.setattr(nvdla, "load_variables", lambda graph, export: {"w": export})
    monkeypatch.setattr(nvdla, "read_inputs", lambda model, root: calls.setdefault("inputs", (model, root)) and {
        "x": np.arange(4, dtype=np.float32).reshape(2, 2)})

    def rank(graph: Any, variables: Any, vectors: list[Any], on_dla: set[str], tolerance: float) -> Any:
        calls["rank"] = (variables, vectors, on_dla, tolerance)
        return fp16_layers.LayerRanking(tolerance, len(vectors), 0.04, [{"layer": "c1", "max_abs_error": 0.03}],
                                        ["c1"], 0.001, True)

    monkeypatch.setattr(fp16_layers, "rank", rank)

    def judged(outputs: dict[str, np.ndarray], **extra: Any) -> Any:
        doc = {"precision": "fp16", "outputs": _write(tmp_path, "run/dla", outputs), "emulation": "NVDLA emulator",
               "mode": "fp16", "mode_meaning": "native FP16", "vectors": 3, "configuration": "nv_full",
               "deployment": "dla", "nvdla_items": ["DLA0"], "target": "nvdla", **extra}
        return judge_nvdla(_run("dla", spec, doc, folder, tmp_path), _reference())

    shipped = _spec()    # the deployment's own FP16 limit above HLR-NUM-004's 0.01: the ranking works to it
    dla = dataclasses.replace(shipped.deployments["dla"], fp16={"max_abs_error": 0.02, "top1_agreement": 1.0})
    spec = dataclasses.replace(shipped, deployments={**shipped.deployments, "dla": dla})
    good = judged(_reference())
    model, root, outputs, tolerance, requirement, deployment, items, whole = calls["judge_run"]
    assert (model, root, deployment, items, whole) == ("m", tmp_path, "dla", ["DLA0"], True)
    assert tolerance == 0.01 and requirement == {"max_abs_error": 0.02, "top1_agreement": 1.0}
    np.testing.assert_array_equal(outputs["a"], _reference()["a"])
    assert good.verdict is Verdict.EMULATED and good.measured["tolerance_basis"] == nvdla_bound.BOUND
    assert good.reason.startswith("precision FP16, emulator mode fp16, 3 vectors: " + nvdla_bound.describe(judgement))
    assert good.measured["max_abs_error_to_exact"] == good.measured["max_abs_error_to_float64"] == 0.02
    assert (good.measured["max_bound"], good.measured["max_error_to_bound"], good.measured["elements_beyond"]) == \
        (0.03, 0.7, 0)
    assert good.measured["a.tolerance_basis"] == nvdla_bound.ABSOLUTE and good.measured["b.tolerance_basis"] == nvdla_bound.BOUND
    assert (good.measured["fp16_requirement.max_abs_error"], good.measured["fp16_requirement.max_abs_error.dla"],
            good.measured["fp16_requirement.max_abs_error.independent_fp16"]) == (0.01, 0.02, 0.005)
    assert good.measured["tolerance_parameter"] == "HLR-NUM-004 fp16_max_abs_error"
    assert (good.measured["mode"], good.measured["configuration"]) == ("fp16", "nv_full")
    document = json.loads((folder / "nvdla-numeric.json").read_text())
    assert (document["schema_version"], document["mode_meaning"], document["precision"]) == (1, "native FP16", "fp16")
    assert document["tolerance"] == {"requirement": "HLR-NUM-004", "parameter": "fp16_max_abs_error",
                                     "max_abs_error": 0.01, "basis": nvdla_bound.BOUND}
    assert document["bound"] == judgement.to_json()
    judged(_reference(), target="mixed", model="other")
    assert calls["judge_run"][0] == "other" and calls["judge_run"][-1] is False
    judgement.beyond = 2        # beyond the bound: fail, with the layers to move within the deployment's own limit
    bad = judged(_reference())
    assert bad.verdict is Verdict.FAIL and bad.obtained == Obtained.emulation("NVDLA emulator")
    variables, vectors, on_dla, limit = calls["rank"]
    assert on_dla == {"c1", "r1"} and limit == 0.02 and len(vectors) == 2
    np.testing.assert_array_equal(vectors[1]["x"], [2.0, 3.0])
    assert variables == {"w": tmp_path / "artifacts/m/export"} and calls["inputs"] == ("m", tmp_path)
    assert calls["checked"][-2:] == [split / "DLA0.nnef", tmp_path / "artifacts/m/export/graph.nnef"]
    assert bad.written == ["compare/dla/nvdla-numeric.json", "compare/dla/fp16-layers.json"]
    assert (bad.measured["fp16_layers_to_move"], bad.measured["fp16_layers_error_after_move"]) == ("c1", 0.001)
    ranking = json.loads((folder / "fp16-layers.json").read_text())
    assert ranking["schema_version"] == 1 and ranking["move"] == ["c1"]
    assert bad.reason.endswith("; move 1 layer(s) to a CPU or GPU item: c1 (then max |error| 0.001 <= 0.02)")
    monkeypatch.setattr(nvdla_bound, "judge_run", lambda *a: (_ for _ in ()).throw(ValueError("no enclosure")))
    off = _reference()
    off["a"][0, 0] += 1.0
    spec = shipped       # no FP16 limit of its own: the ranking works to HLR-NUM-004's
    absolute = judged(off)
    assert calls["rank"][-1] == 0.01
    assert absolute.verdict is Verdict.FAIL and absolute.measured["tolerance_basis"] == nvdla_bound.ABSOLUTE
    assert "absolute tolerance fp16_max_abs_error = 0.01 against the float32 reference, no enclosure of the exact " \
           "value (ValueError: no enclosure) (" in absolute.reason
    assert json.loads((folder / "nvdla-numeric.json").read_text())["bound"]["why"] == \
        "no enclosure of the exact value (ValueError: no enclosure)"
    assert "max_bound" not in absolute.measured
    said = [r.getMessage() for r in caplog.records if r.name == "pipeline.compare.nvdla"]
    assert said == ["compare m/dla: no exact value: no enclosure"]     # the fallback is said where it happens


def test_why_a_model_has_no_nvdla_item_is_what_the_split_step_recorded(tmp_path: Path) -> None:
    from pipeline.compare.nvdla import whole_dla_refusal
    from pipeline.split.outputs import WHOLE_DLA_FILE

    assert whole_dla_refusal("m", tmp_path).startswith(" (whether the whole network fits one DLA item was not "
                                                       "recorded by split: FileNotFoundError)")
    path = tmp_path / "artifacts/m/split" / WHOLE_DLA_FILE
    path.parent.mkdir(parents=True)
    for doc, said in (({"evaluated": False}, " (whether the whole network fits one DLA item was not evaluated: no "
                                             "reason given)"),
                      ({"evaluated": False, "why": "no nv_full"}, " (whether the whole network fits one DLA item was "
                                                                  "not evaluated: no nv_full)"),
                      ({"evaluated": True, "fits": True}, ""),
                      ({"evaluated": True, "fits": False, "code": "SPLIT-E040", "message": "softmax"},
                       " (the whole network on one DLA item is refused: SPLIT-E040: softmax)")):
        path.write_text(json.dumps(doc))
        assert whole_dla_refusal("m", tmp_path) == said


def test_numeric_document_and_results_report_what_was_applied(tmp_path: Path) -> None:
    outputs = _reference()
    outputs["a"][0, 0] += 0.5
    rule = effective_tolerance(1e-5, 2e-6)
    found = _numeric(tmp_path, outputs, spec=_spec(max_rel_error=1e-3), rules={"a": rule})
    document = json.loads((tmp_path / "compare/single/numeric.json").read_text())
    assert document["schema_version"] == 2 and set(document) == {"schema_version", "reference", "onnxruntime"}
    assert document["onnxruntime"]["tolerance"] == {"max_abs_error": 1e-5, "max_rel_error": 1e-3,
                                                    "deploy_max_abs_error": 1e-5, "outputs": {"a": rule.to_json()}}
    reference = found[checks.REFERENCE]
    assert reference.verdict is Verdict.FAIL and reference.reason.startswith("not bit-identical: first divergence at "
                                                                             "output a, vector 0, element [0]")
    assert reference.read == ["in"] and reference.measured["max_ulp"] > 0 and reference.subject == "m/single"
    versus = found[checks.ONNXRUNTIME]
    assert versus.read == ["in"] and versus.written == ["compare/single/numeric.json"]
    assert versus.measured["a.tolerance_basis"] == rule.basis and "b.tolerance_basis" not in versus.measured
    assert versus.reason.endswith(f" (tolerance {rule.basis}: {rule.reason})")


def test_met_document_reports_the_jitter_to_four_decimals(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline.compare.met import jitter_ratio, stats_us

    monkeypatch.delenv(timing.PLATFORM_VARIABLE, raising=False)
    ns = [50_000 + 137 * i for i in range(10)]          # jitter 0.01216982...: 0.0122 to four decimals
    run_dir, split_dir = _timing_run(tmp_path, ns)
    folder = tmp_path / "compare"
    folder.mkdir()
    timing.judge_met(_run("single", _spec(), {}, folder, tmp_path, run_dir, split_dir))
    met = json.loads((folder / "met.json").read_text())
    assert met["jitter_ratio"] == round(jitter_ratio(stats_us(ns)), 4) == 0.0122
    assert (met["compiler"], met["flags"], met["host_isa"]) == ("", [], "")     # not recorded: said empty, not made up


# ------------------------------------------- issue 42, the seed-7 mutation sample: reported figures read

def test_a_passing_reference_comparison_gives_no_reason(tmp_path: Path) -> None:
    """A pass says nothing (an invented reason would read as a caveat on the pass)."""
    found = _numeric(tmp_path, _reference())
    assert found[checks.REFERENCE].verdict is Verdict.PASS and found[checks.REFERENCE].reason == ""


def test_met_without_a_time_still_reports_the_step_timings_it_read(tmp_path: Path) -> None:
    run_dir, split_dir = _timing_run(tmp_path, [50_000] * 10)
    (run_dir / "timing.json").unlink()
    (run_dir / "step-timing.json").write_text(json.dumps({"items": {}}))
    folder = tmp_path / "compare"
    folder.mkdir()
    found = timing.judge_met(_run("single", _spec(), {}, folder, tmp_path, run_dir, split_dir))
    assert [r.verdict for r in found] == [Verdict.NOT_RUN] * 2
    assert [r.read for r in found] == [["run/step-timing.json"]] * 2


def test_an_nvdla_run_reports_how_many_vectors_it_judged(tmp_path: Path) -> None:
    import shutil

    shutil.copytree(REPO / "requirements", tmp_path / "requirements")
    folder = tmp_path / "compare/dla"
    folder.mkdir(parents=True)
    doc = {"precision": "int8", "outputs": _write(tmp_path, "run/dla", _reference()), "emulation": "NVDLA emulator",
           "mode": "fp16", "mode_meaning": "", "vectors": 3, "configuration": "nv_full", "model": "m"}
    found = judge_nvdla(_run("dla", _spec(), doc, folder, tmp_path), _reference())
    assert found.measured["vectors"] == 3 and found.measured["configuration"] == "nv_full"
    # exactly these figures (no stray or misspelt key) when no bound was judged (INT8)
    assert sorted(found.measured) == ["bit_identical", "configuration", "max_abs_error", "max_rel_error", "max_ulp",
                                      "mean_abs_error", "mode", "nan_mismatches", "outputs", "precision",
                                      "tolerance_basis", "tolerance_max_abs_error", "tolerance_parameter",
                                      "top1_agreement", "vectors"]


def test_a_platform_run_writes_its_trace_verdicts_beside_its_numbers(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The platform part hands judge_traces the run's own compare folder (traces.json lands beside numeric.json)."""
    from pipeline.compare import platform

    given: list[tuple[Any, ...]] = []

    def recorder(*args: Any) -> Any:
        given.append(args)
        return platform.result(checks.TRACES, args[0], Verdict.NOT_RUN, "recorded")

    monkeypatch.setattr(platform, "judge_traces", recorder)
    _platform_run(tmp_path, _reference(), "target")
    assert len(given) == 1 and given[0][4] == tmp_path / "compare/platform" and given[0][5] == tmp_path

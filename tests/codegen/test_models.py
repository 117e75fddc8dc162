"""Every shipped model and every CPU deployment, end to end through codegen, run and compare.

In a scratch project (models/ and requirements/ linked): export and split (the other steps'
own functions), then our three steps. Asserted here: the code checks pass (static, trace,
compile); 0 ULP against the reference semantics on the spec's seeded vectors (100); within
the tolerance of onnxruntime; every trace (plain and under seeded noise) is a valid path of
the net and the traced runs' outputs are identical; identical instruction counts for every
input (not run without valgrind, with that reason). MET verdicts depend on the machine's load
and are only required to be present and honest (not asserted to pass). Every model's `aarch64`
deployment (platform aarch64_qemu): built by the cross compiler, its scans passed, 0 ULP and valid
traces under qemu-aarch64, reported `emulated` and obtained by emulation naming qemu and its
version; `not run` naming the Debian packages where the cross compiler or qemu is missing.
"""

from __future__ import annotations

import json
import os
import shutil

import numpy as np
import pytest


from tests.codegen import cghelpers as H
from tests.projects import copy_exports

from pipeline.ledger.checks import Verdict, Where
from pipeline.project.layout import model_names
from pipeline.toolchain.platforms import AARCH64, missing_tools

MODELS = model_names(H.ROOT)
MET_RUNS = 50


@pytest.fixture(scope="module")
def project(tmp_path_factory, exported_project):
    if not shutil.which("gcc"):
        pytest.skip("gcc is not installed")
    from pipeline.split.step import run_split_step

    root = copy_exports(exported_project, tmp_path_factory.mktemp("project") / "p", MODELS)
    for model in MODELS:
        run_split_step(model, root, vectors=1)
    return root


@pytest.fixture(scope="module", params=MODELS)
def model_results(request, project):
    from pipeline.codegen.step import run_codegen_step
    from pipeline.compare.step import run_compare_step
    from pipeline.execute.step import run_execute_step

    model = request.param
    here = os.getcwd()
    os.chdir(project)        # as doit runs it: the project is the working directory, root "."
    try:
        codegen = run_codegen_step(model, ".")
    finally:
        os.chdir(here)
    runs = run_execute_step(model, project, runs=MET_RUNS)
    compare = run_compare_step(model, project)
    return model, codegen, runs, compare


def _by(results, check_id):
    return {r.subject: r for r in results if r.check_id == check_id}


def test_every_cpu_deployment_ran(model_results):
    model, _, runs, _ = model_results
    assert runs, model
    for name, doc in runs.items():
        if doc.get("target") in ("cuda", "mixed", "nvdla") or name == "aarch64":
            continue
        assert doc["status"] == "ran", (name, doc.get("reason"))
        assert doc["vectors"] == 100


def test_every_nvdla_deployment_emulated_within_the_fp16_tolerance(model_results):
    """The `dla` deployments and those with an nvdla item next to cpu items (convdla, s3dla): loadables the
    validator accepts, emulated within the computed FP16 bound of the exact value on every vector, the bound
    discriminating on every one of them (issue 41: HLR-NUM-004 rests on a computed bound on every DLA
    deployment)."""
    model, codegen, runs, compare = model_results
    dla = {name for name, doc in runs.items() if doc.get("target") == "nvdla" or doc.get("nvdla_items")}
    for name in dla:
        assert runs[name]["status"] == "emulated" and runs[name]["vectors"] == 100, runs[name]
    accelerators = _by(codegen, "codegen.accelerators")
    verdicts = _by(compare, "compare.nvdla_reference")
    if not dla:
        assert [r.verdict for r in accelerators.values()] == [Verdict.NOT_RUN]
        assert [r.verdict for r in verdicts.values()] == [Verdict.NOT_RUN]
        return
    assert set(accelerators) == set(verdicts) == {f"{model}/{name}" for name in dla}
    for subject in verdicts:
        assert accelerators[subject].verdict is Verdict.PASS, accelerators[subject].reason
        r = verdicts[subject]
        assert r.verdict is Verdict.EMULATED, r.reason
        assert r.measured["elements_beyond"] == 0, r.reason
        assert r.measured["tolerance_basis"] == "computed bound", r.reason
        assert 0 < r.measured["max_error_to_bound"] <= 1.0, r.reason


def test_a_planted_error_of_200_times_the_emulated_one_fails_the_fp16_bound(model_results, project):
    """On every DLA deployment: the emulator's output (its last layer's) moved at one element by 200 times the
    largest emulated error fails the bound (judged on the first vectors)."""
    import json

    from pipeline.compare import nvdla_bound
    from pipeline.compare.reference import onnx_names, read_inputs
    from pipeline.nnef.tensorfile import read_tensor

    model, _, runs, _ = model_results
    import onnx

    onnx_model = onnx.load(str(project / "models" / model / "model.onnx"))
    to_onnx, to_nnef = onnx_names(model, project)
    inputs = {to_onnx.get(k, k): v[:4] for k, v in read_inputs(model, project).items()}
    for name, doc in runs.items():
        if not (doc.get("target") == "nvdla" or doc.get("nvdla_items")):
            continue
        outputs = {next(o for o, n in to_nnef.items() if n == k): read_tensor(project / p)[:4]
                   for k, p in doc["outputs"].items()}
        on_nvdla = None if doc.get("target") != "mixed" else nvdla_bound.nvdla_nodes(
            model, name, list(doc["nvdla_items"]), project)
        judged = nvdla_bound.judge(onnx_model, inputs, outputs, 1e-2, on_nvdla=on_nvdla)
        # on 4 vectors an output may vary less than its bound (inception's probabilities): the bound is then
        # computed but not the basis; on the run's 100 vectors it is (test_every_nvdla_deployment_emulated_... above)
        assert judged.passed and (judged.basis == nvdla_bound.BOUND or (
            "does not discriminate" in judged.why and judged.max_bound > 0)), (name, nvdla_bound.describe(judged))
        output, values = next(iter(outputs.items()))
        planted = values.astype(np.float64).copy()
        planted.reshape(planted.shape[0], -1)[0, 0] += 200.0 * judged.max_abs_error
        judged = nvdla_bound.judge(onnx_model, inputs, {output: planted.astype(np.float32)}, 1e-2, on_nvdla=on_nvdla)
        assert not judged.passed and judged.first_beyond is not None, (name, nvdla_bound.describe(judged))
        json.dumps(judged.to_json(), allow_nan=False)


def test_every_cuda_deployment_emulated_bit_exact(model_results):
    """The `gpu` deployments and those mixing cpu and cuda items (paper3gpu, convgpu): host emulation
    0 ULP in both orders -> emulated, never pass (no GPU here)."""
    model, _, runs, compare = model_results
    cuda = {name for name, doc in runs.items() if doc.get("target") in ("cuda", "mixed") and not doc.get("nvdla_items")}
    for name in cuda:
        assert runs[name]["status"] == "emulated" and runs[name]["vectors"] == 100, runs[name]
    verdicts = _by(compare, "compare.cuda_reference")
    assert set(verdicts) == {f"{model}/{name}" for name in cuda}
    for subject, r in verdicts.items():
        assert r.verdict in (Verdict.EMULATED, Verdict.PASS), f"{subject}: {r.reason}"


def test_every_model_has_an_aarch64_result_under_emulation(model_results):
    """The shipped AArch64 deployment (docs/execute.md "Platforms"): emulated, 0 ULP on the emulated vectors,
    traces valid, obtained `emulation (qemu-aarch64 <version> ...)`; not run naming the packages without the tools."""
    model, codegen, runs, compare = model_results
    subject = f"{model}/aarch64"
    doc = runs["aarch64"]
    numbers = _by(compare, "compare.platform_reference")[subject]
    traces = _by(compare, "compare.platform_traces")[subject]
    built = _by(codegen, "codegen.platform")[subject]
    missing = missing_tools(AARCH64)
    if missing:
        packages = {package for _, package in missing}
        assert doc["status"] == "not run" and all(p in doc["reason"] for p in packages), doc
        assert numbers.verdict is Verdict.NOT_RUN and all(p in numbers.reason for p in packages), numbers.reason
        return
    assert doc["status"] == "emulated" and doc["vectors"] == AARCH64.vectors and doc["lanes"] == 4, doc
    assert doc["platform"]["name"] == "aarch64_qemu" and "-mcpu=cortex-a78ae" in doc["builds"][0]["flags"]
    assert doc["platform"]["runner_version"].startswith("qemu-aarch64 ")
    for r in (numbers, traces, built):
        assert r.verdict is Verdict.EMULATED, f"{r.check_id}: {r.reason}"
        assert r.obtained.where is Where.EMULATION and r.obtained.detail.startswith("qemu-aarch64 "), r.obtained
    assert numbers.measured["max_ulp"] == 0 and numbers.measured["vectors"] == AARCH64.vectors
    assert traces.measured["noise_runs"] >= 2 and traces.measured["valid"] == traces.measured["traces"]
    assert built.measured["transcendental_mismatches"] == 0 and built.measured["transcendental_inputs_compared"] > 0
    assert _by(codegen, "codegen.static")[subject].measured["architecture"] == "aarch64"
    for check in ("met.budget", "met.stability"):
        r = _by(compare, check)[subject]
        assert r.verdict is Verdict.NOT_RUN and "never judged" in r.reason and r.measured["runs"] == AARCH64.met_runs
    path = _by(compare, "met.platform_path")[subject]
    assert path.verdict is Verdict.NOT_RUN and "aarch64" in path.reason


@pytest.mark.parametrize("check", ["codegen.static", "codegen.trace", "codegen.compile", "codegen.standards"])
def test_code_checks_pass(model_results, check):
    _, codegen, _, _ = model_results
    results = _by(codegen, check)
    assert results
    for subject, r in results.items():
        if subject.endswith("/aarch64") and missing_tools(AARCH64):
            assert r.verdict is not Verdict.FAIL, f"{subject}: {r.reason}"
            continue
        assert r.verdict is Verdict.PASS, f"{subject}: {r.reason}"


def test_cuda_builds_pass_or_say_why_not(model_results):
    """codegen.cuda (the nvcc builds, the gate, a mixed deployment's linked GPU program), run as doit
    runs it (root "."): pass, or not run because nvcc or cuobjdump is missing."""
    _, codegen, _, _ = model_results
    for subject, r in _by(codegen, "codegen.cuda").items():
        if r.verdict is Verdict.NOT_RUN:
            assert "nvcc" in r.reason or "cuobjdump" in r.reason, f"{subject}: {r.reason}"
        else:
            assert r.verdict is Verdict.PASS, f"{subject}: {r.reason}"


def test_zero_ulp_against_reference(model_results):
    _, _, _, compare = model_results
    for subject, r in _by(compare, "compare.reference").items():
        assert r.verdict is Verdict.PASS, f"{subject}: {r.reason}"
        assert r.measured["max_ulp"] == 0 and r.measured["bit_identical"] and r.measured["vectors"] == 100


def test_within_onnxruntime_tolerance(model_results):
    _, _, _, compare = model_results
    for subject, r in _by(compare, "compare.onnxruntime").items():
        assert r.verdict is Verdict.PASS, f"{subject}: {r.reason}"
        assert r.measured["top1_agreement"] == 1.0


def test_traces_valid_with_and_without_noise(model_results):
    _, _, runs, compare = model_results
    for subject, r in _by(compare, "compare.traces").items():
        mixed = runs[subject.split("/")[1]].get("target") == "mixed"   # cuda items on the host emulation
        assert r.verdict is (Verdict.EMULATED if mixed else Verdict.PASS), f"{subject}: {r.reason}"
        assert r.measured["noise_runs"] >= 2 and r.measured["valid"] == r.measured["traces"]
        assert r.measured["outputs_identical_across_runs"]


def test_instruction_counts_identical(model_results):
    _, _, runs, compare = model_results
    for subject, r in _by(compare, "met.path").items():
        if runs[subject.split("/")[1]].get("target") == "mixed":
            assert r.verdict is Verdict.NOT_RUN and "emulation" in r.reason
        elif shutil.which("valgrind") is None:
            assert r.verdict is Verdict.NOT_RUN and "valgrind" in r.reason
        else:
            assert r.verdict is Verdict.PASS, f"{subject}: {r.reason}"
            assert len(r.measured["instructions"]) == 1 and r.measured["inputs"] >= 6


def test_met_verdicts_are_honest(model_results, project):
    model, _, runs, compare = model_results
    for check in ("met.budget", "met.stability"):
        for subject, r in _by(compare, check).items():
            if runs[subject.split("/")[1]].get("nvdla_items"):   # no campaign with an emulated DLA item
                assert r.verdict is Verdict.NOT_RUN and "runs" not in r.measured and "emulated DLA" in r.reason
                continue
            assert r.verdict in (Verdict.PASS, Verdict.FAIL, Verdict.NOT_RUN)
            if subject.endswith("/aarch64"):
                continue                                      # test_every_model_has_an_aarch64_result_under_emulation
            assert r.measured["runs"] == MET_RUNS
            if r.verdict is not Verdict.PASS:
                assert r.reason
    for folder in (project / "artifacts" / model / "compare").iterdir():
        if folder.is_dir() and (folder / "met.json").is_file():
            met = json.loads((folder / "met.json").read_text())
            assert met["steps"] and met["whole_network"]["min_us"] > 0
            assert (folder / "met.md").read_text().startswith(f"# MET {model}/")
            assert "<svg" in (folder / "met-histogram.svg").read_text()


def test_code_traces_read_by_the_evidence_builder(model_results, project):
    from pipeline.evidence.codetrace import read_code_traces

    model = model_results[0]
    traces, findings = read_code_traces(model, project)
    assert traces and not findings, [f.message for f in findings]


def _symbols(path) -> dict[str, str]:
    """Defined function symbols and their sizes, as binutils' nm reads them."""
    import subprocess

    out = subprocess.run(["nm", "--defined-only", "--print-size", str(path)], capture_output=True, text=True, check=True)
    return {f[3]: f[1] for f in (line.split() for line in out.stdout.splitlines()) if len(f) == 4 and f[2] in "Tt"}


def test_uninstrumented_build_links_the_objects_codegen_judged(model_results, project):
    """The execute step links codegen.compile's objects (sha256 as status.json says) into its
    uninstrumented build: every function of every object is in the binary with the same size (nm)."""
    from pipeline.ledger.hashing import sha256_file

    if shutil.which("nm") is None:
        pytest.skip("binutils nm is not installed")
    model, _, runs, _ = model_results
    status = json.loads((project / "artifacts" / model / "codegen" / "status.json").read_text())["deployments"]
    linked = 0
    for name, doc in runs.items():
        if not doc.get("builds"):
            continue
        recorded = status[name]["objects"]["sources"]
        files = doc["builds"][0]["objects"]["files"]
        assert sorted(files) == sorted(o["object"] for o in recorded.values())
        binary = _symbols(project / doc["builds"][0]["binary"])
        for source, entry in recorded.items():
            assert sha256_file(project / entry["object"]) == entry["sha256"], (name, source)
            for symbol, size in _symbols(project / entry["object"]).items():
                assert binary.get(symbol) == size, (name, source, symbol)
        assert all(not c.endswith(".c") for c in doc["builds"][0]["command"]), doc["builds"][0]["command"]
        assert any(c == "-DNNEF_TRACE" for c in doc["builds"][1]["command"])   # traced: from the sources
        linked += 1
    assert linked or model not in ("lenet5", "resnet8"), model


def test_a_changed_object_is_never_linked(model_results, project):
    """An object that differs from status.json's record stops the build with RUN-E004."""
    from pipeline.diagnostics import PipelineError
    from pipeline.execute.step import run_deployment

    model, _, runs, _ = model_results
    if model != "lenet5":
        pytest.skip("one model is enough")
    status = json.loads((project / "artifacts" / model / "codegen" / "status.json").read_text())["deployments"]
    target = project / status["single"]["objects"]["sources"]["nnef_main.c"]["object"]
    original = target.read_bytes()
    try:
        target.write_bytes(original + b"\0")
        with pytest.raises(PipelineError) as caught:
            run_deployment(model, "single", project, project / "artifacts" / model / "execute" / "inputs", 2, 5)
        assert caught.value.code == "RUN-E004" and "nnef_main.c" in caught.value.message
    finally:
        target.write_bytes(original)

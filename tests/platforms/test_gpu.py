"""GPU runs (pipeline/execute/gpu.py), tested without a GPU: what can be tested here is.

* Where no GPU answers, run.json's `gpu` block says `not run` with the device query's answer,
  and compare stays `emulated` (never pass).
* The GPU program (the C harness with its .cu items: gcc for the C files, nvcc with the pinned
  flags for the .cu, linked by nvcc with the CUDA runtime) builds and links for sm_87 and
  sm_90, plain and instrumented, where nvcc is installed.
* The run path, with the host emulation standing in for the device build: the runs land where
  compare reads them, and compare says pass obtained `target:gpu (...)` naming the stand-in.
  This exercises the wiring only; no GPU result comes from it. tools/gpu-check is the command
  that runs the same path on a real GPU.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pipeline.execute import gpu
from pipeline.ledger.checks import Verdict
from pipeline.toolchain.nvcc import ARCHITECTURES, CudaBuild, nvcc_path

STAND_IN = {"name": "STAND-IN host emulation, not a GPU", "sm": "sm_90", "driver": "none"}


@pytest.fixture(scope="module")
def lenet5_split(exported_project, tmp_path_factory):
    from pipeline.split.step import run_split_step
    from tests.projects import copy_exports

    root = copy_exports(exported_project, tmp_path_factory.mktemp("gpu") / "p", ["lenet5"])
    run_split_step("lenet5", root, vectors=1)
    return root


def test_without_a_gpu_the_block_says_not_run(lenet5_split, monkeypatch):
    monkeypatch.setattr(gpu, "device", lambda: None)
    block = gpu.run_on_gpu("lenet5", "gpu", lenet5_split, lenet5_split / "nowhere", 3, 5)
    assert block["status"] == "not run" and block["run"].startswith("not run: no GPU") and not block["found"]


@pytest.mark.skipif(nvcc_path() is None or shutil.which("gcc") is None, reason="nvcc (CUDA toolkit) and gcc")
def test_the_gpu_program_builds_and_links_for_every_architecture(lenet5_split, tmp_path):
    from pipeline.toolchain.nvcc import device_program
    from pipeline.toolchain.cc import compile_objects

    code = gpu.program_form("lenet5", "gpu", lenet5_split, tmp_path / "code", ARCHITECTURES[-1])
    manifest = json.loads((code / "build.json").read_text())
    assert manifest["cuda"]["sources"] == ["GPU0/nnef_item_GPU0.cu"]
    for defines in ([], ["NNEF_TRACE", "NNEF_TRACE_INFERENCES=40"]):
        objects, _, diagnostics = compile_objects(code, manifest["sources"], tmp_path / f"obj{len(defines)}",
                                                  int(manifest["lanes"]), defines=defines)
        assert not diagnostics
        built = device_program(code, manifest["cuda"]["sources"], objects, tmp_path / f"run{len(defines)}",
                               list(ARCHITECTURES), defines)
        assert built.binary.is_file()
        nvcc_commands = [" ".join(c) for c in built.commands]
        assert all("--fmad=false" in c for c in nvcc_commands[:-1]), nvcc_commands
        assert all(f"code=sm_{a[3:]}" in nvcc_commands[0] for a in ARCHITECTURES)


def _emulated_build(code: Path, manifest: dict, binary: Path, sm: str, defines: list[str]):
    """The stand-in for the device build: the same program with its .cu items built by g++ (host emulation)."""
    from pipeline.toolchain.cc import compile_and_link
    from pipeline.toolchain.nvcc import emulation_objects

    objects = emulation_objects(code, manifest["cuda"]["sources"], binary.parent / f"{binary.name}.emu", defines)
    built = compile_and_link(code, manifest["sources"], binary, int(manifest["lanes"]), trace="NNEF_TRACE" in defines,
                             defines=[d for d in defines if d != "NNEF_TRACE"],
                             objects=list(objects.outputs.values()), libraries=["-lstdc++"])
    return CudaBuild(built.binary, [*objects.commands, built.command], "g++ (stand-in)", built.compiler)


@pytest.mark.skipif(shutil.which("g++") is None or shutil.which("gcc") is None, reason="gcc and g++")
def test_the_gpu_run_path_with_a_stand_in(lenet5_split, monkeypatch):
    from pipeline.codegen.step import run_codegen_step
    from pipeline.compare.step import run_compare_step
    from pipeline.execute.step import run_execute_step

    root = lenet5_split
    monkeypatch.setattr(gpu, "device", lambda: dict(STAND_IN))
    monkeypatch.setattr(gpu, "build", _emulated_build)
    run_codegen_step("lenet5", root)
    documents = run_execute_step("lenet5", root, vectors=12, runs=20, instructions=False, deployments=["gpu", "convgpu"])
    for name in ("gpu", "convgpu"):
        block = documents[name]["gpu"]
        assert block["status"] == "ran", block
        assert block["obtained"] == "target:gpu (STAND-IN host emulation, not a GPU, sm_90, driver none)"
        folder = root / block["folder"]
        assert {p.name for p in folder.glob("trace-*.json")} == {"trace-plain.json", "trace-noise-1.json",
                                                                 "trace-noise-2.json"}
        assert (folder / "timing.json").is_file() and (folder / "step-timing.json").is_file()
    results = {(r.subject, r.check_id): r for r in run_compare_step("lenet5", root)}
    for name in ("gpu", "convgpu"):
        for check in ("compare.cuda_reference", "compare.traces"):
            r = results[(f"lenet5/{name}", check)]
            assert r.verdict is Verdict.PASS, f"{name} {check}: {r.reason}"
            assert r.obtained.label() == "target:gpu (STAND-IN host emulation, not a GPU, sm_90, driver none)"
        budget = results[(f"lenet5/{name}", "met.budget")]
        assert budget.verdict is Verdict.NOT_RUN and "not the timing platform" in budget.reason


@pytest.mark.skipif(shutil.which("g++") is None or shutil.which("gcc") is None, reason="gcc and g++")
def test_gpu_check_reports_one_line_per_model(exported_project, tmp_path, monkeypatch):
    """tools/gpu-check's per-model work and line, on lenet5 with the stand-in (the wiring; a GPU gives the verdict)."""
    import importlib.util

    from tests.projects import link_project

    spec = importlib.util.spec_from_file_location("gpu_check", Path(__file__).resolve().parents[2] / "tools" / "gpu_check.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    monkeypatch.setattr(gpu, "device", lambda: dict(STAND_IN))
    monkeypatch.setattr(gpu, "build", _emulated_build)
    monkeypatch.chdir(tmp_path)
    project = link_project(tmp_path / "p")
    result = tool._check_model("lenet5", str(project))
    assert result["verdict"] == "pass", result
    assert set(result["deployments"]) == {"gpu", "convgpu"}
    line = tool._line(result)
    assert line.startswith("lenet5     pass") and "0 ULP (100 vectors)" in line and "traces 3/3 valid" in line
    assert "obtained target:gpu (STAND-IN host emulation, not a GPU, sm_90, driver none)" in line and "MET median" in line

"""A shipped cuda deployment through the pipeline's own steps: split, codegen, execute, compare.

lenet5's `gpu` deployment (the whole network on one cuda item) in a scratch project: the codegen
step generates the CUDA code and passes codegen.cuda (nvcc for sm_87 and sm_90 + the gate) where
nvcc and cuobjdump exist; the execute step emulates it; compare.cuda_reference is `emulated` (0 ULP
in both orders, the GPU query's error in the reason), never pass without a GPU.
"""

from __future__ import annotations

import shutil

import pytest

from pipeline.codegen.cuda_gate import cuobjdump_path
from pipeline.ledger.checks import Verdict
from pipeline.toolchain.nvcc import gpu_query
from tests.projects import copy_exports

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed")


def test_lenet5_gpu_deployment_through_the_steps(exported_project, tmp_path, monkeypatch):
    from pipeline.codegen.step import run_codegen_step
    from pipeline.compare.step import run_compare_step
    from pipeline.execute.step import run_execute_step
    from pipeline.split.step import run_split_step

    monkeypatch.chdir(copy_exports(exported_project, tmp_path / "p", ["lenet5"]))
    root = "."                                                     # as doit runs the steps
    run_split_step("lenet5", root, vectors=1)
    everything = run_codegen_step("lenet5", root)
    codegen = {r.check_id: r for r in everything if r.subject == "lenet5/gpu"}
    assert "codegen.static" not in codegen                       # no C checks on a CUDA deployment
    if shutil.which("nvcc") and cuobjdump_path():
        assert codegen["codegen.cuda"].verdict is Verdict.PASS, codegen["codegen.cuda"].reason
    else:
        assert codegen["codegen.cuda"].verdict is Verdict.NOT_RUN
    accelerators = [r for r in everything if r.check_id == "codegen.accelerators"]
    assert sorted(r.subject for r in accelerators) == ["lenet5/convdla", "lenet5/dla"]   # the NVDLA deployments', not the GPU's
    documents = run_execute_step("lenet5", root, vectors=10, runs=20, instructions=False, deployments=["gpu"])
    assert documents["gpu"]["status"] == "emulated", documents["gpu"]
    compare = {r.check_id: r for r in run_compare_step("lenet5", root) if r.subject == "lenet5/gpu"}
    cuda = compare["compare.cuda_reference"]
    found, answer = gpu_query()
    if not found:
        assert cuda.verdict is Verdict.EMULATED, cuda.reason
        assert "no GPU" in cuda.reason and answer.split()[-1] in cuda.reason
    assert set(compare) == {"compare.cuda_reference"}

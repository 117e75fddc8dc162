"""Mixed CPU + CUDA deployments through the run and compare steps, on the host emulation.

Each shipped mixed deployment (branch3 paper3gpu, barrier sync; lenet5 convgpu, event sync) runs
through the C run path with its cuda items built by g++ as the host emulation: run.json says
`emulated` (never `ran`), the outputs in order and shuffled are 0 ULP against the reference
semantics (compare.cuda_reference `emulated`), the traces (plain and under noise) are valid paths
of the net (compare.traces `emulated`), the MET figures are reported but not judged and no
instruction count is taken.
"""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from pipeline.ledger.checks import Verdict
from tests.codegen_cuda import mixedhelpers as M

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed")

VECTORS = 10


@pytest.mark.parametrize("deployment", sorted(M.MIXED))
def test_mixed_deployment_emulated_bit_exact_in_both_orders(deployment, exported_project, tmp_path):
    from pipeline.compare.step import run_compare_step
    from pipeline.execute.step import run_deployment
    from pipeline.nnef.tensorfile import read_tensor

    model, _ = M.MIXED[deployment]
    root = M.project(exported_project, tmp_path / "p", model)
    M.generate(root, model, deployment)
    doc = run_deployment(model, deployment, root, M.inputs(root, model, VECTORS), VECTORS, 20)
    assert doc["status"] == "emulated" and doc["target"] == "mixed", doc
    assert "no GPU" in doc["gpu"]["run"] or doc["gpu"]["found"]
    assert any("cuda_objects" in b for b in doc["builds"])
    # no path of the checkout in the record: the same project elsewhere writes the same run.json
    text = (root / "artifacts" / model / "execute" / deployment / "run.json").read_text(encoding="utf-8")
    assert str(root) not in text and str(root.resolve()) not in text
    for name, path in doc["outputs"].items():           # the two orders were two runs; same bits
        assert read_tensor(root / path).tobytes() == read_tensor(root / doc["outputs_shuffled"][name]).tobytes()
    assert all(r["outputs_identical_to_plain"] for r in doc["traced_runs"]) and len(doc["traced_runs"]) >= 2
    run_dir = root / "artifacts" / model / "execute" / deployment
    assert json.loads((run_dir / "instructions.json").read_text())["status"] == "not run"
    results = {r.check_id: r for r in run_compare_step(model, root) if r.subject == f"{model}/{deployment}"}
    cuda = results["compare.cuda_reference"]
    assert cuda.verdict is Verdict.EMULATED, cuda.reason
    assert all(cuda.measured[o]["max_ulp"] == 0 for o in cuda.measured if isinstance(cuda.measured[o], dict)
               and "max_ulp" in cuda.measured[o])
    assert results["compare.traces"].verdict is Verdict.EMULATED, results["compare.traces"].reason
    assert results["compare.traces"].measured["noise_runs"] >= 1
    for check in ("met.budget", "met.stability", "met.path"):
        assert results[check].verdict is Verdict.NOT_RUN
    assert "not a GPU timing" in results["met.budget"].reason and results["met.budget"].measured["runs"] == 20
    assert not any(r.verdict is Verdict.PASS for r in results.values())
    reference = {p.stem: read_tensor(p) for p in (root / "artifacts" / model / "compare" / "reference").glob("*.dat")}
    for name, path in doc["outputs"].items():
        assert np.array_equal(read_tensor(root / path).view(np.uint32), reference[name].view(np.uint32))


def test_several_cuda_items_alone_are_items_of_the_c_program(exported_project, tmp_path):
    """Two cuda items and no cpu item (lenet5 split2's allocation on two GPU items): generated as the C
    program's .cu items (not the one-item CUDA harness), emulated 0 ULP in both orders, traces emulated."""
    from pipeline.codegen.step import run_codegen_step
    from pipeline.compare.step import run_compare_step
    from pipeline.execute.step import run_execute_step
    from pipeline.split.step import run_split_step
    from pipeline.project.targets import code_kind
    from tests.projects import with_deployments

    assert code_kind(["cuda"]) == "cuda" and code_kind(["cuda", "cuda"]) == "program"
    assert code_kind(["cpu", "nvdla"]) == "program" and code_kind(["nvdla"]) == "nvdla" and code_kind(["nvdla"] * 2) == "program" and code_kind(["tpu"]) == "none"
    root = with_deployments(exported_project, tmp_path / "p", "lenet5",
                            "  gpu2:\n    items: [{name: GPU0, target: cuda}, {name: GPU1, target: cuda}]\n"
                            "    default_item: GPU0\n    allocation:\n"
                            "      GPU1: [flatten, fc1, relu3, fc2, relu4, fc3, prob]\n    sync: event")
    run_split_step("lenet5", root, vectors=1)
    codegen = {r.check_id: r for r in run_codegen_step("lenet5", root) if r.subject == "lenet5/gpu2"}
    assert codegen["codegen.static"].verdict is Verdict.PASS, codegen["codegen.static"].reason
    if "codegen.cuda" in codegen and codegen["codegen.cuda"].verdict is not Verdict.NOT_RUN:
        assert codegen["codegen.cuda"].verdict is Verdict.PASS, codegen["codegen.cuda"].reason
    documents = run_execute_step("lenet5", root, vectors=VECTORS, runs=20, instructions=False)
    doc = documents["gpu2"]
    assert doc["status"] == "emulated" and doc["target"] == "mixed", doc
    results = {r.check_id: r for r in run_compare_step("lenet5", root) if r.subject == "lenet5/gpu2"}
    assert results["compare.cuda_reference"].verdict is Verdict.EMULATED, results["compare.cuda_reference"].reason
    assert results["compare.traces"].verdict is Verdict.EMULATED, results["compare.traces"].reason

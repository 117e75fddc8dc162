"""Mixed CPU + CUDA deployments in the code generator: a cuda item is a .cu item of the C program.

The dispatch table names an emitter per target (nvdla: a C proxy of its loadable); the shipped mixed deployments
generate one C program whose cuda items have C-linkage run and init functions following the
schedule step for step; the C checks judge the C files and codegen.cuda (nvcc for sm_87 and sm_90
+ the PTX/SASS gate, then the GPU program linked) the .cu; a library call planted in a mixed .cu fails the gate with the kernel
and the NNEF line named.
"""

from __future__ import annotations

import json
import re
import shutil

import pytest

from pipeline.codegen import checks
from pipeline.codegen.cuda_gate import cuobjdump_path
from pipeline.codegen.program.items import emitter_for
from pipeline.ledger.checks import Verdict
from pipeline.project.layout import step_dir
from tests.codegen_cuda import mixedhelpers as M

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None or cuobjdump_path() is None,
                                reason="nvcc or cuobjdump is not installed (CUDA toolkit, nvidia-cuda-cuobjdump)")


def test_dispatch_table_names_an_emitter_per_target():
    assert emitter_for("cpu") is not None and emitter_for("cuda") is not None
    assert emitter_for("nvdla") is not None and emitter_for("tpu") is None   # nvdla: its C proxy


@pytest.mark.parametrize("deployment", sorted(M.MIXED))
def test_mixed_program_follows_the_schedule_and_passes_the_c_checks(deployment, exported_project, tmp_path):
    model, sync = M.MIXED[deployment]
    root = M.project(exported_project, tmp_path / "p", model)
    folder = M.generate(root, model, deployment)
    manifest = json.loads((folder / "build.json").read_text())
    schedule = json.loads((step_dir(model, "split", root) / deployment / "schedule.json").read_text())
    assert schedule["sync"] == sync
    cuda_items = [i for i in manifest["items"] if i["language"] == "cuda"]
    assert cuda_items and all(i["source"].endswith(".cu") for i in cuda_items)
    assert manifest["cuda"]["sources"] == [i["source"] for i in cuda_items]
    assert not any(s.endswith(".cu") for s in manifest["sources"])
    table = (folder / "nnef_deployment.c").read_text()
    for index, item in enumerate(manifest["items"]):
        row = re.search(rf'{{"{item["name"]}", nnef_item_{item["name"]}_run, .*, (\w+)}},', table).group(1)
        assert row == (f"nnef_item_{item['name']}_init" if item["language"] == "cuda" else "0")
        if item["language"] != "cuda":
            continue
        source = (folder / item["source"]).read_text()
        assert f'extern "C" void nnef_item_{item["name"]}_run(uint32_t epoch)' in source
        assert f'extern "C" int nnef_item_{item["name"]}_init(void)' in source
        run = source[source.index(f"nnef_item_{item['name']}_run"):]
        steps = [(int(a), int(b)) for a, b in re.findall(r"NNEF_STEP\((\d+), (\d+), epoch", run)]
        assert steps == [(index, k) for k in range(len(schedule["items"][item["name"]]))]
        get = "nnef_get(" if sync == "event" else "nnef_get_published("
        kinds = {s["kind"] for s in schedule["items"][item["name"]]}
        assert ("get" not in kinds) or get in source
        init = source[source.index(f"nnef_item_{item['name']}_init(void)"):source.index(f"nnef_item_{item['name']}_run")]
        assert "cudaMalloc" in init and "cudaMemcpy(" in init and "cudaMalloc" not in run
    results = {r.check_id: r for r in checks.evaluate(f"{model}/{deployment}", folder, root, tmp_path / "s")}
    assert all(r.verdict is Verdict.PASS for r in results.values()), {k: r.reason for k, r in results.items()}


@needs_nvcc
def test_mixed_cuda_items_pass_the_gate_and_a_planted_call_fails_it(exported_project, tmp_path):
    root = M.project(exported_project, tmp_path / "p", "branch3")
    folder = M.generate(root, "branch3", "paper3gpu")
    passed = checks.cuda_result("branch3/paper3gpu", folder, root, tmp_path / "gate")
    assert passed.verdict is Verdict.PASS, passed.reason
    assert set(passed.measured) >= {"ITEM2", "ITEM3"}
    program = passed.measured["device_program"]            # the GPU program: nvcc .cu objects + gcc C objects
    assert program["linked"] and any("-c nnef_item_ITEM2.cu" in c for c in program["commands"])
    source = folder / "ITEM3" / "nnef_item_ITEM3.cu"
    text = source.read_text()
    body = re.search(r"NNEF_HD void nnef_body_L(\d+)_(\w+)\(.*?\n    y\[i\] = (.*?);\n", text, re.S)
    line, result = body.group(1), body.group(2)
    source.write_text(text.replace(f"    y[i] = {body.group(3)};\n", f"    y[i] = expf({body.group(3)});\n", 1))
    failed = checks.cuda_result("branch3/paper3gpu", folder, root, tmp_path / "gate2")
    assert failed.verdict is Verdict.FAIL
    assert f"ITEM3.nnef:{line}" in failed.reason and f"nnef_k_ITEM3_L{line}_{result}" in failed.reason

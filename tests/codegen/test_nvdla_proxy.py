"""NVDLA items next to CPU items, codegen: each nvdla item is a C proxy of the C program (pipeline/codegen/nvdla/proxy.py)
that follows schedule.json step for step, its loadable is written and judged (codegen.accelerators), and the
deployment is byte-identical on regeneration. The project: tests/execute/dlamixed.py.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil

import pytest

from pipeline.ledger.checks import Verdict
from tests.execute.dlamixed import MODEL, c_folder, nvdla_folder

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")


@pytest.mark.parametrize("deployment", ["convdla", "dla2"])
def test_codegen_checks_pass_and_every_nvdla_item_has_a_judged_loadable(dla_mixed, deployment):
    root, codegen, _, _ = dla_mixed
    for check in ("codegen.static", "codegen.trace", "codegen.compile", "codegen.accelerators"):
        result = codegen[(f"{MODEL}/{deployment}", check)]
        assert result.verdict is Verdict.PASS, (check, result.reason)
    manifest = json.loads((nvdla_folder(root, deployment) / "build.json").read_text())
    expected = ["DLA0"] if deployment == "convdla" else ["DLA0", "DLA1"]
    assert [i["name"] for i in manifest["items"]] == expected
    program = json.loads((c_folder(root, deployment) / "build.json").read_text())
    assert [i["name"] for i in program["items"] if i["target"] == "nvdla"] == expected
    assert all(f"{name}/nnef_item_{name}.c" in program["sources"] for name in expected)


@pytest.mark.parametrize("deployment", ["convdla", "dla2"])
def test_each_proxy_follows_its_schedule_step_for_step(dla_mixed, deployment):
    """Every step of schedule.json, in order, is one NNEF_STEP of the proxy's run function: get -> nnef_get of
    its variable, send -> nnef_send of its variable, compute -> the one submission (first compute after the
    last get) or an empty step; nothing else."""
    root, _, _, _ = dla_mixed
    schedule = json.loads((root / "artifacts" / MODEL / "split" / deployment / "schedule.json").read_text())
    program = json.loads((c_folder(root, deployment) / "build.json").read_text())
    for index, item in enumerate(program["items"]):
        if item["target"] != "nvdla":
            continue
        steps = schedule["items"][item["name"]]
        source = (c_folder(root, deployment) / item["source"]).read_text()
        run = source[source.index(f"void nnef_item_{item['name']}_run("):]
        calls = re.findall(r"NNEF_STEP\((\d+), (\d+), epoch, (.*)\);", run)
        assert [int(k) for _, k, _ in calls] == list(range(len(steps)))
        assert all(int(i) == index for i, _, _ in calls)
        last_get = max([k for k, s in enumerate(steps) if s["kind"] == "get"], default=-1)
        submit = next(k for k, s in enumerate(steps) if s["kind"] == "compute" and k > last_get)
        for k, (step, (_, _, call)) in enumerate(zip(steps, calls)):
            if step["kind"] == "get":
                assert call == f"(void)nnef_get(&nnef_sync_{step['var']}, epoch)"
            elif step["kind"] == "send":
                assert re.fullmatch(rf"nnef_send\(&nnef_sync_{step['var']}, nnef_arena_{item['name']}( \+ [1-9]\d*)?, epoch\)",
                                    call), call                  # offset 0: the arena alone (MISRA 2.2)
            else:
                assert call == ("nnef_dla_submit(epoch)" if k == submit else "(void)0"), (k, call)
        assert run.count("nnef_dla_submit(epoch)") == 1


def test_the_deployment_is_byte_identical_on_regeneration(dla_mixed):
    from pipeline.codegen.program.generate import generate_deployment
    from pipeline.codegen.shared.deployment import load_deployment
    from pipeline.codegen.nvdla.generate import generate_nvdla
    from pipeline.toolchain.platforms import host_platform

    root, _, _, _ = dla_mixed
    folders = [c_folder(root, "convdla"), nvdla_folder(root, "convdla")]

    def digests() -> dict[str, str]:
        return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
                for folder in folders for p in sorted(folder.rglob("*")) if p.is_file()}

    before = digests()
    loaded = load_deployment(root / "artifacts" / MODEL / "split" / "convdla", root / "artifacts" / MODEL / "export",
                             root)
    generate_deployment(loaded, folders[0], lanes=host_platform().lanes)   # as the codegen step did
    generate_nvdla(loaded, folders[1])
    assert digests() == before and len(before) > 10




def test_an_item_that_receives_after_it_sends_cannot_be_a_proxy(tmp_path):
    """A loadable is one submission: the proxy submits at the first compute after the last get, and refuses
    (CODEGEN-E010) a schedule whose get comes after a send or that computes nothing after its last get."""
    from types import SimpleNamespace

    from pipeline.codegen.shared.errors import CodegenError
    from pipeline.codegen.nvdla.proxy import _submission_step
    from pipeline.split.splitter import Step

    def item(*kinds: str) -> SimpleNamespace:
        return SimpleNamespace(name="DLA0", nnef_path=tmp_path / "DLA0.nnef", steps=[Step(kind=k) for k in kinds])

    assert _submission_step(item("compute", "compute", "send")) == 0
    assert _submission_step(item("get", "compute", "get", "compute", "compute", "send", "send")) == 3
    for kinds in (("get", "compute", "send", "get", "compute", "send"), ("compute", "get", "send")):
        with pytest.raises(CodegenError) as info:
            _submission_step(item(*kinds))
        assert info.value.code == "CODEGEN-E010" and "one submission" in info.value.message

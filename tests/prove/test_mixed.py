"""prove.eva on the cpu item of a mixed deployment (branch3 `paper3gpu`: ITEM1 cpu, ITEM2 and ITEM3
cuda): the C item is analysed in memory mode, whatever the GPU sends it (any finite float), and a
run-time error planted in it is found: it is analysed, not skipped."""

from __future__ import annotations

import json

import pytest

from tests.codegen_cuda import mixedhelpers as mixed
from pipeline.ledger.checks import Verdict
from pipeline.prove import eva
from pipeline.prove.step import run_prove_step

pytestmark = pytest.mark.skipif(not eva.available(), reason="frama-c is not installed (Debian frama-c-base)")

RUN_MARK = "void nnef_item_ITEM1_run("


@pytest.fixture(scope="module")
def paper3gpu(exported_project, tmp_path_factory):
    root = mixed.project(exported_project, tmp_path_factory.mktemp("mixed"), "branch3")
    return root, mixed.generate(root, "branch3", "paper3gpu")


def test_the_cpu_item_beside_cuda_items_is_proven_memory_safe(paper3gpu):
    root, _ = paper3gpu
    [result] = run_prove_step("branch3", root, deployments=["paper3gpu"], item_limit=120, budget=120)
    assert result.verdict is Verdict.PASS, result.reason
    document = json.loads((root / "artifacts/branch3/prove/paper3gpu/eva.json").read_text())
    assert document["mode"] == "memory" and [i["item"] for i in document["items"]] == ["ITEM1"]


def test_an_out_of_bounds_store_in_it_fails(paper3gpu, tmp_path):
    root, folder = paper3gpu
    source = folder / "ITEM1" / "nnef_item_ITEM1.c"
    text = source.read_text()
    assert RUN_MARK in text
    head, tail = text.split(RUN_MARK, 1)
    brace = tail.index("{") + 1
    planted = head + RUN_MARK + tail[:brace] + " { static float nnef_planted[4]; volatile int k = 4; nnef_planted[k] = 0.0f; }" + tail[brace:]
    try:
        source.write_text(planted)
        [result] = run_prove_step("branch3", root, deployments=["paper3gpu"], item_limit=120, budget=120)
    finally:
        source.write_text(text)
    assert result.verdict in (Verdict.FAIL, Verdict.NOT_RUN), result.reason
    assert result.verdict is not Verdict.PASS

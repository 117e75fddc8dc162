"""A planted fault in the host/device copy of a mixed deployment is caught by the comparison.

branch3 paper3gpu (ITEM1 cpu; ITEM2, ITEM3 cuda): the generated .cu is edited so that the copy of a
received value (host sync buffer -> device) or of a sent value (device -> host staging) moves one
element less; the emulated run then leaves a stale element, and compare.cuda_reference fails,
naming the first diverging element.
"""

from __future__ import annotations

import shutil

import pytest

from pipeline.ledger.checks import Verdict
from tests.codegen_cuda import mixedhelpers as M

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed")

COPIES = {
    "get": "cudaMemcpyAsync(device, value, floats * sizeof(float), cudaMemcpyHostToDevice",
    "send": "cudaMemcpyAsync(staging, device, floats * sizeof(float), cudaMemcpyDeviceToHost",
}


@pytest.mark.parametrize("copy", sorted(COPIES))
def test_copy_one_element_short_is_caught(copy, exported_project, tmp_path):
    from pipeline.compare.step import run_compare_step
    from pipeline.execute.step import run_deployment

    root = M.project(exported_project, tmp_path / "p", "branch3")
    folder = M.generate(root, "branch3", "paper3gpu")
    source = folder / "ITEM2" / "nnef_item_ITEM2.cu"
    text = source.read_text()
    assert text.count(COPIES[copy]) == 1
    source.write_text(text.replace(COPIES[copy], COPIES[copy].replace("floats * sizeof", "(floats - 1u) * sizeof")))
    doc = run_deployment("branch3", "paper3gpu", root, M.inputs(root, "branch3", 4), 4, 5, instructions=False)
    assert doc["status"] == "emulated"
    results = {r.check_id: r for r in run_compare_step("branch3", root) if r.subject == "branch3/paper3gpu"}
    cuda = results["compare.cuda_reference"]
    assert cuda.verdict is Verdict.FAIL and "ULP" in cuda.reason, cuda.reason


def test_order_dependent_kernel_is_caught_in_the_shuffled_order(exported_project, tmp_path):
    """A kernel whose result depends on the order of its threads (a planted counter, right in order)
    passes in order and fails shuffled: the shuffled run of a mixed program really is shuffled."""
    import re

    from pipeline.compare.step import run_compare_step
    from pipeline.execute.step import run_deployment

    root = M.project(exported_project, tmp_path / "p", "branch3")
    folder = M.generate(root, "branch3", "paper3gpu")
    source = folder / "ITEM2" / "nnef_item_ITEM2.cu"
    text = source.read_text()
    store = re.search(r"\n    const unsigned i = nnef_block \* NNEF_THREADS \+ nnef_thread;\n    if \(i >= (\d+)u\) return;\n"
                      r"(?:.*\n)*?    y\[i\] = (.*);\n", text)
    count, value = int(store.group(1)), store.group(2)
    assert count % 128 == 0                                   # every launched thread stores: the counter is exact
    planted = f"    static unsigned nnef_seen_ = 0u;\n    y[i] = (nnef_seen_++ % {count}u == i) ? {value} : 0.0f;\n"
    source.write_text(text.replace(f"    y[i] = {value};\n", planted, 1))
    doc = run_deployment("branch3", "paper3gpu", root, M.inputs(root, "branch3", 2), 2, 3, instructions=False)
    results = {r.check_id: r for r in run_compare_step("branch3", root) if r.subject == "branch3/paper3gpu"}
    cuda = results["compare.cuda_reference"]
    assert doc["status"] == "emulated" and cuda.verdict is Verdict.FAIL
    assert "shuffled" in cuda.reason, cuda.reason

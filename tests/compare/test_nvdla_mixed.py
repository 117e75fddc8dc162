"""NVDLA items next to CPU items, compare: compare.nvdla_reference (HLR-NUM-004's FP16 tolerance, the same code
path as a DLA-only deployment), traces `emulated`, MET and path `not run`, no 0 ULP claim; a weight changed in
the loadable fails the comparison. The project: tests/execute/dlamixed.py.
"""

from __future__ import annotations

import hashlib
import json
import shutil

import numpy as np

import pytest

from pipeline.ledger.checks import Verdict
from tests.execute.dlamixed import MODEL, VECTORS, nvdla_folder
from tests.execute.test_nvdla_layout import hardware_order

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")


@pytest.mark.parametrize("deployment", ["convdla", "dla2", "dlaonly2"])
def test_compared_within_the_fp16_tolerance_traces_emulated_met_not_run(dla_mixed, deployment):
    _, _, _, compared = dla_mixed
    subject = f"{MODEL}/{deployment}"
    numeric = compared[(subject, "compare.nvdla_reference")]
    assert numeric.verdict is Verdict.EMULATED, numeric.reason
    assert 0 < numeric.measured["max_abs_error"] <= numeric.measured["tolerance_max_abs_error"]
    assert numeric.measured["tolerance_parameter"] == "HLR-NUM-004 fp16_max_abs_error"
    traces = compared[(subject, "compare.traces")]
    assert traces.verdict is Verdict.EMULATED and traces.measured["valid"] == traces.measured["traces"] >= 3, traces
    for check in ("met.budget", "met.stability", "met.path"):
        assert compared[(subject, check)].verdict is Verdict.NOT_RUN
        assert "emulated DLA say nothing" in compared[(subject, check)].reason
    assert (subject, "compare.reference") not in compared     # no 0 ULP claim (HLR-NUM-001) with an nvdla item
    assert not any(r.verdict is Verdict.PASS for (s, _), r in compared.items() if s == subject)


def test_a_weight_changed_in_the_loadable_fails_the_comparison(dla_mixed, tmp_path):
    """conv1_weight[0, 0, 2, 2] set to 40 in the loadable bytes of a copy of the project (build.json's sha256
    updated as a faulty writer would): the run still completes and compare.nvdla_reference fails."""
    from pipeline.compare.step import run_compare_step
    from pipeline.execute.step import run_execute_step
    from pipeline.nnef.tensorfile import read_tensor

    root = shutil.copytree(dla_mixed[0], tmp_path / "copy", symlinks=True)
    folder = nvdla_folder(root, "convdla")
    original, manifest_text = (folder / "DLA0.nvdla").read_bytes(), (folder / "build.json").read_text()
    weights = read_tensor(root / "artifacts" / MODEL / "export" / "conv1_weight.dat")
    packed = hardware_order(weights)   # 6 x 1 x 5 x 5 in the convolution core's order: tap by tap, 6 kernels each
    at = original.find(packed)
    assert at > 0 and original.find(packed, at + 1) < 0
    data = bytearray(original)
    offset = at + 2 * ((2 * 5 + 2) * 6 + 0)   # [kernel 0, channel 0, row 2, column 2]: tap 12, kernel 0
    data[offset:offset + 2] = np.float16(40.0).tobytes()
    manifest = json.loads(manifest_text)
    manifest["items"][0]["loadable_sha256"] = hashlib.sha256(bytes(data)).hexdigest()
    (folder / "DLA0.nvdla").write_bytes(bytes(data))
    (folder / "build.json").write_text(json.dumps(manifest))
    doc = run_execute_step(MODEL, root, vectors=VECTORS, runs=20, instructions=False, deployments=["convdla"])
    assert doc["convdla"]["status"] == "emulated", doc
    check = next(r for r in run_compare_step(MODEL, root)
                 if r.subject == f"{MODEL}/convdla" and r.check_id == "compare.nvdla_reference")
    assert check.verdict is Verdict.FAIL and check.measured["max_abs_error"] > 0.01, check.reason

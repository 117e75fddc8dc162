"""Issue 15: the CUDA generator links the weights of a large item as a binary file (.incbin)
instead of hex-float text; the results keep the reference's bits, the blob holds exactly the
tensor files' values, and nvcc builds the same source for the device and links the host side."""

from __future__ import annotations

import hashlib
import json
import shutil

import numpy as np
import pytest

from pipeline.codegen.shared import contract as c_item
from pipeline.codegen.shared.spelling import ident
from pipeline.nnef.tensorfile import read_tensor
from tests.codegen import cghelpers as H
from tests.codegen_cuda import cudahelpers as C

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed (Debian package g++)")


def _lenet5(exported_project, tmp_path, monkeypatch, threshold: int):
    monkeypatch.setattr(c_item, "BLOB_MIN_FLOATS", threshold)
    export = exported_project / "artifacts" / "lenet5" / "export"
    split = C.whole_model(export, tmp_path / "split")
    manifest = C.generate(split, export, tmp_path / "code")
    return export, split, manifest


def test_large_item_links_binary_weights_and_keeps_the_bits(exported_project, tmp_path, monkeypatch):
    export, split, manifest = _lenet5(exported_project, tmp_path, monkeypatch, 1000)
    item = manifest["items"][0]["name"]
    source = (tmp_path / "code" / manifest["items"][0]["source"]).read_text(encoding="utf-8")
    blob_path = tmp_path / "code" / item / f"nnef_weights_{item}.bin"
    assert blob_path.is_file() and ".incbin" in source
    assert "static const float H_" not in source  # no float text at all
    memory_map = json.loads((tmp_path / "code" / item / "memory_map.json").read_text(encoding="utf-8"))
    blob = blob_path.read_bytes()
    assert memory_map["weights_blob"] == {"file": blob_path.name, "bytes": len(blob),
                                          "sha256": hashlib.sha256(blob).hexdigest()}
    floats = np.frombuffer(blob, "<f4")
    weights = {p.stem: read_tensor(p) for p in export.glob("*.dat")}
    by_ident = {ident(label): value for label, value in weights.items()}
    checked = 0
    for line in source.splitlines():  # every #define names a range holding one tensor file's values
        if line.startswith("#define H_"):
            name = line.split()[1][2:]
            if name.startswith("K_"):  # a literal constant, not a tensor file
                continue
            first, end = (int(v) for v in line.split("[", 1)[1].split(")")[0].split(", "))
            assert np.array_equal(floats[first:end], by_ident[name].reshape(-1).astype(np.float32)), name
            checked += 1
    assert checked == len(weights), (checked, sorted(weights))
    rng = np.random.default_rng(3)
    inputs = {i["name"]: rng.uniform(0.0, 1.0, [12] + i["shape"]).astype(np.float32) for i in manifest["inputs"]}
    results = C.emulate(tmp_path / "code", manifest, inputs, tmp_path / "run")
    names = [o["name"] for o in manifest["outputs"]]
    expected = H.reference(split / f"{C.ITEM}.nnef", inputs, weights, names)
    for result in results:
        H.assert_bit_identical(result, expected, "lenet5 with linked weights")


def test_small_item_keeps_text_weights(exported_project, tmp_path, monkeypatch):
    _, _, manifest = _lenet5(exported_project, tmp_path, monkeypatch, 1 << 30)
    item = manifest["items"][0]["name"]
    source = (tmp_path / "code" / manifest["items"][0]["source"]).read_text(encoding="utf-8")
    assert "static const float H_" in source and ".incbin" not in source
    assert not (tmp_path / "code" / item / f"nnef_weights_{item}.bin").exists()


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed (CUDA toolkit)")
def test_nvcc_builds_and_links_the_linked_weights(exported_project, tmp_path, monkeypatch):
    from pipeline.toolchain.nvcc import device_build

    _, _, manifest = _lenet5(exported_project, tmp_path, monkeypatch, 1000)
    code = tmp_path / "code"
    build = device_build(code, code / "nnef_cuda_main.cu", tmp_path / "build", archs=("sm_90",))
    assert build.binary.is_file()
    import subprocess
    symbols = subprocess.run(["nm", str(build.binary)], capture_output=True, text=True, check=False).stdout
    item = manifest["items"][0]["name"]
    assert f"nnef_weights_{item}" in symbols


def test_mixed_deployment_cuda_item_links_its_blob_and_keeps_the_bits(exported_project, tmp_path, monkeypatch):
    """lenet5 convgpu (GPU0 cuda, CPU1 cpu) with a threshold low enough that both items link their
    weights: the C program writes the .cu item's blob beside it and the emulation stays 0 ULP."""
    from pipeline.compare.step import run_compare_step
    from pipeline.execute.step import run_deployment
    from pipeline.ledger.checks import Verdict
    from tests.codegen_cuda import mixedhelpers as M

    monkeypatch.setattr(c_item, "BLOB_MIN_FLOATS", 100)
    root = M.project(exported_project, tmp_path / "p", "lenet5")
    folder = M.generate(root, "lenet5", "convgpu")
    source = (folder / "GPU0" / "nnef_item_GPU0.cu").read_text(encoding="utf-8")
    assert (folder / "GPU0" / "nnef_weights_GPU0.bin").is_file() and ".incbin" in source
    assert "static const float H_" not in source
    from pipeline.codegen import checks

    verdicts = {r.check_id: r for r in checks.evaluate("lenet5/convgpu", folder, root, tmp_path / "s")}
    assert all(r.verdict in (Verdict.PASS, Verdict.NOT_RUN) for r in verdicts.values()), \
        {k: r.reason for k, r in verdicts.items()}
    assert verdicts["codegen.trace"].verdict is Verdict.PASS
    doc = run_deployment("lenet5", "convgpu", root, M.inputs(root, "lenet5", 6), 6, 2)
    assert doc["status"] == "emulated", doc
    results = {r.check_id: r for r in run_compare_step("lenet5", root) if r.subject == "lenet5/convgpu"}
    cuda = results["compare.cuda_reference"]
    assert cuda.verdict is Verdict.EMULATED, cuda.reason

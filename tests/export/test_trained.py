"""Issue 38: the trained model as the first reference (export.trained_model, HLR-EXP-004).

torch's own outputs for the causal encoder (tests/networks/data/encoder_causal.reference.npz, written by
make_round4.py) against onnxruntime on the ONNX model and the reference semantics on the export: pass; a
converter defect planted (one weight's sign flipped in the ONNX) fails while export.numeric, which trusts
the ONNX, cannot see it; no section: not run, saying how; files that do not fit: EXPORT-E020 in a fail;
deploy.yaml's section judged by the loader (DEPLOY-E004, DEPLOY-E010).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from pipeline.export import export_model
from pipeline.export.trained import trained_result
from pipeline.ledger.checks import Verdict
from pipeline.project.deploy import DeployError, TrainedReference, load_deploy

DATA = Path(__file__).resolve().parents[1] / "networks" / "data"
NAME = "encoder_causal"
SPEC = TrainedReference("torch", "2.13.0+cpu", "trained.npz", {}, {}, 1e-5, None)


def _judge(folder: Path, model: onnx.ModelProto | None = None, spec: TrainedReference | None = SPEC):
    model = model or onnx.load(str(DATA / f"{NAME}.onnx"))
    folder.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(folder / "model.onnx"))
    result = export_model(folder / "model.onnx", folder / "export")
    shapes = {name: list(result.graph.tensors[nnef].shape) for name, nnef in {**result.inputs, **result.outputs}.items()}
    return trained_result(NAME, spec, folder, folder / "model.onnx", folder / "export", result.inputs, result.outputs,
                          {n: shapes[n] for n in result.inputs}, {n: shapes[n] for n in result.outputs}, ["model.onnx"])


def _with_file(folder: Path, arrays: dict[str, np.ndarray] | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    if arrays is None:
        shutil.copy(DATA / f"{NAME}.reference.npz", folder / "trained.npz")
    else:
        np.savez(folder / "trained.npz", **arrays)
    return folder


def _torch() -> dict[str, np.ndarray]:
    with np.load(DATA / f"{NAME}.reference.npz", allow_pickle=False) as data:
        return {k: data[k] for k in data.files}


def test_the_export_computes_what_torch_computed(tmp_path):
    judged = _judge(_with_file(tmp_path))
    assert judged.verdict is Verdict.PASS, judged.reason
    assert judged.measured["vectors"] == 4 and judged.measured["framework_version"] == "2.13.0+cpu"
    assert 0 < judged.measured["onnxruntime.y.max_abs_error"] < 1e-5


def test_a_flipped_weight_in_the_onnx_fails_it(tmp_path):
    """The planted converter defect: one weight of the attention's output projection negated in the ONNX."""
    model = onnx.load(str(DATA / f"{NAME}.onnx"))
    weight = next(t for t in model.graph.initializer if t.name == "layer.self_attn.out_proj.weight")
    data = numpy_helper.to_array(weight).copy()
    data[0, 0] = -data[0, 0]
    weight.CopyFrom(numpy_helper.from_array(data, weight.name))
    judged = _judge(_with_file(tmp_path), model)
    assert judged.verdict is Verdict.FAIL
    assert "the ONNX model does not compute what the trained model computes" in judged.reason
    assert judged.measured["onnxruntime.y.max_abs_error"] > 1e-4


def test_one_npy_per_name_works_as_the_npz(tmp_path):
    arrays = _torch()
    np.save(tmp_path / "x.npy", arrays["inputs/x"])
    np.save(tmp_path / "y.npy", arrays["outputs/y"])
    spec = TrainedReference("torch", "2.13.0+cpu", None, {"x": "x.npy"}, {"y": "y.npy"}, 1e-5, None)
    assert _judge(tmp_path, spec=spec).verdict is Verdict.PASS


def test_without_files_the_check_is_not_run_and_says_how(tmp_path):
    judged = _judge(tmp_path, spec=None)
    assert judged.verdict is Verdict.NOT_RUN
    assert "trained_reference" in judged.reason and "docs/trained-reference.md" in judged.reason


def _bad(arrays: dict[str, np.ndarray], key: str, value: object) -> dict[str, np.ndarray]:
    changed = dict(arrays)
    if value is None:
        del changed[key]
    else:
        changed[key] = value
    return changed


@pytest.mark.parametrize("case, expected", [
    ("float64", "is float64"), ("shape", "has shape [4, 8, 32]"), ("missing", "outputs are none"),
    ("extra", "'stray'"), ("version", "deploy.yaml says '2.13.0+cpu'"), ("nan", "NaN or an infinity"),
    ("pickle", "not a NumPy file")])
def test_files_that_do_not_fit_fail_with_a_coded_reason(case, expected, tmp_path):
    arrays = _torch()
    x = arrays["inputs/x"]
    changed = {"float64": lambda: _bad(arrays, "inputs/x", x.astype(np.float64)),
               "shape": lambda: _bad(arrays, "inputs/x", x[:, 0]),
               "missing": lambda: _bad(arrays, "outputs/y", None),
               "extra": lambda: _bad(arrays, "stray", x),
               "version": lambda: _bad(arrays, "framework_version", np.array("2.12.0")),
               "nan": lambda: _bad(arrays, "inputs/x", np.where(x > 0.9, np.nan, x).astype(np.float32)),
               "pickle": lambda: _bad(arrays, "inputs/x", np.array([{"a": 1}], dtype=object))}[case]()
    folder = tmp_path / "m"
    folder.mkdir()
    np.savez(folder / "trained.npz", **changed)
    judged = _judge(folder)
    assert judged.verdict is Verdict.FAIL and judged.reason.startswith("EXPORT-E020: ")
    assert expected in judged.reason, judged.reason


def test_a_link_out_of_the_model_folder_is_refused(tmp_path):
    outside = _with_file(tmp_path / "outside")
    folder = tmp_path / "m"
    folder.mkdir()
    os.symlink(outside / "trained.npz", folder / "trained.npz")
    judged = _judge(folder)
    assert judged.verdict is Verdict.FAIL and "EXPORT-E020" in judged.reason and "link" in judged.reason


DEPLOY = """schema_version: 1
model: m
inputs:
  x: {shape: [1, 8, 32], distribution: {kind: uniform, low: -1.0, high: 1.0}}
validation: {vectors: 4, seed: 1, tolerance: {max_abs_error: 1.0e-5}}
deployments:
  cpu: {items: [{name: CPU0, target: cpu}], default_item: CPU0, sync: event}
met: {runs: 10, budget_us: 1000}
trained_reference:
"""


@pytest.mark.parametrize("section, code", [
    ("  framework: torch\n  framework_version: '2'\n  file: t.npz\n  tolerance: {max_abs_error: 1.0e-5}\n", None),
    ("  framework: torch\n  framework_version: '2'\n  file: t.npz\n  inputs: {x: x.npy}\n  outputs: {y: y.npy}\n"
     "  tolerance: {max_abs_error: 1.0e-5}\n", "DEPLOY-E004"),
    ("  framework: torch\n  framework_version: '2'\n  file: ../t.npz\n  tolerance: {max_abs_error: 1.0e-5}\n",
     "DEPLOY-E010"),
    ("  framework: torch\n  framework_version: '2'\n  inputs: {x: x.npz}\n  outputs: {y: y.npy}\n"
     "  tolerance: {max_abs_error: 1.0e-5}\n", "DEPLOY-E010"),
    ("  framework: torch\n  file: t.npz\n  tolerance: {max_abs_error: 1.0e-5}\n", "DEPLOY-E002"),
    ("  framework: torch\n  framework_version: '2'\n  file: t.npz\n  tolerance: {max_abs_eror: 1.0}\n",
     "DEPLOY-E005"),
])
def test_the_deploy_section_is_judged_by_the_loader(section, code, tmp_path):
    path = tmp_path / "deploy.yaml"
    path.write_text(DEPLOY + section)
    if code is None:
        spec = load_deploy(path)
        assert spec.trained == TrainedReference("torch", "2", "t.npz", {}, {}, 1e-5, None)
        return
    with pytest.raises(DeployError) as error:
        load_deploy(path)
    assert code in {p.code for p in error.value.problems}, json.dumps([str(p) for p in error.value.problems])


def test_the_shipped_branch3_carries_its_trained_reference(tmp_path):
    """models/branch3/trained.npz (trained.py: torch modules, build.py's parameters) is named by deploy.yaml,
    recorded in the README, and the export computes what it holds."""
    import hashlib

    from tests.projects import ROOT

    folder = ROOT / "models" / "branch3"
    spec = load_deploy(folder / "deploy.yaml").trained
    assert spec is not None and spec.file == "trained.npz" and spec.framework == "torch"
    assert hashlib.sha256((folder / "trained.npz").read_bytes()).hexdigest() in (folder / "README.md").read_text()
    result = export_model(folder / "model.onnx", tmp_path / "export")
    shapes = {name: list(result.graph.tensors[nnef].shape) for name, nnef in {**result.inputs, **result.outputs}.items()}
    judged = trained_result("branch3", spec, folder, folder / "model.onnx", tmp_path / "export", result.inputs,
                            result.outputs, {n: shapes[n] for n in result.inputs},
                            {n: shapes[n] for n in result.outputs}, [])
    assert judged.verdict is Verdict.PASS, judged.reason

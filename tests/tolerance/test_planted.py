"""Issue 41, done when: on every shipped model, onnxruntime's output moved at one element by 200 times its
measured error fails export.bound_onnxruntime, while the unmoved output passes it; and the validation the
export step wrote says the bounds of both sides discriminate (within 100 times the measured error)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest

from pipeline.export.bounds import BOUND_VECTORS, BoundRun
from pipeline.numerics.onnx_runner import reference_runner
from pipeline.numerics.vectors import draw_vectors
from pipeline.project.deploy import load_deploy
from pipeline.project.layout import model_names, step_dir
from pipeline.semantics import interpret_batch, load_variables
from pipeline.nnef.checker import check_paths

ROOT = Path(__file__).resolve().parents[2]
MODELS = model_names(ROOT)


def _sides(model: str, export: Path) -> tuple[onnx.ModelProto, list, list, list, dict[str, str]]:
    spec = load_deploy(ROOT / "models" / model / "deploy.yaml")
    vectors = draw_vectors(spec.inputs, BOUND_VECTORS, spec.validation.seed)
    onnx_model = onnx.load(str(ROOT / "models" / model / "model.onnx"))
    provenance = json.loads((export / "provenance.json").read_text(encoding="utf-8"))
    names = {item["onnx"]: item["nnef"] for item in provenance["outputs"]}
    inputs = {item["onnx"]: item["nnef"] for item in provenance["inputs"]}
    graph = check_paths([export], profile="standard").graphs[0]
    ours = interpret_batch(graph, [{inputs[k]: v for k, v in vector.items()} for vector in vectors],
                           load_variables(graph, export))
    runner = reference_runner(onnx_model)
    theirs = [runner.run(vector) for vector in vectors]
    return onnx_model, vectors, [{o: r[n] for o, n in names.items()} for r in ours], theirs, names


@pytest.mark.parametrize("model", MODELS)
def test_onnxruntime_moved_by_200_times_its_error_fails_its_bound(model: str, exported_project: Path) -> None:
    onnx_model, vectors, ours, theirs, names = _sides(model, step_dir(model, "export", exported_project))
    clean = BoundRun(onnx_model, names)
    for vector, a, b in zip(vectors, ours, theirs):
        clean.add(vector, a, b)
    assert not clean.bound_unavailable, clean.bound_unavailable
    for name, m in clean.measures.items():
        assert m["onnxruntime_over_bound"] == 0 and m["reference_over_bound"] == 0, m
        assert m["onnxruntime_bound_max"] <= 100 * max(m["onnxruntime_bound_vectors_max_abs"],
                                                       2.0 ** -24 * clean.magnitude[name]), m
    name = next(iter(names))
    measured = clean.measures[name]["onnxruntime_bound_vectors_max_abs"]
    moved = [dict(t) for t in theirs]
    value = np.asarray(moved[0][name], np.float64).copy()
    value.reshape(-1)[0] += 200.0 * measured
    moved[0][name] = value.astype(np.float32)
    planted = BoundRun(onnx_model, names)
    for vector, a, b in zip(vectors, ours, moved):
        planted.add(vector, a, b)
    assert planted.measures[name]["onnxruntime_over_bound"] >= 1, planted.measures[name]
    assert planted.measures[name]["reference_over_bound"] == 0


@pytest.mark.parametrize("model", MODELS)
def test_the_export_step_records_discriminating_bounds(model: str, exported_project: Path) -> None:
    validation = json.loads((step_dir(model, "export", exported_project) / "validation.json").read_text())
    bound = validation["enclosure"]["bound"]
    assert bound["discriminating"] is True and not bound["unavailable"], bound
    assert validation["enclosure"]["yardstick_cross_check"]["max_distance"] < 1e-7
    checks = json.loads((step_dir(model, "export", exported_project) / "checks.json").read_text())
    verdicts = {r["check_id"]: r["verdict"] for r in checks["results"]}
    assert verdicts["export.bound_reference"] == verdicts["export.bound_onnxruntime"] == "pass", verdicts

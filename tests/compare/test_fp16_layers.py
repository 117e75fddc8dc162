"""Issue 38: a DLA deployment that misses its FP16 tolerance names the layers to move.

tests/networks/netbuild.py `fp16_cancellation`: conv `big` writes values near 1000 (binary16's spacing there
is 0.5), conv `back` subtracts 998, the small difference carries the rounding of the large value to the
output. The ranking (pipeline/compare/fp16_layers.py) puts `big`, `bigrelu` and `back` first and names them
as the set to move; the harmless `head` stays. End to end: split, NVDLA loadable, the emulator, compare:
compare.nvdla_reference fails the deployment's stated FP16 requirement and its reason names the three.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import onnx
import pytest

from pipeline.compare.fp16_layers import rank
from pipeline.export import convert
from pipeline.ledger.checks import Verdict
from tests.networks import netbuild as B

MOVE = ["back", "big", "bigrelu"]


def _vectors(count: int = 4) -> list[dict[str, np.ndarray]]:
    rng = np.random.default_rng(7)
    return [{"x": rng.uniform(0, 1, (1, 1, 8, 8)).astype(np.float32)} for _ in range(count)]


def test_the_layers_that_fp16_cannot_hold_are_ranked_first_and_named():
    result = convert(B.fp16_cancellation())
    everything = {ref.name for op in result.graph.operations for ref in op.output_refs()}
    ranking = rank(result.graph, result.variables, _vectors(), everything, tolerance=0.1)
    assert ranking.all_fp16 > 0.2                       # the whole network in FP16 misses 0.1
    assert sorted(entry["layer"] for entry in ranking.layers[:3]) == MOVE
    assert ranking.layers[3]["max_abs_error"] < 0.02
    assert sorted(ranking.move) == MOVE and ranking.met and ranking.remaining <= 0.1
    assert "move 3 layer(s)" in ranking.describe()


def test_a_met_tolerance_names_no_layer_and_layers_off_the_dla_stay_float32():
    result = convert(B.fp16_cancellation())
    everything = {ref.name for op in result.graph.operations for ref in op.output_refs()}
    loose = rank(result.graph, result.variables, _vectors(2), everything, tolerance=10.0)
    assert loose.move == [] and loose.met and "no layer to move" in loose.describe()
    only_head = rank(result.graph, result.variables, _vectors(2), {"y", "backrelu"}, tolerance=0.1)
    assert [e["layer"] for e in only_head.layers] == ["y", "backrelu"] and only_head.all_fp16 < 0.1


DEPLOY = """schema_version: 1
model: cancel
description: FP16 cancellation (tests/compare/test_fp16_layers.py)
inputs:
  x:
    shape: [1, 1, 8, 8]
    distribution: {kind: uniform, low: 0.0, high: 1.0}
validation:
  vectors: 10
  seed: 1
  tolerance:
    max_abs_error: 1.0e-3
    max_rel_error: null
deployments:
  dla:
    items: [{name: DLA0, target: nvdla}]
    default_item: DLA0
    sync: event
    fp16: {max_abs_error: 1.0e-1}
met:
  runs: 10
  budget_us: 100000
"""


@pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")
def test_a_dla_deployment_that_misses_fp16_names_the_layers_to_move(tmp_path):
    from pipeline.codegen.step import run_codegen_step
    from pipeline.compare.step import run_compare_step
    from pipeline.execute.step import run_execute_step
    from pipeline.export.step import run_export_step
    from pipeline.split.step import run_split_step
    from tests.projects import ROOT

    root = tmp_path / "project"
    (root / "models" / "cancel").mkdir(parents=True)
    (root / "requirements").symlink_to(ROOT / "requirements")
    onnx.save(B.fp16_cancellation(), str(root / "models" / "cancel" / "model.onnx"))
    (root / "models" / "cancel" / "deploy.yaml").write_text(DEPLOY)
    run_export_step("cancel", root)
    run_split_step("cancel", root, vectors=1)
    run_codegen_step("cancel", root)
    run_execute_step("cancel", root, vectors=10, runs=5, instructions=False)
    compared = {r.check_id: r for r in run_compare_step("cancel", root)}
    numeric = compared["compare.nvdla_reference"]
    assert numeric.verdict is Verdict.FAIL
    assert "move 3 layer(s) to a CPU or GPU item: big, bigrelu, back" in numeric.reason
    assert numeric.measured["fp16_layers_to_move"] == "big, bigrelu, back"
    document = json.loads((root / "artifacts" / "cancel" / "compare" / "dla" / "fp16-layers.json").read_text())
    assert sorted(document["move"]) == MOVE and document["tolerance_max_abs_error"] == 0.1

"""Issue 42: the FP16 bound's verdict on a tiny network (pipeline/compare/nvdla_bound.py), light enough per mutant.

An FP16 implementation's outputs (onnxruntime on the float16 model) lie within the computed bound; an element
moved beyond it, a NaN, or an error on the last vector only is found, counted and named; a bound that does not
discriminate falls back to the absolute parameter and says why; the reported text names what applied. The
whole-network runs (tests/compare/test_nvdla_bound.py) take minutes: not run once per mutant.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from pipeline.compare import nvdla_bound, nvdla_fp16
from pipeline.compare.nvdla_bound import ABSOLUTE, BOUND, BoundJudgement, describe, judge


def _model() -> onnx.ModelProto:
    rng = np.random.default_rng(3)
    graph = helper.make_graph(
        [helper.make_node("Gemm", ["x", "w", "b"], ["h"], transB=1, name="g1"),
         helper.make_node("Relu", ["h"], ["r"], name="relu"),
         helper.make_node("Gemm", ["r", "w2", "b2"], ["y"], transB=1, name="g2")], "m",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 5])],
        [onnx.numpy_helper.from_array(rng.normal(size=s).astype(np.float32), n)
         for n, s in (("w", (32, 16)), ("b", (32,)), ("w2", (5, 32)), ("b2", (5,)))])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


MODEL = _model()
X = np.random.default_rng(1).uniform(-1, 1, (4, 1, 16)).astype(np.float32)
FP16 = nvdla_fp16.independent_fp16(MODEL, {"x": X})


@pytest.fixture(scope="module")
def good() -> BoundJudgement:
    return judge(MODEL, {"x": X}, FP16, 1e-2)


def test_an_fp16_implementation_lies_within_the_bound(good: BoundJudgement) -> None:
    assert good.passed and good.beyond == 0 and good.first_beyond is None and good.vectors == 4
    assert good.basis == BOUND and good.outputs["y"]["basis"] == BOUND and good.why == ""
    assert 0 < good.max_abs_error < good.max_bound and 0 < good.max_ratio <= 1
    assert good.measure == "the enclosure" and good.placement is None
    assert good.arithmetic == nvdla_bound.arithmetic().to_json()
    entry = good.outputs["y"]
    assert entry["max_bound"] == good.max_bound and entry["bound_to_error"] == entry["max_bound"] / entry["max_error"]
    assert entry["spread"] > entry["max_bound"]
    assert describe(good) == (f"y: within the computed FP16 bound of the exact value (max |error| "
                              f"{good.max_abs_error:.3g}, max bound {good.max_bound:.3g}, tightest error/bound "
                              f"{good.max_ratio:.3g})")


def test_an_element_beyond_the_bound_on_the_last_vector_is_counted_and_named(good: BoundJudgement) -> None:
    bad = {"y": FP16["y"].copy()}
    bad["y"][3, 0, 2] += np.float32(50 * good.max_bound)
    bad["y"][3, 0, 4] += np.float32(60 * good.max_bound)
    found = judge(MODEL, {"x": X}, bad, 1e-2)
    assert not found.passed and found.beyond == 2 and found.basis == BOUND
    first = found.first_beyond
    assert first is not None and (first["output"], first["vector"], first["index"]) == ("y", 3, [0, 2])
    assert first["value"] == float(bad["y"][3, 0, 2]) and first["error"] > first["bound"] > 0
    assert abs(first["value"] - first["exact"]) == pytest.approx(first["error"], rel=1e-6)
    assert found.max_abs_error >= 60 * good.max_bound * 0.99 and found.max_ratio > 50
    text = describe(found)
    assert "; 2 element(s) beyond, first: y vector 3 index [0, 2]: " in text
    assert text.endswith(f"error {first['error']:.3g} > {first['bound']:.3g}")


def test_a_nan_output_is_beyond_every_bound() -> None:
    bad = {"y": FP16["y"].copy()}
    bad["y"][1, 0, 0] = np.nan
    found = judge(MODEL, {"x": X}, bad, 1e-2)
    assert not found.passed and found.beyond == 1 and found.first_beyond["vector"] == 1
    assert found.max_abs_error == np.inf


def test_a_bound_that_does_not_discriminate_falls_back_to_the_absolute_parameter() -> None:
    one = judge(MODEL, {"x": X[:1]}, {"y": FP16["y"][:1]}, 1e-2)      # one vector: no spread to compare with
    assert one.outputs["y"]["spread"] == 0.0 and one.outputs["y"]["basis"] == BOUND
    exact = judge(MODEL, {"x": X}, {"y": FP16["y"].astype(np.float64)}, 1e-2)
    assert exact.passed
    # a bound more than DISCRIMINATION_RATIO times the largest measured error: the absolute applies, and why
    bases = nvdla_bound._bases(["y"], [{"y": np.array([0.0, 1.0])}, {"y": np.array([1.0, 0.0])}],
                               [{"y": np.zeros(2)}] * 2, [{"y": np.full(2, 1e-3)}] * 2, "", 2.0 ** -20)
    assert bases["y"]["basis"] == ABSOLUTE and bases["y"]["max_error"] == 2.0 ** -20
    assert "times the largest measured error" in bases["y"]["why"]
    assert bases["y"]["why"].startswith("the computed bound does not discriminate: the bound 1.000e-03 is ")
    within = nvdla_bound._bases(["y"], [{"y": np.array([0.0, 1.0])}, {"y": np.array([1.0, 0.0])}],
                                [{"y": np.full(2, 1e-3)}] * 2, [{"y": np.full(2, 1e-2)}] * 2, "", 2.0 ** -11)
    assert within["y"]["basis"] == BOUND and within["y"]["why"] == "" and within["y"]["bound_to_error"] == 10.0
    wide = nvdla_bound._bases(["y"], [{"y": np.array([0.0, 1.0])}, {"y": np.array([0.0, 1.005])}],
                              [{"y": np.full(2, 1e-2)}] * 2, [{"y": np.full(2, 1e-2)}] * 2, "", 2.0 ** -11)
    assert wide["y"]["basis"] == ABSOLUTE and "a constant output would pass" in wide["y"]["why"]
    assert "times the largest" not in wide["y"]["why"]
    unavailable = nvdla_bound._bases(["y"], [{"y": np.zeros(2)}], [{"y": np.zeros(2)}], None, "SENS-E001: no rule", 1.0)
    assert unavailable == {"y": {"spread": 0.0, "basis": ABSOLUTE, "why": "SENS-E001: no rule"}}


def test_the_absolute_parameter_judges_an_output_whose_bound_is_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline.numerics.sensitivity import BoundUnavailable

    def unavailable(*args: Any, **kw: Any) -> Any:
        raise BoundUnavailable("no rule for Gemm", "BOUND-E001")

    monkeypatch.setattr(nvdla_bound, "Sensitivity", unavailable)
    found = judge(MODEL, {"x": X}, FP16, 1e-2)
    assert found.basis == ABSOLUTE and found.passed and found.max_bound == 0.0
    assert found.why == "BOUND-E001: no rule for Gemm" and found.outputs["y"]["why"] == found.why
    assert describe(found) == (f"y: absolute tolerance 0.01 against the exact value (BOUND-E001: no rule for Gemm) "
                               f"(max |error| {found.max_abs_error:.3g})")
    off = {"y": FP16["y"] + np.float32(0.5)}
    beyond = judge(MODEL, {"x": X}, off, 1e-2)
    assert beyond.beyond == 20 and beyond.first_beyond["tolerance"] == 1e-2 and "bound" not in beyond.first_beyond
    assert describe(beyond).endswith("> 0.01")
    assert judge(MODEL, {"x": X}, {"y": FP16["y"] + np.float32(0.005)}, 1e-2).beyond == 0


def test_the_deployment_s_dla_nodes_are_traced_from_the_legalization_to_the_onnx_model(tmp_path: Path) -> None:
    assert nvdla_bound.nvdla_nodes("m", "d", ["DLA0"], tmp_path) is None
    export = tmp_path / "artifacts/m/export"
    export.mkdir(parents=True)
    (export / "provenance.json").write_text(json.dumps({"lines": [
        {"line": 3, "node": {"name": "g1"}}, {"line": 4, "node": {"name": "relu"}}, {"line": 5}]}))
    assert nvdla_bound.nvdla_nodes("m", "d", ["DLA0"], tmp_path) is None      # no legalization document
    split = tmp_path / "artifacts/m/split/d"
    split.mkdir(parents=True)
    (split / "DLA0.nvdla-legalization.json").write_text(json.dumps({"operations": [
        {"nnef_line": 3}, {"nnef_line": 5}, {"nnef_line": 9}, {}]}))
    assert nvdla_bound.nvdla_nodes("m", "d", ["DLA0"], tmp_path) == {"g1"}
    (split / "DLA1.nvdla-legalization.json").write_text(json.dumps({"operations": [{"nnef_line": 4}]}))
    assert nvdla_bound.nvdla_nodes("m", "d", ["DLA0", "DLA1"], tmp_path) == {"g1", "relu"}
    assert nvdla_bound.nvdla_nodes("m", "d", ["DLA0", "DLA2"], tmp_path) is None


def test_a_run_is_judged_under_the_nnef_names_on_the_execute_step_s_vectors(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "models/m").mkdir(parents=True)
    onnx.save(MODEL, str(tmp_path / "models/m/model.onnx"))
    seen: dict[str, Any] = {}
    monkeypatch.setattr(nvdla_bound, "onnx_names", lambda model, root: ({"in": "x"}, {"y": "out"}))
    monkeypatch.setattr(nvdla_bound, "read_inputs", lambda model, root: seen.setdefault("inputs", (model, root)) and
                        {"in": X})
    monkeypatch.setattr(nvdla_bound, "nvdla_nodes", lambda *args: seen.setdefault("nodes", args) and {"g2"})
    bad = {"out": FP16["y"].copy()}
    bad["out"][2, 0, 1] += np.float32(1.0)
    found = nvdla_bound.judge_run("m", tmp_path, bad, 1e-2)
    assert seen["inputs"] == ("m", tmp_path) and "nodes" not in seen and found.placement is None
    assert set(found.outputs) == {"out"} and found.first_beyond["output"] == "out" and found.beyond == 1
    assert found.first_beyond["vector"] == 2
    placed = nvdla_bound.judge_run("m", tmp_path, bad, 1e-2, None, "d", ["DLA0"], whole=False)
    assert seen["nodes"] == ("m", "d", ["DLA0"], tmp_path) and placed.placement == ["g2"]
    assert placed.first_beyond["output"] == "out"
    required = nvdla_bound.judge_run("m", tmp_path, {"out": FP16["y"]}, 1e-2, {"max_abs_error": 1e-9})
    assert not required.passed and required.requirement is not None and required.requirement_clause
    assert required.requirement_clause in describe(required)


def test_a_judgement_of_nothing_judged_does_not_pass_and_reports_nothing() -> None:
    empty = BoundJudgement(BOUND, 0.05)
    assert not empty.passed and empty.outputs == {} and empty.arithmetic == {} and empty.decisions == {}
    assert empty.to_json()["outputs"] == {} and empty.to_json()["max_bound"] == 0.0
    assert BoundJudgement(BOUND, 0.05).outputs is not empty.outputs      # one dict per judgement, never shared


def test_only_the_dla_nodes_are_judged_in_fp16_in_a_mixed_deployment(good: BoundJudgement) -> None:
    placed = judge(MODEL, {"x": X}, FP16, 1e-2, on_nvdla={"g2"})
    assert placed.placement == ["g2"]
    assert placed.max_bound < good.max_bound         # g1 and relu keep float32 arithmetic: a tighter bound
    nothing = judge(MODEL, {"x": X}, FP16, 1e-2, on_nvdla=set())
    assert nothing.max_bound < placed.max_bound


def test_a_float32_arithmetic_counts_float32_rounding_as_the_unit() -> None:
    from pipeline.numerics.arithmetic import REFERENCE

    assert REFERENCE.storage is None
    found = judge(MODEL, {"x": X}, FP16, 1e-2, fp16=REFERENCE)
    assert found.arithmetic == REFERENCE.to_json() and found.vectors == 4


def test_outputs_judged_on_both_bases_say_so(monkeypatch: pytest.MonkeyPatch) -> None:
    def mixed(names, exact, errors, bounds, why, unit):  # type: ignore[no-untyped-def]
        return {"y": {"spread": 1.0, "basis": ABSOLUTE, "why": "planted"}, "z": {"spread": 1.0, "basis": BOUND, "why": ""}}

    monkeypatch.setattr(nvdla_bound, "_bases", mixed)
    found = judge(MODEL, {"x": X}, FP16, 1e-2)
    assert found.basis == "computed bound and absolute tolerance" and found.why == "planted"


def test_an_exact_output_s_error_is_counted_as_at_least_one_fp16_rounding() -> None:
    from pipeline.numerics.enclosure import Enclosure

    enclosure = Enclosure(MODEL)
    exact = np.stack([enclosure.run({"x": X[v]})["y"].mid() for v in range(X.shape[0])])
    found = judge(MODEL, {"x": X}, {"y": exact}, 1e-2)
    unit = nvdla_bound.arithmetic().storage.u
    assert unit > 2.0 ** -24 and found.beyond == 0
    assert found.outputs["y"]["max_error"] == pytest.approx(unit * float(np.abs(exact).max()))


# ------------------------------------------- issue 42, the seed-7 mutation sample

def test_the_basis_is_reported_in_the_words_the_docs_and_the_evidence_use(good: BoundJudgement) -> None:
    """The basis is a reported figure (compare's `tolerance_basis`, the evidence's pictures): its exact words."""
    assert good.to_json()["basis"] == "computed bound" and good.outputs["y"]["basis"] == "computed bound"
    assert judge(MODEL, {"x": X}, FP16, 1e-2, fp16=nvdla_bound.arithmetic()).basis == "computed bound"


def test_dla_node_names_outside_ascii_are_read_whatever_the_locale(tmp_path: Path) -> None:
    """provenance.json is UTF-8 (written so): read as such, not in the locale's encoding (here ASCII)."""
    import locale

    export = tmp_path / "artifacts/m/export"
    export.mkdir(parents=True)
    (export / "provenance.json").write_text(json.dumps({"lines": [{"line": 3, "node": {"name": "g\u00e9"}}]},
                                                       ensure_ascii=False), encoding="utf-8")
    split = tmp_path / "artifacts/m/split/d"
    split.mkdir(parents=True)
    (split / "DLA0.nvdla-legalization.json").write_text(json.dumps({"operations": [{"nnef_line": 3}]}))
    saved = locale.setlocale(locale.LC_CTYPE)
    try:
        locale.setlocale(locale.LC_CTYPE, "C")
        assert nvdla_bound.nvdla_nodes("m", "d", ["DLA0"], tmp_path) == {"g\u00e9"}
    finally:
        locale.setlocale(locale.LC_CTYPE, saved)


def test_an_input_the_provenance_does_not_rename_keeps_its_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An input whose NNEF name is its ONNX name (absent from the provenance's renaming) is still fed to the model,
    so the run is judged by the bound, not dropped to the absolute parameter by an error."""
    (tmp_path / "models/m").mkdir(parents=True)
    onnx.save(MODEL, str(tmp_path / "models/m/model.onnx"))
    monkeypatch.setattr(nvdla_bound, "onnx_names", lambda model, root: ({}, {}))
    monkeypatch.setattr(nvdla_bound, "read_inputs", lambda model, root: {"x": X})
    found = nvdla_bound.judge_run("m", tmp_path, {"y": FP16["y"]}, 1e-2)
    assert found.passed and found.basis == BOUND and found.vectors == 4

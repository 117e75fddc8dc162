"""Issue 42: the export step's verdicts from a validation report (pipeline/export/checks.py), on planted reports.

Two outputs, one of them wrong in the way each check exists to catch: beyond the tolerance (export.numeric),
an unjustified tolerance (export.tolerance), farther from the exact result (the enclosure) than its bound
(export.bound_*), constant across the vectors (export.discriminating); and a NaN or infinite parameter
(export.finite_parameters). Each check fails on the one bad output and passes without it.
"""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.export.checks import (BOUND_ONNXRUNTIME, BOUND_REFERENCE, DISCRIMINATING, NUMERIC, TOLERANCE,
                                    bound_results, discriminating_result, first_non_finite, numeric_result,
                                    tolerance_result)
from pipeline.export.validate import OutputResult, ValidationReport, ValidationSettings
from pipeline.ledger.checks import Verdict
from pipeline.numerics.metrics import compare_arrays
from pipeline.numerics.tolerance import effective_tolerance
from pipeline.project.deploy import Tolerance

GOOD, BAD = "good", "bad"


def _output(name: str, error: float, **fields) -> OutputResult:  # type: ignore[no-untyped-def]
    stats = compare_arrays(np.array([[1.0, 2.0]], np.float32), np.array([[1.0, 2.0 + error]], np.float32))
    passed = error <= 1e-5
    return OutputResult(name, f"t_{name}", [1, 2], stats, passed, "" if passed else f"output {name}: beyond", **fields)


def _report(outputs: list[OutputResult], vectors: int = 4, yardstick: dict | None = None) -> ValidationReport:  # type: ignore[type-arg]
    settings = ValidationSettings({}, vectors, 7, Tolerance(1e-5, 1e-3), "models/m/deploy.yaml")
    return ValidationReport("m", settings, {"runtime": "onnxruntime", "version": "1"}, outputs, {}, {},
                            enclosure=yardstick if yardstick is not None else {"vectors": 2, "bound": {"unavailable": ""}})


def test_export_numeric_fails_on_the_one_output_beyond_the_tolerance() -> None:
    passing = numeric_result("m", _report([_output(GOOD, 0.0), _output(BAD, 0.0)]), [], [])
    assert passing.check_id == NUMERIC and passing.verdict is Verdict.PASS and passing.reason == ""
    failing = numeric_result("m", _report([_output(GOOD, 0.0), _output(BAD, 0.5)]), ["r"], ["w"])
    assert failing.verdict is Verdict.FAIL and failing.reason == "output bad: beyond"
    assert failing.measured["bad.max_abs_error"] == 0.5 and failing.measured["good.max_abs_error"] == 0.0
    assert failing.measured["bad.nan_mismatches"] == 0 and failing.measured["vectors"] == 4
    assert failing.measured["tolerance_max_abs_error"] == 1e-5 and failing.measured["tolerance_max_rel_error"] == 1e-3
    assert (failing.read, failing.written) == (["r"], ["w"])


def test_export_tolerance_fails_on_the_one_unjustified_output_and_is_not_run_without_a_yardstick() -> None:
    justified = effective_tolerance(1e-5, 2e-6)
    unjustified = effective_tolerance(1e-5, 1e-3, 1e-4)
    assert justified.justified and not unjustified.justified
    report = _report([_output(GOOD, 0.0, tolerance=justified), _output(BAD, 0.0, tolerance=unjustified)])
    failing = tolerance_result("m", report, [], [])
    assert failing.check_id == TOLERANCE and failing.verdict is Verdict.FAIL
    assert failing.reason.startswith("output 'bad': computed bound 1.000e-03 exceeds") and "'good'" not in failing.reason
    assert failing.measured["bad.justified"] is False and failing.measured["good.effective_max_abs_error"] == 2e-6
    passing = tolerance_result("m", _report([_output(GOOD, 0.0, tolerance=justified)]), [], [])
    assert passing.verdict is Verdict.PASS and passing.reason.startswith("output 'good': computed bound")
    for yardstick, why in (({"unavailable": "onnx.reference refused Foo", "vectors": 2}, "onnx.reference refused Foo"),
                           ({"vectors": 0}, "no vector")):
        not_run = tolerance_result("m", _report(report.outputs, yardstick=yardstick), [], [])
        assert not_run.verdict is Verdict.NOT_RUN and not_run.reason == f"no enclosure of the exact result: {why}"


def test_export_bounds_fail_on_the_side_farther_than_its_bound() -> None:
    over = {"reference_over_bound": 0, "reference_to_bound": 0.5, "onnxruntime_over_bound": 3,
            "onnxruntime_to_bound": 2.5, "reference_max_abs": 1e-7}
    report = _report([_output(GOOD, 0.0, enclosure={"reference_over_bound": 0, "onnxruntime_over_bound": 0}),
                      _output(BAD, 0.0, enclosure=over)])
    reference, onnxruntime = bound_results("m", report, [], [])
    assert (reference.check_id, reference.verdict) == (BOUND_REFERENCE, Verdict.PASS)
    assert (onnxruntime.check_id, onnxruntime.verdict) == (BOUND_ONNXRUNTIME, Verdict.FAIL)
    assert onnxruntime.reason == ("output 'bad': 3 elements farther from the exact result than the bound "
                                  "(worst distance/bound 2.5)")
    assert reference.measured == {"vectors": 2, "bound_vectors": 0, "good.over_bound": 0, "bad.over_bound": 0, "bad.to_bound": 0.5,
                                  "bad.max_abs": 1e-7}
    unavailable = _report(report.outputs, yardstick={"vectors": 2, "bound": {"unavailable": "no rule for Foo"}})
    assert [r.verdict for r in bound_results("m", unavailable, [], [])] == [Verdict.NOT_RUN] * 2
    assert bound_results("m", unavailable, [], [])[1].reason == "no computed bound: no rule for Foo"
    for yardstick, why in (({"vectors": 0, "bound": {"unavailable": ""}}, "no vector"),
                           ({"unavailable": "x", "vectors": 2}, "x")):
        found = bound_results("m", _report(report.outputs, yardstick=yardstick), ["r"], ["w"])
        assert [(r.verdict, r.reason, r.read, r.written) for r in found] == \
            [(Verdict.NOT_RUN, f"no enclosure of the exact result: {why}", ["r"], ["w"])] * 2
    found = bound_results("m", unavailable, ["r"], ["w"])
    assert [(r.check_id, r.read, r.written, r.measured["vectors"]) for r in found] == \
        [(BOUND_REFERENCE, ["r"], ["w"], 2), (BOUND_ONNXRUNTIME, ["r"], ["w"], 2)]


def test_export_discriminating_fails_on_the_one_constant_output_and_needs_two_vectors() -> None:
    constant = _output(BAD, 0.0, spread=0.0, discriminating=False,
                       discriminating_reason="output bad: a constant output would pass this validation")
    varied = _output(GOOD, 0.0, spread=0.5, tolerance=effective_tolerance(1e-5, 2e-6))
    failing = discriminating_result("m", _report([varied, constant]), [], [])
    assert failing.check_id == DISCRIMINATING and failing.verdict is Verdict.FAIL
    assert failing.reason == "output bad: a constant output would pass this validation"
    assert failing.measured == {"vectors": 4, "good.spread": 0.5, "good.tolerance": 2e-6, "bad.spread": 0.0,
                                "bad.tolerance": None}
    assert discriminating_result("m", _report([varied]), [], []).verdict is Verdict.PASS
    one = discriminating_result("m", _report([varied], vectors=1), [], [])
    assert one.verdict is Verdict.NOT_RUN and one.reason == "fewer than two validation vectors"
    assert discriminating_result("m", _report([varied], vectors=2), [], []).verdict is Verdict.PASS


def test_the_first_non_finite_parameter_in_name_then_c_order() -> None:
    w = np.zeros((2, 3), np.float32)
    w[1, 0], w[1, 2] = np.inf, np.nan
    found = first_non_finite({"z": np.array([np.nan]), "w": w, "i": np.array([1, 2])})
    assert found[:2] == ("w", (1, 0)) and found[2] == np.inf
    assert first_non_finite({"w": np.zeros(3), "e": np.zeros((0,), np.float32), "i": np.arange(3)}) is None
    assert first_non_finite({"n": np.array([-np.inf])})[0] == "n"


# ------------------------------------------------------------------ export.trace, finite and reject on a tiny export

def _tiny_export(tmp_path):  # type: ignore[no-untyped-def]
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    from pipeline.export.exporter import export_model

    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "w"], ["h"], name="add"), helper.make_node("Relu", ["h"], ["y"], name="relu")],
        "t", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
        [numpy_helper.from_array(np.arange(4, dtype=np.float32).reshape(1, 4), "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=10)
    onnx.save(model, str(tmp_path / "model.onnx"))
    export_model(str(tmp_path / "model.onnx"), tmp_path / "out")
    return tmp_path / "out", tmp_path / "model.onnx"


def _planted(tmp_path, change):  # type: ignore[no-untyped-def]
    """export.trace's verdict after `change` edits the provenance document (or None: the files)."""
    import json

    from pipeline.export.checks import trace_result

    export, source = _tiny_export(tmp_path)
    path = export / "provenance.json"
    document = json.loads(path.read_text())
    change(document, export, source)
    path.write_text(json.dumps(document))
    return trace_result("m", export, source, ["r"])


def test_export_trace_passes_an_untouched_export_and_counts_what_it_traced(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from pipeline.export.checks import TRACE

    found = _planted(tmp_path, lambda d, e, s: None)
    assert (found.check_id, found.subject, found.verdict, found.reason) == (TRACE, "m", Verdict.PASS, "")
    assert found.measured == {"lines": 4, "nodes": 2, "tensor_files": 1} and found.read == ["r"]


def _drop_line(d, e, s):  # type: ignore[no-untyped-def]
    d["lines"] = d["lines"][:-1]


def _no_node(d, e, s):  # type: ignore[no-untyped-def]
    d["lines"][2]["node"] = None


def _no_initializer(d, e, s):  # type: ignore[no-untyped-def]
    d["lines"][1]["initializer"] = None


def _tensor_changed(d, e, s):  # type: ignore[no-untyped-def]
    (e / "w.dat").write_bytes((e / "w.dat").read_bytes()[:-1] + b"\x01")


def _tensor_missing(d, e, s):  # type: ignore[no-untyped-def]
    (e / "w.dat").unlink()


def _graph_changed(d, e, s):  # type: ignore[no-untyped-def]
    (e / "graph.nnef").write_text((e / "graph.nnef").read_text() + "\n")


def _source_changed(d, e, s):  # type: ignore[no-untyped-def]
    import onnx

    model = onnx.load(str(s))
    model.doc_string = "changed after the export"
    onnx.save(model, str(s))


def _nodes_reordered(d, e, s):  # type: ignore[no-untyped-def]
    d["nodes"].reverse()


def _node_without_line(d, e, s):  # type: ignore[no-untyped-def]
    d["nodes"][1]["nnef_lines"] = []


def _unused_with_lines(d, e, s):  # type: ignore[no-untyped-def]
    d["nodes"][1]["unused"] = True


def _unused_read(d, e, s):  # type: ignore[no-untyped-def]
    d["nodes"][0].update(unused=True, nnef_lines=[])


def _unused_output(d, e, s):  # type: ignore[no-untyped-def]
    d["nodes"][1].update(unused=True, nnef_lines=[])


@pytest.mark.parametrize("change, count, first", [
    (_drop_line, 2, "graph.nnef line 8 is not in provenance.json"),
    (_no_node, 1, "graph.nnef line 7 names no ONNX node or graph input"),
    (_no_initializer, 1, "variable on graph.nnef line 6 names no initializer"),
    (_tensor_changed, 1, "tensor file w.dat is missing or differs from its recorded sha256"),
    (_tensor_missing, 1, "tensor file w.dat is missing or differs from its recorded sha256"),
    (_graph_changed, 1, "graph.nnef does not have the sha256 recorded in provenance.json"),
    (_source_changed, 1, "model.onnx does not have the sha256 recorded in provenance.json"),
    (_nodes_reordered, 1, "provenance.json does not list the ONNX model's nodes in order"),
    (_node_without_line, 1, "ONNX node 1 (Relu 'relu') has no NNEF line"),
    (_unused_with_lines, 1, "ONNX node 1 (Relu 'relu') is listed as unused, but it has NNEF lines"),
    (_unused_read, 1, "ONNX node 0 (Add 'add') is listed as unused, but node 1 (Relu) reads it"),
    (_unused_output, 1, "ONNX node 1 (Relu 'relu') is listed as unused, but it is a graph output"),
], ids=lambda v: getattr(v, "__name__", str(v))[:30])
def test_export_trace_fails_on_each_planted_break_of_the_provenance(tmp_path, change, count, first) -> None:  # type: ignore[no-untyped-def]
    found = _planted(tmp_path, change)
    assert found.verdict is Verdict.FAIL and found.reason == f"{count} problem(s), first: {first}"
    assert found.measured["nodes"] == 2 and found.read == ["r"]
    if change is _drop_line:
        assert found.measured["lines"] == 4


def test_export_trace_counts_every_problem_of_an_unused_node_read_and_with_lines(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from pipeline.export.checks import _unused_problems

    nodes = [{"index": 0, "op_type": "Add", "name": "a", "outputs": ["h", ""], "inputs": ["x"], "nnef_lines": [3],
              "unused": True},
             {"index": 1, "op_type": "Relu", "name": "r", "outputs": ["y"], "inputs": ["h"], "nnef_lines": [4]},
             {"index": 2, "op_type": "Neg", "name": "n", "outputs": ["z"], "inputs": ["h"], "nnef_lines": [],
              "folded": ["z"]}]
    assert _unused_problems({"nodes": nodes}, ["y"]) == [
        "ONNX node 0 (Add 'a') is listed as unused, but node 1 (Relu) reads it"]
    nodes[1]["unused"] = True          # its reader unused too: no longer a reader of it
    assert _unused_problems({"nodes": nodes}, ["q"]) == [
        "ONNX node 0 (Add 'a') is listed as unused, but it has NNEF lines",
        "ONNX node 1 (Relu 'r') is listed as unused, but it has NNEF lines"]
    nodes[0]["nnef_lines"] = nodes[1]["nnef_lines"] = []
    assert _unused_problems({"nodes": nodes}, ["q"]) == []


def _onnx_model(values: dict, constant=None):  # type: ignore[no-untyped-def]
    """What finite_result reads of a loaded model: its initializers and its nodes' tensor attributes (the loader
    itself refuses a non-finite initializer, EXPORT-E017: the check judges what it is given)."""
    from types import SimpleNamespace

    from onnx import numpy_helper

    nodes = [SimpleNamespace(attrs={"alpha": 0.5}, outputs=["y"], label="relu")]
    if constant is not None:
        nodes.append(SimpleNamespace(attrs={"value": numpy_helper.from_array(constant, "c")}, outputs=["c"],
                                     label="const"))
        nodes.append(SimpleNamespace(attrs={"value": numpy_helper.from_array(constant, "d")}, outputs=[],
                                     label="unnamed"))
    return SimpleNamespace(initializers=dict(values), nodes=nodes)


def test_export_finite_parameters_names_the_first_infinity_or_nan_and_counts_the_values() -> None:
    from pipeline.export.checks import FINITE, finite_result

    good = finite_result("m", _onnx_model({"w": np.ones((2, 3), np.float32)}), ["r"])
    assert (good.check_id, good.verdict, good.reason) == (FINITE, Verdict.PASS, "")
    assert good.measured == {"tensors": 1, "values": 6} and good.read == ["r"]
    w = np.ones((2, 3), np.float32)
    w[1, 2] = np.inf
    bad = finite_result("m", _onnx_model({"w": w, "i": np.arange(3, dtype=np.int64)}), ["r"])
    assert (bad.verdict, bad.reason) == (Verdict.FAIL, "tensor 'w' holds inf at index [1, 2]")
    assert bad.measured == {"tensors": 2, "values": 9} and bad.read == ["r"] and bad.subject == "m"
    nan = finite_result("m", _onnx_model({"w": np.ones(2, np.float32)}, np.array([0.0, np.nan], np.float32)), [])
    assert (nan.verdict, nan.reason) == (Verdict.FAIL, "tensor 'c' holds nan at index [1]")
    assert nan.measured == {"tensors": 3, "values": 6}
    from pipeline.export.checks import constant_parameters
    assert sorted(constant_parameters(_onnx_model({}, np.zeros(1, np.float32)))) == ["c", "unnamed"]
    minus = np.zeros(3, np.float32)
    minus[0] = -np.inf
    alone = finite_result("m", _onnx_model({"w": minus}), ["r"])
    assert (alone.verdict, alone.reason) == (Verdict.FAIL, "the model holds -inf and no export was given to judge "
                                                           "whether it is an attention mask")
    assert alone.measured == {"tensors": 1, "values": 3} and alone.read == ["r"] and alone.subject == "m"
    plus = minus.copy()
    plus[2] = np.inf                  # a +inf next to a -inf: the +inf is named, never excused as a mask
    assert finite_result("m", _onnx_model({"w": plus}), []).reason == "tensor 'w' holds inf at index [2]"


def test_export_finite_parameters_refuses_a_minus_infinity_that_is_no_mask_of_the_export(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from pipeline.export.checks import finite_result
    from pipeline.nnef.tensorfile import write_tensor

    export, _ = _tiny_export(tmp_path)
    data = np.zeros((1, 4), np.float32)
    data[0, 1] = -np.inf
    write_tensor(export / "w.dat", data)
    minus = np.zeros((1, 4), np.float32)
    minus[0, 1] = -np.inf
    found = finite_result("m", _onnx_model({"w": minus}), ["r"], export)
    assert found.verdict is Verdict.FAIL and found.subject == "m" and found.read == ["r"]
    assert "w.dat" in found.reason and found.measured["masks"] == 0 and found.measured["masked_values"] == 0


def test_export_reject_fails_on_a_probe_accepted_misnamed_or_written(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from pipeline.export import checks as export_checks
    from pipeline.export.errors import ExportError

    good = export_checks.reject_result("m")
    assert (good.check_id, good.subject, good.verdict, good.reason) == (export_checks.REJECT, "m", Verdict.PASS, "")
    assert good.measured == {"probes": 3, "failed": 0}
    monkeypatch.setattr(export_checks, "export_model", lambda model, target: None)
    accepted = export_checks.reject_result("m")
    assert (accepted.verdict, accepted.subject) == (Verdict.FAIL, "m")
    assert accepted.reason == "unsupported operator: accepted; dynamic input shape: accepted; int32 input: accepted"
    assert accepted.measured == {"probes": 3, "failed": 3}

    def wrong(model, target):  # type: ignore[no-untyped-def]
        target.mkdir(exist_ok=True)
        raise ExportError("EXPORT-E005", "refused")

    monkeypatch.setattr(export_checks, "export_model", wrong)
    found = export_checks.reject_result("m")
    assert found.reason.split("; ") == [
        "unsupported operator: code EXPORT-E005, expected EXPORT-E003",
        "unsupported operator: message lacks node, op type, opset or supported list: EXPORT-E005: refused",
        "unsupported operator: something was written", "dynamic input shape: something was written",
        "int32 input: code EXPORT-E005, expected EXPORT-E006", "int32 input: something was written"]
    assert found.measured == {"probes": 3, "failed": 6}

    def unnamed(model, target):  # type: ignore[no-untyped-def]
        raise ExportError("EXPORT-E003", "operator Hardmax (node probe_hardmax) in opset 13 is not supported")

    monkeypatch.setattr(export_checks, "export_model", unnamed)
    assert "message lacks node, op type, opset or supported list" in export_checks.reject_result("m").reason
    probes = {what: make() for what, _, make in export_checks.REJECT_PROBES}
    assert [n.op_type for n in probes["unsupported operator"].graph.node] == ["Hardmax"]
    assert probes["unsupported operator"].opset_import[0].version == 13 and probes["int32 input"].ir_version == 10
    assert probes["int32 input"].graph.input[0].type.tensor_type.elem_type == 6
    shape = probes["dynamic input shape"].graph.input[0].type.tensor_type.shape.dim
    assert shape[0].dim_param == "N" and shape[1].dim_value == 4


def test_the_export_checks_an_auditor_reads_are_the_reviewed_ones() -> None:
    """Each export check's title, step, requirements and description as the trace matrix and the evidence
    show them (tests/export/data/export-checks.json): an edit to one is a reviewed change of that file."""
    import json
    from pathlib import Path

    from pipeline.export import checks as export_checks
    from pipeline.ledger.checks import check_spec

    reviewed = json.loads((Path(__file__).parent / "data/export-checks.json").read_text(encoding="utf-8"))
    ids = [value for name, value in vars(export_checks).items() if name.isupper() and isinstance(value, str)
           and value.startswith("export.")]
    assert sorted(ids) == sorted(reviewed)
    for check_id, spec in reviewed.items():
        found = check_spec(check_id)
        assert {"title": found.title, "step": found.step, "requirements": list(found.requirements),
                "description": found.description} == spec, check_id


def test_export_trace_judges_a_model_whose_weights_are_external_without_loading_them(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import onnx

    from pipeline.export.checks import TRACE, trace_result

    export, source = _tiny_export(tmp_path)
    model = onnx.load(str(source))
    onnx.save(model, str(source), save_as_external_data=True, all_tensors_to_one_file=True, location="w.bin",
              size_threshold=0)
    (tmp_path / "w.bin").unlink()          # the weights are not what the trace judges: their absence is no crash
    found = trace_result("m", export, source, [])
    assert (found.check_id, found.verdict) == (TRACE, Verdict.FAIL)
    assert found.reason == "1 problem(s), first: model.onnx does not have the sha256 recorded in provenance.json"


def test_export_tolerance_not_run_still_names_what_it_read_and_wrote() -> None:
    """A `not run` for want of an enclosure still points at validation.json (the record of why) and its inputs."""
    report = _report([_output(GOOD, 0.0, tolerance=effective_tolerance(1e-5, 2e-6))],
                     yardstick={"unavailable": "onnx.reference refused Foo", "vectors": 2})
    not_run = tolerance_result("m", report, ["r"], ["w"])
    assert not_run.verdict is Verdict.NOT_RUN and (not_run.read, not_run.written) == (["r"], ["w"])

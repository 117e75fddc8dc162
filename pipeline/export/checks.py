"""The checks of the export step, and the functions that evaluate them for one model.

export.numeric   ONNX (onnxruntime) and the NNEF (reference semantics) agree within the
                 deployment tolerance on the validation vectors (validation.json).
export.tolerance the tolerance applied is justified: the computed bound fits under the
                 deploy.yaml limit, or else both sides' measured rounding against the exact
                 result (its enclosure) does (pipeline.numerics.tolerance).
export.bound_reference    the reference semantics is within its computed error bound of the
                 exact result (pipeline.numerics.sensitivity, pipeline.numerics.enclosure).
export.bound_onnxruntime  onnxruntime is within its computed error bound of the exact result.
export.discriminating     every output varies across the validation vectors by more than the
                 tolerance (a constant output would not pass).
export.explicit  our checker, certification profile, reads the exported files (with their
                 tensor files) without any finding: no defaulted or automatic attribute.
export.trace     provenance.json accounts for every NNEF line, variable and tensor file
                 (re-hashed) and every ONNX node, and matches the ONNX file.
export.khronos   the Khronos parser reads the same graph, shapes and tensor data.
export.finite_parameters  every initializer and Constant tensor of the ONNX model holds
                 finite numbers only (a NaN or an infinity names the tensor and its first index).
export.reject    the exporter rejects an unsupported operator, a dynamic shape and a
                 non-float32 input with the right code, naming node, op type, opset and
                 the supported operators, and writes nothing.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from pathlib import Path
from typing import Any, Callable

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from pipeline.ledger.checks import CheckResult, Verdict, register_check
from pipeline.export.errors import ExportError
from pipeline.export.exporter import GRAPH_FILE, PROVENANCE_FILE, export_model
from pipeline.export.readback import compare_with_khronos
from pipeline.export.onnx_model import OnnxModel
from pipeline.export.validate import ValidationReport
from pipeline.nnef.checker import check_paths
from pipeline.nnef.masks import judge
from pipeline.nnef.tensorfile import read_variable_file
from pipeline.nnef.findings import PROFILE_DEPENDENT
from pipeline.nnef.parser import parse_file

STEP = "export"
NUMERIC = "export.numeric"
EXPLICIT = "export.explicit"
TRACE = "export.trace"
KHRONOS = "export.khronos"
TOLERANCE = "export.tolerance"
BOUND_REFERENCE = "export.bound_reference"
BOUND_ONNXRUNTIME = "export.bound_onnxruntime"
DISCRIMINATING = "export.discriminating"
REJECT = "export.reject"
FINITE = "export.finite_parameters"

register_check(
    NUMERIC,
    "Export: the NNEF description (reference semantics) and the ONNX model (onnxruntime) agree within the tolerance",
    STEP,
    ["HLR-EXP-001", "HLR-SEM-001"],
    "Runs the ONNX model with onnxruntime (one thread) and the exported NNEF with the reference interpreter on "
    "the deployment spec's seeded validation vectors; per output max abs error, max ULP distance, mean abs error "
    "and max relative error against validation.tolerance.",
)
register_check(
    TOLERANCE,
    "Export: the tolerance applied to reference vs onnxruntime is justified by the network's rounding",
    STEP,
    ["HLR-EXP-001", "HLR-NUM-002"],
    "pipeline.numerics.tolerance: effective tolerance = computed bound(ours) + bound(onnxruntime) when tighter than the "
    "deploy.yaml limit, else the limit; pass when the computed bound or the measured rounding of both sides "
    "(distance to the exact result, enclosed in double-word balls) fits under the limit; fail when even the measured "
    "rounding exceeds it; not run without an enclosure.",
)
register_check(
    BOUND_REFERENCE,
    "Export: the float32 reference semantics is within its computed error bound of the network's exact result",
    STEP,
    ["HLR-EXP-001", "HLR-SEM-001"],
    "On the first validation vectors, |reference - exact| <= bound element by element; exact: the enclosure of the "
    "real-number result (pipeline.numerics.enclosure, cross-checked against onnx.reference in float64); bound: "
    "pipeline.numerics.sensitivity (each rounding through the network's Jacobian at the vector, the documented "
    "order, remainders of decisions and curvature). Not run when an operator has no rule or the bound does not "
    "discriminate (more than 100 times the measured distance).",
)
register_check(
    BOUND_ONNXRUNTIME,
    "Export: onnxruntime is within its computed error bound of the network's exact result",
    STEP,
    ["HLR-EXP-001", "HLR-NUM-002"],
    "As export.bound_reference for onnxruntime's outputs, with the bound's onnxruntime assumptions (sums in any of "
    "the stated nestings, FMA, Conv+BatchNormalization folding, MLAS transcendental accuracy); a failure means an "
    "assumption is wrong.",
)
register_check(
    DISCRIMINATING,
    "Export: every output varies across the validation vectors by more than the tolerance",
    STEP,
    ["HLR-EXP-001"],
    "Per output, max over elements of (max - min over the validation vectors) of the reference's outputs must "
    "exceed the effective tolerance; otherwise a network with a constant output would pass the validation: fail.",
)
register_check(
    EXPLICIT,
    "Export: every attribute of the exported NNEF is explicit (certification profile, no finding)",
    STEP,
    ["HLR-FMT-003"],
    "Re-reads graph.nnef and its tensor files with the checker's certification profile: no NNEF-E060/E061/E062 "
    "(defaulted attribute, automatic padding/stride/dilation, defaulted type) and no other finding.",
)
register_check(
    TRACE,
    "Export: every NNEF line, variable and tensor file traces to its ONNX node and initializer",
    STEP,
    ["HLR-EXP-003"],
    "Checks provenance.json against the files: every statement line of graph.nnef is listed with its ONNX node "
    "(or graph input), every variable with its initializer, every tensor file re-hashed, every ONNX node listed.",
)
register_check(
    KHRONOS,
    "Export: the Khronos NNEF parser reads the export as the same graph (operations, shapes, tensor data)",
    STEP,
    ["HLR-FMT-005"],
    "nnef.load_graph + nnef.infer_shapes on the export directory, compared operation by operation, shape by shape "
    "and variable by variable (bit for bit) with our checker's graph; 'not run' without the nnef package.",
)
register_check(
    FINITE,
    "Export: every trained parameter (initializer, Constant tensor) is a finite number: no NaN, no infinity",
    STEP,
    ["HLR-EXP-001"],
    "Reads every floating-point initializer and Constant-node tensor of the ONNX model and fails on the first "
    "NaN or infinite value, naming the tensor and the index (in C order) of that value. A NaN weight makes the "
    "numeric comparison meaningless (NaN == NaN passes as a match), so it is refused before validation counts. "
    "The one exception is a -inf attention mask (issue 38): it passes when the export's tensor files hold it "
    "only as masks ahead of a softmax, no row masked whole (pipeline.nnef.masks, re-judged on the files).",
)
register_check(
    REJECT,
    "Export: unsupported constructs are rejected with node, op type, opset and supported list; nothing written",
    STEP,
    ["HLR-EXP-002"],
    "Exports three small invalid models (unsupported operator, dynamic input shape, int32 input) into a fresh "
    "directory and checks the error code, the message and that nothing was written.",
)


def numeric_result(model: str, report: ValidationReport, read: list[str], written: list[str]) -> CheckResult:
    measured: dict[str, Any] = {
        "vectors": report.settings.vectors,
        "seed": report.settings.seed,
        "reference": f"{report.reference['runtime']} {report.reference['version']}",
        "tolerance_max_abs_error": report.settings.tolerance.max_abs_error,
        "tolerance_max_rel_error": report.settings.tolerance.max_rel_error,
    }
    for output in report.outputs:
        if output.tolerance is not None:
            measured[f"{output.onnx_name}.effective_max_abs_error"] = output.tolerance.effective
    for output in report.outputs:
        stats = output.stats.to_json()
        for key in ("max_abs_error", "mean_abs_error", "max_rel_error", "max_ulp", "nan_mismatches"):
            measured[f"{output.onnx_name}.{key}"] = stats[key]
    reasons = "; ".join(o.reason for o in report.outputs if not o.passed)
    verdict = Verdict.PASS if report.passed else Verdict.FAIL
    return CheckResult(NUMERIC, model, verdict, reasons, measured, read, written)


def tolerance_result(model: str, report: ValidationReport, read: list[str], written: list[str]) -> CheckResult:
    rules = {o.onnx_name: o.tolerance for o in report.outputs if o.tolerance is not None}
    measured: dict[str, Any] = {f"{name}.{key}": value for name, rule in rules.items()
                                for key, value in rule.to_json().items() if key != "reason"}
    if report.enclosure.get("unavailable") or not report.enclosure.get("vectors"):
        return CheckResult(TOLERANCE, model, Verdict.NOT_RUN, f"no enclosure of the exact result: "
                           f"{report.enclosure.get('unavailable') or 'no vector'}", measured, read, written)
    failed = [f"output '{name}': {rule.reason}" for name, rule in rules.items() if not rule.justified]
    notes = "; ".join(f"output '{name}': {rule.reason}" for name, rule in rules.items())
    return CheckResult(TOLERANCE, model, Verdict.FAIL if failed else Verdict.PASS, "; ".join(failed) or notes,
                       measured, read, written)


def _bound_result(check: str, side: str, model: str, report: ValidationReport, read: list[str],
                  written: list[str]) -> CheckResult:
    yard = report.enclosure
    measured: dict[str, Any] = {"vectors": yard.get("vectors", 0), "bound_vectors": yard.get("bound", {}).get("vectors", 0)}
    for o in report.outputs:
        for key in ("max_abs", "max_rel", "bound_vectors_max_abs", "bound_max", "deterministic_max", "to_bound",
                    "over_bound"):
            if f"{side}_{key}" in o.enclosure:
                measured[f"{o.onnx_name}.{key}"] = o.enclosure[f"{side}_{key}"]
        if o.enclosure.get(f"{side}_bound_max") and o.enclosure.get(f"{side}_bound_vectors_max_abs"):
            measured[f"{o.onnx_name}.bound_to_measured"] = (o.enclosure[f"{side}_bound_max"]
                                                           / o.enclosure[f"{side}_bound_vectors_max_abs"])
    if yard.get("unavailable") or not yard.get("vectors"):
        return CheckResult(check, model, Verdict.NOT_RUN, f"no enclosure of the exact result: "
                           f"{yard.get('unavailable') or 'no vector'}", measured, read, written)
    if yard["bound"]["unavailable"]:
        return CheckResult(check, model, Verdict.NOT_RUN, f"no computed bound: {yard['bound']['unavailable']}",
                           measured, read, written)
    over = [f"output '{o.onnx_name}': {o.enclosure[f'{side}_over_bound']} elements farther from the exact result "
            f"than the bound (worst distance/bound {o.enclosure[f'{side}_to_bound']})"
            for o in report.outputs if o.enclosure.get(f"{side}_over_bound")]
    return CheckResult(check, model, Verdict.FAIL if over else Verdict.PASS, "; ".join(over), measured, read, written)


def bound_results(model: str, report: ValidationReport, read: list[str], written: list[str]) -> list[CheckResult]:
    return [_bound_result(BOUND_REFERENCE, "reference", model, report, read, written),
            _bound_result(BOUND_ONNXRUNTIME, "onnxruntime", model, report, read, written)]


def discriminating_result(model: str, report: ValidationReport, read: list[str], written: list[str]) -> CheckResult:
    measured: dict[str, Any] = {"vectors": report.settings.vectors}
    for o in report.outputs:
        measured[f"{o.onnx_name}.spread"] = o.spread
        measured[f"{o.onnx_name}.tolerance"] = o.tolerance.effective if o.tolerance else None
    if report.settings.vectors < 2:
        return CheckResult(DISCRIMINATING, model, Verdict.NOT_RUN, "fewer than two validation vectors", measured,
                           read, written)
    failed = [o.discriminating_reason for o in report.outputs if not o.discriminating]
    return CheckResult(DISCRIMINATING, model, Verdict.FAIL if failed else Verdict.PASS, "; ".join(failed),
                       measured, read, written)


def explicit_result(model: str, export_dir: Path, read: list[str]) -> CheckResult:
    report = check_paths([export_dir], profile="certification", tensors=True)
    explicitness = [f for f in report.findings if f.code in PROFILE_DEPENDENT]
    others = [f for f in report.findings if f.code not in PROFILE_DEPENDENT]
    operations = sum(len(g.operations) for g in report.graphs)
    measured = {"operations": operations, "explicitness_findings": len(explicitness), "other_findings": len(others)}
    problems = explicitness + others
    if problems:
        first = problems[0]
        return CheckResult(EXPLICIT, model, Verdict.FAIL, f"{len(problems)} finding(s), first: {first.span}: "
                           f"{first.code}: {first.message}", measured, read)
    return CheckResult(EXPLICIT, model, Verdict.PASS, "", measured, read)


def _trace_problems(export_dir: Path, onnx_path: Path) -> tuple[list[str], dict[str, Any]]:
    provenance = json.loads((export_dir / PROVENANCE_FILE).read_text(encoding="utf-8"))
    problems: list[str] = []
    text = (export_dir / GRAPH_FILE).read_bytes()
    if hashlib.sha256(text).hexdigest() != provenance["graph"]["sha256"]:
        problems.append("graph.nnef does not have the sha256 recorded in provenance.json")
    if hashlib.sha256(onnx_path.read_bytes()).hexdigest() != provenance["source"]["sha256"]:
        problems.append(f"{onnx_path.name} does not have the sha256 recorded in provenance.json")
    parsed = parse_file(export_dir / GRAPH_FILE)
    body = parsed.document.graphs[0].body if parsed.document and parsed.document.graphs else ()
    by_line = {item["line"]: item for item in provenance["lines"]}
    for statement in body:
        item = by_line.get(statement.span.line)
        rhs = statement.rhs
        operation = rhs.name.value if hasattr(rhs, "name") else ""
        if item is None:
            problems.append(f"graph.nnef line {statement.span.line} is not in provenance.json")
        elif item["node"] is None and item["graph_input"] is None:
            problems.append(f"graph.nnef line {statement.span.line} names no ONNX node or graph input")
        elif operation == "variable" and not item["initializer"]:
            problems.append(f"variable on graph.nnef line {statement.span.line} names no initializer")
    if len(by_line) != len(body):
        problems.append(f"provenance.json lists {len(by_line)} lines, graph.nnef has {len(body)} statements")
    for entry in provenance["tensor_files"]:
        path = export_dir / entry["file"]
        if not path.is_file() or hashlib.sha256(path.read_bytes()).hexdigest() != entry["sha256"]:
            problems.append(f"tensor file {entry['file']} is missing or differs from its recorded sha256")
    model = onnx.load(str(onnx_path), load_external_data=False)
    listed = [(n["index"], n["op_type"], n["name"]) for n in provenance["nodes"]]
    actual = [(i, n.op_type, n.name) for i, n in enumerate(model.graph.node)]
    if listed != actual:
        problems.append("provenance.json does not list the ONNX model's nodes in order")
    unused = _unused_problems(provenance, [v.name for v in model.graph.output])
    problems.extend(unused)
    for node in provenance["nodes"]:
        folded = node.get("folded") is not None and set(node["folded"]) == {o for o in node["outputs"] if o}
        if (not node["nnef_lines"] and not (node["op_type"] == "Constant" and node["outputs"]) and not folded
                and not node.get("unused")):
            problems.append(f"ONNX node {node['index']} ({node['op_type']} '{node['name']}') has no NNEF line")
    measured = {"lines": len(body), "nodes": len(provenance["nodes"]), "tensor_files": len(provenance["tensor_files"])}
    return problems, measured


def _unused_problems(provenance: dict[str, Any], graph_outputs: list[str]) -> list[str]:
    """A node listed as `unused` (not converted: read only by folded nodes) must be so: none of its
    outputs is a graph output, every node reading one is folded or unused itself, and it has no line."""
    nodes = provenance["nodes"]
    skipped = {n["index"] for n in nodes if n.get("unused") or n.get("folded") is not None}
    problems = []
    for node in nodes:
        if not node.get("unused"):
            continue
        outputs = {o for o in node["outputs"] if o}
        readers = [n for n in nodes if outputs & set(n["inputs"]) and n["index"] not in skipped]
        label = f"ONNX node {node['index']} ({node['op_type']} '{node['name']}')"
        if outputs & set(graph_outputs) or readers or node["nnef_lines"]:
            what = (f"node {readers[0]['index']} ({readers[0]['op_type']}) reads it" if readers else
                    "it has NNEF lines" if node["nnef_lines"] else "it is a graph output")
            problems.append(f"{label} is listed as unused, but {what}")
    return problems


def trace_result(model: str, export_dir: Path, onnx_path: Path, read: list[str]) -> CheckResult:
    problems, measured = _trace_problems(export_dir, onnx_path)
    if problems:
        return CheckResult(TRACE, model, Verdict.FAIL, f"{len(problems)} problem(s), first: {problems[0]}", measured, read)
    return CheckResult(TRACE, model, Verdict.PASS, "", measured, read)


def first_non_finite(arrays: dict[str, np.ndarray]) -> tuple[str, tuple[int, ...], float] | None:
    """(name, index, value) of the first NaN or infinity in `arrays` (in name order), or None."""
    for name in sorted(arrays):
        data = np.asarray(arrays[name])
        if data.dtype.kind not in "fc" or data.size == 0:
            continue
        bad = ~np.isfinite(data)
        if bad.any():
            index = tuple(int(i) for i in np.unravel_index(int(np.argmax(bad)), data.shape))
            return name, index, data[index].item()
    return None


def constant_parameters(onnx_model: OnnxModel) -> dict[str, np.ndarray]:
    """The model's trained numbers: its initializers and the tensors its Constant nodes hold."""
    found = dict(onnx_model.initializers)
    for node in onnx_model.nodes:
        for value in node.attrs.values():
            if isinstance(value, TensorProto):
                found[node.outputs[0] if node.outputs else node.label] = numpy_helper.to_array(value)
    return found


def finite_result(model: str, onnx_model: OnnxModel, read: list[str], export_dir: Path | None = None) -> CheckResult:
    """export.finite_parameters over the model's constant tensors (initializers and Constant values): a NaN or
    +inf fails; a -inf passes only when the export holds it as attention masks, judged again here on the files
    written (graph.nnef and its tensor files, pipeline.nnef.masks), not taken from the exporter."""
    parameters = constant_parameters(onnx_model)
    measured: dict[str, Any] = {"tensors": len(parameters),
                                "values": int(sum(np.asarray(a).size for a in parameters.values()))}
    wrong = {name: np.where(np.asarray(a) == -np.inf, 0.0, a) if np.asarray(a).dtype.kind == "f" else a
             for name, a in parameters.items()}
    first = first_non_finite(wrong)
    if first is not None:
        name, index, value = first
        return CheckResult(FINITE, model, Verdict.FAIL, f"tensor '{name}' holds {value} at index {list(index)}",
                           measured, read)
    if first_non_finite(parameters) is None:
        return CheckResult(FINITE, model, Verdict.PASS, "", measured, read)
    if export_dir is None:
        return CheckResult(FINITE, model, Verdict.FAIL, "the model holds -inf and no export was given to judge "
                           "whether it is an attention mask", measured, read)
    report = check_paths([export_dir], profile="certification", tensors=True, finite=True)
    problems = [f for f in report.findings if f.code == "NNEF-E034"]
    masks, _ = judge(report.graphs[0], {op.output_refs()[0].name: read_variable_file(export_dir, str(op.attribs["label"])).data
                                        for op in report.graphs[0].operations if op.name == "variable"}) \
        if report.graphs else ([], [])
    measured.update(masks=len(masks), masked_values=sum(m.masked for m in masks))
    if problems or not masks:
        reason = problems[0].message if problems else "the -inf of the model reaches no attention mask of the export"
        return CheckResult(FINITE, model, Verdict.FAIL, reason, measured, read)
    return CheckResult(FINITE, model, Verdict.PASS, f"-inf only in {len(masks)} attention mask(s) ahead of a softmax: "
                       + ", ".join(f"'{m.variable}' ({m.masked} masked)" for m in masks), measured, read)


def khronos_result(model: str, export_dir: Path, read: list[str]) -> CheckResult:
    comparison = compare_with_khronos(export_dir)
    return CheckResult(KHRONOS, model, Verdict(comparison.verdict), comparison.reason, comparison.measured, read)


def _tiny_model(node: onnx.NodeProto, elem_type: int, shape: list[Any]) -> onnx.ModelProto:
    graph = helper.make_graph([node], "reject_probe", [helper.make_tensor_value_info("x", elem_type, shape)],
                              [helper.make_tensor_value_info("y", elem_type, shape)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=10)


REJECT_PROBES: list[tuple[str, str, Callable[[], onnx.ModelProto]]] = [
    ("unsupported operator", "EXPORT-E003",
     lambda: _tiny_model(helper.make_node("Hardmax", ["x"], ["y"], name="probe_hardmax"), TensorProto.FLOAT, [1, 4])),
    ("dynamic input shape", "EXPORT-E005",
     lambda: _tiny_model(helper.make_node("Relu", ["x"], ["y"], name="probe_relu"), TensorProto.FLOAT, ["N", 4])),
    ("int32 input", "EXPORT-E006",
     lambda: _tiny_model(helper.make_node("Relu", ["x"], ["y"], name="probe_relu"), TensorProto.INT32, [1, 4])),
]


def reject_result(model: str) -> CheckResult:
    failures = []
    with tempfile.TemporaryDirectory(prefix="export-reject-") as scratch:
        for what, code, make in REJECT_PROBES:
            target = Path(scratch) / "out"
            try:
                export_model(make(), target)
                failures.append(f"{what}: accepted")
            except ExportError as error:
                text = str(error)
                if error.code != code:
                    failures.append(f"{what}: code {error.code}, expected {code}")
                if code == "EXPORT-E003" and not all(s in text for s in ("probe_hardmax", "Hardmax", "opset 13", "Relu, ")):
                    failures.append(f"{what}: message lacks node, op type, opset or supported list: {text}")
            if target.exists() or any(Path(scratch).iterdir()):
                failures.append(f"{what}: something was written")
    measured = {"probes": len(REJECT_PROBES), "failed": len(failures)}
    if failures:
        return CheckResult(REJECT, model, Verdict.FAIL, "; ".join(failures), measured)
    return CheckResult(REJECT, model, Verdict.PASS, "", measured)

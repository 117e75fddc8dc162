"""ONNX's own backend node tests, run through export + the reference interpreter.

`onnx.backend.test.loader.load_model_tests(kind="node")` builds the ~1,900 node test
cases in memory (the wheel no longer ships their files). A case is in *our subset* when
every operator of its graph is one the exporter supports. For each case of the subset:

1. graph inputs the exporter needs as constants become initializers holding the case's
   input values ("frozen"): every non-float32 input (shapes, axes, pads, split sizes,
   training flags), and any float input the exporter reports as a parameter that must be
   constant (EXPORT-E008, e.g. Pad's constant_value);
2. the model is exported to a fresh directory; an ExportError means the case is *skipped*
   with the error code and message as the reason (non-float32 data, zero-size tensors,
   unsupported attribute values: a correct rejection, not a wrong result), except
   EXPORT-E011 (our internal consistency check), which is a failure;
3. the Khronos parser must read the export with the same graph and shapes
   (pipeline.export.readback), else the case fails;
4. the reference interpreter runs the NNEF on the case's remaining inputs; every output
   must match the stored output like numpy.testing.assert_allclose with the case's
   rtol/atol (|actual - expected| <= atol + rtol * |expected|, NaN equal to NaN).
"""

from __future__ import annotations

import contextlib
import io
import re
import shutil
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import numpy_helper

from pipeline.export import ExportError, export_model, supported_operators
from pipeline.export.readback import compare_with_khronos
from pipeline.nnef.checker import check_paths
from pipeline.semantics import interpret, load_variables


@dataclass
class CaseResult:
    name: str
    ops: list[str]
    opset: int
    status: str  # pass | fail | skip
    reason: str = ""
    nnef_operations: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "reason": self.reason, "ops": self.ops, "opset": self.opset}


def load_cases() -> list[Any]:
    """Every node test case (silencing the overflow warnings some case generators raise)."""
    from onnx.backend.test.loader import load_model_tests

    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        with np.errstate(all="ignore"):
            return load_model_tests(kind="node")


def in_subset(case: Any, supported: set[str]) -> bool:
    return bool(case.model.graph.node) and {n.op_type for n in case.model.graph.node} <= supported


def _freeze(model: onnx.ModelProto, values: dict[str, np.ndarray], names: set[str]) -> onnx.ModelProto:
    frozen = onnx.ModelProto()
    frozen.CopyFrom(model)
    graph = frozen.graph
    keep = [v for v in graph.input if v.name not in names]
    del graph.input[:]
    graph.input.extend(keep)
    for name in sorted(names):
        graph.initializer.append(numpy_helper.from_array(np.asarray(values[name]), name))
    return frozen


def _close(actual: np.ndarray, expected: np.ndarray, rtol: float, atol: float) -> str:
    if actual.shape != expected.shape:
        return f"shape {list(actual.shape)} vs expected {list(expected.shape)}"
    a, e = actual.astype(np.float64), expected.astype(np.float64)
    both_nan = np.isnan(a) & np.isnan(e)
    with np.errstate(invalid="ignore"):
        ok = both_nan | (a == e) | (np.abs(a - e) <= atol + rtol * np.abs(e))
    if ok.all():
        return ""
    index = int(np.argmin(ok.reshape(-1)))
    return (f"{int((~ok).sum())} of {ok.size} elements differ; first at flat index {index}: "
            f"{a.reshape(-1)[index]!r} vs expected {e.reshape(-1)[index]!r} (rtol {rtol}, atol {atol})")


def run_case(case: Any, workdir: Path) -> CaseResult:
    model = case.model
    ops = sorted({n.op_type for n in model.graph.node})
    opset = max((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), default=0)
    result = CaseResult(case.name, ops, opset, "fail")
    inputs, outputs = case.data_sets[0]
    input_names = [v.name for v in model.graph.input]
    if any(not isinstance(x, (np.ndarray, np.generic)) for x in list(inputs) + list(outputs)):
        result.status, result.reason = "skip", "sequence or optional values (not tensors)"
        return result
    values = {name: np.asarray(value) for name, value in zip(input_names, inputs)}
    frozen = {name for name, value in values.items() if value.dtype != np.float32}
    out = workdir / case.name
    for _ in range(len(input_names) + 1):
        try:
            export = export_model(_freeze(model, values, frozen), out)
            break
        except ExportError as error:
            match = re.search(r"input '([^']+)'", error.message)
            if error.code == "EXPORT-E008" and match and match.group(1) in values and match.group(1) not in frozen:
                frozen.add(match.group(1))
                continue
            result.status = "fail" if error.code == "EXPORT-E011" else "skip"
            result.reason = f"{error.code}: {error.message.split(' [node')[0]}"
            return result
    else:  # pragma: no cover - every retry freezes one more input
        result.reason = "could not freeze the parameter inputs"
        return result
    try:
        khronos = compare_with_khronos(out)
        if khronos.verdict != "pass":
            result.reason = f"Khronos: {khronos.verdict}: {khronos.reason}"
            return result
        report = check_paths([out], profile="certification")
        if not report.ok:
            result.reason = f"checker: {next(f for f in report.findings if f.is_error).message}"
            return result
        graph = report.graphs[0]
        result.nnef_operations = tuple(op.name for op in graph.operations)
        feeds = {export.inputs[name]: values[name] for name in input_names if name not in frozen}
        actual = interpret(graph, feeds, load_variables(graph, out))
        expected_names = [v.name for v in model.graph.output]
        problems = []
        for name, expected in zip(expected_names, (np.asarray(o) for o in outputs)):
            difference = _close(np.asarray(actual[export.outputs[name]]), np.asarray(expected), case.rtol, case.atol)
            if difference:
                problems.append(f"output '{name}': {difference}")
        if problems:
            result.reason = "; ".join(problems)
            return result
        result.status = "pass"
        return result
    except Exception as error:  # noqa: BLE001 - a crash of the pipeline on this case is a failure
        result.reason = f"{type(error).__name__}: {error}"
        return result
    finally:
        shutil.rmtree(out, ignore_errors=True)


def run_subset(workdir: Path | None = None) -> list[CaseResult]:
    """Run every case of the subset; results in the loader's order."""
    supported = set(supported_operators())
    cases = [c for c in load_cases() if in_subset(c, supported)]
    base = workdir or Path(tempfile.mkdtemp(prefix="onnx-backend-"))
    return [run_case(case, base) for case in cases]

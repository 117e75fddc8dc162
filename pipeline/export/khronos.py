"""An independent reading of the export: the Khronos NNEF parser (PyPI `nnef`), HLR-FMT-005.

`nnef.load_graph(dir)` parses graph.nnef and loads every `<label>.dat`; `nnef.infer_shapes`
computes the shapes with the Khronos shape rules. The export passes when the Khronos
graph equals ours (pipeline.nnef.checker) operation by operation (name, element type,
attributes, inputs, outputs), tensor by tensor (shape) and variable by variable (data, bit
for bit). Without the `nnef` package the comparison is `not run`, never `pass`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.nnef.checker import check_paths
from pipeline.nnef.graph import Ref
from pipeline.semantics import load_variables


@dataclass
class KhronosComparison:
    """verdict: 'pass', 'fail' or 'not run'; reason for the last two; counts in `measured`."""

    verdict: str
    reason: str = ""
    measured: dict[str, Any] = field(default_factory=dict)


def _normalise(value: Any, nnef: Any) -> Any:
    if isinstance(value, Ref):
        return ("ref", value.name)
    if isinstance(value, nnef.Identifier):
        return ("ref", str(value))
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(np.float32(value))
    if isinstance(value, dict):
        return {k: _normalise(v, nnef) for k, v in value.items()}
    if isinstance(value, list):
        return [_normalise(v, nnef) for v in value]
    if isinstance(value, tuple):
        return tuple(_normalise(v, nnef) for v in value)
    return value


def _operations_differ(ours: Any, theirs: Any, nnef: Any) -> str:
    if len(ours.operations) != len(theirs.operations):
        return f"{len(ours.operations)} operations in ours, {len(theirs.operations)} in the Khronos graph"
    for index, (a, b) in enumerate(zip(ours.operations, theirs.operations)):
        mine = (a.name, a.dtype or None, _normalise(dict(a.attribs), nnef), _normalise(dict(a.inputs), nnef),
                _normalise(dict(a.outputs), nnef))
        other = (b.name, b.dtype or None, _normalise(dict(b.attribs), nnef), _normalise(dict(b.inputs), nnef),
                 _normalise(dict(b.outputs), nnef))
        if mine != other:
            return f"operation {index} ({a.name}) differs: ours {mine}, Khronos {other}"
    return ""


def compare_with_khronos(export_dir: str | os.PathLike[str]) -> KhronosComparison:
    """Load the export with the Khronos parser and compare it with our reading."""
    try:
        import nnef
    except ImportError:
        return KhronosComparison("not run", "the Khronos nnef package (PyPI nnef) is not installed")
    directory = Path(export_dir)
    try:
        theirs = nnef.load_graph(str(directory))
        nnef.infer_shapes(theirs)
    except Exception as exc:  # noqa: BLE001 - nnef.Error and I/O errors
        return KhronosComparison("fail", f"the Khronos parser rejects the export: {exc}")
    report = check_paths([directory], profile="standard")
    if not report.ok or not report.graphs:
        first = next((f"{f.code}: {f.message}" for f in report.findings if f.is_error), "no graph")
        return KhronosComparison("fail", f"our checker rejects the export: {first}")
    ours = report.graphs[0]
    measured: dict[str, Any] = {"operations": len(ours.operations), "tensors": len(ours.tensors)}
    if list(ours.inputs) != list(theirs.inputs) or list(ours.outputs) != list(theirs.outputs):
        return KhronosComparison("fail", f"graph inputs/outputs differ: ours {ours.inputs} -> {ours.outputs}, "
                                 f"Khronos {list(theirs.inputs)} -> {list(theirs.outputs)}", measured)
    difference = _operations_differ(ours, theirs, nnef)
    if difference:
        return KhronosComparison("fail", difference, measured)
    if set(ours.tensors) != set(theirs.tensors):
        return KhronosComparison("fail", f"tensor names differ: {sorted(set(ours.tensors) ^ set(theirs.tensors))}", measured)
    for name, info in sorted(ours.tensors.items()):
        shape = list(theirs.tensors[name].shape)
        if list(info.shape or []) != shape:
            return KhronosComparison("fail", f"tensor '{name}': our shape {info.shape}, Khronos {shape}", measured)
    variables = load_variables(ours, directory)
    compared = 0
    for op in ours.operations:
        if op.name != "variable":
            continue
        name = op.output_refs()[0].name
        data = np.asarray(theirs.tensors[name].data)
        mine = variables[str(op.attribs["label"])]
        if data.dtype != mine.dtype or data.shape != mine.shape or data.tobytes() != mine.tobytes():
            return KhronosComparison("fail", f"variable '{name}': tensor data differ", measured)
        compared += 1
    measured["variables"] = compared
    return KhronosComparison("pass", "", measured)

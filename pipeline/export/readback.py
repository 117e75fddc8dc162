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

from pipeline.nnef import khronos
from pipeline.nnef.checker import check_paths
from pipeline.semantics import load_variables


@dataclass
class KhronosComparison:
    """verdict: 'pass', 'fail' or 'not run'; reason for the last two; counts in `measured`."""

    verdict: str
    reason: str = ""
    measured: dict[str, Any] = field(default_factory=dict)


def compare_with_khronos(export_dir: str | os.PathLike[str]) -> KhronosComparison:
    """Load the export with the Khronos parser and compare it with our reading."""
    if not khronos.khronos_available():
        return KhronosComparison("not run", "the Khronos nnef package (PyPI nnef) is not installed")
    directory = Path(export_dir)
    try:
        theirs = khronos.load(directory, load_variables=True)
    except Exception as exc:  # noqa: BLE001 - nnef.Error and I/O errors
        return KhronosComparison("fail", f"the Khronos parser rejects the export: {exc}")
    report = check_paths([directory], profile="standard")
    if not report.ok or not report.graphs:
        first = next((f"{f.code}: {f.message}" for f in report.findings if f.is_error), "no graph")
        return KhronosComparison("fail", f"our checker rejects the export: {first}")
    ours = report.graphs[0]
    measured: dict[str, Any] = {"operations": len(ours.operations), "tensors": len(ours.tensors)}
    difference = khronos.graph_difference(ours, theirs)
    if difference:
        return KhronosComparison("fail", difference, measured)
    difference, compared = khronos.variables_difference(ours, theirs, load_variables(ours, directory))
    if difference:
        return KhronosComparison("fail", difference, measured)
    measured["variables"] = compared
    return KhronosComparison("pass", "", measured)

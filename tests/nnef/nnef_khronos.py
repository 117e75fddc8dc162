"""The independent reference: the Khronos `nnef` parser (PyPI `nnef`), as a test oracle.

`khronos_verdict(text)` parses with the Khronos C++ parser and runs its shape inference;
`our_verdict(text)` runs our checker in the `standard` profile (explicitness findings
are warnings, as the Khronos parser does not have that rule). Both return an accept flag,
and for accepted texts a normalised graph: operations (name, attributes, inputs,
outputs), graph inputs/outputs and tensor shapes, with generated intermediate names
mapped to positions so the two graphs compare with `==`.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

nnef = pytest.importorskip("nnef")

from pipeline.nnef.checker import check_text  # noqa: E402
from pipeline.nnef.graph import Ref  # noqa: E402


@dataclass
class Verdict:
    accepted: bool
    message: str
    graph: dict[str, Any] | None


def _khronos_value(value: Any) -> Any:
    if isinstance(value, nnef.Identifier):
        return Ref(str(value))
    if isinstance(value, list):
        return [_khronos_value(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_khronos_value(v) for v in value)
    if isinstance(value, (float, np.floating)):
        return float(np.float32(value))
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.bool_,)):
        return bool(value)
    return value


def _normalise(name: str, inputs: list[str], outputs: list[str], operations: list[tuple[str, dict, dict, dict]],
               shapes: dict[str, tuple[Any, str]]) -> dict[str, Any]:
    """Rename tensors that are not graph inputs/outputs or user-named to t0, t1, ... by first definition."""
    keep = set(inputs) | set(outputs)
    renames: dict[str, str] = {}

    def rename(value: Any) -> Any:
        if isinstance(value, Ref):
            return Ref(renames.get(value.name, value.name))
        if isinstance(value, list):
            return [rename(v) for v in value]
        if isinstance(value, tuple):
            return tuple(rename(v) for v in value)
        return value

    def define(value: Any) -> None:
        if isinstance(value, Ref) and value.name not in keep and value.name not in renames:
            renames[value.name] = f"t{len(renames)}"
        elif isinstance(value, (list, tuple)):
            for v in value:
                define(v)

    ops = []
    for op, attribs, op_inputs, op_outputs in operations:
        for v in op_outputs.values():
            define(v)
        ops.append((op, {k: rename(v) for k, v in attribs.items()}, {k: rename(v) for k, v in op_inputs.items()},
                    {k: rename(v) for k, v in op_outputs.items()}))
    tensors = {renames.get(k, k): v for k, v in shapes.items()}
    return {"name": name, "inputs": inputs, "outputs": outputs, "operations": ops, "tensors": tensors}


def khronos_verdict(text: str, lowered: list[str] | None = None) -> Verdict:
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "graph.nnef")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
        try:
            graph = nnef.load_graph(path, lowered=lowered or [], load_variables=False)
            nnef.infer_shapes(graph)
        except (nnef.Error, AssertionError, ValueError, KeyError, TypeError, IndexError) as error:
            return Verdict(False, str(error), None)
    operations = [
        (op.name, {k: _khronos_value(v) for k, v in op.attribs.items()},
         {k: _khronos_value(v) for k, v in op.inputs.items()},
         {k: _khronos_value(v) for k, v in op.outputs.items()})
        for op in graph.operations
    ]
    shapes = {name: (list(t.shape) if t.shape is not None else None, t.dtype) for name, t in graph.tensors.items()}
    return Verdict(True, "", _normalise(graph.name, list(graph.inputs), list(graph.outputs), operations, shapes))


def our_verdict(text: str) -> Verdict:
    report = check_text(text, "graph.nnef", profile="standard")
    errors = [f for f in report.findings if f.is_error]
    if errors:
        return Verdict(False, f"{errors[0].code}: {errors[0].message}", None)
    graph = report.graphs[0]
    operations = [(op.name, dict(op.attribs), dict(op.inputs), dict(op.outputs)) for op in graph.operations]
    shapes = {name: (t.shape, t.dtype) for name, t in graph.tensors.items()}
    return Verdict(True, "", _normalise(graph.name, graph.inputs, graph.outputs, operations, shapes))


def user_fragments(text: str) -> list[str]:
    """Names of the fragments a text defines (the Khronos parser must lower them)."""
    from pipeline.nnef.parser import parse_text

    parsed = parse_text(text)
    return [f.name.value for f in parsed.document.fragments] if parsed.document else []

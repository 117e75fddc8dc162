"""The independent reading: the Khronos NNEF parser (PyPI `nnef`) against ours.

Requirement HLR-FMT-005 asks that every NNEF description the pipeline writes be read
identically by an implementation nobody here wrote. This module loads a description with
`nnef.load_graph` + `nnef.infer_shapes` and compares the result with our checker's flat
graph: header, operations (name, element type, every attribute with defaults filled in,
inputs, outputs), tensor shapes and types, and optionally variable data bit for bit.
The `nnef` package is an optional dependency (the `verify` and `test` extras); callers
report `not run` when `khronos_available()` is false, never `pass`.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any, Mapping

import numpy as np

from pipeline.nnef.graph import Graph, Ref


def khronos_available() -> bool:
    """Whether the Khronos parser (`nnef` package) can be imported."""
    try:
        import nnef  # noqa: F401 - only whether it imports
    except ImportError:
        return False
    return True


def _value(value: Any) -> Any:
    """A Khronos or flat-graph value in one comparable form (identifiers as ('ref', name))."""
    import nnef

    if isinstance(value, (Ref, nnef.Identifier)):
        return ("ref", str(value))
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(np.float32(value))
    if isinstance(value, Mapping):
        return {k: _value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return tuple(_value(v) for v in value)
    return value


def load(path: str | os.PathLike[str], load_variables: bool = False) -> Any:
    """The Khronos graph of a file or directory (graph.nnef + tensors), shapes inferred.

    Raises whatever the Khronos parser raises on a description it rejects.
    """
    import nnef

    graph = nnef.load_graph(str(path), lowered=[], load_variables=load_variables)
    nnef.infer_shapes(graph, custom_shapes=EXTENSION_SHAPES)
    return graph


# The Khronos shape functions of the operation extensions (pipeline.nnef.catalogue.OPERATION_EXTENSIONS),
# which an exported document declares as custom fragments: element-wise, the input's shape.
EXTENSION_SHAPES: dict[str, Any] = {"erf": lambda x: x}


def load_text(text: str) -> Any:
    """The Khronos graph of a description given as text (no tensor files)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "graph.nnef")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
        return load(path)


def graph_difference(ours: Graph, theirs: Any) -> str:
    """The first difference between our graph and the Khronos one ('' when they agree)."""
    if list(theirs.inputs) != list(ours.inputs) or list(theirs.outputs) != list(ours.outputs):
        return (f"header differs: Khronos {list(theirs.inputs)} -> {list(theirs.outputs)}, ours "
                f"{ours.inputs} -> {ours.outputs}")
    if len(theirs.operations) != len(ours.operations):
        return f"Khronos reads {len(theirs.operations)} operations, we read {len(ours.operations)}"
    for index, (k, o) in enumerate(zip(theirs.operations, ours.operations)):
        mine = (o.name, o.dtype or None, _value(o.attribs), _value(o.inputs), _value(o.outputs))
        their = (k.name, k.dtype or None, _value(k.attribs), _value(k.inputs), _value(k.outputs))
        if mine != their:
            return f"operation {index} ({o.name}) differs: Khronos {their}, ours {mine}"
    if set(theirs.tensors) != set(ours.tensors):
        return f"tensor names differ: {sorted(set(ours.tensors) ^ set(theirs.tensors))}"
    for name, tensor in sorted(theirs.tensors.items()):
        info = ours.tensors[name]
        shape = list(tensor.shape) if tensor.shape is not None else None
        if info.shape != shape or info.dtype != tensor.dtype:
            return f"tensor '{name}': Khronos {tensor.dtype}{shape}, ours {info.dtype}{info.shape}"
    return ""


def variables_difference(ours: Graph, theirs: Any, variables: Mapping[str, np.ndarray]) -> tuple[str, int]:
    """Compare the variable data Khronos loaded with ours (by label); (difference, count compared)."""
    compared = 0
    for op in ours.operations:
        if op.name != "variable":
            continue
        name = op.output_refs()[0].name
        data = np.asarray(theirs.tensors[name].data)
        mine = variables[str(op.attribs["label"])]
        if data.dtype != mine.dtype or data.shape != mine.shape or data.tobytes() != mine.tobytes():
            return f"variable '{name}': tensor data differ", compared
        compared += 1
    return "", compared

"""Select conditions: the one kind of logical tensor the C and CUDA generators hold.

ONNX Where on a constant mask exports as `select(c, t, f)` with `c` a `variable<logical>`
(pipeline/export/ops/elementwise.py). The generated code holds floating-point tensors only, so such a
condition is held as its tensor file's values read as float32, 1.0f for true and 0.0f for false (the
codegen.trace check re-derives them from the file), and tested with `!= 0`; any other logical tensor
stays refused (CODEGEN-E002).
"""

from __future__ import annotations

from pipeline.nnef.graph import Graph, refs_in


def is_condition(graph: Graph, name: str) -> bool:
    """Whether tensor `name` is a constant logical tensor (a `variable<logical>`) read only as the
    condition of `select`."""
    info = graph.tensors.get(name)
    if info is None or info.dtype != "logical":
        return False
    if not any(op.name == "variable" and op.output_refs()[0].name == name for op in graph.operations):
        return False
    for op in graph.operations:
        reads = [key for key, value in op.inputs.items() for ref in refs_in(value) if ref.name == name]
        if reads and (op.name != "select" or reads != ["condition"]):
            return False
    return True

"""provenance.json: the trace from every ONNX node and initializer to NNEF lines and files.

Written beside graph.nnef (schema version 1, canonical JSON, no paths or times):

    source        the ONNX file name, its sha256, opset, IR version, producer, graph name
    graph         graph.nnef: sha256, graph name, number of lines
    inputs        per graph input: ONNX name, NNEF name, shape, line of its `external`
    outputs       per graph output: ONNX name, NNEF name, shape
    tensors       ONNX tensor name -> NNEF variable name (every tensor the NNEF holds)
    nodes         per ONNX node in graph order: index, name, op_type, domain, opset,
                  version (the operator's since_version), inputs, outputs, nnef_lines,
                  nnef_operations, nnef_variables (names its statements assign),
                  parameters (constants read as attribute values), dropped_outputs;
                  for a node folded at export (pipeline.export.fold) also `folded`:
                  per output its dtype, shape and values (or their sha256 above 64); for a
                  dead node (read only by folded nodes: fold.dead_nodes) `unused: true`
    lines         per NNEF statement line: the variable(s) it assigns, the operation, the
                  ONNX node (index, name, op_type) or graph input, and the initializer
    tensor_files  per .dat file: label, file, NNEF shape, ONNX tensor and shape, sha256,
                  size in bytes, the node that first uses it (or the Constant node)
    masks         per variable accepted as an attention mask (-inf, pipeline.nnef.masks): its
                  NNEF name, ONNX tensor, count of -inf values, the softmax results it reaches

Because the sha256 of every tensor file is here, provenance.json changes whenever any
tensor file changes: later steps can depend on it alone.
"""

from __future__ import annotations

import hashlib
import math
from typing import Any, Mapping, Sequence

from pipeline import __version__
from pipeline.export.context import ExportContext
from pipeline.nnef import ast
from pipeline.nnef.masks import Mask

SCHEMA_VERSION = 1


def _targets(assignment: ast.Assignment) -> list[str]:
    lhs = assignment.lhs
    if isinstance(lhs, ast.Identifier):
        return [lhs.name]
    items = lhs.items if isinstance(lhs, (ast.ArrayExpr, ast.TupleExpr)) else ()
    return [item.name for item in items if isinstance(item, ast.Identifier)]


def _operation(assignment: ast.Assignment) -> str:
    rhs = assignment.rhs
    return rhs.name.value if isinstance(rhs, ast.Invocation) else type(rhs).__name__


def _folded_value(value: Any) -> dict[str, Any]:
    """A folded output as the audit reads it: dtype, shape, and the values (small) or their sha256."""
    import numpy as np

    array = np.ascontiguousarray(value)
    record: dict[str, Any] = {"dtype": str(array.dtype), "shape": list(array.shape)}
    if array.size <= 64:
        record["values"] = [v.item() if array.dtype.kind in "iub" else _number(float(v)) for v in array.reshape(-1)]
    else:
        record["sha256"] = hashlib.sha256(array.tobytes()).hexdigest()
    return record


def _number(value: float) -> float | str:
    """A float as JSON holds it: a mask's -inf (the only non-finite constant the export lets through,
    pipeline/export/masks.py) as the string "-inf", as the validation writes non-finite measures."""
    return value if math.isfinite(value) else str(value)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def build_provenance(ctx: ExportContext, graph_name: str, text: str, lines: list[int],
                     files: Mapping[str, bytes], graph_file: str, output_names: list[str],
                     masks: Sequence[Mask] = ()) -> dict[str, Any]:
    """The provenance document; `lines[i]` is the line of the i-th body statement in `text`."""
    model = ctx.model
    nodes_by_index = {node.index: node for node in model.nodes}
    line_records = []
    for index, (assignment, origin) in enumerate(zip(ctx.body, ctx.origins)):
        record: dict[str, Any] = {
            "line": lines[index],
            "assigns": _targets(assignment),
            "operation": _operation(assignment),
            "node": None,
            "graph_input": origin.graph_input,
            "initializer": origin.initializer,
        }
        if origin.node is not None:
            node = nodes_by_index[origin.node]
            record["node"] = {"index": node.index, "name": node.name, "op_type": node.op_type}
        line_records.append(record)
    nodes = []
    for node in model.nodes:
        node_record = ctx.records.get(node.index)
        statements = node_record.statements if node_record else []
        nodes.append({
            "index": node.index,
            "name": node.name,
            "op_type": node.op_type,
            "domain": node.domain,
            "opset": node.opset,
            "version": node.since_version,
            "inputs": list(node.inputs),
            "outputs": list(node.outputs),
            "nnef_lines": [lines[i] for i in statements],
            "nnef_operations": [_operation(ctx.body[i]) for i in statements],
            "nnef_variables": [name for i in statements for name in _targets(ctx.body[i])],
            "parameters": sorted(set(node_record.parameters)) if node_record else [],
            "dropped_outputs": list(node_record.dropped) if node_record else [],
        })
        if node_record is not None and node_record.unused:
            nodes[-1]["unused"] = True
        if node_record is not None and node_record.folded:
            nodes[-1]["folded"] = {name: _folded_value(ctx.constants[name]) for name in node.outputs if name}
    tensor_files = []
    for record in ctx.variables.values():
        file = f"{record.name}.dat"
        data = files[file]
        tensor_files.append({
            "label": record.name,
            "file": file,
            "shape": list(record.shape),
            "onnx_tensor": record.onnx_name,
            "onnx_shape": list(record.onnx_shape),
            "sha256": sha256(data),
            "bytes": len(data),
            "node": record.node,
        })
    tensor_files.sort(key=lambda t: t["label"])
    return {
        "schema_version": SCHEMA_VERSION,
        "exporter": {"name": "pipeline.export", "version": __version__},
        "source": {
            "file": model.file_name,
            "sha256": model.sha256,
            "opset": model.opset,
            "ir_version": model.proto.ir_version,
            "producer": model.producer,
            "graph": model.graph_name,
        },
        "graph": {
            "file": graph_file,
            "sha256": sha256(text.encode("utf-8")),
            "name": graph_name,
            "lines": text.count("\n"),
        },
        "inputs": [
            {"onnx": onnx_name, "nnef": ctx.defined[onnx_name], "shape": ctx.shape_of(onnx_name),
             "line": lines[i]}
            for i, onnx_name in enumerate(model.inputs)
        ],
        "outputs": [
            {"onnx": onnx_name, "nnef": nnef_name, "shape": ctx.shape_of(onnx_name)}
            for onnx_name, nnef_name in zip(model.outputs, output_names)
        ],
        "tensors": dict(sorted(ctx.defined.items())),
        "nodes": nodes,
        "lines": line_records,
        "tensor_files": tensor_files,
        "masks": [{"variable": m.variable, "masked_values": m.masked, "softmax": list(m.softmax),
                   "onnx_tensor": next(r.onnx_name for r in ctx.variables.values() if r.name == m.variable)}
                  for m in masks],
    }

"""Static shape computations folded at export: only the data path reaches NNEF.

torch's exporter writes shape arithmetic into the graph (channel shuffle:
`Shape -> Gather -> Unsqueeze -> Concat -> Reshape`); with static shapes every value of
such a chain is known at export. A node is *folded* (evaluated now, no NNEF statement, its
outputs become constants like Constant outputs) when

- it is a `Shape` (its input's shape is static after ONNX shape inference), or
- it is one of FOLDABLE, every input is a constant (initializer, Constant output or a
  folded output), and either the operator has no data-path converter (Gather, Cast,
  ConstantOfShape, Range, ...) or no output is float32 (integer shape arithmetic; float
  data keeps its NNEF statements, so what the exporter writes for float models is unchanged).

The values are computed by onnx.reference (onnx's own evaluator, not our code), one node at a
time at the model's opset. Whether the folding is right is checked like everything else the
exporter does: ONNX shape inference must agree with the NNEF checker on every data tensor,
and the export validation runs the unfolded ONNX model in onnxruntime against the NNEF.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from pipeline.export.errors import node_error
from pipeline.export.onnx_model import TensorInfo, _shape_of
from pipeline.export.converters import find

if TYPE_CHECKING:
    from pipeline.export.onnx_model import OnnxModel

FOLDABLE: frozenset[str] = frozenset({
    "Shape", "Size", "Gather", "Slice", "Concat", "Unsqueeze", "Squeeze", "Cast", "Mul", "Div", "Add", "Sub",
    "ConstantOfShape", "Reshape", "Range", "Identity", "Floor", "Ceil", "Equal", "Where", "ReduceProd",
})


def folded_nodes(model: OnnxModel) -> set[int]:
    """Indices of the nodes evaluated at export (decided before any conversion, in graph order)."""
    known = set(model.initializers)
    folded: set[int] = set()
    for node in model.nodes:
        if node.domain not in ("", "ai.onnx"):
            continue
        if node.op_type == "Constant":
            known.update(n for n in node.outputs if n)
            continue
        if node.op_type not in FOLDABLE:
            continue
        inputs = [n for n in node.inputs if n]
        if node.op_type != "Shape":
            if not inputs or not all(n in known for n in inputs):
                continue
            if find(node.op_type) is not None and any(
                    model.tensors.get(n) is None or model.tensors[n].elem_type == TensorProto.FLOAT
                    for n in node.outputs if n):
                continue
        elif not inputs or model.tensors.get(inputs[0]) is None or not model.tensors[inputs[0]].static:
            continue
        folded.add(node.index)
        known.update(n for n in node.outputs if n)
    return folded


def _run(model: OnnxModel, index: int, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    from onnx.reference import ReferenceEvaluator

    proto = model.proto.graph.node[index]
    bare = helper.make_node(proto.op_type, list(proto.input), list(proto.output), domain=proto.domain)
    bare.attribute.extend(proto.attribute)
    return [np.asarray(v) for v in ReferenceEvaluator(bare, opsets={"": model.opset}).run(None, feeds)]


def evaluate(model: OnnxModel, folded: set[int], supported: list[str]) -> dict[str, np.ndarray]:
    """The value of every output of the folded nodes (and of the Constant nodes they read)."""
    values: dict[str, np.ndarray] = dict(model.initializers)
    result: dict[str, np.ndarray] = {}
    for node in model.nodes:
        if node.op_type != "Constant" and node.index not in folded:
            continue
        feeds: dict[str, np.ndarray] = {}
        for name in node.inputs:
            if not name:
                continue
            if node.op_type == "Shape":  # only the (static) shape of the input is read
                info = model.tensors[name]
                feeds[name] = np.zeros([int(d) for d in info.shape or ()],
                                       dtype=helper.tensor_dtype_to_np_dtype(info.elem_type))
            else:
                feeds[name] = values[name]
        try:
            outputs = _run(model, node.index, feeds)
        except Exception as exc:  # noqa: BLE001 - the evaluator's own errors, reported coded
            if node.op_type == "Constant":
                continue  # the Constant converter reports what it cannot read
            raise node_error("EXPORT-E004", f"cannot evaluate this static shape computation: {exc}",
                             node_name=node.label, op_type=node.op_type, opset=node.opset,
                             supported=supported) from None
        for name, value in zip(node.outputs, outputs):
            if name:
                values[name] = value
                if node.index in folded:
                    result[name] = value
    return result


def refine_shapes(model: OnnxModel, values: dict[str, np.ndarray]) -> None:
    """Re-run ONNX shape inference with the folded values as initializers: the shapes that
    depend on them (a Reshape whose shape was computed) become static in `model.tensors`."""
    if not values:
        return
    proto = onnx.ModelProto()
    proto.CopyFrom(model.proto)
    graph = proto.graph
    kept = [n for n in graph.node if not any(o in values for o in n.output)]
    del graph.node[:]
    graph.node.extend(kept)
    known = [v for v in graph.value_info if v.name not in values]
    del graph.value_info[:]
    graph.value_info.extend(known)
    graph.initializer.extend(numpy_helper.from_array(v, name) for name, v in values.items())
    inferred = onnx.shape_inference.infer_shapes(proto, check_type=True, strict_mode=True, data_prop=True)
    for value in list(inferred.graph.value_info) + list(inferred.graph.output):
        current = model.tensors.get(value.name)
        if value.name in values or (current is not None and current.static):
            continue
        elem_type, shape = _shape_of(value.type)
        model.tensors[value.name] = TensorInfo(value.name, elem_type, shape)

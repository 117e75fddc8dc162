"""Constant subgraphs folded at export: only the data path reaches NNEF.

torch's exporter writes shape arithmetic into the graph (channel shuffle:
`Shape -> Gather -> Unsqueeze -> Concat -> Reshape`; attention's scale:
`Shape -> Slice -> Cast -> Sqrt -> Div -> Cast -> Sqrt`; head splitting: `Mod` on constants),
and shares tied weights through `Identity`. With static shapes every value of such a chain is
known at export. A node is *folded* (evaluated now, no NNEF statement, its outputs become
constants like Constant outputs) when

- it is a `Shape` or `Size` (its input's shape is static after ONNX shape inference), or
- it is one of FOLDABLE (deterministic arithmetic, comparisons, data movement and casts, whether
  or not a data-path converter exists for it) and every input is a constant (initializer,
  Constant output or a folded output).

Shapes are re-inferred as folding goes (`refine_shapes` with the values folded so far) whenever a
`Shape` or `Size` meets an input whose shape is not static yet: a shape that depends on computed
values (a Pad whose pads come from `Shape -> Sub -> Mod -> Concat`, as Swin's window padding
writes it) becomes static once those values are folded, and the Shapes after it fold too.

A node that is not folded but whose outputs are read only by folded nodes (a Transpose whose only
reader is a Shape) and by no graph output is *dead*: it computes nothing the model returns, and is
not converted (`dead_nodes`; provenance records it as `unused`, the trace check verifies the claim).

So the support of an operator is judged only on the nodes that remain: a `Mod` or `Sqrt` of
constants is no blocker, and the refusal (EXPORT-E003) lists the blockers on the data path, then
the folded nodes whose operator has no converter, as folded (`folded_without_converter`).

The values are computed by onnx.reference (onnx's own evaluator, not our code), one node at a
time at the model's opset, in the node's own types (float32 arithmetic on float32 constants), while
the nodes are chosen: a node onnx.reference cannot evaluate (its Unsqueeze at opset 8, say) and that
has a converter is converted instead.
Whether the folding is right is checked like everything else the exporter does: ONNX shape
inference must agree with the NNEF checker on every data tensor, and the export validation runs
the unfolded ONNX model in onnxruntime against the NNEF.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import onnx
from onnx import helper, numpy_helper

from pipeline.export.errors import ExportError, node_error
from pipeline.export.onnx_model import TensorInfo, _shape_of
from pipeline.export.converters import find

if TYPE_CHECKING:
    from pipeline.export.onnx_model import Node, OnnxModel

# Deterministic operators onnx.reference evaluates (no random operator, no subgraph, no sequence).
FOLDABLE: frozenset[str] = frozenset({
    # shapes and data movement
    "Shape", "Size", "Gather", "GatherElements", "Slice", "Concat", "Unsqueeze", "Squeeze", "Reshape", "Flatten",
    "Transpose", "Expand", "Tile", "Split", "Identity", "ConstantOfShape", "Range", "Cast", "CastLike",
    # arithmetic
    "Add", "Sub", "Mul", "Div", "Mod", "Pow", "Sqrt", "Reciprocal", "Neg", "Abs", "Exp", "Log", "Floor", "Ceil",
    "Round", "Sign", "Max", "Min", "Sum", "Mean", "Clip", "Relu",
    "ReduceProd", "ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin",
    # comparisons and logic
    "Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "Not", "And", "Or", "Xor", "Where",
    "IsNaN", "IsInf", "BitShift", "BitwiseAnd", "BitwiseOr", "BitwiseXor", "BitwiseNot",
    # what torch writes around masks, positions and scatters of constants (issue 38): causal masks
    # (Trilu), index tables and in-place writes (ScatterND, ScatterElements, GatherND, CumSum, NonZero),
    # one-hot and identity tables, arg reductions of constants
    "Trilu", "ScatterND", "ScatterElements", "GatherND", "CumSum", "NonZero", "OneHot", "EyeLike",
    "ArgMax", "ArgMin", "ReduceL1", "ReduceL2", "ReduceSumSquare",
})
SHAPE_READERS = frozenset({"Shape", "Size"})


def fold(model: OnnxModel, supported: list[str]) -> tuple[set[int], dict[str, np.ndarray]]:
    """The nodes evaluated at export (in graph order, before any conversion) and the value of each of
    their outputs. A candidate onnx.reference cannot evaluate is left to its converter when it has one
    (a Constant to the Constant converter, which reports what it cannot read); without one it is
    EXPORT-E004 naming the evaluator's error."""
    values: dict[str, np.ndarray] = dict(model.initializers)
    folded: set[int] = set()
    result: dict[str, np.ndarray] = {}
    inferred = 0  # how many folded values the shapes in model.tensors know of
    for node in model.nodes:
        if node.domain not in ("", "ai.onnx") or (node.op_type != "Constant" and node.op_type not in FOLDABLE):
            continue
        inputs = [n for n in node.inputs if n]
        if node.op_type in SHAPE_READERS and inputs and inputs[0] in values:
            feeds = {inputs[0]: values[inputs[0]]}  # the shape of a constant is its value's
        elif node.op_type in SHAPE_READERS:
            info = model.tensors.get(inputs[0]) if inputs else None
            if (info is None or not info.static) and len(result) > inferred:
                reinfer(model, result)  # the shape may follow from the values folded since
                inferred = len(result)
                info = model.tensors.get(inputs[0])
            if info is None or not info.static:
                continue
            # only the (static) shape of the input is read
            feeds = {inputs[0]: np.zeros([int(d) for d in info.shape or ()],
                                         dtype=helper.tensor_dtype_to_np_dtype(info.elem_type))}
        elif node.op_type != "Constant" and (not inputs or not all(n in values for n in inputs)):
            continue
        else:
            feeds = {name: values[name] for name in inputs}
        try:
            outputs = _run(model, node.index, feeds)
        except Exception as exc:  # noqa: BLE001 - the evaluator's own errors
            if node.op_type == "Constant" or find(node.op_type) is not None:
                continue
            raise node_error("EXPORT-E004", f"cannot evaluate this constant computation: {exc}",
                             node_name=node.label, op_type=node.op_type, opset=node.opset,
                             supported=supported) from None
        for name, value in zip(node.outputs, outputs):
            if name:
                values[name] = value
                if node.op_type != "Constant":
                    result[name] = value
        if node.op_type != "Constant":
            folded.add(node.index)
    return folded, result


def dead_nodes(model: OnnxModel, folded: set[int]) -> set[int]:
    """The nodes neither folded nor needed: none of their outputs is a graph output or read by a node
    that is converted (a folded Shape reads only its input's shape, not its data)."""
    needed = set(model.outputs)
    live: set[int] = set()
    for node in reversed(model.nodes):
        if node.index in folded or not any(name in needed for name in node.outputs if name):
            continue
        live.add(node.index)
        needed.update(name for name in node.inputs if name)
    return {node.index for node in model.nodes if node.index not in folded and node.index not in live}


def live_tensors(model: OnnxModel, skipped: set[int]) -> set[str]:
    """The tensors the converted nodes read, and the graph outputs: an optional output outside it is dropped."""
    needed = set(model.outputs)
    for node in model.nodes:
        if node.index not in skipped:
            needed.update(name for name in node.inputs if name)
    return needed


def reinfer(model: OnnxModel, values: dict[str, np.ndarray]) -> None:
    """refine_shapes, its failure as EXPORT-E009."""
    try:
        refine_shapes(model, values)
    except Exception as exc:  # noqa: BLE001 - InferenceError and friends
        raise ExportError("EXPORT-E009", f"ONNX shape inference with the folded shape values failed: {exc}") from None


def _run(model: OnnxModel, index: int, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    from onnx.reference import ReferenceEvaluator

    proto = model.proto.graph.node[index]
    bare = helper.make_node(proto.op_type, list(proto.input), list(proto.output), domain=proto.domain)
    bare.attribute.extend(proto.attribute)
    return [np.asarray(v) for v in ReferenceEvaluator(bare, opsets={"": model.opset}).run(None, feeds)]


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
    if proto.ir_version < 4:  # IR 3: an initializer has its type only as a graph input too
        graph.input.extend(helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
                           for name, v in values.items())
    inferred = onnx.shape_inference.infer_shapes(proto, check_type=True, strict_mode=True, data_prop=True)
    for value in list(inferred.graph.value_info) + list(inferred.graph.output):
        current = model.tensors.get(value.name)
        if value.name in values or (current is not None and current.static):
            continue
        elem_type, shape = _shape_of(value.type)
        model.tensors[value.name] = TensorInfo(value.name, elem_type, shape)

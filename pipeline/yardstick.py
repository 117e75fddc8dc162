"""The float64 yardstick: what the ONNX model computes, evaluated in double precision.

The float32 reference (pipeline.semantics) and onnxruntime are both judged against it, so it
must share no code with either: it is onnx's own reference evaluator
(`onnx.reference.ReferenceEvaluator`, written by the ONNX project, plain NumPy) run on a copy
of the ONNX model whose every float32 tensor (initializers, Constant nodes, graph inputs,
outputs and value_info, Cast targets) is float64. One rewrite: onnx.reference computes
BatchNormalization at opsets 9 to 13 with batch statistics (onnx pull request 8442,
pipeline/onnx_runner.py), so each BatchNormalization node is replaced by its inference
formula as plain ONNX arithmetic, `(x - mean) / sqrt(var + epsilon) * scale + B`, still
evaluated by onnx.reference. docs/compare.md ("The float64 yardstick").
"""

from __future__ import annotations

import copy
from typing import Mapping

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

DESCRIPTION = ("onnx.reference.ReferenceEvaluator on the ONNX model with every float32 tensor cast to float64 "
               "(BatchNormalization as its inference formula)")


def _cast_tensor(tensor: TensorProto) -> TensorProto:
    if tensor.data_type != TensorProto.FLOAT:
        return tensor
    return numpy_helper.from_array(numpy_helper.to_array(tensor).astype(np.float64), tensor.name)


def _retype(values: list[onnx.ValueInfoProto]) -> None:
    for value in values:
        if value.type.tensor_type.elem_type == TensorProto.FLOAT:
            value.type.tensor_type.elem_type = TensorProto.DOUBLE


def _ranks(model: onnx.ModelProto) -> dict[str, int]:
    inferred = onnx.shape_inference.infer_shapes(model)
    values = [*inferred.graph.input, *inferred.graph.value_info, *inferred.graph.output]
    return {v.name: len(v.type.tensor_type.shape.dim) for v in values if v.type.tensor_type.HasField("shape")}


def _batchnorm_nodes(node: onnx.NodeProto, rank: int, extra: list[TensorProto]) -> list[onnx.NodeProto]:
    """The inference formula of one BatchNormalization node as ONNX arithmetic."""
    x, scale, bias, mean, var = node.input[:5]
    epsilon = next((a.f for a in node.attribute if a.name == "epsilon"), 1e-5)
    p = f"{node.output[0]}__yardstick"
    shape = numpy_helper.from_array(np.array([-1] + [1] * (rank - 2), np.int64), f"{p}_shape")
    eps = numpy_helper.from_array(np.array(np.float32(epsilon), np.float64), f"{p}_eps")
    extra += [shape, eps]
    r = {name: f"{p}_{tag}" for tag, name in (("scale", scale), ("bias", bias), ("mean", mean), ("var", var))}
    nodes = [helper.make_node("Reshape", [name, shape.name], [out]) for name, out in r.items()]
    nodes += [helper.make_node("Sub", [x, r[mean]], [f"{p}_centred"]),
              helper.make_node("Add", [r[var], eps.name], [f"{p}_vareps"]),
              helper.make_node("Sqrt", [f"{p}_vareps"], [f"{p}_std"]),
              helper.make_node("Div", [f"{p}_centred", f"{p}_std"], [f"{p}_normed"]),
              helper.make_node("Mul", [f"{p}_normed", r[scale]], [f"{p}_scaled"]),
              helper.make_node("Add", [f"{p}_scaled", r[bias]], [node.output[0]])]
    return nodes


def float64_model(model: onnx.ModelProto) -> onnx.ModelProto:
    """A copy of `model` computing in float64 (module docstring)."""
    ranks = _ranks(model)
    out = copy.deepcopy(model)
    graph = out.graph
    for i, tensor in enumerate(graph.initializer):
        graph.initializer[i].CopyFrom(_cast_tensor(tensor))
    _retype([*graph.input, *graph.output, *graph.value_info])
    extra: list[TensorProto] = []
    nodes: list[onnx.NodeProto] = []
    for node in graph.node:
        if node.op_type == "BatchNormalization":
            nodes += _batchnorm_nodes(node, ranks.get(node.input[0], 4), extra)
            continue
        node = copy.deepcopy(node)
        for attribute in node.attribute:
            if attribute.type == onnx.AttributeProto.TENSOR:
                attribute.t.CopyFrom(_cast_tensor(attribute.t))
            if node.op_type == "Cast" and attribute.name == "to" and attribute.i == TensorProto.FLOAT:
                attribute.i = TensorProto.DOUBLE
        nodes.append(node)
    del graph.node[:]
    graph.node.extend(nodes)
    graph.initializer.extend(extra)
    del graph.value_info[:]
    return out


class Yardstick:
    """`run({onnx input: float32 array}) -> {onnx output: float64 array}`."""

    def __init__(self, model: onnx.ModelProto) -> None:
        from onnx.reference import ReferenceEvaluator

        self.model = float64_model(model)
        self._evaluator = ReferenceEvaluator(self.model)
        self.output_names = list(self._evaluator.output_names)

    def run(self, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        feeds = {name: np.asarray(value, dtype=np.float64) for name, value in inputs.items()}
        return dict(zip(self.output_names, (np.asarray(v, np.float64) for v in self._evaluator.run(None, feeds))))

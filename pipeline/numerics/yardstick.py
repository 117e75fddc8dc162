"""The float64 yardstick: what the ONNX model computes, evaluated in double precision.

The float32 reference (pipeline.semantics) and onnxruntime are both judged against it, so it
must share no code with either: it is onnx's own reference evaluator
(`onnx.reference.ReferenceEvaluator`, written by the ONNX project, plain NumPy) run on a copy
of the ONNX model whose every float32 tensor (initializers, Constant nodes, graph inputs,
outputs and value_info, Cast targets) is float64. One rewrite: onnx.reference computes
BatchNormalization at opsets 9 to 13 with batch statistics (onnx pull request 8442,
pipeline/numerics/onnx_runner.py), so each BatchNormalization node is replaced by its inference
formula as plain ONNX arithmetic, `(x - mean) / sqrt(var + epsilon) * scale + B`, still
evaluated by onnx.reference. Two more, for onnx.reference 1.23 defects: LRN (its loop runs over the
batch axis, not the channels) as Mul, a 1x1 Conv with a 0/1 channel band, Mul, Add, Pow, Div; a
grouped ConvTranspose (its grouped weights are sliced wrongly) as one ConvTranspose per group
between Split and Concat. And one for speed: onnx.reference pools window by window in Python
(MaxPool and AveragePool were 94 % of the yardstick's time on the inception model), so a 2-D
MaxPool or AveragePool (no auto_pad, ceil_mode 0, one output) is Pad, one strided Slice per
kernel tap, then Max (exact, as the window maximum is) or Sum and a Div by the window count
(the taps summed in another order than onnx.reference's: a difference in the last bits of
double, far below every tolerance the yardstick judges; a NaN in a window, which onnx.reference's
loop skips, propagates through Max: validation vectors are finite). Likewise a 2-D Conv whose
weights are an initializer (no auto_pad): onnx.reference's Conv loops in Python too (87 % of the
yardstick's time on resnet8), so it is Pad, then per kernel tap a strided Slice and a grouped
MatMul with that tap's weights ([G, Og, Cg] @ [N, G, Cg, positions]), the taps added by Sum,
then the bias: onnx.reference's own MatMul and Sum (NumPy), products and sums in another order
than its Conv's, again a difference in the last bits of double. docs/compare.md ("The float64
yardstick").
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


def _shapes(model: onnx.ModelProto) -> dict[str, list[int]]:
    inferred = onnx.shape_inference.infer_shapes(model)
    values = [*inferred.graph.input, *inferred.graph.value_info, *inferred.graph.output]
    return {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim] for v in values
            if v.type.tensor_type.HasField("shape")}


def _attribute(node: onnx.NodeProto, name: str, default: object) -> object:
    found = [a for a in node.attribute if a.name == name]
    return helper.get_attribute_value(found[0]) if found else default


def _lrn_nodes(node: onnx.NodeProto, shape: list[int], extra: list[TensorProto]) -> list[onnx.NodeProto]:
    """LRN as ONNX arithmetic: x / (bias + alpha / size * S)^beta, S the sum of x^2 over channels
    [c - floor((size-1)/2), c + ceil((size-1)/2)] as a 1x1 Conv with a 0/1 band (exact sums in
    float64). onnx.reference 1.23's LRN loops over the batch axis instead of the channels (only the
    first N channels get their sum), so it is not used."""
    size = int(_attribute(node, "size", 1))
    alpha, beta, bias = (float(np.float32(_attribute(node, k, d))) for k, d in
                         (("alpha", 1e-4), ("beta", 0.75), ("bias", 1.0)))
    channels = shape[1]
    lo, hi = (size - 1) // 2, size - 1 - (size - 1) // 2
    band = np.zeros((channels, channels) + (1,) * (len(shape) - 2))
    for c in range(channels):
        band[(c, slice(max(0, c - lo), min(channels, c + hi + 1)))] = 1.0
    p = f"{node.output[0]}__yardstick"
    consts = {"band": band, "scale": np.array(alpha / size), "bias": np.array(bias), "beta": np.array(beta)}
    extra += [numpy_helper.from_array(value, f"{p}_{key}") for key, value in consts.items()]
    x = node.input[0]
    return [helper.make_node("Mul", [x, x], [f"{p}_sq"]),
            helper.make_node("Conv", [f"{p}_sq", f"{p}_band"], [f"{p}_sum"]),
            helper.make_node("Mul", [f"{p}_sum", f"{p}_scale"], [f"{p}_scaled"]),
            helper.make_node("Add", [f"{p}_scaled", f"{p}_bias"], [f"{p}_base"]),
            helper.make_node("Pow", [f"{p}_base", f"{p}_beta"], [f"{p}_den"]),
            helper.make_node("Div", [x, f"{p}_den"], [node.output[0]])]


def _grouped_conv_transpose_nodes(node: onnx.NodeProto, channels: int, out_channels: int, extra: list[TensorProto],
                                  opset: int) -> list[onnx.NodeProto]:
    """A grouped ConvTranspose as one ungrouped ConvTranspose per group (Split, Concat): onnx.reference
    1.23 reshapes grouped weights as [group, C/group, ...] of the *output* kernel and fails or errs."""
    group = int(_attribute(node, "group", 1))
    p = f"{node.output[0]}__yardstick"
    per = [channels // group] * group
    x_parts = [f"{p}_x{g}" for g in range(group)]
    w_parts = [f"{p}_w{g}" for g in range(group)]
    b_parts = [f"{p}_b{g}" for g in range(group)]
    nodes = []

    def split(source: str, outputs: list[str], sizes: list[int], tag: str) -> None:
        if opset >= 13:
            extra.append(numpy_helper.from_array(np.array(sizes, np.int64), f"{p}_{tag}_sizes"))
            nodes.append(helper.make_node("Split", [source, f"{p}_{tag}_sizes"], outputs, axis=0 if tag != "x" else 1))
        else:
            nodes.append(helper.make_node("Split", [source], outputs, axis=0 if tag != "x" else 1, split=sizes))

    split(node.input[0], x_parts, per, "x")
    split(node.input[1], w_parts, per, "w")
    has_bias = len(node.input) > 2 and node.input[2] != ""
    attributes = [a for a in node.attribute if a.name != "group"]
    outs = [f"{p}_y{g}" for g in range(group)]
    if has_bias:
        split(node.input[2], b_parts, [out_channels // group] * group, "b")
    for g in range(group):
        inputs = [x_parts[g], w_parts[g]] + ([b_parts[g]] if has_bias else [])
        part = helper.make_node("ConvTranspose", inputs, [outs[g]])
        part.attribute.extend(copy.deepcopy(attributes))
        nodes.append(part)
    nodes.append(helper.make_node("Concat", outs, [node.output[0]], axis=1))
    return nodes


def _pool_rewritable(node: onnx.NodeProto, shapes: dict[str, list[int]], opset: int) -> bool:
    if node.op_type not in ("MaxPool", "AveragePool") or opset < 11 or len(node.output) != 1:
        return False
    shape, out = shapes.get(node.input[0]), shapes.get(node.output[0])
    if shape is None or out is None or len(shape) != 4 or len(out) != 4 or 0 in shape or 0 in out:
        return False
    return (_attribute(node, "auto_pad", b"NOTSET") in (b"NOTSET", "NOTSET") and not _attribute(node, "ceil_mode", 0)
            and len(list(_attribute(node, "kernel_shape", []))) == 2)


def _pool_nodes(node: onnx.NodeProto, shape: list[int], out: list[int], extra: list[TensorProto]) -> list[onnx.NodeProto]:
    """A 2-D pool as Pad + one strided Slice per tap + Max, or Sum / count (see the module docstring)."""
    kh, kw = (int(k) for k in _attribute(node, "kernel_shape", []))
    sh, sw = (int(s) for s in _attribute(node, "strides", [1, 1]))
    top, left, bottom, right = (int(p) for p in _attribute(node, "pads", [0, 0, 0, 0]))
    dh, dw = (int(d) for d in _attribute(node, "dilations", [1, 1]))
    oh, ow = out[2], out[3]
    is_max = node.op_type == "MaxPool"
    p = f"{node.output[0]}__yardstick"
    extra += [numpy_helper.from_array(np.array([0, 0, top, left, 0, 0, bottom, right], np.int64), f"{p}_pads"),
              numpy_helper.from_array(np.array(-np.inf if is_max else 0.0, np.float64), f"{p}_fill"),
              numpy_helper.from_array(np.array([2, 3], np.int64), f"{p}_axes"),
              numpy_helper.from_array(np.array([sh, sw], np.int64), f"{p}_steps")]
    nodes = [helper.make_node("Pad", [node.input[0], f"{p}_pads", f"{p}_fill"], [f"{p}_padded"], mode="constant")]
    taps = []
    for i in range(kh):
        for j in range(kw):
            start = np.array([i * dh, j * dw], np.int64)
            end = start + np.array([(oh - 1) * sh + 1, (ow - 1) * sw + 1], np.int64)
            extra += [numpy_helper.from_array(start, f"{p}_s{i}_{j}"), numpy_helper.from_array(end, f"{p}_e{i}_{j}")]
            nodes.append(helper.make_node("Slice", [f"{p}_padded", f"{p}_s{i}_{j}", f"{p}_e{i}_{j}", f"{p}_axes",
                                                    f"{p}_steps"], [f"{p}_t{i}_{j}"]))
            taps.append(f"{p}_t{i}_{j}")
    if is_max:
        return nodes + [helper.make_node("Max", taps, [node.output[0]])]
    if _attribute(node, "count_include_pad", 0):
        count = np.full((1, 1, oh, ow), float(kh * kw))
    else:   # the taps that fall inside the unpadded input
        inside = np.zeros((shape[2] + top + bottom, shape[3] + left + right))
        inside[top:top + shape[2], left:left + shape[3]] = 1.0
        count = sum(inside[i * dh:i * dh + (oh - 1) * sh + 1:sh, j * dw:j * dw + (ow - 1) * sw + 1:sw]
                    for i in range(kh) for j in range(kw)).reshape(1, 1, oh, ow)
    extra.append(numpy_helper.from_array(np.asarray(count, np.float64), f"{p}_count"))
    return nodes + [helper.make_node("Sum", taps, [f"{p}_sum"]),
                    helper.make_node("Div", [f"{p}_sum", f"{p}_count"], [node.output[0]])]


def _conv_rewritable(node: onnx.NodeProto, shapes: dict[str, list[int]], initializers: set[str], opset: int) -> bool:
    if node.op_type != "Conv" or opset < 11 or len(node.output) != 1 or node.input[1] not in initializers:
        return False
    shape, out = shapes.get(node.input[0]), shapes.get(node.output[0])
    if shape is None or out is None or len(shape) != 4 or len(out) != 4 or 0 in shape or 0 in out:
        return False
    return (_attribute(node, "auto_pad", b"NOTSET") in (b"NOTSET", "NOTSET")
            and len(list(_attribute(node, "kernel_shape", [0, 0]))) == 2)


def _conv_nodes(node: onnx.NodeProto, shape: list[int], out: list[int], weight: np.ndarray,
                extra: list[TensorProto]) -> list[onnx.NodeProto]:
    """A 2-D Conv as Pad, then per kernel tap a strided Slice and a grouped MatMul with that tap's
    weights, the taps' products added by Sum, then the bias (see the module docstring)."""
    n, channels, _, _ = shape
    outs, cg, kh, kw = weight.shape
    groups = int(_attribute(node, "group", 1))
    og = outs // groups
    sh, sw = (int(s) for s in _attribute(node, "strides", [1, 1]))
    top, left, bottom, right = (int(p) for p in _attribute(node, "pads", [0, 0, 0, 0]))
    dh, dw = (int(d) for d in _attribute(node, "dilations", [1, 1]))
    oh, ow = out[2], out[3]
    p = f"{node.output[0]}__yardstick"
    extra += [numpy_helper.from_array(np.array([0, 0, top, left, 0, 0, bottom, right], np.int64), f"{p}_pads"),
              numpy_helper.from_array(np.array(0.0, np.float64), f"{p}_fill"),
              numpy_helper.from_array(np.array([2, 3], np.int64), f"{p}_axes"),
              numpy_helper.from_array(np.array([sh, sw], np.int64), f"{p}_steps"),
              numpy_helper.from_array(np.array([n, groups, cg, oh * ow], np.int64), f"{p}_grouped"),
              numpy_helper.from_array(np.array([n, outs, oh, ow], np.int64), f"{p}_shape")]
    nodes = [helper.make_node("Pad", [node.input[0], f"{p}_pads", f"{p}_fill"], [f"{p}_padded"], mode="constant")]
    grouped = weight.astype(np.float64).reshape(groups, og, cg, kh, kw)
    terms = []
    for i in range(kh):
        for j in range(kw):
            start = np.array([i * dh, j * dw], np.int64)
            end = start + np.array([(oh - 1) * sh + 1, (ow - 1) * sw + 1], np.int64)
            t = f"{p}_t{i}_{j}"
            extra += [numpy_helper.from_array(start, f"{t}_s"), numpy_helper.from_array(end, f"{t}_e"),
                      numpy_helper.from_array(np.ascontiguousarray(grouped[:, :, :, i, j]), f"{t}_w")]
            nodes += [helper.make_node("Slice", [f"{p}_padded", f"{t}_s", f"{t}_e", f"{p}_axes", f"{p}_steps"], [t]),
                      helper.make_node("Reshape", [t, f"{p}_grouped"], [f"{t}_g"]),          # [N, G, Cg, P]
                      helper.make_node("MatMul", [f"{t}_w", f"{t}_g"], [f"{t}_m"])]          # [G, Og, Cg] @ -> [N, G, Og, P]
            terms.append(f"{t}_m")
    summed = f"{p}_sum"
    nodes.append(helper.make_node("Sum", terms, [summed]) if len(terms) > 1
                 else helper.make_node("Identity", terms, [summed]))
    if len(node.input) < 3 or not node.input[2]:
        return nodes + [helper.make_node("Reshape", [summed, f"{p}_shape"], [node.output[0]])]
    extra.append(numpy_helper.from_array(np.array([1, outs, 1, 1], np.int64), f"{p}_bias_shape"))
    return nodes + [helper.make_node("Reshape", [summed, f"{p}_shape"], [f"{p}_nohw"]),
                    helper.make_node("Reshape", [node.input[2], f"{p}_bias_shape"], [f"{p}_bias"]),
                    helper.make_node("Add", [f"{p}_nohw", f"{p}_bias"], [node.output[0]])]


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
    shapes = (_shapes(model) if any(n.op_type in ("LRN", "ConvTranspose", "MaxPool", "AveragePool", "Conv")
                                    for n in graph.node) else {})
    weights = {t.name: t for t in model.graph.initializer}
    opset = max((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), default=13)
    for node in graph.node:
        if node.op_type == "BatchNormalization":
            nodes += _batchnorm_nodes(node, ranks.get(node.input[0], 4), extra)
            continue
        if node.op_type == "LRN" and node.input[0] in shapes:
            nodes += _lrn_nodes(node, shapes[node.input[0]], extra)
            continue
        if (node.op_type == "ConvTranspose" and int(_attribute(node, "group", 1)) > 1 and node.input[0] in shapes
                and node.output[0] in shapes):
            nodes += _grouped_conv_transpose_nodes(node, shapes[node.input[0]][1], shapes[node.output[0]][1], extra,
                                                   opset)
            continue
        if _conv_rewritable(node, shapes, set(weights), opset):
            nodes += _conv_nodes(node, shapes[node.input[0]], shapes[node.output[0]],
                                 numpy_helper.to_array(weights[node.input[1]]), extra)
            continue
        if _pool_rewritable(node, shapes, opset):
            nodes += _pool_nodes(node, shapes[node.input[0]], shapes[node.output[0]], extra)
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

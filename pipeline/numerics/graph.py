"""The ONNX model as the enclosure and the bound walk it: primitive operations over static shapes.

`prepare(model)` reads the model once:

* constants: initializers and Constant nodes (their values exact: float32 numbers are real numbers);
* static shapes (onnx.shape_inference); a Shape node becomes a constant;
* integer subgraphs (shape arithmetic: Shape, Gather, Div, Concat, ... of int64 tensors) and the
  movement, selection and comparison of constants (a mask built from constants) folded exactly, by
  onnx.reference, once; float arithmetic is never folded (its rounding is part of what the bound
  counts);
* composite operators expanded into the primitive operations of their ONNX definition
  (LayerNormalization and Gelu as their function bodies, LRN as x / (bias + alpha / size * S)^beta
  with S a channel-window sum, GRU and LSTM unrolled over their static sequence as ONNX's equations
  state them). The real-number result is the same; the rounding model of each primitive then stands
  for the fused implementation (docs/compare.md, "Rules").

Constants that are real numbers but not doubles (1/sqrt(2) in Gelu, alpha / size in LRN) are
`RealConstant`s, evaluated in arb by the enclosure; a float implementation rounds them (the bound
counts one rounding of each where it is used).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import onnx
from onnx import numpy_helper

FLOAT_TYPES = (onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE, onnx.TensorProto.FLOAT16)
# data movement, selection and comparison of constants are exact: folded like integer arithmetic (what torch
# writes around attention masks, issue 38: Trilu, Equal, Where, ConstantOfShape, Expand, ScatterND, ...)
EXACT_MOVES = frozenset({"Identity", "Reshape", "Transpose", "Squeeze", "Unsqueeze", "Flatten", "Concat", "Slice",
                         "Gather", "Split", "Expand", "Where", "Trilu", "Tile", "ScatterND", "ScatterElements",
                         "GatherND", "GatherElements", "Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual",
                         "Not", "And", "Or", "Xor", "IsNaN", "IsInf", "ConstantOfShape", "EyeLike", "OneHot",
                         "NonZero"})


class GraphRefused(Exception):
    """An operator or attribute the enclosure and the bound have no rule for (BOUND-E001)."""


@dataclass(frozen=True)
class RealConstant:
    """A real number given by an arb expression (`make(flint) -> arb`), with its double value."""

    name: str
    value: float
    make: Callable[[Any], Any]


@dataclass
class Op:
    """One primitive operation: ONNX's op type and attributes, the ONNX node it comes from."""

    op_type: str
    name: str
    inputs: list[str]
    outputs: list[str]
    attrs: dict[str, Any]
    origin: str
    source: str = ""  # the ONNX operator it comes from (a composite's name for its expansion)

    def attr(self, key: str, default: Any = None) -> Any:
        value = self.attrs.get(key, default)
        return value.decode() if isinstance(value, bytes) else value


@dataclass
class Graph:
    ops: list[Op]
    constants: dict[str, np.ndarray]
    reals: dict[str, RealConstant]
    inputs: list[str]
    outputs: list[str]
    shapes: dict[str, tuple[int, ...]]
    opset: int
    consumers: dict[str, list[int]] = field(default_factory=dict)

    def is_constant(self, name: str) -> bool:
        return name in self.constants or name in self.reals or name == ""


def _attrs(node: onnx.NodeProto) -> dict[str, Any]:
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def _constant_value(node: onnx.NodeProto) -> np.ndarray:
    at = _attrs(node)
    if "value" in at:
        return numpy_helper.to_array(at["value"])
    for key, dtype in (("value_float", np.float32), ("value_int", np.int64)):
        if key in at:
            return np.array(at[key], dtype)
    for key, dtype in (("value_floats", np.float32), ("value_ints", np.int64)):
        if key in at:
            return np.array(list(at[key]), dtype)
    raise GraphRefused(f"Constant node '{node.name or node.output[0]}' without a tensor value")


def _shapes(model: onnx.ModelProto) -> dict[str, tuple[int, ...]]:
    inferred = onnx.shape_inference.infer_shapes(model, data_prop=True)  # shapes computed from constant shapes
    found: dict[str, tuple[int, ...]] = {}
    for v in [*inferred.graph.input, *inferred.graph.value_info, *inferred.graph.output]:
        t = v.type.tensor_type
        if t.HasField("shape") and all(d.HasField("dim_value") for d in t.shape.dim):
            found[v.name] = tuple(int(d.dim_value) for d in t.shape.dim)
    for t in model.graph.initializer:
        found[t.name] = tuple(t.dims)
    return found


def _fold_integers(model: onnx.ModelProto, constants: dict[str, np.ndarray],
                   shapes: dict[str, tuple[int, ...]]) -> set[int]:
    """Indices of the nodes whose outputs are exact integers computable from constants and static shapes, or
    data movement of constants; their values are added to `constants` (onnx.reference, node by node)."""
    from onnx.reference import ReferenceEvaluator

    folded: set[int] = set()
    for index, node in enumerate(model.graph.node):
        if node.op_type == "Constant":
            continue
        if node.op_type == "Shape" and node.input[0] in shapes:
            at = _attrs(node)
            dims = np.array(shapes[node.input[0]], np.int64)
            constants[node.output[0]] = dims[int(at.get("start", 0)):at.get("end")]
            folded.add(index)
            continue
        if not node.input or not all(name == "" or name in constants for name in node.input):
            continue
        if node.op_type not in EXACT_MOVES and not all(np.asarray(constants[n]).dtype.kind in "iub"
                                                       for n in node.input if n):
            continue
        feeds = {n: constants[n] for n in node.input if n}
        graph = onnx.helper.make_graph(
            [node], "fold", [onnx.helper.make_tensor_value_info(n, onnx.helper.np_dtype_to_tensor_dtype(
                np.asarray(v).dtype), list(np.shape(v))) for n, v in feeds.items()],
            [onnx.helper.make_tensor_value_info(n, onnx.TensorProto.UNDEFINED, None) for n in node.output])
        mini = onnx.helper.make_model(graph, opset_imports=list(model.opset_import))
        values = ReferenceEvaluator(mini).run(None, feeds)
        for name, value in zip(node.output, values):
            constants[name] = np.asarray(value)
        folded.add(index)
    return folded


class _Builder:
    """Primitive operations emitted for one composite node."""

    def __init__(self, graph: Graph, node: onnx.NodeProto) -> None:
        self.graph, self.node = graph, node
        self.origin = node.name or node.output[0]
        self.count = 0

    def name(self, hint: str) -> str:
        self.count += 1
        return f"{self.origin}::{hint}{self.count}"

    def const(self, value: np.ndarray, hint: str = "c") -> str:
        name = self.name(hint)
        self.graph.constants[name] = np.asarray(value)
        self.graph.shapes[name] = tuple(np.shape(value))
        return name

    def real(self, value: float, make: Callable[[Any], Any], hint: str = "r") -> str:
        name = self.name(hint)
        self.graph.reals[name] = RealConstant(name, float(value), make)
        self.graph.shapes[name] = ()
        return name

    def op(self, op_type: str, inputs: list[str], out: str | None = None, **attrs: Any) -> str:
        target = out or self.name(op_type.lower())
        self.graph.ops.append(Op(op_type, target, list(inputs), [target], attrs, self.origin, self.node.op_type))
        return target


def _layer_norm(b: _Builder, node: onnx.NodeProto, rank: int) -> None:
    """ONNX's function body (the exporter's steps): mean, E[x^2] - mean^2, sqrt(+ eps), (x - mean) / std * scale + B."""
    at = _attrs(node)
    if int(at.get("stash_type", 1)) != 1:
        raise GraphRefused(f"LayerNormalization stash_type {at['stash_type']} (node '{b.origin}')")
    axis = int(at.get("axis", -1)) % rank
    axes = list(range(axis, rank))
    eps = float(np.float32(at.get("epsilon", 1e-5)))
    x = node.input[0]
    mean = b.op("ReduceMean", [x], node.output[1] if len(node.output) > 1 and node.output[1] else None,
                axes=axes, keepdims=1)
    square = b.op("Mul", [x, x])
    mean_square = b.op("ReduceMean", [square], axes=axes, keepdims=1)
    square_mean = b.op("Mul", [mean, mean])
    variance = b.op("Sub", [mean_square, square_mean])
    shifted = b.op("Add", [variance, b.const(np.array(eps, np.float32), "eps")])
    std = b.op("Sqrt", [shifted])
    if len(node.output) > 2 and node.output[2]:
        b.op("Div", [b.const(np.array(1.0, np.float32), "one"), std], node.output[2])
    normed = b.op("Div", [b.op("Sub", [x, mean]), std])
    has_bias = len(node.input) > 2 and node.input[2]
    scaled = b.op("Mul", [normed, node.input[1]], None if has_bias else node.output[0])
    if has_bias:
        b.op("Add", [scaled, node.input[2]], node.output[0])


def _gelu(b: _Builder, node: onnx.NodeProto) -> None:
    """0.5 x (1 + erf(x / sqrt 2)), or 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))) (ONNX's definition,
    the constants as real numbers)."""
    mode = _attrs(node).get("approximate", b"none")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    x = node.input[0]
    if mode == "none":
        inner = b.op("Mul", [x, b.real(1 / np.sqrt(2.0), lambda f: 1 / f.arb(2).sqrt(), "inv_sqrt2")])
        phi = b.op("Erf", [inner])
    elif mode == "tanh":
        cube = b.op("Mul", [b.op("Mul", [x, x]), x])
        total = b.op("Add", [x, b.op("Mul", [cube, b.real(0.044715, lambda f: f.arb("0.044715"), "c0")])])
        inner = b.op("Mul", [total, b.real(np.sqrt(2 / np.pi), lambda f: (2 / f.arb.pi()).sqrt(), "sqrt2pi")])
        phi = b.op("Tanh", [inner])
    else:
        raise GraphRefused(f"Gelu approximate '{mode}' (node '{b.origin}')")
    half = b.op("Mul", [x, b.const(np.array(0.5, np.float32), "half")])
    b.op("Mul", [half, b.op("Add", [phi, b.const(np.array(1.0, np.float32), "one")])], node.output[0])


def _lrn(b: _Builder, node: onnx.NodeProto, shape: tuple[int, ...]) -> None:
    """x / (bias + alpha / size * S)^beta, S the sum of x^2 over the channels [c - floor((size-1)/2),
    c + ceil((size-1)/2)] (a 1x1 convolution with a 0/1 band: exact sums)."""
    at = _attrs(node)
    size = int(at["size"])
    alpha, beta, bias = (float(np.float32(at.get(k, d))) for k, d in (("alpha", 1e-4), ("beta", 0.75), ("bias", 1.0)))
    channels = shape[1]
    lo, hi = (size - 1) // 2, size - 1 - (size - 1) // 2
    band = np.zeros((channels, channels) + (1,) * (len(shape) - 2), np.float32)
    for c in range(channels):
        band[(c, slice(max(0, c - lo), min(channels, c + hi + 1)))] = 1.0
    x = node.input[0]
    square = b.op("Mul", [x, x])
    window = b.op("Conv", [square, b.const(band, "band")], kernel_shape=[1] * (len(shape) - 2))
    scaled = b.op("Mul", [window, b.real(alpha / size, lambda f, a=alpha, s=size: f.arb(a) / s, "alpha_size")])
    base = b.op("Add", [scaled, b.const(np.array(bias, np.float32), "bias")])
    power = b.op("Pow", [base, b.const(np.array(beta, np.float32), "beta")])
    b.op("Div", [x, power], node.output[0])


def _recurrent(b: _Builder, node: onnx.NodeProto, graph: Graph) -> None:
    """GRU (gates z, r, h) and LSTM (i, o, f, c) unrolled over the static sequence, ONNX's equations with the
    default activations; refused: clip, input_forget, other activations, sequence_lens shorter than the
    sequence, layouts other than 0 and 1."""
    at = _attrs(node)
    kind = node.op_type
    defaults = {"GRU": ["Sigmoid", "Tanh"], "LSTM": ["Sigmoid", "Tanh", "Tanh"]}[kind]
    direction = at.get("direction", b"forward")
    direction = direction.decode() if isinstance(direction, bytes) else direction
    directions = {"forward": ["forward"], "reverse": ["reverse"], "bidirectional": ["forward", "reverse"]}.get(direction)
    activations = [a.decode() if isinstance(a, bytes) else a for a in at.get("activations", []) or []]
    layout = int(at.get("layout", 0))
    if (directions is None or "clip" in at or int(at.get("input_forget", 0)) or layout not in (0, 1)
            or (activations and activations != defaults * len(directions))
            or "activation_alpha" in at or "activation_beta" in at):
        raise GraphRefused(f"{kind} with clip, input_forget, other activations, layout or direction "
                           f"(node '{b.origin}')")
    x_shape = graph.shapes[node.input[0]]
    seq, batch, _ = (x_shape[1], x_shape[0], x_shape[2]) if layout else x_shape
    w, r = graph.constants.get(node.input[1]), graph.constants.get(node.input[2])
    if w is None or r is None:
        raise GraphRefused(f"{kind} with computed weights (node '{b.origin}')")
    hidden = int(at.get("hidden_size", 0)) or r.shape[-1]
    bias = graph.constants.get(node.input[3]) if len(node.input) > 3 and node.input[3] else None
    if len(node.input) > 4 and node.input[4]:
        lengths = graph.constants.get(node.input[4])
        if lengths is None or any(int(n) != seq for n in np.ravel(lengths)):
            raise GraphRefused(f"{kind} with sequence_lens other than the full length (node '{b.origin}')")
    peephole = graph.constants.get(node.input[7]) if kind == "LSTM" and len(node.input) > 7 and node.input[7] else None
    time_axis = 1 if layout else 0
    steps: dict[int, str] = {}

    def step_input(t: int) -> str:
        if t not in steps:
            part = b.op("Slice", [node.input[0], b.const(np.array([t])), b.const(np.array([t + 1])),
                                  b.const(np.array([time_axis]))])
            steps[t] = b.op("Squeeze", [part, b.const(np.array([time_axis]))])
        return steps[t]

    def state(index: int, d: int) -> str:
        if len(node.input) <= index or not node.input[index]:
            return b.const(np.zeros((batch, hidden), np.float32), "zero_state")
        axis = 1 if layout else 0
        part = b.op("Slice", [node.input[index], b.const(np.array([d])), b.const(np.array([d + 1])),
                              b.const(np.array([axis]))])
        return b.op("Squeeze", [part, b.const(np.array([axis]))])

    def linear(v: str, matrix: np.ndarray, offset: np.ndarray | None) -> str:
        inputs = [v, b.const(np.ascontiguousarray(matrix), "w")]
        if offset is not None:
            inputs.append(b.const(np.ascontiguousarray(offset), "b"))
        return b.op("Gemm", inputs, transB=1)

    count = w.shape[1]
    sequences, finals_h, finals_c = [], [], []
    for d, dname in enumerate(directions):
        def rows(g: int) -> slice:
            return slice(g * hidden, (g + 1) * hidden)

        def pre(v: str, h: str, g: int) -> str:
            wb = bias[d, rows(g)] if bias is not None else None
            rb = bias[d, count + rows(g).start:count + rows(g).stop] if bias is not None else None
            return b.op("Add", [linear(v, w[d, rows(g)], wb), linear(h, r[d, rows(g)], rb)])

        h = state(5, d)
        c = state(6, d) if kind == "LSTM" else ""
        hs: dict[int, str] = {}
        times = range(seq) if dname == "forward" else range(seq - 1, -1, -1)
        for t in times:
            v = step_input(t)
            if kind == "GRU":
                z = b.op("Sigmoid", [pre(v, h, 0)])
                rr = b.op("Sigmoid", [pre(v, h, 1)])
                wb = bias[d, rows(2)] if bias is not None else None
                rb = bias[d, count + 2 * hidden:count + 3 * hidden] if bias is not None else None
                xw = linear(v, w[d, rows(2)], wb)
                if int(at.get("linear_before_reset", 0)):
                    hr = b.op("Mul", [rr, linear(h, r[d, rows(2)], rb)])
                else:
                    hr = linear(b.op("Mul", [rr, h]), r[d, rows(2)], rb)
                n = b.op("Tanh", [b.op("Add", [xw, hr])])
                keep = b.op("Mul", [b.op("Sub", [b.const(np.array(1.0, np.float32), "one"), z]), n])
                h = b.op("Add", [keep, b.op("Mul", [z, h])])
            else:
                def gate(g: int, k: int | None, cell: str) -> str:
                    total = pre(v, h, g)
                    if peephole is not None and k is not None:
                        p = b.const(np.ascontiguousarray(peephole[d, k * hidden:(k + 1) * hidden]), "p")
                        total = b.op("Add", [total, b.op("Mul", [p, cell])])
                    return b.op("Sigmoid", [total])

                i, f = gate(0, 0, c), gate(2, 2, c)
                g_ = b.op("Tanh", [pre(v, h, 3)])
                c = b.op("Add", [b.op("Mul", [f, c]), b.op("Mul", [i, g_])])
                o = gate(1, 1, c)
                h = b.op("Mul", [o, b.op("Tanh", [c])])
            hs[t] = h
        sequences.append([hs[t] for t in range(seq)])
        finals_h.append(h)
        finals_c.append(c)
    dir_axis = 2 if layout else 1
    if len(node.output) > 0 and node.output[0]:
        per_time = []
        for t in range(seq):
            parts = [b.op("Unsqueeze", [hs_[t], b.const(np.array(sorted([time_axis, dir_axis])))]) for hs_ in sequences]
            per_time.append(parts[0] if len(parts) == 1 else b.op("Concat", parts, axis=dir_axis))
        b.op("Concat", per_time, node.output[0], axis=time_axis) if len(per_time) > 1 else \
            b.op("Identity", per_time, node.output[0])
    state_axis = 1 if layout else 0
    for index, states in ((1, finals_h), (2, finals_c)):
        if len(node.output) > index and node.output[index]:
            parts = [b.op("Unsqueeze", [s, b.const(np.array([state_axis]))]) for s in states]
            if len(parts) == 1:
                b.op("Identity", parts, node.output[index])
            else:
                b.op("Concat", parts, node.output[index], axis=state_axis)


COMPOSITE = ("LayerNormalization", "Gelu", "LRN", "GRU", "LSTM")


def prepare(model: onnx.ModelProto) -> Graph:
    """The model as primitive operations (module docstring); GraphRefused on what has no rule."""
    opset = max((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), default=13)
    constants: dict[str, np.ndarray] = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    for node in model.graph.node:
        if node.op_type == "Constant":
            constants[node.output[0]] = _constant_value(node)
    shapes = _shapes(model)
    for name, value in constants.items():
        shapes[name] = tuple(np.shape(value))
    folded = _fold_integers(model, constants, shapes)
    initializers = {t.name for t in model.graph.initializer}
    graph = Graph([], constants, {}, [v.name for v in model.graph.input if v.name not in initializers],
                  [v.name for v in model.graph.output], shapes, opset)
    for index, node in enumerate(model.graph.node):
        if index in folded or node.op_type == "Constant":
            continue
        if node.domain not in ("", "ai.onnx"):
            raise GraphRefused(f"operator {node.domain}.{node.op_type} (node '{node.name or node.output[0]}')")
        b = _Builder(graph, node)
        if node.op_type == "LayerNormalization":
            _layer_norm(b, node, len(shapes[node.input[0]]))
        elif node.op_type == "Gelu":
            _gelu(b, node)
        elif node.op_type == "LRN":
            _lrn(b, node, shapes[node.input[0]])
        elif node.op_type in ("GRU", "LSTM"):
            _recurrent(b, node, graph)
        else:
            graph.ops.append(Op(node.op_type, node.name or node.output[0], list(node.input), list(node.output),
                                _attrs(node), node.name or node.output[0], node.op_type))
    for index, op in enumerate(graph.ops):
        for name in op.inputs:
            graph.consumers.setdefault(name, []).append(index)
    return graph

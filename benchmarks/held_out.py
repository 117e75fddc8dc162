"""The held-out networks of issue 41 (the error bound must discriminate on them too), built with onnx.helper
at fixed seeds or read from the repository:

    resnet18         benchmarks/bench_models.py (64x64, ResNet-18 layout, BN folded)
    efficientnet_b0  benchmarks/big_models.py (64x64, MBConv with SiLU and SE, 1,000 classes)
    mobilenet_v3     MobileNetV3-Small's layout here (64x64: HardSwish, SE gates with HardSigmoid, depthwise)
    vit              a vision transformer here (64x64, 8x8 patches, a class token, 4 encoder layers of width 64,
                     4 heads, LayerNormalization, exact Gelu)
    transformer      torch's TransformerEncoderLayer, exported by tests/networks/data/make_transformers.py
    lstm             a bidirectional LSTM with peepholes (sequence 16, input 32, hidden 48) and a Gemm head

Random weights (He-normal or 1/sqrt(fan-in)), biases small: the bound's quality does not depend on training,
and nobody's trained weights are needed. `held_out()` -> {name: (model, input name -> (shape, low, high))}.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from benchmarks import bench_models, big_models

ROOT = Path(__file__).resolve().parents[1]
SIDE = 64


class _Builder:
    def __init__(self, seed: int) -> None:
        self.rng = np.random.RandomState(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.inits: dict[str, np.ndarray] = {}
        self.count = 0

    def name(self, hint: str) -> str:
        self.count += 1
        return f"{hint}_{self.count}"

    def node(self, op: str, inputs: list[str], **attrs) -> str:
        out = self.name(op.lower())
        self.nodes.append(helper.make_node(op, inputs, [out], name=out, **attrs))
        return out

    def const(self, value: np.ndarray, hint: str = "c") -> str:
        name = self.name(hint)
        self.inits[name] = np.asarray(value)
        return name

    def weight(self, shape: tuple[int, ...], fan_in: int, gain: float = 2.0) -> str:
        return self.const((self.rng.standard_normal(shape) * np.sqrt(gain / fan_in)).astype(np.float32), "w")

    def bias(self, n: int) -> str:
        return self.const(self.rng.uniform(-0.1, 0.1, n).astype(np.float32), "b")

    def model(self, name: str, inputs: dict[str, list[int]], output: str, opset: int) -> onnx.ModelProto:
        graph = helper.make_graph(self.nodes, name,
                                  [helper.make_tensor_value_info(k, TensorProto.FLOAT, v) for k, v in inputs.items()],
                                  [helper.make_tensor_value_info(output, TensorProto.FLOAT, None)],
                                  [numpy_helper.from_array(v, k) for k, v in self.inits.items()])
        model = helper.make_model(graph, ir_version=10, opset_imports=[helper.make_opsetid("", opset)])
        inferred = onnx.shape_inference.infer_shapes(model)  # the export wants the output's shape
        model.graph.output[0].CopyFrom(inferred.graph.output[0])
        return model


# MobileNetV3-Small: (kernel, expanded, out, SE, activation, stride)
MOBILENET_V3_SMALL = [(3, 16, 16, True, "RE", 2), (3, 72, 24, False, "RE", 2), (3, 88, 24, False, "RE", 1),
                      (5, 96, 40, True, "HS", 2), (5, 240, 40, True, "HS", 1), (5, 240, 40, True, "HS", 1),
                      (5, 120, 48, True, "HS", 1), (5, 144, 48, True, "HS", 1), (5, 288, 96, True, "HS", 2),
                      (5, 576, 96, True, "HS", 1), (5, 576, 96, True, "HS", 1)]


def mobilenet_v3() -> onnx.ModelProto:
    b = _Builder(411)

    def conv(x: str, cin: int, cout: int, k: int = 1, stride: int = 1, group: int = 1) -> str:
        return b.node("Conv", [x, b.weight((cout, cin // group, k, k), cin // group * k * k), b.bias(cout)],
                      kernel_shape=[k, k], strides=[stride, stride], pads=[k // 2] * 4, group=group)

    def act(x: str, kind: str) -> str:
        return b.node("HardSwish", [x]) if kind == "HS" else b.node("Relu", [x])

    x = act(conv("input", 3, 16, 3, 2), "HS")
    cin = 16
    for k, expanded, cout, se, kind, stride in MOBILENET_V3_SMALL:
        y = act(conv(x, cin, expanded), kind) if expanded != cin else x
        y = act(conv(y, expanded, expanded, k, stride, expanded), kind)
        if se:
            squeeze = max(8, expanded // 4)
            g = b.node("GlobalAveragePool", [y])
            g = b.node("Relu", [conv(g, expanded, squeeze)])
            g = b.node("HardSigmoid", [conv(g, squeeze, expanded)], alpha=1.0 / 6, beta=0.5)
            y = b.node("Mul", [y, g])
        y = conv(y, expanded, cout)
        x = b.node("Add", [y, x]) if stride == 1 and cin == cout else y
        cin = cout
    x = act(conv(x, cin, 576), "HS")
    x = b.node("Flatten", [b.node("GlobalAveragePool", [x])], axis=1)
    x = b.node("HardSwish", [b.node("Gemm", [x, b.weight((1024, 576), 576), b.bias(1024)], transB=1)])
    out = b.node("Gemm", [x, b.weight((1000, 1024), 1024, 1.0), b.bias(1000)], transB=1)
    return b.model("mobilenet_v3", {"input": [1, 3, SIDE, SIDE]}, out, 14)


def vit(layers: int = 4, width: int = 64, heads: int = 4, patch: int = 8, classes: int = 10) -> onnx.ModelProto:
    b = _Builder(412)
    tokens = (SIDE // patch) ** 2
    dh = width // heads
    x = b.node("Conv", ["input", b.weight((width, 3, patch, patch), 3 * patch * patch, 1.0), b.bias(width)],
               kernel_shape=[patch, patch], strides=[patch, patch])
    x = b.node("Transpose", [b.node("Reshape", [x, b.const(np.array([1, width, tokens]))])], perm=[0, 2, 1])
    cls = b.const((b.rng.standard_normal((1, 1, width)) * 0.02).astype(np.float32), "cls")
    x = b.node("Concat", [cls, x], axis=1)
    x = b.node("Add", [x, b.const((b.rng.standard_normal((1, tokens + 1, width)) * 0.02).astype(np.float32), "pos")])

    def norm(v: str) -> str:
        return b.node("LayerNormalization", [v, b.const(np.ones(width, np.float32)), b.const(np.zeros(width, np.float32))],
                      axis=-1, epsilon=1e-6)

    def linear(v: str, n_in: int, n_out: int) -> str:
        return b.node("Add", [b.node("MatMul", [v, b.weight((n_in, n_out), n_in, 1.0)]), b.bias(n_out)])

    split = b.const(np.array([1, tokens + 1, heads, dh]))
    scale = b.const(np.array(1.0 / np.sqrt(dh), np.float32))
    for _ in range(layers):
        h = norm(x)
        q, k, v = (b.node("Transpose", [b.node("Reshape", [linear(h, width, width), split])], perm=[0, 2, 1, 3])
                   for _ in range(3))
        scores = b.node("Mul", [b.node("MatMul", [q, b.node("Transpose", [k], perm=[0, 1, 3, 2])]), scale])
        attended = b.node("MatMul", [b.node("Softmax", [scores], axis=-1), v])
        merged = b.node("Reshape", [b.node("Transpose", [attended], perm=[0, 2, 1, 3]),
                                    b.const(np.array([1, tokens + 1, width]))])
        x = b.node("Add", [x, linear(merged, width, width)])
        h = b.node("Gelu", [linear(norm(x), width, 2 * width)])
        x = b.node("Add", [x, linear(h, 2 * width, width)])
    first = b.node("Gather", [norm(x), b.const(np.array(0))], axis=1)
    out = b.node("Gemm", [first, b.weight((classes, width), width, 1.0), b.bias(classes)], transB=1)
    return b.model("vit", {"input": [1, 3, SIDE, SIDE]}, out, 20)


def lstm(seq: int = 16, inputs: int = 32, hidden: int = 48) -> onnx.ModelProto:
    b = _Builder(413)
    w = (b.rng.standard_normal((2, 4 * hidden, inputs)) / np.sqrt(inputs)).astype(np.float32)
    r = (b.rng.standard_normal((2, 4 * hidden, hidden)) / np.sqrt(hidden)).astype(np.float32)
    bias = b.rng.uniform(-0.1, 0.1, (2, 8 * hidden)).astype(np.float32)
    peep = b.rng.uniform(-0.1, 0.1, (2, 3 * hidden)).astype(np.float32)
    names = [b.const(v, k) for k, v in (("W", w), ("R", r), ("B", bias))]
    out = b.name("lstm")
    b.nodes.append(helper.make_node("LSTM", ["x"] + names + ["", "", "", b.const(peep, "P")], [out, "", ""],
                                    name=out, hidden_size=hidden, direction="bidirectional"))
    flat = b.node("Reshape", [out, b.const(np.array([1, -1]))])
    head = b.node("Gemm", [flat, b.weight((10, seq * 2 * hidden), seq * 2 * hidden, 1.0), b.bias(10)], transB=1)
    return b.model("lstm", {"x": [seq, 1, inputs]}, head, 14)


def held_out() -> dict[str, tuple[onnx.ModelProto, dict[str, tuple[tuple[int, ...], float, float]]]]:
    image = {"input": ((1, 3, SIDE, SIDE), -1.0, 1.0)}
    transformer = onnx.load(str(ROOT / "tests" / "networks" / "data" / "transformer_gelu_opset14.onnx"))
    t_inputs = {i.name: (tuple(d.dim_value for d in i.type.tensor_type.shape.dim), -2.0, 2.0)
                for i in transformer.graph.input if i.name not in {t.name for t in transformer.graph.initializer}}
    return {"resnet18": (bench_models.resnet18().model("resnet18"), image),
            "efficientnet_b0": (big_models.efficientnet_b0().model("efficientnet_b0"), image),
            "mobilenet_v3": (mobilenet_v3(), image),
            "vit": (vit(), image),
            "transformer": (transformer, t_inputs),
            "lstm": (lstm(), {"x": ((16, 1, 32), -1.0, 1.0)})}

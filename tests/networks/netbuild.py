"""Small ONNX networks written here with onnx.helper, each the smallest shape of a defect or a
feature of issue 29 (the networks nobody here wrote showed them first; see docs/export.md)."""

from __future__ import annotations

from typing import Sequence

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

IR_VERSION = 10  # onnxruntime 1.31 refuses the IR version 14 make_model writes by default


def model(nodes: list[onnx.NodeProto], inputs: dict[str, Sequence[int]], outputs: dict[str, Sequence[int]],
          weights: dict[str, np.ndarray], opset: int = 17, name: str = "net") -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes, name, [helper.make_tensor_value_info(k, TensorProto.FLOAT, list(s)) for k, s in inputs.items()],
        [helper.make_tensor_value_info(k, TensorProto.FLOAT, list(s)) for k, s in outputs.items()],
        [numpy_helper.from_array(np.asarray(v), k) for k, v in weights.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=IR_VERSION)


def normal(rng: np.random.Generator, *shape: int, scale: float = 0.3) -> np.ndarray:
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def conv_pool_linear(pool: str = "MaxPool", ceil_mode: int = 1, pads: Sequence[int] = (0, 0, 0, 0),
                     seed: int = 1) -> onnx.ModelProto:
    """Conv 3 -> 8 (3x3) + Relu + a 3x3 stride-2 pool (ceil_mode pads only at the end) + Flatten + Gemm:
    googlenet's pooling in 4 KB."""
    rng = np.random.default_rng(seed)
    h = 14 + pads[0] + pads[2]
    w = 14 + pads[1] + pads[3]
    out = [(n - 3 + (1 if ceil_mode else 0)) // 2 + 1 for n in (h, w)]
    attrs = {"kernel_shape": [3, 3], "strides": [2, 2], "pads": list(pads), "ceil_mode": ceil_mode}
    if pool == "AveragePool":
        attrs["count_include_pad"] = 0
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[3, 3]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node(pool, ["r"], ["p"], **attrs),
             helper.make_node("Flatten", ["p"], ["f"]),
             helper.make_node("Gemm", ["f", "fc", "fb"], ["y"], transB=1)]
    features = 8 * out[0] * out[1]
    return model(nodes, {"x": [1, 3, 16, 16]}, {"y": [1, 10]},
                 {"w": normal(rng, 8, 3, 3, 3), "b": normal(rng, 8), "fc": normal(rng, 10, features, scale=0.1),
                  "fb": normal(rng, 10)})


def end_padded_pool(pads: Sequence[int] = (0, 1, 1, 1), pool: str = "MaxPool") -> onnx.ModelProto:
    """A pool whose first axis is padded only at its end: the CUDA max_pool once read `in2` undeclared."""
    out = [(7 + pads[0] + pads[2] - 3) // 2 + 1, (6 + pads[1] + pads[3] - 3) // 2 + 1]
    attrs = {"kernel_shape": [3, 3], "strides": [2, 2], "pads": list(pads)}
    return model([helper.make_node(pool, ["x"], ["y"], **attrs)], {"x": [1, 2, 7, 6]}, {"y": [1, 2] + out}, {})


def constant_weight_mlp(seed: int = 2) -> onnx.ModelProto:
    """The MLP as skl2onnx writes it: Cast(to = FLOAT) of the float input, MatMul with constant weights,
    Add, Relu, MatMul, Add, Softmax."""
    rng = np.random.default_rng(seed)
    nodes = [helper.make_node("Cast", ["x"], ["xc"], to=TensorProto.FLOAT),
             helper.make_node("MatMul", ["xc", "W1"], ["h"]), helper.make_node("Add", ["h", "b1"], ["hb"]),
             helper.make_node("Relu", ["hb"], ["hr"]), helper.make_node("MatMul", ["hr", "W2"], ["o"]),
             helper.make_node("Add", ["o", "b2"], ["ob"]), helper.make_node("Softmax", ["ob"], ["y"], axis=1)]
    return model(nodes, {"x": [2, 8]}, {"y": [2, 3]},
                 {"W1": normal(rng, 8, 16), "b1": normal(rng, 16), "W2": normal(rng, 16, 3), "b2": normal(rng, 3)},
                 opset=13)


def wide_conv(channels: int = 64, size: int = 32, seed: int = 3) -> onnx.ModelProto:
    """Two 3x3 convolutions over `channels` channels at size x size (ResNet-18's stage-1 shape, smaller):
    rows of every channel overflow L1, so the C kernel runs the reduction in passes over channels."""
    rng = np.random.default_rng(seed)
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1])]
    scale = float(np.sqrt(2.0 / (9 * channels)))
    return model(nodes, {"x": [1, channels, size, size]}, {"y": [1, channels, size, size]},
                 {"w1": normal(rng, channels, channels, 3, 3, scale=scale), "b1": normal(rng, channels),
                  "w2": normal(rng, channels, channels, 3, 3, scale=scale)})


def fp16_cancellation(seed: int = 5) -> onnx.ModelProto:
    """A network FP16 storage cannot carry (issue 38): conv `big` writes values near 1000 (the binary16
    spacing there is 0.5), conv `back` subtracts 1000 again, and the small difference reaches the output
    with the rounding of the large value; `head` after it is harmless. In float32 all is well; on a DLA
    `big`, `bigrelu` and `back` must move to a float32 item (the layers FP16 must not hold)."""
    rng = np.random.default_rng(seed)
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["big"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["big"], ["bigrelu"]),
             helper.make_node("Conv", ["bigrelu", "w2", "b2"], ["back"], kernel_shape=[1, 1]),
             helper.make_node("Relu", ["back"], ["backrelu"]),
             helper.make_node("Conv", ["backrelu", "w3", "b3"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1])]
    return model(nodes, {"x": [1, 1, 8, 8]}, {"y": [1, 2, 8, 8]},
                 {"w1": normal(rng, 4, 1, 3, 3, scale=1.0), "b1": np.full(4, 1000.0, np.float32),
                  "w2": np.eye(4, dtype=np.float32).reshape(4, 4, 1, 1), "b2": np.full(4, -998.0, np.float32),
                  "w3": normal(rng, 2, 4, 3, 3, scale=0.5), "b3": normal(rng, 2)})

"""The 10-200 MMAC models of the codegen speed table (issue 13), built with onnx.helper at fixed seeds.

    plaincnn   3x64x64, six 3x3 convolutions 32-128 channels, max pools, Gemm        (~155 MMAC)
    mobilenet  3x64x64, MobileNet-v1 style: stride-2 stem, depthwise 3x3 + pointwise 1x1 pairs (~21 MMAC)
    resnet18   3x64x64, ResNet-18 layout (7x7/2 stem, max pool, 4 stages of 2 basic blocks,
               64-512 channels, 1x1/2 projections), batch normalisation folded into the convolutions (~148 MMAC)

Weights are He-normal from numpy RandomState(seed) (stream-stable), biases uniform(-0.1, 0.1);
no training (the speed of a convolution does not depend on its values, and bit-exactness is judged on
the same random weights). `write_model(name, folder)` writes folder/model.onnx and folder/deploy.yaml
(one `single` cpu deployment), the shape the pipeline's export and split steps read.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SIDE = 64
CLASSES = 10
IR_VERSION = 10  # onnxruntime 1.31 refuses newer IR versions
OPSET = 13


class _Net:
    def __init__(self, seed: int) -> None:
        self.rng = np.random.RandomState(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.inits: dict[str, np.ndarray] = {}
        self.macs = 0
        self.classes = CLASSES

    def node(self, op: str, inputs: list[str], out: str, **attrs) -> str:
        self.nodes.append(helper.make_node(op, inputs, [out], name=out, **attrs))
        return out

    def conv(self, x: str, out: str, cin: int, cout: int, side_out: int, k: int = 3, stride: int = 1,
             group: int = 1) -> str:
        fan_in = cin // group * k * k
        self.inits[f"{out}_weight"] = (self.rng.standard_normal((cout, cin // group, k, k))
                                       * np.sqrt(2.0 / fan_in)).astype(np.float32)
        self.inits[f"{out}_bias"] = self.rng.uniform(-0.1, 0.1, cout).astype(np.float32)
        self.macs += cout * side_out * side_out * fan_in
        return self.node("Conv", [x, f"{out}_weight", f"{out}_bias"], out, kernel_shape=[k, k],
                         strides=[stride, stride], pads=[k // 2] * 4, group=group)

    def relu(self, x: str) -> str:
        return self.node("Relu", [x], f"{x}_relu")

    def head(self, x: str, channels: int) -> str:
        flat = self.node("Flatten", [self.node("GlobalAveragePool", [x], "pool")], "flat", axis=1)
        self.inits["fc_weight"] = (self.rng.standard_normal((self.classes, channels)) / np.sqrt(channels)).astype(np.float32)
        self.inits["fc_bias"] = self.rng.uniform(-0.1, 0.1, self.classes).astype(np.float32)
        self.macs += self.classes * channels
        return self.node("Gemm", [flat, "fc_weight", "fc_bias"], "logits", transB=1)

    def model(self, name: str) -> onnx.ModelProto:
        graph = helper.make_graph(
            self.nodes, name, [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, SIDE, SIDE])],
            [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, self.classes])],
            initializer=[numpy_helper.from_array(v, k) for k, v in self.inits.items()])
        model = helper.make_model(graph, ir_version=IR_VERSION, opset_imports=[helper.make_opsetid("", OPSET)],
                                  producer_name="nncert benchmarks/bench_models.py")
        onnx.checker.check_model(model, full_check=True)
        return model


def plaincnn() -> _Net:
    n = _Net(seed=131)
    x, side = "input", SIDE
    for stage, (cin, cout) in enumerate([(3, 32), (32, 64), (64, 128)]):
        x = n.relu(n.conv(x, f"s{stage}_a", cin, cout, side))
        x = n.relu(n.conv(x, f"s{stage}_b", cout, cout, side))
        x = n.node("MaxPool", [x], f"s{stage}_pool", kernel_shape=[2, 2], strides=[2, 2])
        side //= 2
    n.head(x, 128)
    return n


def mobilenet() -> _Net:
    n = _Net(seed=132)
    side = SIDE // 2
    x = n.relu(n.conv("input", "stem", 3, 32, side, stride=2))
    plan = [(32, 64, 1), (64, 128, 2), (128, 128, 1), (128, 256, 2), (256, 256, 1), (256, 256, 1)]
    for i, (cin, cout, stride) in enumerate(plan):
        side //= stride
        x = n.relu(n.conv(x, f"b{i}_dw", cin, cin, side, stride=stride, group=cin))
        x = n.relu(n.conv(x, f"b{i}_pw", cin, cout, side, k=1))
    n.head(x, 256)
    return n


def resnet18() -> _Net:
    n = _Net(seed=133)
    x = n.relu(n.conv("input", "stem", 3, 64, SIDE // 2, k=7, stride=2))
    x = n.node("MaxPool", [x], "stem_pool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    side, cin = SIDE // 4, 64
    for stage, cout in enumerate([64, 128, 256, 512]):
        for block in range(2):
            stride = 2 if stage and not block else 1
            side //= stride
            p = f"l{stage + 1}_{block}"
            y = n.relu(n.conv(x, f"{p}_conv1", cin, cout, side, stride=stride))
            y = n.conv(y, f"{p}_conv2", cout, cout, side)
            shortcut = n.conv(x, f"{p}_proj", cin, cout, side, k=1, stride=stride) if stride != 1 or cin != cout else x
            x = n.relu(n.node("Add", [y, shortcut], f"{p}_add"))
            cin = cout
    n.head(x, 512)
    return n


BUILDERS = {"plaincnn": plaincnn, "mobilenet": mobilenet, "resnet18": resnet18}

DEPLOY = """schema_version: 1
model: {name}
description: benchmark model built by benchmarks/bench_models.py (random weights)
inputs:
  input:
    shape: [1, 3, {side}, {side}]
    distribution: {{kind: uniform, low: -1.0, high: 1.0}}
validation:
  vectors: 4
  seed: 1234
  tolerance:
    max_abs_error: 1.0e-3
    max_rel_error: null
deployments:
  single:
    items: [{{name: CPU0, target: cpu}}]
    default_item: CPU0
    sync: event
met:
  runs: 20
  budget_us: 1000000
"""


def macs(name: str) -> int:
    """Multiply-accumulates of one inference (convolutions and the classifier)."""
    return BUILDERS[name]().macs


def write_model(name: str, folder: Path) -> int:
    """folder/model.onnx and folder/deploy.yaml of benchmark model `name`; returns its MACs."""
    net = BUILDERS[name]()
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "model.onnx").write_bytes(net.model(name).SerializeToString(deterministic=True))
    (folder / "deploy.yaml").write_text(DEPLOY.format(name=name, side=SIDE))
    return net.macs


"""Build models/mbconv/model.onnx: a small MobileNetV3 / EfficientNet-style network (issue 15).

Needs only numpy and onnx (the project's environment); run from the repository root:

    .venv/bin/python models/mbconv/build.py                 # writes models/mbconv/model.onnx
    .venv/bin/python models/mbconv/build.py --out /tmp/m.onnx

The constructs real mobile networks use, on a 1x3x32x32 input (README.md has the table):
a stride-2 stem with HardSwish; inverted-residual (MBConv) blocks made of a 1x1 expansion,
a 3x3 depthwise convolution (group = channels), squeeze-excitation (GlobalAveragePool, two
1x1 convolutions, a Sigmoid or HardSigmoid gate, Mul) and a linear 1x1 projection, with
SiLU (x * Sigmoid(x), as torch exports it at opset 14) or HardSwish activations and
residual Adds; a channel shuffle between two blocks written the way torch exports it at
opset 13/14 (Shape -> Gather -> Div -> Unsqueeze -> Concat -> Reshape -> Transpose -> Reshape,
which the exporter folds); two SE layers sharing their fc2 bias initializer (torch's
exporter de-duplicates equal parameters that way); a 1x1 head, GlobalAveragePool, Gemm.
Batch normalisation is folded into the convolutions (random weights, no statistics to
calibrate). Weights: numpy RandomState(SEED) (stream-stable across NumPy versions), drawn
in node order: kernels He-normal (std sqrt(2 / fan_in), fan_in = input channels per group
x kh x kw), biases uniform(-0.1, 0.1), the classifier normal with std sqrt(1 / 64).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "_tools"))

import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import onnxtools  # noqa: E402

SEED = 15
OPSET = 14  # HardSwish is an ONNX operator from opset 14
SIDE = 32
CLASSES = 10


class Builder:
    """Nodes and initializers in order; every node is named after its output."""

    def __init__(self, rng: np.random.RandomState) -> None:
        self.rng = rng
        self.nodes: list[onnx.NodeProto] = []
        self.inits: dict[str, np.ndarray] = {}

    def node(self, op: str, inputs: list[str], output: str, **attrs) -> str:
        self.nodes.append(helper.make_node(op, inputs, [output], name=output, **attrs))
        return output

    def const(self, name: str, values: list[int] | int) -> str:
        shape = [len(values)] if isinstance(values, list) else []
        data = values if isinstance(values, list) else [values]
        return self.node("Constant", [], name, value=helper.make_tensor(name, TensorProto.INT64, shape, data))

    def conv(self, x: str, out: str, cin: int, cout: int, k: int = 1, stride: int = 1, group: int = 1,
             bias: str | None = None) -> str:
        fan_in = cin // group * k * k
        w = f"{out}_weight"
        self.inits[w] = (self.rng.standard_normal((cout, cin // group, k, k)) * np.sqrt(2.0 / fan_in)).astype(np.float32)
        if bias is None:
            bias = f"{out}_bias"
            self.inits[bias] = self.rng.uniform(-0.1, 0.1, cout).astype(np.float32)
        pad = k // 2
        return self.node("Conv", [x, w, bias], out, kernel_shape=[k, k], strides=[stride, stride],
                         pads=[pad] * 4, dilations=[1, 1], group=group)

    def silu(self, x: str, out: str) -> str:
        return self.node("Mul", [x, self.node("Sigmoid", [x], f"{out}_sigmoid")], out)

    def squeeze_excitation(self, x: str, out: str, channels: int, reduced: int, gate: str,
                           fc2_bias: str | None = None) -> str:
        pooled = self.node("GlobalAveragePool", [x], f"{out}_pool")
        fc1 = self.conv(pooled, f"{out}_fc1", channels, reduced)
        act = self.silu(fc1, f"{out}_act") if gate == "Sigmoid" else self.node("Relu", [fc1], f"{out}_act")
        fc2 = self.conv(act, f"{out}_fc2", reduced, channels, bias=fc2_bias)
        scale = self.node(gate, [fc2], f"{out}_gate")
        return self.node("Mul", [x, scale], out)

    def channel_shuffle(self, x: str, out: str, groups: int) -> str:
        """torch's channel_shuffle as its exporter writes it (shape read back from the data)."""
        shape = self.node("Shape", [x], f"{out}_shape")
        dims = [self.node("Gather", [shape, self.const(f"{out}_i{i}", i)], f"{out}_d{i}", axis=0) for i in range(4)]
        g = self.const(f"{out}_groups", groups)
        per_group = self.node("Div", [dims[1], g], f"{out}_per_group")
        axes = self.const(f"{out}_axes", [0])
        n, cpg, h, w = (self.node("Unsqueeze", [v, axes], f"{out}_u{i}")
                        for i, v in enumerate([dims[0], per_group, dims[2], dims[3]]))
        gg = self.const(f"{out}_groups1", [groups])
        grouped = self.node("Reshape", [x, self.node("Concat", [n, gg, cpg, h, w], f"{out}_shape5", axis=0)],
                            f"{out}_grouped")
        swapped = self.node("Transpose", [grouped], f"{out}_swapped", perm=[0, 2, 1, 3, 4])
        flat = self.node("Concat", [n, self.const(f"{out}_minus1", [-1]), h, w], f"{out}_shape4", axis=0)
        return self.node("Reshape", [swapped, flat], out)


def build() -> onnx.ModelProto:
    b = Builder(np.random.RandomState(SEED))
    x = b.node("HardSwish", [b.conv("input", "stem", 3, 16, k=3, stride=2)], "stem_act")        # 16 x 16 x 16
    # block 1: depthwise 3x3, SiLU, SE (sigmoid gate), projection, residual
    y = b.silu(b.conv(x, "b1_dw", 16, 16, k=3, group=16), "b1_dw_act")
    y = b.squeeze_excitation(y, "b1_se", 16, 4, "Sigmoid")
    x = b.node("Add", [x, b.conv(y, "b1_project", 16, 16)], "b1_out")
    x = b.channel_shuffle(x, "shuffle", 2)
    # block 2: expand x3 with HardSwish, depthwise stride 2, SE (HardSigmoid gate), projection
    y = b.node("HardSwish", [b.conv(x, "b2_expand", 16, 48)], "b2_expand_act")
    y = b.node("HardSwish", [b.conv(y, "b2_dw", 48, 48, k=3, stride=2, group=48)], "b2_dw_act")  # 8 x 8
    y = b.squeeze_excitation(y, "b2_se", 48, 12, "HardSigmoid")
    x = b.conv(y, "b2_project", 48, 24)
    # blocks 3 and 4: expand x3 with SiLU, depthwise, SE sharing the fc2 bias, projection, residual
    for block in (3, 4):
        p = f"b{block}"
        y = b.silu(b.conv(x, f"{p}_expand", 24, 72), f"{p}_expand_act")
        y = b.silu(b.conv(y, f"{p}_dw", 72, 72, k=3, group=72), f"{p}_dw_act")
        y = b.squeeze_excitation(y, f"{p}_se", 72, 18, "Sigmoid", fc2_bias=None if block == 3 else "b3_se_fc2_bias")
        x = b.node("Add", [x, b.conv(y, f"{p}_project", 72, 24)], f"{p}_out")
    x = b.node("HardSwish", [b.conv(x, "head", 24, 64)], "head_act")
    x = b.node("Flatten", [b.node("GlobalAveragePool", [x], "head_pool")], "head_flat", axis=1)
    b.inits["fc_weight"] = (b.rng.standard_normal((CLASSES, 64)) * np.sqrt(1.0 / 64)).astype(np.float32)
    b.inits["fc_bias"] = b.rng.uniform(-0.1, 0.1, CLASSES).astype(np.float32)
    b.node("Gemm", [x, "fc_weight", "fc_bias"], "logits", alpha=1.0, beta=1.0, transA=0, transB=1)
    graph = helper.make_graph(
        b.nodes, "mbconv",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, SIDE, SIDE])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, CLASSES])],
        initializer=[numpy_helper.from_array(v, k) for k, v in b.inits.items()],
    )
    model = helper.make_model(graph, ir_version=onnxtools.IR_VERSION, opset_imports=[helper.make_opsetid("", OPSET)])
    return onnxtools.finalize(model, node_namer=lambda n: n.output[0], producer_name="nncert-models mbconv/build.py",
                              producer_version="1", opset=OPSET)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=HERE / "model.onnx")
    args = ap.parse_args(argv)
    model = build()
    digest = onnxtools.write_model(model, args.out)
    print(json.dumps({
        "model_sha256": digest,
        "model_bytes": args.out.stat().st_size,
        "parameters": onnxtools.count_parameters(model),
        "nodes": len(model.graph.node),
        "operators": sorted({n.op_type for n in model.graph.node}),
    }, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

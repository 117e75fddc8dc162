"""Build models/branch3/model.onnx: the paper's three-branch example network.

Needs only numpy and onnx (the project's environment); run from the repository root:

    .venv/bin/python models/branch3/build.py                 # writes models/branch3/model.onnx
    .venv/bin/python models/branch3/build.py --out /tmp/b3.onnx

The network of the paper's worked example (docs/design.md, "The multi-item extension"), its tensor names:

    e1 = input [1, 1, 16, 16]
    o1 = conv(e1, v1, v2)        1 -> 4 channels
    o2 = conv(o1, v3, v4)        4 -> 4
    o3 = conv(o2, v5, v6)        4 -> 4
    o4 = conv(o1, v7, v8)        4 -> 4
    o5 = conv(o4, v5, v6)        4 -> 4   (v5, v6 shared with o3: same initializers)
    o6 = concat([o3, o5], axis 1)         [1, 8, 16, 16]
    o7 = flatten(o6) -> [1, 2048]         (ONNX Flatten axis 1 = NNEF reshape [1, -1])
    out = Gemm(o7, v9, v10, transB=1)     [1, 10]  (= NNEF linear)

Every conv is 3x3, stride 1, dilation 1, padding 1 on each border, with bias; no
activation (as in the paper). Weights: numpy RandomState(SEED) (stream-stable across NumPy
versions), He-normal kernels (std = sqrt(2 / fan_in)) and uniform(-0.1, 0.1) biases,
float32, drawn in the order v1..v10.
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

SEED = 3
C = 4  # channels of every convolution
H = W = 16
CLASSES = 10


def parameters(rng: np.random.RandomState) -> dict[str, np.ndarray]:
    def kernel(cout: int, cin: int) -> np.ndarray:
        std = np.sqrt(2.0 / (cin * 3 * 3))
        return (rng.standard_normal((cout, cin, 3, 3)) * std).astype(np.float32)

    def bias(n: int) -> np.ndarray:
        return rng.uniform(-0.1, 0.1, n).astype(np.float32)

    p: dict[str, np.ndarray] = {}
    p["v1"], p["v2"] = kernel(C, 1), bias(C)
    p["v3"], p["v4"] = kernel(C, C), bias(C)
    p["v5"], p["v6"] = kernel(C, C), bias(C)
    p["v7"], p["v8"] = kernel(C, C), bias(C)
    fan_in = 2 * C * H * W
    p["v9"] = (rng.standard_normal((CLASSES, fan_in)) * np.sqrt(1.0 / fan_in)).astype(np.float32)
    p["v10"] = bias(CLASSES)
    return p


def build() -> onnx.ModelProto:
    p = parameters(np.random.RandomState(SEED))

    def conv(x: str, w: str, b: str, out: str) -> onnx.NodeProto:
        return helper.make_node(
            "Conv", [x, w, b], [out], name=out,
            kernel_shape=[3, 3], strides=[1, 1], dilations=[1, 1], pads=[1, 1, 1, 1], group=1,
        )

    nodes = [
        conv("e1", "v1", "v2", "o1"),
        conv("o1", "v3", "v4", "o2"),
        conv("o2", "v5", "v6", "o3"),
        conv("o1", "v7", "v8", "o4"),
        conv("o4", "v5", "v6", "o5"),
        helper.make_node("Concat", ["o3", "o5"], ["o6"], name="o6", axis=1),
        helper.make_node("Flatten", ["o6"], ["o7"], name="o7", axis=1),
        helper.make_node("Gemm", ["o7", "v9", "v10"], ["out"], name="out",
                         alpha=1.0, beta=1.0, transA=0, transB=1),
    ]
    graph = helper.make_graph(
        nodes, "branch3",
        [helper.make_tensor_value_info("e1", TensorProto.FLOAT, [1, 1, H, W])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, CLASSES])],
        initializer=[numpy_helper.from_array(p[f"v{i}"], f"v{i}") for i in range(1, 11)],
    )
    model = helper.make_model(graph, ir_version=onnxtools.IR_VERSION,
                              opset_imports=[helper.make_opsetid("", onnxtools.OPSET)])
    return onnxtools.finalize(model, node_namer=lambda n: n.output[0],
                              producer_name="nncert-models branch3/build.py",
                              producer_version="1")


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
        "nodes": [f"{n.output[0]} = {n.op_type}({', '.join(n.input)})" for n in model.graph.node],
    }, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

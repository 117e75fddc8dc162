"""Two 5 M-parameter ImageNet networks at 64x64, built with onnx.helper at fixed seeds (issue 29).

    efficientnet_b0  torchvision's efficientnet_b0 layout: stem 3x3/2, 16 MBConv blocks (expansion 1x1,
                     depthwise 3x3 or 5x5, squeeze-and-excitation, projection 1x1, residual adds), SiLU
                     as x * sigmoid(x), head 1x1 to 1,280, pool, 1,000 classes (5.29 M parameters)
    regnet_x_400mf   torchvision's regnet_x_400mf layout: stem 3x3/2, 4 stages (widths 32, 64, 160,
                     400; depths 1, 2, 7, 12) of bottlenecks with 3x3 group convolutions of group
                     width 16 and 1x1 projections, pool, 1,000 classes (5.50 M parameters)

Batch normalisation is folded into the convolutions, as torch.onnx.export writes these networks in
eval mode; weights He-normal, biases uniform(-0.1, 0.1) (bench_models._Net). What the export costs
does not depend on trained values; torchvision itself is no dependency of the project.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from benchmarks import bench_models
from benchmarks.bench_models import SIDE, _Net

CLASSES = 1000


class _Big(_Net):
    """bench_models' builder with SiLU and a 1,000-class head."""

    def __init__(self, seed: int) -> None:
        super().__init__(seed)
        self.classes = CLASSES

    def silu(self, x: str) -> str:
        return self.node("Mul", [x, self.node("Sigmoid", [x], f"{x}_sigmoid")], f"{x}_silu")

    @property
    def parameters(self) -> int:
        return sum(int(v.size) for v in self.inits.values())


# efficientnet_b0: (expansion, kernel, stride, output channels, repeats) per stage
EFFICIENTNET_B0 = [(1, 3, 1, 16, 1), (6, 3, 2, 24, 2), (6, 5, 2, 40, 2), (6, 3, 2, 80, 3), (6, 5, 1, 112, 3),
                   (6, 5, 2, 192, 4), (6, 3, 1, 320, 1)]


def efficientnet_b0() -> _Big:
    n = _Big(seed=291)
    side = SIDE // 2
    x, cin = n.silu(n.conv("input", "stem", 3, 32, side, stride=2)), 32
    block = 0
    for expansion, k, stride, cout, repeats in EFFICIENTNET_B0:
        for r in range(repeats):
            s = stride if r == 0 else 1
            side = -(-side // s)
            p = f"b{block}"
            hidden = cin * expansion
            y = n.silu(n.conv(x, f"{p}_expand", cin, hidden, side * s, k=1)) if expansion != 1 else x
            y = n.silu(n.conv(y, f"{p}_dw", hidden, hidden, side, k=k, stride=s, group=hidden))
            squeeze = max(1, cin // 4)
            pooled = n.node("GlobalAveragePool", [y], f"{p}_se_pool")
            gate = n.silu(n.conv(pooled, f"{p}_se_reduce", hidden, squeeze, 1, k=1))
            gate = n.node("Sigmoid", [n.conv(gate, f"{p}_se_expand", squeeze, hidden, 1, k=1)], f"{p}_se_gate")
            y = n.node("Mul", [y, gate], f"{p}_se")
            y = n.conv(y, f"{p}_project", hidden, cout, side, k=1)
            x = n.node("Add", [y, x], f"{p}_add") if s == 1 and cin == cout else y
            cin = cout
            block += 1
    x = n.silu(n.conv(x, "head", cin, 1280, side, k=1))
    n.head(x, 1280)
    return n


# regnet_x_400mf: (width, depth) per stage, group width 16, bottleneck ratio 1
REGNET_X_400MF = [(32, 1), (64, 2), (160, 7), (400, 12)]


def regnet_x_400mf() -> _Big:
    n = _Big(seed=292)
    side = SIDE // 2
    x, cin = n.relu(n.conv("input", "stem", 3, 32, side, stride=2)), 32
    for stage, (width, depth) in enumerate(REGNET_X_400MF):
        for b in range(depth):
            stride = 2 if b == 0 else 1
            side //= stride
            p = f"s{stage + 1}_b{b}"
            y = n.relu(n.conv(x, f"{p}_a", cin, width, side * stride, k=1))
            y = n.relu(n.conv(y, f"{p}_b", width, width, side, stride=stride, group=width // 16))
            y = n.conv(y, f"{p}_c", width, width, side, k=1)
            n.inits[f"{p}_c_weight"] *= np.float32(0.25)  # a small residual branch: activations stay O(1)
            shortcut = n.conv(x, f"{p}_proj", cin, width, side, k=1, stride=stride) if stride != 1 or cin != width else x
            x = n.relu(n.node("Add", [y, shortcut], f"{p}_add"))
            cin = width
    n.head(x, cin)
    return n


BUILDERS = {"efficientnet_b0": efficientnet_b0, "regnet_x_400mf": regnet_x_400mf}

# bench_models' deploy.yaml with 100 validation vectors (what an export of a real network validates on)
DEPLOY = bench_models.DEPLOY.replace("vectors: 4", "vectors: 100").replace(
    "benchmark model built by benchmarks/bench_models.py", "5 M-parameter benchmark network built by benchmarks/big_models.py")
assert "vectors: 100" in DEPLOY and "big_models.py" in DEPLOY


def write_model(name: str, folder: Path) -> int:
    """folder/model.onnx and folder/deploy.yaml (100 validation vectors) of `name`; returns its parameters."""
    net = BUILDERS[name]()
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "model.onnx").write_bytes(net.model(name).SerializeToString(deterministic=True))
    (folder / "deploy.yaml").write_text(DEPLOY.format(name=name, side=SIDE))
    return net.parameters

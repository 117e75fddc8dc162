"""Train a ResNet-8 on scikit-learn's digits (32x32, 3 replicated channels) and export
models/resnet8/model.onnx, keeping the BatchNormalization nodes.

Optional tool: not imported by the `pipeline` package or the tests; torch is not a project
dependency. Run it from the repository root in a separate virtual environment:

    python3 -m venv /tmp/torchenv
    /tmp/torchenv/bin/pip install torch==2.13.0 onnx==1.23.2 onnxruntime==1.31.1 \
        numpy==2.4.6 scikit-learn==1.9.1
    /tmp/torchenv/bin/python models/resnet8/train.py          # writes models/resnet8/model.onnx

Architecture (8 weighted layers: stem conv, 3 x 2 block convs, fc; plus two 1x1 projection
shortcuts): input 1x3x32x32; stem conv 3x3 16 (pad 1) + BN + relu; stage s1: basic block
16->16 stride 1 with identity shortcut; s2: 16->32 stride 2 with a 1x1/2 conv + BN projection
shortcut; s3: 32->64 stride 2, projection; each block is conv3x3-BN-relu-conv3x3-BN, Add with
the shortcut, relu. Then GlobalAveragePool, Flatten, Gemm 64->10 (logits, no softmax).
Convolutions followed by BN have no bias (as in the ResNet paper).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "_tools"))

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

import onnxtools  # noqa: E402
import torchtrain  # noqa: E402

SEED = 0
EPOCHS = 8
BATCH_SIZE = 32
LR = 2e-3
# Opset 15, not 13: onnx.reference evaluates BatchNormalization-9 (opsets 9-13) with batch
# statistics (see onnxtools.strip_batchnorm_momentum); BatchNormalization-15 is unambiguous.
OPSET = 15


class BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.relu1 = nn.ReLU()
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.relu2 = nn.ReLU()
        self.has_proj = stride != 1 or cin != cout
        if self.has_proj:
            self.proj = nn.Conv2d(cin, cout, 1, stride, 0, bias=False)
            self.proj_bn = nn.BatchNorm2d(cout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.bn2(self.conv2(self.relu1(self.bn1(self.conv1(x)))))
        s = self.proj_bn(self.proj(x)) if self.has_proj else x
        return self.relu2(y + s)  # the Add is named <stage>_add


class ResNet8(nn.Module):
    def __init__(self, channels: tuple[int, int, int] = (16, 32, 64), classes: int = 10) -> None:
        super().__init__()
        c1, c2, c3 = channels
        self.stem_conv = nn.Conv2d(3, c1, 3, 1, 1, bias=False)
        self.stem_bn = nn.BatchNorm2d(c1)
        self.stem_relu = nn.ReLU()
        self.s1 = BasicBlock(c1, c1, 1)
        self.s2 = BasicBlock(c1, c2, 2)
        self.s3 = BasicBlock(c2, c3, 2)
        self.gap = nn.AdaptiveAvgPool2d(1)
        self.flatten = nn.Flatten(1)
        self.fc = nn.Linear(c3, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stem_relu(self.stem_bn(self.stem_conv(x)))
        x = self.s3(self.s2(self.s1(x)))
        return self.fc(self.flatten(self.gap(x)))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=HERE / "model.onnx")
    args = ap.parse_args(argv)

    torchtrain.make_deterministic(SEED)
    data = onnxtools.digits32(channels=3)
    model = ResNet8()
    history = torchtrain.train(model, data, epochs=EPOCHS, batch_size=BATCH_SIZE, lr=LR,
                               log=lambda s: print(s, file=sys.stderr))
    exported = torchtrain.export_legacy(model, (1, 3, 32, 32), input_name="input",
                                        output_name="logits", keep_batchnorm=True,
                                        opset=OPSET)
    shipped = onnxtools.finalize(exported, node_namer=torchtrain.scope_namer(model),
                                 producer_name="pytorch", producer_version=torch.__version__,
                                 opset=OPSET)
    digest = onnxtools.write_model(shipped, args.out)
    print(json.dumps(torchtrain.summary(model, shipped, args.out, digest, data, history,
                                        "input"), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

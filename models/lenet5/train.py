"""Train LeNet-5 on scikit-learn's digits (padded to 32x32) and export models/lenet5/model.onnx.

Optional tool: not imported by the `pipeline` package or the tests; torch is not a project
dependency. Run it from the repository root in a separate virtual environment:

    python3 -m venv /tmp/torchenv
    /tmp/torchenv/bin/pip install torch==2.13.0 onnx==1.23.2 onnxruntime==1.31.1 \
        numpy==2.4.6 scikit-learn==1.9.1
    /tmp/torchenv/bin/python models/lenet5/train.py            # writes models/lenet5/model.onnx
    /tmp/torchenv/bin/python models/lenet5/train.py --out /tmp/lenet5.onnx   # elsewhere

Everything is seeded (torch seed 0, shuffle seed 1, split seed 0) and training runs on one
thread with deterministic kernels; see README.md beside this file for the provenance and
for what a re-run reproduces.

Architecture (the paper's LeNet-5): input 1x1x32x32; conv 6@5x5 (no padding) -> relu ->
max_pool 2x2/2 -> conv 16@5x5 -> relu -> max_pool 2x2/2 -> flatten to 400 -> Gemm 400-120
-> relu -> Gemm 120-84 -> relu -> Gemm 84-10 -> softmax. The network is trained on the
logits (cross-entropy); the exported graph ends with the softmax.
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
EPOCHS = 30
BATCH_SIZE = 32
LR = 1e-3


class LeNet5(nn.Module):
    """Attribute names become ONNX tensor names: conv1, relu1, pool1, ..., fc3, prob."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5)
        self.relu1 = nn.ReLU()
        self.pool1 = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.relu2 = nn.ReLU()
        self.pool2 = nn.MaxPool2d(2, 2)
        self.flatten = nn.Flatten(1)
        self.fc1 = nn.Linear(400, 120)
        self.relu3 = nn.ReLU()
        self.fc2 = nn.Linear(120, 84)
        self.relu4 = nn.ReLU()
        self.fc3 = nn.Linear(84, 10)
        self.prob = nn.Softmax(dim=1)
        self.with_softmax = False  # training uses the logits

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool1(self.relu1(self.conv1(x)))
        x = self.pool2(self.relu2(self.conv2(x)))
        x = self.flatten(x)
        x = self.relu3(self.fc1(x))
        x = self.relu4(self.fc2(x))
        x = self.fc3(x)
        return self.prob(x) if self.with_softmax else x


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=HERE / "model.onnx")
    args = ap.parse_args(argv)

    torchtrain.make_deterministic(SEED)
    data = onnxtools.digits32(channels=1)
    model = LeNet5()
    history = torchtrain.train(model, data, epochs=EPOCHS, batch_size=BATCH_SIZE, lr=LR,
                               log=lambda s: print(s, file=sys.stderr))

    model.with_softmax = True
    exported = torchtrain.export_legacy(model, (1, 1, 32, 32), input_name="input",
                                        output_name="prob")
    shipped = onnxtools.finalize(exported, node_namer=torchtrain.scope_namer(model),
                                 producer_name="pytorch",
                                 producer_version=torch.__version__)
    digest = onnxtools.write_model(shipped, args.out)

    print(json.dumps(torchtrain.summary(model, shipped, args.out, digest, data, history,
                                        "input"), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

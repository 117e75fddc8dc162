"""Train a small Inception-style network on scikit-learn's digits (32x32, one channel) and
export models/inception/model.onnx.

Optional tool: not imported by the `pipeline` package or the tests; torch is not a project
dependency. Run it from the repository root in a separate virtual environment:

    python3 -m venv /tmp/torchenv
    /tmp/torchenv/bin/pip install torch==2.13.0 onnx==1.23.2 onnxruntime==1.31.1 \
        numpy==2.4.6 scikit-learn==1.9.1
    /tmp/torchenv/bin/python models/inception/train.py        # writes models/inception/model.onnx

Architecture: input 1x1x32x32;
  stem: TF/Keras-style "same" conv 3x3 stride 2, 1->16: pad 0 top/left and 1 bottom/right
        (asymmetric; written F.pad + conv in torch, folded into the Conv's pads [0,0,1,1] in
        the ONNX), relu -> 16x16x16;
  inc1: inception module (four parallel branches, concatenated on channels) -> 32x16x16;
  pool1: AveragePool 2x2 stride 2 -> 32x8x8;
  inc2 -> 48x8x8;  inc3 -> 64x8x8;
  head: GlobalAveragePool, Flatten, Gemm 64->10, Softmax.
Inception module (as in GoogLeNet, without the auxiliary heads):
  b1: conv 1x1 -> relu
  b2: conv 1x1 (reduce) -> relu -> conv 3x3 pad 1 -> relu
  b3: conv 1x1 (reduce) -> relu -> conv 5x5 pad 2 -> relu
  b4: max_pool 3x3 stride 1 pad 1 -> conv 1x1 -> relu
  concat [b1, b2, b3, b4] on axis 1.
The network is trained on the logits; the exported graph ends with the softmax.
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
import torch.nn.functional as F  # noqa: E402

import onnxtools  # noqa: E402
import torchtrain  # noqa: E402

SEED = 0
EPOCHS = 30
BATCH_SIZE = 32
LR = 3e-3

# (in, b1 1x1, b2 reduce, b2 3x3, b3 reduce, b3 5x5, b4 pool-proj) -> out = b1+b2+b3+b4
MODULES = {
    "inc1": (16, 8, 8, 12, 4, 6, 6),  # -> 32
    "inc2": (32, 12, 12, 20, 4, 8, 8),  # -> 48
    "inc3": (48, 16, 16, 24, 6, 12, 12),  # -> 64
}


class InceptionModule(nn.Module):
    def __init__(self, cin: int, c1: int, c3r: int, c3: int, c5r: int, c5: int, cp: int) -> None:
        super().__init__()
        self.b1_conv = nn.Conv2d(cin, c1, 1)
        self.b1_relu = nn.ReLU()
        self.b2_reduce = nn.Conv2d(cin, c3r, 1)
        self.b2_relu1 = nn.ReLU()
        self.b2_conv = nn.Conv2d(c3r, c3, 3, padding=1)
        self.b2_relu2 = nn.ReLU()
        self.b3_reduce = nn.Conv2d(cin, c5r, 1)
        self.b3_relu1 = nn.ReLU()
        self.b3_conv = nn.Conv2d(c5r, c5, 5, padding=2)
        self.b3_relu2 = nn.ReLU()
        self.b4_pool = nn.MaxPool2d(3, stride=1, padding=1)
        self.b4_conv = nn.Conv2d(cin, cp, 1)
        self.b4_relu = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b1 = self.b1_relu(self.b1_conv(x))
        b2 = self.b2_relu2(self.b2_conv(self.b2_relu1(self.b2_reduce(x))))
        b3 = self.b3_relu2(self.b3_conv(self.b3_relu1(self.b3_reduce(x))))
        b4 = self.b4_relu(self.b4_conv(self.b4_pool(x)))
        return torch.cat([b1, b2, b3, b4], dim=1)  # named <module>_concat


class Inception(nn.Module):
    def __init__(self, classes: int = 10) -> None:
        super().__init__()
        self.stem_conv = nn.Conv2d(1, 16, 3, stride=2)
        self.stem_relu = nn.ReLU()
        self.inc1 = InceptionModule(*MODULES["inc1"])
        self.pool1 = nn.AvgPool2d(2, stride=2)
        self.inc2 = InceptionModule(*MODULES["inc2"])
        self.inc3 = InceptionModule(*MODULES["inc3"])
        self.gap = nn.AdaptiveAvgPool2d(1)
        self.flatten = nn.Flatten(1)
        self.fc = nn.Linear(64, classes)
        self.prob = nn.Softmax(dim=1)
        self.with_softmax = False  # training uses the logits

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # "same" padding for a stride-2 3x3 conv on 32x32: total 1, all at bottom/right.
        x = self.stem_relu(self.stem_conv(F.pad(x, (0, 1, 0, 1))))
        x = self.inc3(self.inc2(self.pool1(self.inc1(x))))
        x = self.fc(self.flatten(self.gap(x)))
        return self.prob(x) if self.with_softmax else x


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=HERE / "model.onnx")
    args = ap.parse_args(argv)

    torchtrain.make_deterministic(SEED)
    data = onnxtools.digits32(channels=1)
    model = Inception()
    history = torchtrain.train(model, data, epochs=EPOCHS, batch_size=BATCH_SIZE, lr=LR,
                               log=lambda s: print(s, file=sys.stderr))
    model.with_softmax = True
    exported = torchtrain.export_legacy(model, (1, 1, 32, 32), input_name="input",
                                        output_name="prob")
    shipped = onnxtools.finalize(exported, node_namer=torchtrain.scope_namer(model),
                                 producer_name="pytorch", producer_version=torch.__version__)
    digest = onnxtools.write_model(shipped, args.out)
    print(json.dumps(torchtrain.summary(model, shipped, args.out, digest, data, history,
                                        "input"), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

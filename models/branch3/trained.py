"""Write models/branch3/trained.npz: the network computed by torch, the trained model's own reference.

Optional tool, like lenet5/train.py: torch is not a project dependency. Run it from the repository root
in a virtual environment that has torch (`pip install torch==2.13.0`):

    python models/branch3/trained.py                # writes models/branch3/trained.npz

branch3's weights are not trained: build.py draws them from numpy's RandomState(3). This script is the
model in a training framework: the paper's network written as torch modules (not read from model.onnx),
its parameters drawn by build.py's own `parameters`, run in evaluation mode on 8 vectors of deploy.yaml's
input distribution (uniform [0, 1), numpy seed 38). The export's check export.trained_model compares
onnxruntime on model.onnx and the reference semantics on the export with these outputs
(docs/trained-reference.md): a defect of build.py's ONNX writing (a transposed Gemm, a swapped shared
weight) would fail it, while every other check compares with model.onnx.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402

import build  # noqa: E402

VECTORS = 8


class Branch3(nn.Module):
    """o1 = conv(e1); o2, o3 on one branch, o4, o5 on the other (o3 and o5 share v5, v6); concat, flatten, linear."""

    def __init__(self, p: dict[str, np.ndarray]) -> None:
        super().__init__()

        def conv(w: str, b: str) -> nn.Conv2d:
            layer = nn.Conv2d(p[w].shape[1], p[w].shape[0], 3, padding=1)
            layer.weight.data = torch.from_numpy(p[w])
            layer.bias.data = torch.from_numpy(p[b])
            return layer

        self.c1, self.c2, self.c3, self.c4 = conv("v1", "v2"), conv("v3", "v4"), conv("v5", "v6"), conv("v7", "v8")
        self.fc = nn.Linear(p["v9"].shape[1], p["v9"].shape[0])
        self.fc.weight.data, self.fc.bias.data = torch.from_numpy(p["v9"]), torch.from_numpy(p["v10"])

    def forward(self, e1: torch.Tensor) -> torch.Tensor:
        o1 = self.c1(e1)
        o3 = self.c3(self.c2(o1))
        o5 = self.c3(self.c4(o1))
        return self.fc(torch.flatten(torch.cat([o3, o5], dim=1), 1))


def main() -> int:
    torch.set_num_threads(1)
    model = Branch3(build.parameters(np.random.RandomState(build.SEED))).eval()
    inputs = np.random.default_rng(38).uniform(0.0, 1.0, (VECTORS, 1, 1, build.H, build.W)).astype(np.float32)
    with torch.no_grad():
        outputs = np.stack([model(torch.from_numpy(x)).numpy() for x in inputs]).astype(np.float32)
    np.savez(HERE / "trained.npz", **{"inputs/e1": inputs, "outputs/out": outputs,
                                      "framework": np.array("torch"), "framework_version": np.array(torch.__version__)})
    sys.stdout.write(f"wrote {HERE / 'trained.npz'}: {VECTORS} vectors, torch {torch.__version__}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

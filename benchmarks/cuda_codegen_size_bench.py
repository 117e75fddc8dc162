"""CUDA code generation + nvcc build time by parameter count: weights linked as binary vs text.

    python benchmarks/cuda_codegen_size_bench.py [--params 0.3e6 1e6 12e6 24e6] [--text-max 1.5e6]
                                                 [--channels 256] [--arch sm_90]

The synthetic ResNet-18-class stack of benchmarks/codegen_size_bench.py (3x3 convolutions of C
channels on an 8x8 map with ReLU) as one cuda item. For each size it times the CUDA generator
(`generate_cuda`) and the nvcc device build of the harness with the pinned flags (`device_build`
for one architecture: PTX, cubin with the ptxas report, and the linked executable: three nvcc
runs), once with the weights linked as a binary file (items above the C generator's
BLOB_MIN_FLOATS) and, up to --text-max parameters, once as hex-float initializers (the peer: the
same generator forced to text), and prints the ratio. Goal (issue 15): a 10-25 M parameter CUDA
item generates and compiles in seconds.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.codegen_size_bench import network  # noqa: E402
from pipeline.codegen.shared import contract as c_item  # noqa: E402
from pipeline.codegen.cuda.generate import generate_cuda  # noqa: E402
from pipeline.codegen.shared.deployment import load_deployment  # noqa: E402
from pipeline.nnef.tensorfile import write_tensor  # noqa: E402
from pipeline.toolchain.nvcc import device_build, nvcc_version  # noqa: E402
from tests.codegen_cuda.cudahelpers import ITEM, one_item  # noqa: E402


def measure(split: Path, out: Path, arch: str, linked: bool) -> tuple[float, float, int]:
    c_item.BLOB_MIN_FLOATS = (1 << 16) if linked else 1 << 62
    start = time.perf_counter()
    manifest = generate_cuda(load_deployment(split, split, split.parent), out)
    generated = time.perf_counter()
    device_build(out, out / manifest["main"], out / "build", archs=(arch,))
    built = time.perf_counter()
    size = sum(p.stat().st_size for p in (out / ITEM).glob("nnef_*") if p.suffix in (".cu", ".bin"))
    return generated - start, built - generated, size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--params", type=float, nargs="+", default=[0.3e6, 1e6, 12e6, 24e6])
    parser.add_argument("--text-max", type=float, default=1.5e6, help="largest count also measured as text")
    parser.add_argument("--channels", type=int, default=256)
    parser.add_argument("--arch", default="sm_90")
    args = parser.parse_args()
    print(f"nvcc: {nvcc_version()}; {args.channels} channels, 3x3, 8x8 map, {args.arch}")
    print()
    print("| parameters | layers | weights as | codegen s | nvcc s | total s | .cu + .bin MB | text / linked |")
    print("|---|---|---|---|---|---|---|---|")
    for target in args.params:
        per_layer = 9 * args.channels ** 2 + args.channels
        layers = max(1, round(target / per_layer))
        body, weights = network(layers, args.channels)
        params = layers * per_layer
        outputs = "y"
        text = (f"version 1.0;\n\ngraphitem {ITEM} g( x ) -> ( {outputs} )\n{{\n"
                + "\n".join(f"    {line}" for line in body.splitlines()) + "\n}\n")
        with tempfile.TemporaryDirectory() as tmp:
            split = one_item(Path(tmp) / "split", text)
            for label, value in weights.items():
                write_tensor(split / f"{label}.dat", value)
            linked = measure(split, Path(tmp) / "linked", args.arch, True)
            row = [f"{params / 1e6:.2f} M", str(layers)]
            print("| " + " | ".join(row + ["binary (.incbin)", f"{linked[0]:.1f}", f"{linked[1]:.1f}",
                                           f"{linked[0] + linked[1]:.1f}", f"{linked[2] / 1e6:.1f}", ""]) + " |", flush=True)
            if params <= args.text_max:
                texts = measure(split, Path(tmp) / "text", args.arch, False)
                ratio = (texts[0] + texts[1]) / (linked[0] + linked[1])
                print("| " + " | ".join(row + ["hex-float text", f"{texts[0]:.1f}", f"{texts[1]:.1f}",
                                               f"{texts[0] + texts[1]:.1f}", f"{texts[2] / 1e6:.1f}",
                                               f"{ratio:.1f}x"]) + " |", flush=True)


if __name__ == "__main__":
    main()

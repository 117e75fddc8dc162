"""Code generation + build time by parameter count: weights linked as binary vs C text.

    python benchmarks/codegen_size_bench.py [--params 1e6 4e6 12e6 24e6] [--text-max 1.5e6]
                                            [--channels 256] [--lanes 8]

A synthetic ResNet-18-class stack on one CPU item: 3x3 convolutions of C channels on an 8x8
map (9 C^2 parameters each) with ReLU, as many as the parameter count asks. For each size
it times the C generator (`generate_deployment`) and the build of the harness with the
qualified flags (`compile_and_link`), once with the parameters linked as a binary file (the
default for items above 65,536 floats) and, up to --text-max parameters, once as C
initializers (the peer: the same generator forced to text), and prints the ratio. Goals
(issue 15): a resnet18-class network (11.7 M) under 30 s, a 24 M network under 2 minutes.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pipeline.codegen.shared import contract as item_module  # noqa: E402
from pipeline.codegen.program.generate import generate_deployment  # noqa: E402
from pipeline.codegen.shared.deployment import load_deployment  # noqa: E402
from pipeline.toolchain.cc import compile_and_link, compiler_version  # noqa: E402
from tests.codegen.cghelpers import single_item  # noqa: E402

import json  # noqa: E402


def network(layers: int, channels: int) -> tuple[str, dict[str, np.ndarray]]:
    rng = np.random.default_rng(0)
    lines = [f"x = external<scalar>(shape = [1, {channels}, 8, 8]);"]
    weights: dict[str, np.ndarray] = {}
    previous = "x"
    for k in range(layers):
        lines.append(f"f{k} = variable<scalar>(shape = [{channels}, {channels}, 3, 3], label = 'f{k}');")
        lines.append(f"b{k} = variable<scalar>(shape = [1, {channels}], label = 'b{k}');")
        lines.append(f"c{k} = conv({previous}, f{k}, b{k}, border = 'constant', padding = [(1, 1), (1, 1)], "
                     "stride = [1, 1], dilation = [1, 1], groups = 1);")
        lines.append(f"r{k} = relu(c{k});")
        weights[f"f{k}"] = (rng.standard_normal((channels, channels, 3, 3)) / (3 * channels ** 0.5)).astype(np.float32)
        weights[f"b{k}"] = rng.standard_normal((1, channels)).astype(np.float32) * 0.01
        previous = f"r{k}"
    lines.append(f"y = copy({previous});")
    return "\n".join(lines), weights


def measure(split: Path, out: Path, lanes: int, linked: bool) -> tuple[float, float, int]:
    item_module.BLOB_MIN_FLOATS = (1 << 16) if linked else 1 << 62
    start = time.perf_counter()
    generate_deployment(load_deployment(split, split, split.parent), out, lanes=lanes)
    generated = time.perf_counter()
    manifest = json.loads((out / "build.json").read_text(encoding="utf-8"))
    compile_and_link(out, manifest["sources"], out / "nnef_run", lanes, timeout=3600)
    built = time.perf_counter()
    size = sum(p.stat().st_size for p in out.rglob("nnef_weights_*"))
    return generated - start, built - generated, size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--params", type=float, nargs="+", default=[1e6, 4e6, 12e6, 24e6])
    parser.add_argument("--text-max", type=float, default=1.5e6, help="largest count also measured as C text")
    parser.add_argument("--channels", type=int, default=256)
    parser.add_argument("--lanes", type=int, default=8)
    args = parser.parse_args()
    print(f"compiler: {compiler_version()}; {args.channels} channels, 3x3, 8x8 map, lanes {args.lanes}")
    print()
    print("| parameters | layers | weights as | codegen s | build s | total s | weight files MB | text / linked |")
    print("|---|---|---|---|---|---|---|---|")
    for target in args.params:
        per_layer = 9 * args.channels ** 2 + args.channels
        layers = max(1, round(target / per_layer))
        body, weights = network(layers, args.channels)
        params = layers * per_layer
        with tempfile.TemporaryDirectory() as tmp:
            split = single_item(Path(tmp) / "split", body, weights)
            linked = measure(split, Path(tmp) / "linked", args.lanes, True)
            row = [f"{params / 1e6:.1f} M", str(layers)]
            print("| " + " | ".join(row + ["binary (.incbin)", f"{linked[0]:.1f}", f"{linked[1]:.1f}",
                                           f"{linked[0] + linked[1]:.1f}", f"{linked[2] / 1e6:.1f}", ""]) + " |", flush=True)
            if params <= args.text_max:
                text = measure(split, Path(tmp) / "text", args.lanes, False)
                ratio = (text[0] + text[1]) / (linked[0] + linked[1])
                print("| " + " | ".join(row + ["C text", f"{text[0]:.1f}", f"{text[1]:.1f}", f"{text[0] + text[1]:.1f}",
                                               f"{text[2] / 1e6:.1f}", f"{ratio:.1f}x"]) + " |", flush=True)


if __name__ == "__main__":
    main()

"""Cost of the float64 yardstick and the error-bound pass against onnxruntime, on the shipped models.

    .venv/bin/python benchmarks/yardstick_bench.py [--models lenet5 ...] [--runs 10]

Per model, the median time of one vector (the deployment spec's first validation vector) in
onnxruntime (float32, one thread: the peer), in the yardstick (onnx.reference in float64,
pipeline.numerics.yardstick) and in both error-bound passes (pipeline.numerics.errorbound, ours and
onnxruntime's), their ratios to onnxruntime, and the export validation's extra time for
YARDSTICK_VECTORS vectors. Prints a table; writes nothing.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import onnx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pipeline.project.deploy import load_deploy  # noqa: E402
from pipeline.numerics.errorbound import ONNXRUNTIME, REFERENCE, ErrorBound  # noqa: E402
from pipeline.export.validate import YARDSTICK_VECTORS  # noqa: E402
from pipeline.project.layout import model_names  # noqa: E402
from pipeline.numerics.onnx_runner import reference_runner  # noqa: E402
from pipeline.numerics.vectors import draw_vectors  # noqa: E402
from pipeline.numerics.yardstick import Yardstick  # noqa: E402


def _median_ms(fn, runs: int) -> float:
    fn()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def bench(model: str, runs: int) -> dict[str, float]:
    proto = onnx.load(str(ROOT / "models" / model / "model.onnx"))
    spec = load_deploy(ROOT / "models" / model / "deploy.yaml")
    vector = draw_vectors(spec.inputs, 1, spec.validation.seed)[0]
    ort, yard = reference_runner(proto), Yardstick(proto)
    ours, theirs = ErrorBound(proto, REFERENCE), ErrorBound(proto, ONNXRUNTIME)
    result = {"onnxruntime": _median_ms(lambda: ort.run(vector), runs),
              "yardstick": _median_ms(lambda: yard.run(vector), runs),
              "bounds": _median_ms(lambda: (ours.run(vector), theirs.run(vector)), runs)}
    result["validation_extra_s"] = (result["yardstick"] + result["bounds"]) * YARDSTICK_VECTORS / 1e3
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="*", default=None)
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args(argv)
    rows = [["model", "onnxruntime ms", "yardstick ms", "ratio", "both bounds ms", "ratio",
             f"validation extra s ({YARDSTICK_VECTORS} vectors)"]]
    for model in args.models or model_names(ROOT):
        r = bench(model, args.runs)
        rows.append([model, f"{r['onnxruntime']:.3f}", f"{r['yardstick']:.1f}", f"{r['yardstick'] / r['onnxruntime']:.0f}x",
                     f"{r['bounds']:.1f}", f"{r['bounds'] / r['onnxruntime']:.0f}x", f"{r['validation_extra_s']:.1f}"])
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        sys.stdout.write("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

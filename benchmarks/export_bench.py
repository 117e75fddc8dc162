"""Export time, reference-interpreter time and onnxruntime time for the shipped models.

    .venv/bin/python benchmarks/export_bench.py [--models lenet5 ...] [--runs 20] [--repeat 3]

Per model: the export (ONNX -> NNEF in memory, with its self-check; best of `repeat`), then
the median time of one inference on the deployment spec's first validation vector in our
reference interpreter (pipeline.semantics) and in onnxruntime (one thread, CPU provider),
and their ratio. Prints a table; writes nothing.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import onnx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pipeline.project.deploy import load_deploy  # noqa: E402
from pipeline.export import convert  # noqa: E402
from pipeline.export.exporter import publish  # noqa: E402
from pipeline.numerics.onnx_runner import reference_runner  # noqa: E402
from pipeline.project.layout import model_names  # noqa: E402
from pipeline.nnef.checker import check_paths  # noqa: E402
from pipeline.semantics import interpret, load_variables  # noqa: E402
from pipeline.numerics.vectors import draw_vectors  # noqa: E402


def _median_ms(fn, runs: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def bench(model: str, runs: int, repeat: int) -> dict[str, float]:
    source = ROOT / "models" / model / "model.onnx"
    export_times = []
    for _ in range(repeat):
        start = time.perf_counter()
        result = convert(source)
        export_times.append(time.perf_counter() - start)
    spec = load_deploy(ROOT / "models" / model / "deploy.yaml")
    vector = draw_vectors(spec.inputs, 1, spec.validation.seed)[0]
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "export"
        publish(result.files, out)
        graph = check_paths([out], profile="standard").graphs[0]
        variables = load_variables(graph, out)
    feeds = {result.inputs[name]: value for name, value in vector.items()}
    ours = _median_ms(lambda: interpret(graph, feeds, variables), runs)
    runner = reference_runner(onnx.load(str(source)))
    theirs = _median_ms(lambda: runner.run(vector), max(runs, 50))
    return {"export_ms": min(export_times) * 1e3, "interpreter_ms": ours, "onnxruntime_ms": theirs,
            "operations": len(result.graph.operations)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="*", default=model_names(ROOT))
    parser.add_argument("--runs", type=int, default=20, help="inferences timed per model (median)")
    parser.add_argument("--repeat", type=int, default=3, help="exports timed per model (best)")
    args = parser.parse_args(argv)
    header = f"{'model':<10} {'NNEF ops':>8} {'export ms':>10} {'interp ms/inf':>14} {'ORT ms/inf':>11} {'ratio':>8}"
    print(header)
    print("-" * len(header))
    for model in args.models:
        r = bench(model, args.runs, args.repeat)
        ratio = r["interpreter_ms"] / r["onnxruntime_ms"]
        print(f"{model:<10} {r['operations']:>8} {r['export_ms']:>10.1f} {r['interpreter_ms']:>14.2f} "
              f"{r['onnxruntime_ms']:>11.3f} {ratio:>7.0f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Reference-interpreter speed against onnxruntime (one thread), measured in the same run (issue 13).

    .venv/bin/python benchmarks/interpreter_bench.py [--models lenet5 resnet18 ...] [--vectors 100]
        [--runs 5] [--profile]

Models: the shipped ones (models/*) and the 10-200 MMAC models of benchmarks/bench_models.py
(plaincnn, mobilenet, resnet18, built in memory). Per model: the multiply-accumulates of one
inference (conv, deconv, linear, matmul, from the checked graph's shapes); the interpreter's
time for one vector (best of `runs`) and per vector over a batch of `vectors` vectors run one
after the other, as the compare step does; onnxruntime's times measured the same way; the
ratio interpreter/onnxruntime for both; and the interpreter's GMAC/s on the batch. `--profile`
adds, per model, the interpreter's time per operation type over one batch. The interpreter runs
its compiled loops (numba) when numba is importable; `--numpy` adds the same measures for the
NumPy loop (NNCERT_NO_JIT=1), in the same run. The first line gives the time this process took
to load numba and compile (or load from numba's cache) the loops. `--clock cpu` times with the
process's CPU time instead of the wall clock (steadier on a shared host). Prints tables; writes nothing.
"""

from __future__ import annotations

import argparse
import collections
import math
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np
import onnx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import bench_models  # noqa: E402
from pipeline.export import convert  # noqa: E402
from pipeline.export.exporter import publish  # noqa: E402
from pipeline.project.layout import model_names  # noqa: E402
from pipeline.nnef.checker import check_paths  # noqa: E402
from pipeline.nnef.graph import Graph  # noqa: E402
from pipeline.numerics.onnx_runner import reference_runner  # noqa: E402
from pipeline.semantics import interpret, interpret_batch, interpreter, jit, load_variables  # noqa: E402


def _shape(graph: Graph, ref: Any) -> tuple[int, ...]:
    info = graph.tensors.get(getattr(ref, "name", ""))
    return tuple(info.shape) if info is not None and info.shape is not None else ()


def graph_macs(graph: Graph) -> int:
    """Multiply-accumulates of one inference: conv/deconv, linear and matmul."""
    total = 0
    for op in graph.operations:
        if op.name in ("conv", "deconv", "linear", "matmul"):
            out = _shape(graph, next(iter(op.outputs.values())))
            if op.name in ("conv", "deconv"):
                f = _shape(graph, op.inputs["filter"])
                total += math.prod(out) * math.prod(f[1:]) if op.name == "conv" else \
                    math.prod(_shape(graph, op.inputs["input"])) * math.prod(f[1:])
            elif op.name == "linear":
                total += math.prod(out) * _shape(graph, op.inputs["filter"])[1]
            else:
                a = _shape(graph, op.inputs["A"])
                total += math.prod(out) * (a[-2] if op.attribs.get("transposeA") else a[-1])
    return total


def _model(name: str) -> tuple[onnx.ModelProto, list[dict[str, np.ndarray]]]:
    """The ONNX model: a shipped one or a bench_models one built in memory."""
    if name in bench_models.BUILDERS:
        model = bench_models.BUILDERS[name]().model(name)
    else:
        model = onnx.load(str(ROOT / "models" / name / "model.onnx"))
    return model


def _vectors(name: str, model: onnx.ModelProto, count: int) -> list[dict[str, np.ndarray]]:
    if name not in bench_models.BUILDERS:
        from pipeline.project.deploy import load_deploy
        from pipeline.numerics.vectors import draw_vectors

        spec = load_deploy(ROOT / "models" / name / "deploy.yaml")
        return draw_vectors(spec.inputs, count, spec.validation.seed)
    rng = np.random.RandomState(1234)
    inputs = [i for i in model.graph.input if i.name not in {t.name for t in model.graph.initializer}]
    return [{i.name: rng.uniform(-1, 1, [d.dim_value for d in i.type.tensor_type.shape.dim]).astype(np.float32)
             for i in inputs} for _ in range(count)]


# The clock: wall time (default), or this process's CPU time (`--clock cpu`: on a shared, loaded
# host a run that is descheduled is not charged for the wait; both sides run on one thread).
CLOCK = time.perf_counter


def _one_ms(fn: Callable[[Any], Any], vector: Any, runs: int) -> float:
    fn(vector)  # warm-up
    times = []
    for _ in range(runs):
        start = CLOCK()
        fn(vector)
        times.append(CLOCK() - start)
    return min(times) * 1e3


def _batch_ms(fn: Callable[[Any], Any], vectors: list[Any], repeat: int) -> float:
    """Per-vector time of fn(vectors), best of `repeat`."""
    times = []
    for _ in range(repeat):
        start = CLOCK()
        fn(vectors)
        times.append(CLOCK() - start)
    return min(times) / len(vectors) * 1e3


def _profiled(fn: Callable[[], Any]) -> dict[str, float]:
    """Seconds per operation type spent in the kernels while `fn` runs."""
    spent: dict[str, float] = collections.defaultdict(float)
    original = interpreter.lookup

    def timed_lookup(name: str, span: Any = None) -> Any:
        kernel = original(name, span)

        def run(*args: Any) -> Any:
            start = time.perf_counter()
            result = kernel(*args)
            spent[name] += time.perf_counter() - start
            return result
        return run

    interpreter.lookup = timed_lookup
    try:
        fn()
    finally:
        interpreter.lookup = original
    return dict(spent)


def _numpy_loop(fn: Callable[[], float]) -> float:
    """fn() with ordered_dot's NumPy loop (NNCERT_NO_JIT=1)."""
    os.environ["NNCERT_NO_JIT"] = "1"
    try:
        return fn()
    finally:
        del os.environ["NNCERT_NO_JIT"]


def bench(name: str, count: int, runs: int, repeat: int, profile: bool, numpy_loop: bool = False) -> dict[str, Any]:
    model = _model(name)
    result = convert(model)
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "export"
        publish(result.files, out)
        graph = check_paths([out], profile="standard").graphs[0]
        variables = load_variables(graph, out)
    vectors = _vectors(name, model, count)
    feeds = [{result.inputs[k]: v for k, v in vector.items()} for vector in vectors]
    ours = lambda feed: interpret(graph, feed, variables)  # noqa: E731
    runner = reference_runner(model)
    r: dict[str, Any] = {"macs": graph_macs(graph), "operations": len(graph.operations)}
    r["ort_one"] = _one_ms(runner.run, vectors[0], max(runs, 50))
    r["ort_batch"] = _batch_ms(lambda batch: [runner.run(vector) for vector in batch], vectors, repeat)
    r["one"] = _one_ms(ours, feeds[0], runs)
    r["batch"] = _batch_ms(lambda batch: interpret_batch(graph, batch, variables), feeds, repeat)
    if numpy_loop:
        r["np_one"] = _numpy_loop(lambda: _one_ms(ours, feeds[0], runs))
        r["np_batch"] = _numpy_loop(lambda: _batch_ms(lambda batch: interpret_batch(graph, batch, variables), feeds,
                                                      repeat))
    if profile:
        r["profile"] = _profiled(lambda: interpret_batch(graph, feeds, variables))
    return r


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="*", default=model_names(ROOT) + list(bench_models.BUILDERS))
    parser.add_argument("--vectors", type=int, default=100, help="vectors of the batch")
    parser.add_argument("--runs", type=int, default=5, help="single-vector runs timed (best)")
    parser.add_argument("--repeat", type=int, default=2, help="batches timed (best)")
    parser.add_argument("--profile", action="store_true", help="time per operation type over the batch")
    parser.add_argument("--numpy", action="store_true", help="also time the NumPy loop (NNCERT_NO_JIT=1)")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                        help="wall time, or this process's CPU time (steadier on a loaded host)")
    args = parser.parse_args(argv)
    global CLOCK
    CLOCK = time.process_time if args.clock == "cpu" else time.perf_counter
    header = (f"{'model':<10} {'MMAC':>6} {'ops':>4} {'interp 1 ms':>11} {'ORT 1 ms':>9} {'ratio':>6} "
              f"{'interp ms/vec':>13} {'ORT ms/vec':>10} {'ratio':>6} {'GMAC/s':>7}")
    if args.numpy:
        header += f" | {'NumPy 1 ms':>10} {'ratio':>6} {'NumPy ms/vec':>12} {'ratio':>6} {'GMAC/s':>7}"
    start = time.perf_counter()
    loops = jit.compiled_loops()
    print(f"compiled loops: {'numba ' + sys.modules['numba'].__version__ if loops else 'none (NumPy loop)'}, "
          f"loaded in {time.perf_counter() - start:.2f} s (numba import + compile or cache load)")
    print(f"batch = {args.vectors} vectors (interpreter: interpret_batch; ORT: one after the other); "
          f"ORT = onnxruntime, one thread; {args.clock} clock")
    print(header)
    print("-" * len(header))
    profiles = {}
    for name in args.models:
        r = bench(name, args.vectors, args.runs, args.repeat, args.profile, args.numpy)
        gmacs = r["macs"] / (r["batch"] * 1e-3) / 1e9
        ort_best = min(r["ort_one"], r["ort_batch"])  # onnxruntime's best per-vector time: the ratio never flatters
        line = (f"{name:<10} {r['macs'] / 1e6:>6.1f} {r['operations']:>4} {r['one']:>11.2f} {r['ort_one']:>9.3f} "
                f"{r['one'] / r['ort_one']:>5.1f}x {r['batch']:>13.2f} {r['ort_batch']:>10.3f} "
                f"{r['batch'] / ort_best:>5.1f}x {gmacs:>7.2f}")
        if args.numpy:
            line += (f" | {r['np_one']:>10.2f} {r['np_one'] / r['ort_one']:>5.1f}x {r['np_batch']:>12.2f} "
                     f"{r['np_batch'] / ort_best:>5.1f}x {r['macs'] / (r['np_batch'] * 1e-3) / 1e9:>7.2f}")
        print(line, flush=True)
        if args.profile:
            profiles[name] = r["profile"]
    for name, spent in profiles.items():
        total = sum(spent.values())
        parts = sorted(spent.items(), key=lambda kv: -kv[1])
        print(f"{name}: " + ", ".join(f"{op} {100 * s / total:.0f}%" for op, s in parts if s / total >= 0.01))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

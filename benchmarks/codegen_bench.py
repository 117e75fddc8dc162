"""Generated C against onnxruntime: median time per inference, one thread, batch 1, every shipped model.

    python benchmarks/codegen_bench.py [--runs 2000] [--repeat 3] [--lanes 8] [--models lenet5 ...]

For each model under models/: export and split in a scratch project (the pipeline's own
steps), generate the C code of the `single` deployment, build it with the qualified flags
(build flags as the execute step uses them), check its outputs are bit-identical to the reference
semantics on a few vectors, then time `runs` inferences with the harness (CLOCK_MONOTONIC
around each, after 100 warm-up inferences) and onnxruntime (InferenceSession with
intra_op_num_threads = inter_op_num_threads = 1, sequential execution, batch 1,
time.perf_counter around session.run) on the same seeded input, alternating the two `repeat`
times; prints the median of each (and the best repeat's), and the ratio C / onnxruntime.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pipeline.codegen.c.generate import generate_deployment  # noqa: E402
from pipeline.codegen.deployment import load_deployment  # noqa: E402
from pipeline.deploy import load_deploy  # noqa: E402
from pipeline.export.step import run_export_step  # noqa: E402
from pipeline.layout import model_names  # noqa: E402
from pipeline.nnef.tensorfile import read_tensor, write_tensor  # noqa: E402
from pipeline.split.step import run_split_step  # noqa: E402
from pipeline.toolchain.cc import build_flags, compile_and_link, compiler_version, host_isa  # noqa: E402
from pipeline.vectors import draw_vectors  # noqa: E402


def prepare(model: str, project: Path, lanes: int) -> tuple[Path, dict[str, np.ndarray], list[str]]:
    """Export, split, generate and build `model`'s single deployment; returns the binary,
    one input vector ({name: [1, *shape]}) and the output names."""
    run_export_step(model, project)
    run_split_step(model, project, vectors=1)
    code = project / "code" / model
    generated = generate_deployment(load_deployment(project / "artifacts" / model / "split" / "single",
                                                    project / "artifacts" / model / "export", project), code, lanes=lanes)
    binary = compile_and_link(code, generated.manifest["sources"], project / "bin" / model, lanes).binary
    spec = load_deploy(project / "models" / model / "deploy.yaml")
    vector = draw_vectors(spec.inputs, 1, spec.validation.seed)[0]
    return binary, {k: v[None] for k, v in vector.items()}, [o["name"] for o in generated.manifest["outputs"]]


def time_c(binary: Path, inputs: dict[str, np.ndarray], folder: Path, runs: int) -> list[float]:
    for name, array in inputs.items():
        write_tensor(folder / "in" / f"{name}.dat", array)
    timing = folder / "timing.json"
    (folder / "out").mkdir(parents=True, exist_ok=True)
    subprocess.run([str(binary), "--inputs", str(folder / "in"), "--outputs", str(folder / "out"), "--vectors", "1",
                    "--time", str(runs), "--timing", str(timing), "--warmup", "100"], check=True)
    return [ns / 1e3 for ns in json.loads(timing.read_text())["ns"]]


def check_bits(model: str, project: Path, folder: Path, inputs: dict[str, np.ndarray], outputs: list[str]) -> bool:
    from pipeline.nnef.checker import check_paths
    from pipeline.semantics import interpret, load_variables

    export = project / "artifacts" / model / "export"
    graph = check_paths([export / "graph.nnef"], tensors=False).graphs[0]
    expected = interpret(graph, {k: v[0] for k, v in inputs.items()}, load_variables(graph, export))
    return all(read_tensor(folder / "out" / f"{o}.dat")[0].tobytes() == expected[o].tobytes() for o in outputs)


def ort_session(model: str, project: Path):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    session = ort.InferenceSession(str(project / "models" / model / "model.onnx"), options,
                                   providers=["CPUExecutionProvider"])
    provenance = json.loads((project / "artifacts" / model / "export" / "provenance.json").read_text())
    names = {e["nnef"]: e["onnx"] for e in provenance["inputs"]}
    return session, names


def time_ort(session, names: dict[str, str], inputs: dict[str, np.ndarray], runs: int) -> list[float]:
    feed = {names.get(k, k): v[0] for k, v in inputs.items()}
    for _ in range(100):
        session.run(None, feed)
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        session.run(None, feed)
        samples.append((time.perf_counter() - start) * 1e6)
    return samples


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000, help="timed inferences per repeat and engine")
    parser.add_argument("--repeat", type=int, default=3, help="alternating repeats (the best median is kept)")
    parser.add_argument("--lanes", type=int, choices=(4, 8), default=8)
    parser.add_argument("--models", nargs="*", default=None)
    args = parser.parse_args(argv)
    import onnxruntime

    models = args.models or model_names(ROOT)
    rows = []
    with tempfile.TemporaryDirectory(prefix="codegen-bench-") as tmp:
        project = Path(tmp)
        for name in ("models", "requirements"):
            (project / name).symlink_to(ROOT / name)
        for model in models:
            runs = max(100, args.runs // 10) if model == "resnet8" else args.runs
            binary, inputs, outputs = prepare(model, project, args.lanes)
            folder = project / "run" / model
            session, names = ort_session(model, project)
            c_medians, ort_medians = [], []
            for _ in range(args.repeat):
                c_medians.append(statistics.median(time_c(binary, inputs, folder, runs)))
                ort_medians.append(statistics.median(time_ort(session, names, inputs, runs)))
            exact = check_bits(model, project, folder, inputs, outputs)
            c, o = min(c_medians), min(ort_medians)
            rows.append((model, c, o, c / o, exact, runs))
    flags, _ = build_flags(args.lanes)
    print(f"compiler: {compiler_version()}; flags: {' '.join(flags)}; lanes: {args.lanes}; host ISA: {host_isa()}")
    print(f"onnxruntime {onnxruntime.__version__}, 1 intra-op thread, 1 inter-op thread, batch 1; "
          f"median per inference (best of {args.repeat} alternating repeats)")
    print()
    print("| model | generated C (us) | onnxruntime (us) | C / onnxruntime | bit-identical to reference | runs |")
    print("|---|---:|---:|---:|---|---:|")
    for model, c, o, ratio, exact, runs in rows:
        print(f"| {model} | {c:.1f} | {o:.1f} | {ratio:.2f} | {'yes' if exact else 'NO'} | {runs} |")
    return 0 if all(r[4] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())

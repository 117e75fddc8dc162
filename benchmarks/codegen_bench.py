"""Generated C against onnxruntime: time per inference, one thread, batch 1, shipped and 10-200 MMAC models.

    python benchmarks/codegen_bench.py [--runs 2000] [--repeat 3] [--lanes 8] [--models lenet5 resnet18 ...]

The models: every shipped model under models/ and the benchmark models of bench_models.py
(plaincnn, mobilenet, resnet18: 21-155 MMAC at 64x64, random weights at fixed seeds). For each: export and split in a scratch project (the pipeline's own
steps), generate the C code of the `single` deployment, build it with the qualified flags
(build flags as the execute step uses them), check its outputs are bit-identical to the reference
semantics on a few vectors, then time `runs` inferences with the harness (CLOCK_MONOTONIC
around each, after 100 warm-up inferences) and onnxruntime (InferenceSession with
intra_op_num_threads = inter_op_num_threads = 1, sequential execution, batch 1,
time.perf_counter around session.run) on the same seeded input, alternating the two `repeat`
times. Prints per model the best repeat's median wall time of each, their ratio, the process
CPU time per inference of each (getrusage of the harness process over its warm-up and timed
inferences; time.process_time over onnxruntime's timed loop), the C / onnxruntime CPU-time ratio,
GMAC/s (multiply-accumulates of conv, deconv, linear and matmul counted on the checked NNEF graph,
over the CPU time per inference) and the fraction of the no-FMA arithmetic peak: 16 MAC per cycle
(two 8-wide multiply and two 8-wide add pipes) at the clock measured in the same run by a chain
of dependent integer additions (one per cycle) timed in process CPU time.
"""

from __future__ import annotations

import argparse
import math
import json
import resource
import statistics
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import bench_models  # noqa: E402
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


PEAK_MAC_PER_CYCLE = 16  # without FMA: two 8-wide multiply pipes and two 8-wide add pipes (AVX2, Zen 2/3)

CLOCK_PROGRAM = r"""
#include <stdio.h>
#include <time.h>
int main(void) {
    struct timespec a, b;
    unsigned long x = 0;
    const long rounds = 20000000;  /* 32 dependent additions per round: one per cycle */
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a);
    for (long i = 0; i < rounds; ++i)
        __asm__ volatile(
            "add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\t"
            "add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\t"
            "add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\t"
            "add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0"
            : "+r"(x));
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &b);
    double s = (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) * 1e-9;
    printf("%.1f %lu\n", 32.0 * rounds / s / 1e6, x);
    return 0;
}
"""


def measure_clock_mhz(folder: Path) -> float:
    """The core clock in MHz: 640 M dependent integer additions (latency one cycle) over the
    process CPU time they took (the best of 3, so that a preempted run does not count)."""
    source, binary = folder / "clock.c", folder / "clock"
    source.write_text(CLOCK_PROGRAM)
    subprocess.run(["gcc", "-O2", str(source), "-o", str(binary)], check=True)
    return max(float(subprocess.run([str(binary)], check=True, capture_output=True, text=True).stdout.split()[0])
               for _ in range(3))


def nnef_macs(model: str, project: Path) -> int:
    """Multiply-accumulates of one inference: conv, deconv, linear and matmul of the checked NNEF graph."""
    from pipeline.nnef.checker import check_paths

    graph = check_paths([project / "artifacts" / model / "export" / "graph.nnef"], tensors=False).graphs[0]
    shape = {name: info.shape or [] for name, info in graph.tensors.items()}
    total = 0
    for op in graph.operations:
        out = [r.name for r in op.output_refs()]
        ins = {k: getattr(v, "name", None) for k, v in op.inputs.items()}
        if op.name == "conv":
            total += math.prod(shape[out[0]]) * math.prod(shape[ins["filter"]][1:])
        elif op.name == "deconv":
            total += math.prod(shape[ins["input"]]) * math.prod(shape[ins["filter"]][1:])
        elif op.name == "linear":
            total += math.prod(shape[out[0]]) * shape[ins["filter"]][-1]
        elif op.name == "matmul":
            a = shape[ins["A"]]
            total += math.prod(shape[out[0]]) * (a[-2] if op.attribs.get("transposeA") else a[-1])
    return total


def time_c(binary: Path, inputs: dict[str, np.ndarray], folder: Path, runs: int) -> tuple[list[float], float]:
    """(wall microseconds per timed inference, process CPU microseconds per inference over warm-up and timed)."""
    for name, array in inputs.items():
        write_tensor(folder / "in" / f"{name}.dat", array)
    timing = folder / "timing.json"
    (folder / "out").mkdir(parents=True, exist_ok=True)
    warmup = min(100, runs)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([str(binary), "--inputs", str(folder / "in"), "--outputs", str(folder / "out"), "--vectors", "1",
                    "--time", str(runs), "--timing", str(timing), "--warmup", str(warmup)], check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return [ns / 1e3 for ns in json.loads(timing.read_text())["ns"]], cpu * 1e6 / (runs + warmup)


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


def time_ort(session, names: dict[str, str], inputs: dict[str, np.ndarray], runs: int) -> tuple[list[float], float]:
    """(wall microseconds per timed inference, process CPU microseconds per timed inference)."""
    feed = {names.get(k, k): v[0] for k, v in inputs.items()}
    for _ in range(min(100, runs)):
        session.run(None, feed)
    samples = []
    cpu = time.process_time()
    for _ in range(runs):
        start = time.perf_counter()
        session.run(None, feed)
        samples.append((time.perf_counter() - start) * 1e6)
    return samples, (time.process_time() - cpu) * 1e6 / runs


def scratch_project(project: Path, models: list[str]) -> None:
    """project/models: the shipped models (links) and the benchmark models (written); requirements linked."""
    (project / "requirements").symlink_to(ROOT / "requirements")
    for model in models:
        if model in bench_models.BUILDERS:
            bench_models.write_model(model, project / "models" / model)
        else:
            (project / "models").mkdir(exist_ok=True)
            (project / "models" / model).symlink_to(ROOT / "models" / model)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000,
                        help="timed inferences per repeat and engine (fewer for large models: 2 G MAC per repeat, "
                             "at least 30)")
    parser.add_argument("--repeat", type=int, default=3, help="alternating repeats (the best median is kept)")
    parser.add_argument("--lanes", type=int, choices=(4, 8), default=8)
    parser.add_argument("--models", nargs="*", default=None)
    parser.add_argument("--keep", type=Path, default=None, help="copy the generated code of each model here")
    args = parser.parse_args(argv)
    import onnxruntime

    models = args.models or model_names(ROOT) + list(bench_models.BUILDERS)
    rows = []
    with tempfile.TemporaryDirectory(prefix="codegen-bench-") as tmp:
        project = Path(tmp)
        scratch_project(project, models)
        mhz = measure_clock_mhz(project)
        for model in models:
            binary, inputs, outputs = prepare(model, project, args.lanes)
            if args.keep:
                shutil.copytree(project / "code" / model, args.keep / model, dirs_exist_ok=True)
            macs = nnef_macs(model, project)
            runs = max(30, min(args.runs, int(2e9 / max(macs, 1))))
            folder = project / "run" / model
            session, names = ort_session(model, project)
            c_runs, ort_runs = [], []
            for _ in range(args.repeat):
                wall, cpu = time_c(binary, inputs, folder, runs)
                c_runs.append((statistics.median(wall), cpu))
                wall, cpu = time_ort(session, names, inputs, runs)
                ort_runs.append((statistics.median(wall), cpu))
            exact = check_bits(model, project, folder, inputs, outputs)
            c, o = min(c_runs), min(ort_runs)
            rows.append((model, macs, c, o, exact, runs))
    flags, _ = build_flags(args.lanes)
    peak = PEAK_MAC_PER_CYCLE * mhz / 1e3
    print(f"compiler: {compiler_version()}; flags: {' '.join(flags)}; lanes: {args.lanes}; host ISA: {host_isa()}")
    print(f"onnxruntime {onnxruntime.__version__}, 1 intra-op thread, 1 inter-op thread, batch 1; "
          f"median per inference (best of {args.repeat} alternating repeats); CPU: process CPU time per inference")
    print(f"clock {mhz:.0f} MHz (dependent integer additions over process CPU time); no-FMA peak "
          f"{PEAK_MAC_PER_CYCLE} MAC/cycle = {peak:.1f} GMAC/s")
    print()
    print("GMAC/s and % of peak from the process CPU time (a shared machine's preemption does not count)")
    print()
    print("| model | MMAC | C (us) | onnxruntime (us) | C / ort | C CPU (us) | ort CPU (us) | C / ort CPU | "
          "C GMAC/s | ort GMAC/s | C % of no-FMA peak | bit-identical | runs |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|")
    for model, macs, (c, c_cpu), (o, o_cpu), exact, runs in rows:
        print(f"| {model} | {macs / 1e6:.2f} | {c:.1f} | {o:.1f} | {c / o:.2f} | {c_cpu:.1f} | {o_cpu:.1f} | "
              f"{c_cpu / o_cpu:.2f} | {macs / c_cpu / 1e3:.1f} | {macs / o_cpu / 1e3:.1f} | "
              f"{100 * macs / c_cpu / 1e3 / peak:.0f} | {'yes' if exact else 'NO'} | {runs} |")
    return 0 if all(r[4] for r in rows) else 1

if __name__ == "__main__":
    sys.exit(main())

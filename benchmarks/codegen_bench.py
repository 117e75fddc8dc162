"""Generated C against onnxruntime: time per inference, one thread, batch 1, shipped and 10-200 MMAC models.

    python benchmarks/codegen_bench.py [--runs 2000] [--repeat 3] [--lanes 16] [--models lenet5 resnet18 ...]
    python benchmarks/codegen_bench.py --layers resnet8 mobilenet [--runs N]   (the per-layer profile)

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
over the CPU time per inference) and the fraction of the no-FMA arithmetic peak of the ISA the code
is built for (PEAK_MAC_PER_CYCLE: 16 MAC per cycle with AVX2 or AVX-512) at the clock measured in
the same run by a chain of dependent register multiplications (latency 3) timed in process CPU
time, beside one of register additions (latency 1) as a cross-check. The lanes default to the
host platform's: the widest vector ISA the CPU has (16 with AVX-512F, 8 with AVX2).

--layers MODEL...: instead, per NNEF operation of each model's generated C, its MACs and median time
(the execute step's instrumented build: CLOCK_MONOTONIC around every step) next to onnxruntime's own
node profile (SessionOptions.enable_profiling, one thread) with their ratio, GMAC/s and % of the
no-FMA peak; onnxruntime's fused nodes are matched to the C steps they cover (layer_table).
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
from pipeline.codegen.program.generate import generate_deployment  # noqa: E402
from pipeline.codegen.shared.deployment import load_deployment  # noqa: E402
from pipeline.project.deploy import load_deploy  # noqa: E402
from pipeline.execute.step import step_durations  # noqa: E402
from pipeline.export.step import run_export_step  # noqa: E402
from pipeline.project.layout import model_names  # noqa: E402
from pipeline.nnef.tensorfile import read_tensor, write_tensor  # noqa: E402
from pipeline.split.step import run_split_step  # noqa: E402
from pipeline.toolchain.cc import build_flags, compile_and_link, compiler_version, host_isa, isa_for  # noqa: E402
from pipeline.toolchain.platforms import host_platform  # noqa: E402
from pipeline.numerics.vectors import draw_vectors  # noqa: E402


def generate(model: str, project: Path, lanes: int) -> dict:
    """Export, split and generate `model`'s single deployment into project/code/<model>; its build.json manifest."""
    run_export_step(model, project)
    run_split_step(model, project, vectors=1)
    generated = generate_deployment(load_deployment(project / "artifacts" / model / "split" / "single",
                                                    project / "artifacts" / model / "export", project),
                                    project / "code" / model, lanes=lanes)
    return generated.manifest


def prepare(model: str, project: Path, lanes: int) -> tuple[Path, dict[str, np.ndarray], list[str]]:
    """Export, split, generate and build `model`'s single deployment; returns the binary,
    one input vector ({name: [1, *shape]}) and the output names."""
    manifest = generate(model, project, lanes)
    binary = compile_and_link(project / "code" / model, manifest["sources"], project / "bin" / model, lanes).binary
    return binary, first_vector(model, project), [o["name"] for o in manifest["outputs"]]


def first_vector(model: str, project: Path) -> dict[str, np.ndarray]:
    """The first validation vector of the model's deploy.yaml, {name: [1, *shape]}."""
    spec = load_deploy(project / "models" / model / "deploy.yaml")
    return {k: v[None] for k, v in draw_vectors(spec.inputs, 1, spec.validation.seed)[0].items()}


# Multiply-accumulates per cycle without FMA (a MAC is one multiply and one add) by the ISA the code
# is built for: AVX2 on Zen 2/3, two 8-wide multiply and two 8-wide add pipes: 16; AVX-512 on Xeon
# (Skylake-SP to Emerald Rapids), two 512-bit units each doing a multiply or an add: 32 lane
# operations, 16 MAC; a 4-lane build (SSE2, NEON): two 4-wide pipes of each: 8.
PEAK_MAC_PER_CYCLE = {"avx512": 16, "avx2": 16, "baseline": 8}

# Two dependent chains of register-to-register operations, timed in process CPU time. A chain of
# additions of an immediate is no measure: Golden Cove and later cores (Sapphire and Emerald Rapids)
# fold `add $imm, reg` at register renaming, several per cycle, which made such a chain read 22,574
# MHz. Register additions (latency 1) and, on x86-64, register multiplications (latency 3 on every
# core since Sandy Bridge and Zen) execute one after the other; both chains are asm volatile, so the
# compiler cannot fold them either. (This virtual machine exposes no cycle counter to perf.)
CLOCK_PROGRAM = r"""
#include <stdio.h>
#include <time.h>
static double cpu_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}
#if defined(__x86_64__)
#define ADD8 "add %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\t"
#define MUL8 "imul %1, %0\n\timul %1, %0\n\timul %1, %0\n\timul %1, %0\n\timul %1, %0\n\timul %1, %0\n\timul %1, %0\n\timul %1, %0\n\t"
#define MUL_LATENCY 3
#elif defined(__aarch64__)
#define ADD8 "add %0, %0, %1\n\tadd %0, %0, %1\n\tadd %0, %0, %1\n\tadd %0, %0, %1\n\tadd %0, %0, %1\n\tadd %0, %0, %1\n\tadd %0, %0, %1\n\tadd %0, %0, %1\n\t"
#endif
int main(void)
{
    const long rounds = 20000000;   /* 4 x 8 dependent operations per round */
    unsigned long x = 0, one = 1, m = 1;
    double a = cpu_seconds();
    for (long i = 0; i < rounds; ++i) __asm__ volatile(ADD8 ADD8 ADD8 ADD8 : "+r"(x) : "r"(one));
    double b = cpu_seconds();
    double add_mhz = 32.0 * rounds / (b - a) / 1e6, mul_mhz = 0.0;
#if defined(MUL_LATENCY)
    for (long i = 0; i < rounds / 3; ++i) __asm__ volatile(MUL8 MUL8 MUL8 MUL8 : "+r"(m) : "r"(one));
    double c = cpu_seconds();
    mul_mhz = MUL_LATENCY * 32.0 * (rounds / 3) / (c - b) / 1e6;
#endif
    printf("%.1f %.1f %lu %lu\n", add_mhz, mul_mhz, x, m);
    return 0;
}
"""


def measure_clock_mhz(folder: Path) -> float:
    """The core clock in MHz from two dependent chains (CLOCK_PROGRAM), the best of 3 runs each so
    that a preempted run does not count: the multiplications' on x86-64 (their latency is fixed),
    the additions' elsewhere. Both are printed; chains that disagree by more than 10% are said."""
    source, binary = folder / "clock.c", folder / "clock"
    source.write_text(CLOCK_PROGRAM)
    subprocess.run(["gcc", "-O2", str(source), "-o", str(binary)], check=True)
    runs = [subprocess.run([str(binary)], check=True, capture_output=True, text=True).stdout.split() for _ in range(3)]
    add, mul = max(float(r[0]) for r in runs), max(float(r[1]) for r in runs)
    mhz = mul or add
    note = "" if not mul or abs(add - mul) <= 0.1 * mul else " (they disagree: the multiplications' is used)"
    print(f"clock: {add:.0f} MHz from dependent additions, {mul:.0f} MHz from dependent multiplications{note}",
          file=sys.stderr)
    return mhz


def layer_macs(model: str, project: Path) -> dict[str, int]:
    """Multiply-accumulates of one inference per operation, keyed by its first result's name: conv,
    deconv, linear and matmul of the checked NNEF graph (every other operation 0)."""
    from pipeline.nnef.checker import check_paths

    graph = check_paths([project / "artifacts" / model / "export" / "graph.nnef"], tensors=False).graphs[0]
    shape = {name: info.shape or [] for name, info in graph.tensors.items()}
    macs = {}
    for op in graph.operations:
        out = [r.name for r in op.output_refs()]
        ins = {k: getattr(v, "name", None) for k, v in op.inputs.items()}
        count = 0
        if op.name == "conv":
            count = math.prod(shape[out[0]]) * math.prod(shape[ins["filter"]][1:])
        elif op.name == "deconv":
            count = math.prod(shape[ins["input"]]) * math.prod(shape[ins["filter"]][1:])
        elif op.name == "linear":
            count = math.prod(shape[out[0]]) * shape[ins["filter"]][-1]
        elif op.name == "matmul":
            a = shape[ins["A"]]
            count = math.prod(shape[out[0]]) * (a[-2] if op.attribs.get("transposeA") else a[-1])
        if out:
            macs[out[0]] = count
    return macs


def nnef_macs(model: str, project: Path) -> int:
    """Multiply-accumulates of one inference: conv, deconv, linear and matmul of the checked NNEF graph."""
    return sum(layer_macs(model, project).values())


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


def ort_session(model: str, project: Path, profile: Path | None = None):
    """onnxruntime session of the model, one thread; with `profile` (a file prefix), per-node profiling on."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    if profile is not None:
        options.enable_profiling = True
        options.profile_file_prefix = str(profile)
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


def c_layer_times(model: str, project: Path, manifest: dict, inputs: dict[str, np.ndarray], runs: int,
                  lanes: int) -> list[tuple[str, str, float]]:
    """(first result's name, NNEF operation, median ns) per step of the single item, in schedule order: the
    instrumented build (-DNNEF_TRACE, as the execute step's per-instruction timing) over `runs` timed inferences."""
    warmup = min(100, runs)
    binary = compile_and_link(project / "code" / model, manifest["sources"], project / "bin" / f"{model}-trace", lanes,
                              trace=True, defines=[f"NNEF_TRACE_INFERENCES={1 + warmup + runs}"]).binary
    folder = project / "layers" / model
    for name, array in inputs.items():
        write_tensor(folder / "in" / f"{name}.dat", array)
    (folder / "out").mkdir(parents=True, exist_ok=True)
    subprocess.run([str(binary), "--inputs", str(folder / "in"), "--outputs", str(folder / "out"), "--vectors", "1",
                    "--time", str(runs), "--timing", str(folder / "timing.json"), "--warmup", str(warmup),
                    "--trace", str(folder / "trace.json")], check=True)
    item = manifest["items"][0]
    durations = step_durations(json.loads((folder / "trace.json").read_text()), 1 + warmup)[item["name"]]
    lines = (project / item["nnef_file"]).read_text().splitlines()
    rows = []
    for function in sorted((f for f in item["functions"] if f["step"] is not None), key=lambda f: f["step"]):
        result = lines[function["nnef_line"] - 1].split("=")[0].strip(" [](),").split(",")[0].strip()
        rows.append((result, function["operation"], statistics.median(durations[function["step"]])))
    return rows


def ort_layer_times(model: str, project: Path, inputs: dict[str, np.ndarray], runs: int) -> list[tuple[str, str, float]]:
    """(node name, onnxruntime kernel, median µs) per node onnxruntime ran, in its execution order: its own per-node
    profile (SessionOptions.enable_profiling, one thread) over the last `runs` of 100 warm-up + `runs` inferences."""
    folder = project / "layers" / model
    folder.mkdir(parents=True, exist_ok=True)
    session, names = ort_session(model, project, profile=folder / "ort")
    feed = {names.get(k, k): v[0] for k, v in inputs.items()}
    for _ in range(min(100, runs) + runs):
        session.run(None, feed)
    times: dict[str, list[float]] = {}
    kernels: dict[str, str] = {}
    for event in json.loads(Path(session.end_profiling()).read_text()):
        if event.get("cat") == "Node" and event["name"].endswith("_kernel_time"):
            node = event["name"][:-len("_kernel_time")]
            times.setdefault(node, []).append(float(event["dur"]))
            kernels[node] = event.get("args", {}).get("op_name", "?")
    return [(node, kernels[node], statistics.median(samples[-runs:])) for node, samples in times.items()]


def layer_table(model: str, project: Path, lanes: int, runs: int, mhz: float) -> list[str]:
    """The per-layer profile of `model` as markdown lines: each NNEF operation of the generated C (instrumented build)
    with its MACs, and the onnxruntime nodes. onnxruntime fuses nodes (a Conv with the batch normalisation, Relu or
    Add after it, in its NCHWc layout named after the last ONNX node fused, `<node>_nchwc`): an onnxruntime node
    is shown on the row of the NNEF operation from that ONNX node, and its ratio is taken over the C time of the rows
    since the previous such row (the operations it fused, in the C schedule's order); nodes onnxruntime adds (layout
    reorders) get rows of their own."""
    manifest = generate(model, project, lanes)
    inputs = first_vector(model, project)
    macs = layer_macs(model, project)
    runs = max(30, min(runs, int(2e9 / max(sum(macs.values()), 1))))
    provenance = json.loads((project / "artifacts" / model / "export" / "provenance.json").read_text())
    node_of = {name: line["node"]["name"] for line in provenance["lines"] if line.get("node")
               for name in line["assigns"]}
    c_rows = c_layer_times(model, project, manifest, inputs, runs, lanes)
    ort_rows = ort_layer_times(model, project, inputs, runs)
    last_row = {node_of.get(result, ""): index for index, (result, _, _) in enumerate(c_rows)}
    anchored = {}
    for node, kernel, us in ort_rows:
        onnx = node.removesuffix("_nchwc")
        if onnx in last_row and last_row[onnx] not in anchored:
            anchored[last_row[onnx]] = (node, kernel, us)
    peak = PEAK_MAC_PER_CYCLE[isa_for(lanes)] * mhz / 1e3
    table = [f"per layer, {model}: median per inference over {runs} inferences (C: instrumented build, CLOCK_MONOTONIC "
             f"around each step; onnxruntime: its node profile, whole µs); no-FMA peak {peak:.1f} GMAC/s", "",
             "| # | NNEF result | operation | MMAC | C µs | C GMAC/s | C % peak | onnxruntime node | ort kernel | "
             "ort µs | C µs since last node | C / ort | ort GMAC/s |",
             "|---:|---|---|---:|---:|---:|---:|---|---|---:|---:|---:|---:|"]
    group_us, group_macs = 0.0, 0
    for index, (result, operation, ns) in enumerate(c_rows):
        us, mac = ns / 1e3, macs.get(result, 0)
        group_us, group_macs = group_us + us, group_macs + mac
        cells = [str(index), result, operation, f"{mac / 1e6:.2f}" if mac else "", f"{us:.1f}",
                 f"{mac / us / 1e3:.1f}" if mac else "", f"{100 * mac / us / 1e3 / peak:.0f}" if mac else ""]
        if index in anchored:
            node, kernel, ort_us = anchored[index]
            cells += [node, kernel, f"{ort_us:.0f}", f"{group_us:.1f}", f"{group_us / ort_us:.2f}" if ort_us else "",
                      f"{group_macs / ort_us / 1e3:.1f}" if group_macs and ort_us else ""]
            group_us, group_macs = 0.0, 0
        else:
            cells += [""] * 6
        table.append("| " + " | ".join(cells) + " |")
    shown = {entry[0] for entry in anchored.values()}
    table += [f"| | | | | | | | {node} | {kernel} | {us:.0f} | | | |" for node, kernel, us in ort_rows
              if node not in shown]
    c_total, ort_total = sum(r[2] for r in c_rows) / 1e3, sum(r[2] for r in ort_rows)
    total = sum(macs.values())
    table += [f"| | total | | {total / 1e6:.2f} | {c_total:.1f} | {total / c_total / 1e3:.1f} | "
              f"{100 * total / c_total / 1e3 / peak:.0f} | | | {ort_total:.0f} | | {c_total / ort_total:.2f} | "
              f"{total / ort_total / 1e3:.1f} |", ""]
    by_kind: dict[str, float] = {}
    for _, operation, ns in c_rows:
        by_kind[operation] = by_kind.get(operation, 0.0) + ns / 1e3
    ort_kind: dict[str, float] = {}
    for _, kernel, us in ort_rows:
        ort_kind[kernel] = ort_kind.get(kernel, 0.0) + us
    table.append("C by operation: " + ", ".join(f"{k} {v:.1f}" for k, v in sorted(by_kind.items(), key=lambda kv: -kv[1]))
                 + " µs; onnxruntime by kernel: "
                 + ", ".join(f"{k} {v:.0f}" for k, v in sorted(ort_kind.items(), key=lambda kv: -kv[1])) + " µs")
    return table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000,
                        help="timed inferences per repeat and engine (fewer for large models: 2 G MAC per repeat, "
                             "at least 30)")
    parser.add_argument("--repeat", type=int, default=3, help="alternating repeats (the best median is kept)")
    parser.add_argument("--lanes", type=int, choices=(4, 8, 16), default=host_platform().lanes,
                        help="vector lanes of the generated C (default: the host platform's, from the ISA its CPU "
                             "has: 16 with AVX-512F, 8 with AVX2)")
    parser.add_argument("--models", nargs="*", default=None)
    parser.add_argument("--keep", type=Path, default=None, help="copy the generated code of each model here")
    parser.add_argument("--layers", metavar="MODEL", nargs="+", default=None,
                        help="instead of the table: the per-layer profile of each MODEL (C steps against "
                             "onnxruntime's node profile)")
    args = parser.parse_args(argv)
    import onnxruntime

    if args.layers:
        with tempfile.TemporaryDirectory(prefix="codegen-layers-") as tmp:
            project = Path(tmp)
            scratch_project(project, args.layers)
            mhz = measure_clock_mhz(project)
            print(f"compiler: {compiler_version()}; lanes: {args.lanes}; onnxruntime {onnxruntime.__version__}, "
                  f"1 thread; clock {mhz:.0f} MHz")
            for model in args.layers:
                print()
                print("\n".join(layer_table(model, project, args.lanes, args.runs, mhz)))
        return 0

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
    per_cycle = PEAK_MAC_PER_CYCLE[isa_for(args.lanes)]
    peak = per_cycle * mhz / 1e3
    print(f"compiler: {compiler_version()}; flags: {' '.join(flags)}; lanes: {args.lanes}; host ISA: {host_isa()}")
    print(f"onnxruntime {onnxruntime.__version__}, 1 intra-op thread, 1 inter-op thread, batch 1; "
          f"median per inference (best of {args.repeat} alternating repeats); CPU: process CPU time per inference")
    print(f"clock {mhz:.0f} MHz (dependent register multiplications over process CPU time); no-FMA peak "
          f"{per_cycle} MAC/cycle ({isa_for(args.lanes)}) = {peak:.1f} GMAC/s")
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

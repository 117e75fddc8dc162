"""The harness runs of one built deployment: outputs, traces with and without noise, the MET campaign,
instruction counts (docs/execute.md "The harness", "Instruction counts").

Shared by the C program's runs on its platform (pipeline/execute/step.py) and the GPU runs
(pipeline/execute/gpu.py): the same runs, the same files, in the folder they are given.
"""

from __future__ import annotations

import json
import tempfile
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.files.atomic import write_json
from pipeline.execute.harness import read_outputs, run_harness
from pipeline.nnef.tensorfile import write_arrays
from pipeline.execute.instructions import BOUNDARY, count_instructions_per_vector, special_vector, valgrind_version
from pipeline.project.layout import project_relative
from pipeline.project.lock import measuring
from pipeline.toolchain.platforms import Platform, host_architecture

TIMING_FILE = "timing.json"
STEP_TIMING_FILE = "step-timing.json"
INSTRUCTIONS_FILE = "instructions.json"
WARMUP = 10
PATH_VECTORS = 4      # validation vectors whose instruction counts are compared, plus zeros and specials
SHUFFLE_SEED = 20240601               # the shuffled launch order of emulated cuda items (pipeline/execute/cuda.py)
SEED_VARIABLE = "NNEF_EMULATE_SEED"   # read by the init of an emulated cuda item (pipeline/codegen/cuda/linked.py)
NVDLA_NOT_MEASURED = ("the nvdla items ran on the NVDLA emulation (emulator server): host figures (time, instructions) with an emulated "
                      "DLA say nothing about the target")


def canonical_trace(raw: Path, target: Path) -> dict[str, Any]:
    """Rewrite the harness's trace as canonical JSON; returns it."""
    data = json.loads(raw.read_text(encoding="utf-8"))
    write_json(target, data)
    return data


def step_durations(trace: dict[str, Any], first_inference: int) -> dict[str, list[list[int]]]:
    """Per item and step: the ns between start and end, for inferences >= first_inference."""
    result: dict[str, list[list[int]]] = {}
    for item, events in trace["items"].items():
        started: dict[tuple[int, int], int] = {}
        steps: dict[int, list[int]] = {}
        for e in events:
            if e["inference"] < first_inference:
                continue
            key = (e["inference"], e["step"])
            if e["event"] == "start":
                started[key] = e["t"]
            else:
                steps.setdefault(e["step"], []).append(e["t"] - started[key])
        count = 1 + max(steps, default=-1)
        result[item] = [steps.get(k, []) for k in range(count)]
    return result


def run_campaign(harness: Any, where: Any, plain: Any, traced: Any, out: Path, outputs_dir: Path, output_names: list[str],
          cuda: Any, vectors: int, runs: int, noise_seeds: tuple[int, ...], dla_items: list[str], inputs_dir: Path,
          manifest: dict[str, Any], instructions: bool, root: Path, target: Platform,
          counted: Any = None) -> list[dict[str, Any]]:
    """The harness runs of one deployment in session `where`: outputs (in order; shuffled for emulated
    cuda items), the traced runs plain and under noise, the MET campaign, the instruction counts (of
    `counted` when valgrind cannot decode the plain program's vector ISA). Returns the traced runs' records."""
    harness(plain.binary, outputs_dir, session=where)
    reference = read_outputs(outputs_dir, output_names)
    if cuda:
        harness(plain.binary, out / "outputs-shuffled", session=where, env={SEED_VARIABLE: str(SHUFFLE_SEED)})
    with tempfile.TemporaryDirectory(prefix="nnef-run-") as tmp:
        scratch = Path(tmp)
        traced_runs = _traced_runs(harness, where, traced, out, scratch, reference, output_names, vectors,
                                   noise_seeds, root)
        if dla_items:   # host figures with an emulated DLA say nothing: no MET campaign, no instruction counts
            write_json(out / INSTRUCTIONS_FILE, {"schema_version": 1, "status": "not run", "inputs": [],
                                                 "reason": NVDLA_NOT_MEASURED})
            return traced_runs
        _met_campaign(where, plain, traced, out, scratch, inputs_dir, manifest, vectors, runs, root, target)
        if instructions:
            counts = _instructions((counted or plain).binary, inputs_dir, manifest, scratch, cuda, target)
            if counted is not None and counts.get("status") == "ran":
                counts["build"] = (f"{counted.binary.name}: the same sources built with {' '.join(counted.flags)} "
                                   "(valgrind decodes no instruction of the timed program's vector ISA)")
            write_json(out / INSTRUCTIONS_FILE, counts)
    return traced_runs


def _traced_runs(harness: Any, where: Any, traced: Any, out: Path, scratch: Path, reference: dict[str, Any],
                 output_names: list[str], vectors: int, noise_seeds: tuple[int, ...], root: Path
                 ) -> list[dict[str, Any]]:
    """The instrumented program plain, then under each noise seed: its canonical trace beside run.json and
    whether its outputs are the plain run's bit for bit."""
    traced_runs = []
    for seed in (None,) + tuple(noise_seeds):
        name = "trace-plain" if seed is None else f"trace-noise-{seed}"
        raw = scratch / f"{name}.json"
        outs = scratch / name
        result = harness(traced.binary, outs, trace=raw, noise_seed=seed, session=where)
        canonical_trace(raw, out / f"{name}.json")
        got = read_outputs(outs, output_names)
        identical = all(got[n].tobytes() == reference[n].tobytes() for n in output_names)
        traced_runs.append({"name": name, "trace": project_relative(out / f"{name}.json", root),
                            "noise_seed": seed, "vectors": vectors, "seconds": round(result.seconds, 3),
                            "outputs_identical_to_plain": identical})
    return traced_runs


def _met_campaign(where: Any, plain: Any, traced: Any, out: Path, scratch: Path, inputs_dir: Path,
                  manifest: dict[str, Any], vectors: int, runs: int, root: Path, target: Platform) -> None:
    """The MET campaign: whole-inference times of the uninstrumented program (timing.json) and per-step
    times of the instrumented one (step_timing.json), with no other task of this run at work."""
    timing_raw = scratch / "timing.json"
    steps_raw = scratch / "steps.json"
    # alone on this machine when the program runs here (an emulator's or a board's times need no lock)
    with measuring(root) if target.runner.kind == "local" else nullcontext():
        run_harness(plain.binary, inputs_dir, scratch / "timing-out", vectors, time_runs=runs,
                    timing=timing_raw, warmup=WARMUP, session=where)
        # per instruction, instrumented
        run_harness(traced.binary, inputs_dir, scratch / "steps-out", vectors, time_runs=runs,
                    timing=scratch / "steps-timing.json", warmup=WARMUP, trace=steps_raw, session=where)
    timing = json.loads(timing_raw.read_text(encoding="utf-8"))
    write_json(out / TIMING_FILE, {"schema_version": 1, "build": "uninstrumented", "runs": timing["runs"],
                                   "warmup": timing["warmup"], "vectors": timing["vectors"],
                                   "clock": "CLOCK_MONOTONIC", "ns": timing["ns"]})
    durations = step_durations(json.loads(steps_raw.read_text(encoding="utf-8")), vectors + WARMUP)
    schedule = {item["name"]: item for item in manifest["items"]}
    write_json(out / STEP_TIMING_FILE, {"schema_version": 1, "build": "instrumented", "runs": runs,
                                        "clock": "CLOCK_MONOTONIC",
                                        "items": {item: [{"step": k, "ns": ns} for k, ns in enumerate(steps)]
                                                  for item, steps in sorted(durations.items())},
                                        "functions": {name: item["functions"] for name, item in schedule.items()}})


def _instructions(binary: Path, inputs_dir: Path, manifest: dict[str, Any], scratch: Path, cuda: Any,
                  target: Platform) -> dict[str, Any]:
    """instructions.json: the counts, or why they are not run (cuda items on the host emulation, a platform
    of another architecture than this host)."""
    if cuda:
        return {"schema_version": 1, "status": "not run", "inputs": [],
                "reason": "the cuda items run on the host emulation, whose launch "
                "loop says nothing about the instructions a GPU executes"}
    if target.architecture != host_architecture():
        return {"schema_version": 1, "status": "not run", "inputs": [],
                "reason": f"valgrind counts programs of the host's architecture "
                f"({host_architecture()}) only; platform {target.name} is "
                f"{target.architecture}"}
    return instruction_counts(binary, inputs_dir, manifest, scratch)   # the platform's own program, this host's ISA


def instruction_counts(binary: Path, inputs_dir: Path, manifest: dict[str, Any], scratch: Path) -> dict[str, Any]:
    version = valgrind_version()
    if version is None:
        return {"schema_version": 1, "status": "not run", "reason": "valgrind is not installed", "inputs": []}
    from pipeline.nnef.tensorfile import read_tensor

    stacks = {i["name"]: read_tensor(inputs_dir / f"{i['name']}.dat") for i in manifest["inputs"]}
    cases: list[tuple[str, dict[str, np.ndarray]]] = []
    for v in range(min(PATH_VECTORS, min(s.shape[0] for s in stacks.values()))):
        cases.append((f"vector {v}", {n: s[v:v + 1] for n, s in stacks.items()}))
    cases.append(("zeros", {n: np.zeros_like(s[:1]) for n, s in stacks.items()}))
    cases.append(("special values", {n: special_vector(s[:1].shape) for n, s in stacks.items()}))
    folder = scratch / "path"        # every case one vector of one run (pipeline/execute/instructions.py)
    write_arrays({n: np.concatenate([arrays[n] for _, arrays in cases]) for n in stacks}, folder / "inputs")
    counts = count_instructions_per_vector(binary, folder / "inputs", folder, len(cases))
    counted = [{"input": label, "instructions": count} for (label, _), count in zip(cases, counts)]
    return {"schema_version": 1, "status": "ran", "tool": f"LD_BIND_NOW=1 {version} --tool=callgrind --dump-before={BOUNDARY}",
            "toggle_collect": ["nnef_item_*_run", "nnef_sync_wait (off)", "nnef_barrier (off)"],
            "inputs": counted}

"""Running a built harness: input vectors in, outputs, traces and timings out (docs/execute.md).

Input vectors follow the one rule of pipeline.vectors (seed and count from deploy.yaml) and
are written as NNEF tensor files of shape [N, *input shape], one per input; the harness
writes one [N, *output shape] file per output. Every run has a time limit and a non-zero
exit is an error with the harness's own message (RUN-Ennn).
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from pipeline.diagnostics import Location, PipelineError
from pipeline.nnef.tensorfile import read_tensor, write_tensor
from pipeline.vectors import InputSpec, draw_vectors

EXIT_MEANINGS = {2: "bad usage or input file", 3: "output file error", 4: "sync race or trace buffer overflow",
                 5: "CUDA runtime error", 6: "NVDLA submission channel error (RUN-E053..E056)"}


def write_input_vectors(inputs: Mapping[str, InputSpec], count: int, seed: int,
                        folder: str | os.PathLike[str]) -> dict[str, Path]:
    """<folder>/<input>.dat of shape [count, *shape] for each input, by the shared vector rule."""
    vectors = draw_vectors(inputs, count, seed)
    out = Path(folder)
    written = {}
    for name in sorted(inputs):
        written[name] = write_tensor(out / f"{name}.dat", np.stack([v[name] for v in vectors]))
    return written


def write_arrays(arrays: Mapping[str, np.ndarray], folder: str | os.PathLike[str]) -> dict[str, Path]:
    """<folder>/<name>.dat for each array (already stacked [N, ...], float32)."""
    out = Path(folder)
    return {name: write_tensor(out / f"{name}.dat", np.ascontiguousarray(array, np.float32))
            for name, array in sorted(arrays.items())}


def read_outputs(folder: str | os.PathLike[str], names: Sequence[str]) -> dict[str, np.ndarray]:
    """The [N, ...] output arrays a run wrote."""
    base = Path(folder)
    result = {}
    for name in names:
        path = base / f"{name}.dat"
        if not path.is_file():
            raise PipelineError("RUN-E020", f"the run wrote no output {name}", Location.in_file(path))
        result[name] = read_tensor(path)
    return result


@dataclass
class RunResult:
    command: list[str]
    returncode: int
    stderr: str
    seconds: float


def run_harness(binary: str | os.PathLike[str], inputs: str | os.PathLike[str], outputs: str | os.PathLike[str],
                vectors: int, *, trace: str | os.PathLike[str] | None = None, noise_seed: int | None = None,
                time_runs: int = 0, timing: str | os.PathLike[str] | None = None, warmup: int = 10,
                timeout: float = 600.0, prefix: Sequence[str] = (), check: bool = True,
                env: Mapping[str, str] | None = None) -> RunResult:
    """Run the harness once (options as nnef_main.c documents); RUN-E021 on a failure. `env` adds
    environment variables (NNEF_EMULATE_SEED: the launch order of emulated CUDA items)."""
    import time

    Path(outputs).mkdir(parents=True, exist_ok=True)
    command = [*prefix, str(binary), "--inputs", str(inputs), "--outputs", str(outputs), "--vectors", str(vectors)]
    if trace is not None:
        command += ["--trace", str(trace)]
    if noise_seed is not None:
        command += ["--noise-seed", str(noise_seed)]
    if time_runs:
        command += ["--time", str(time_runs), "--timing", str(timing), "--warmup", str(warmup)]
    started = time.perf_counter()
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False,
                              env=None if env is None else {**os.environ, **env})
    except subprocess.TimeoutExpired:
        raise PipelineError("RUN-E022", f"the run did not finish within {timeout:.0f} s: {' '.join(command)}",
                            Location.in_file(binary)) from None
    seconds = time.perf_counter() - started
    result = RunResult(command, proc.returncode, proc.stderr, seconds)
    if check and proc.returncode != 0:
        meaning = EXIT_MEANINGS.get(proc.returncode, "crashed" if proc.returncode < 0 else "failed")
        raise PipelineError("RUN-E021", f"{' '.join(command)} exited {proc.returncode} ({meaning}): "
                            f"{proc.stderr.strip()[:2000]}", Location.in_file(binary))
    return result

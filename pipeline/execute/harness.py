"""Running a built harness: input vectors in, outputs, traces and timings out (docs/execute.md).

Input vectors follow the one rule of pipeline.numerics.vectors (seed and count from deploy.yaml) and
are written as NNEF tensor files of shape [N, *input shape], one per input; the harness
writes one [N, *output shape] file per output. Every run has a time limit and a non-zero
exit is an error with the harness's own message (RUN-Ennn). Where the harness runs (here, under
an emulator, on a board over SSH) is the session's (pipeline/toolchain/runners.py).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from pipeline.diagnostics import Location, PipelineError
from pipeline.toolchain.runners import LOCAL
from pipeline.nnef.tensorfile import read_tensor, write_tensor
from pipeline.numerics.vectors import InputSpec, draw_vectors

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
                timeout: float = 600.0, session: Any = None, check: bool = True,
                env: Mapping[str, str] | None = None) -> RunResult:
    """Run the harness once (options as nnef_main.c documents) in `session` (pipeline.toolchain.runners:
    here by default, under an emulator, or on a board); RUN-E021 on a failure. `env` adds environment
    variables (NNEF_EMULATE_SEED: the launch order of emulated CUDA items)."""
    where = session or LOCAL
    command = [where.program(binary), "--inputs", where.inputs(inputs), "--outputs", where.output_folder(outputs),
               "--vectors", str(vectors)]
    if trace is not None:
        command += ["--trace", where.output_file(trace)]
    if noise_seed is not None:
        command += ["--noise-seed", str(noise_seed)]
    if time_runs:
        command += ["--time", str(time_runs), "--timing", where.output_file(timing), "--warmup", str(warmup)]
    done = where.run(command, timeout=timeout, env=env)
    result = RunResult(done.command, done.returncode, done.stderr, done.seconds)
    if check and done.returncode != 0:
        meaning = EXIT_MEANINGS.get(done.returncode, "crashed" if done.returncode < 0 else "failed")
        raise PipelineError("RUN-E021", f"{' '.join(done.command)} exited {done.returncode} ({meaning}): "
                            f"{done.stderr.strip()[:2000]}", Location.in_file(binary))
    return result

"""Instruction counts of one inference under valgrind (callgrind), for a data-independence check.

Collection is switched on only inside the items' run functions (`--toggle-collect` on
nnef_item_*_run) and off again inside the two places where a thread waits for another
(nnef_sync_wait, nnef_barrier): how long a reader spins depends on scheduling, not on data,
and is not part of the item's own execution path. Everything else (reading files, starting
threads) is outside the run functions. One inference per valgrind run, one run per input.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np

from pipeline.diagnostics import Location, PipelineError

TOGGLES = ("nnef_item_*_run", "nnef_sync_wait", "nnef_barrier")


def valgrind_version() -> str | None:
    """`valgrind --version` (e.g. valgrind-3.19.0), or None when valgrind is not installed."""
    path = shutil.which("valgrind")
    if not path:
        return None
    proc = subprocess.run([path, "--version"], capture_output=True, text=True, check=False)
    return proc.stdout.strip() or None


def special_vector(shape: tuple[int, ...], seed: int = 7) -> np.ndarray:
    """A float32 input full of the values that would change a data-dependent path: NaN, +-inf,
    +-0, subnormals, huge and tiny numbers, mixed with ordinary ones (seeded)."""
    rng = np.random.default_rng(seed)
    pool = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-45, -1e-45, 1e-40, 3.4e38, -3.4e38, 1e-30, 1.0, -1.0,
                     0.5, 2.0 ** 23 + 0.5, -7.25], np.float32)
    return rng.choice(pool, size=shape).astype(np.float32)


def count_instructions(binary: str | os.PathLike[str], inputs: str | os.PathLike[str],
                       workdir: str | os.PathLike[str], timeout: float = 600.0) -> int:
    """Instructions executed inside the item run functions for the single vector in `inputs`."""
    path = shutil.which("valgrind")
    if not path:
        raise PipelineError("RUN-E030", "valgrind is not installed (Debian package valgrind)")
    work = Path(workdir)
    work.mkdir(parents=True, exist_ok=True)
    out_file = work / "callgrind.out"
    outputs = work / "outputs"
    outputs.mkdir(exist_ok=True)
    command = [path, "--tool=callgrind", f"--callgrind-out-file={out_file}"]
    command += [f"--toggle-collect={t}" for t in TOGGLES]
    command += [str(binary), "--inputs", str(inputs), "--outputs", str(outputs), "--vectors", "1"]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
    if proc.returncode != 0 or not out_file.is_file():
        raise PipelineError("RUN-E031", f"callgrind run failed (exit {proc.returncode}): {proc.stderr.strip()[-1500:]}",
                            Location.in_file(binary))
    text = out_file.read_text(encoding="utf-8", errors="replace")
    match = re.search(r"^totals:\s+(\d+)", text, re.M) or re.search(r"^summary:\s+(\d+)", text, re.M)
    if not match:
        raise PipelineError("RUN-E031", "callgrind wrote no instruction total", Location.in_file(out_file))
    return int(match.group(1))

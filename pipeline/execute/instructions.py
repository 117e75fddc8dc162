"""Instruction counts of one inference under valgrind (callgrind), for a data-independence check.

Collection is switched on only inside the items' run functions (`--toggle-collect` on
nnef_item_*_run) and off again inside the two places where a thread waits for another
(nnef_sync_wait, nnef_barrier): how long a reader spins depends on scheduling, not on data,
and is not part of the item's own execution path. Everything else (reading files, starting
threads) is outside the run functions. One valgrind run counts several inputs: the harness calls
`nnef_vector_start` before each vector, in the main thread while every item waits at its start
barrier, and `--dump-before=nnef_vector_start` closes one part of the profile there (dumping
zeroes the counters), so part k + 1 holds inference k and the final part the last one. Valgrind's
start-up (about 0.3 s here, the same for one vector or six) is paid once per deployment instead
of once per input. The run binds every symbol at load (LD_BIND_NOW=1): otherwise the dynamic
linker's lazy resolution of a library function (memcpy, ...) on its first call from a run function
was counted in the first vector only (about 700 instructions more on inception, resnet8, mbconv).
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import numpy as np

from pipeline.diagnostics import Location, PipelineError
from pipeline.toolchain import process

# The programs it runs, callgrind (pipeline/ledger/dependencies.py).
TOOLS: tuple[str, ...] = ("valgrind",)

# Vector ISAs valgrind decodes no instruction of (AVX-512: Debian 12's 3.19 stops at the first one;
# upstream bug 383010), and the ISA the counted program is built with instead: the same generated C,
# the same control flow, its 16-lane vectors in the portable lane-by-lane form (nnef_runtime.h).
UNDECODED_ISAS = {"avx512": "avx2"}

TOGGLES = ("nnef_item_*_run", "nnef_sync_wait", "nnef_barrier")
BOUNDARY = "nnef_vector_start"    # the harness function called before each vector (nnef_main.c)


def valgrind_version() -> str | None:
    """`valgrind --version` (e.g. valgrind-3.19.0), or None when valgrind is not installed."""
    path = shutil.which("valgrind")
    if not path:
        return None
    return process.text([path, "--version"]).strip() or None


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
    return count_instructions_per_vector(binary, inputs, workdir, 1, timeout)[0]


def _total(path: Path) -> int:
    text = path.read_text(encoding="utf-8", errors="replace")
    match = re.search(r"^totals:\s+(\d+)", text, re.M) or re.search(r"^summary:\s+(\d+)", text, re.M)
    if not match:
        raise PipelineError("RUN-E031", "callgrind wrote no instruction total", Location.in_file(path))
    return int(match.group(1))


def count_instructions_per_vector(binary: str | os.PathLike[str], inputs: str | os.PathLike[str],
                                  workdir: str | os.PathLike[str], vectors: int, timeout: float = 600.0) -> list[int]:
    """Instructions executed inside the item run functions for each of the first `vectors` vectors
    in `inputs`, from one valgrind run (module docstring). RUN-E031 unless callgrind wrote exactly
    one part before the first vector, with nothing counted, and one part per vector."""
    path = shutil.which("valgrind")
    if not path:
        raise PipelineError("RUN-E030", "valgrind is not installed (Debian package valgrind)")
    work = Path(workdir)
    work.mkdir(parents=True, exist_ok=True)
    out_file = work / "callgrind.out"
    outputs = work / "outputs"
    outputs.mkdir(exist_ok=True)
    for stale in work.glob("callgrind.out*"):
        stale.unlink()
    command = [path, "--tool=callgrind", f"--callgrind-out-file={out_file}", f"--dump-before={BOUNDARY}"]
    command += [f"--toggle-collect={t}" for t in TOGGLES]
    command += [str(binary), "--inputs", str(inputs), "--outputs", str(outputs), "--vectors", str(vectors)]
    try:
        proc = process.run(command, timeout=timeout, env={**os.environ, "LD_BIND_NOW": "1"})
    except PipelineError as error:
        raise PipelineError("RUN-E031", f"callgrind run failed: {error.code}: {error.message}",
                            Location.in_file(binary)) from None
    if proc.returncode != 0 or not out_file.is_file():
        raise PipelineError("RUN-E031", f"callgrind run failed (exit {proc.returncode}): {proc.err.strip()[-1500:]}",
                            Location.in_file(binary))
    parts = sorted(work.glob("callgrind.out.*"), key=lambda p: int(p.suffix[1:]) if p.suffix[1:].isdigit() else -1)
    if [p.suffix for p in parts] != [f".{k}" for k in range(1, vectors + 1)]:
        raise PipelineError("RUN-E031", f"callgrind wrote {len(parts)} dumps at {BOUNDARY} for {vectors} vector(s), "
                            f"not {vectors} (a harness without {BOUNDARY}?)", Location.in_file(binary))
    before, *counts = [_total(p) for p in parts] + [_total(out_file)]
    if before:
        raise PipelineError("RUN-E031", f"{before} instructions counted before the first vector (collection is "
                            "meant to be off outside the item run functions)", Location.in_file(parts[0]))
    return counts

"""The transcendental programs in generated C against the reference's, bit for bit.

Requirement LLR-SEM-002: exp, log, tanh, sigmoid, softplus, erf and pow have one implementation
(pipeline.semantics.transcendental), which the reference evaluates with NumPy and the
generator emits as C (programs.py). This module compiles the generated `nnef_math.h` with a
small driver under the build's flags, linked without -lm (a libm call would not link),
runs it on a fixed sample (special values, random bit patterns, normal and uniform
values; seeded) and compares every result with the NumPy program's, NaN payloads aside.
The codegen step runs it as check `codegen.transcendental` on the host, and as part of
`codegen.platform` for a deployment on another platform (pipeline/toolchain/platforms.py): the
driver built by the platform's compiler with its flags and link flags, run by its runner (under
qemu-aarch64, on a board); tests/codegen runs it on a larger sample.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.codegen.c import RUNTIME_DIR
from pipeline.codegen.c.programs import math_header
from pipeline.semantics import transcendental as T
from pipeline.diagnostics import PipelineError
from pipeline.toolchain import process
from pipeline.toolchain.cc import binutil, build_flags
from pipeline.toolchain.platforms import Platform, host_platform
from pipeline.toolchain.runners import LOCAL

# The programs it runs, the platforms' compilers, nm (pipeline/ledger/dependencies.py).
TOOLS: tuple[str, ...] = ("${CC:-gcc}", "aarch64-linux-gnu-gcc", "@platforms", "nm", "aarch64-linux-gnu-nm")

LIBM_SYMBOLS = ("expf", "logf", "powf", "tanhf", "rintf", "floorf", "sqrtf", "ceilf", "exp", "log", "pow")

DRIVER = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "nnef_math.h"
#define CAPACITY 700000
static float in[2 * CAPACITY], out[CAPACITY + NNEF_VL], xs[CAPACITY + NNEF_VL], ys[CAPACITY + NNEF_VL];
/* The functions of one argument; pow (two) apart. */
#define UNARY_FUNCTIONS(F) F(exp) F(log) F(tanh) F(sigmoid) F(softplus) F(erf) F(rint) F(floor) F(ceil) F(sqrt) F(sign)
/* nnef_<name> on each input. */
static int scalar_forms(const char *name, long n)
{
#define SCALAR(f) \
    if (!strcmp(name, #f)) { for (long i = 0; i < n; ++i) out[i] = nnef_##f(xs[i]); return 0; }
    UNARY_FUNCTIONS(SCALAR)
    if (!strcmp(name, "pow")) { for (long i = 0; i < n; ++i) out[i] = nnef_pow(xs[i], ys[i]); return 0; }
    return 4;
}
/* nnef_v<name>, NNEF_VL inputs at a time (the tail padded with zeros). */
static int vector_forms(const char *name, long n)
{
#define VECTOR(f) \
    if (!strcmp(name, #f)) { \
        for (long i = 0; i < n; i += NNEF_VL) nnef_vstore(out + i, nnef_v##f(nnef_vload(xs + i))); \
        return 0; \
    }
    UNARY_FUNCTIONS(VECTOR)
    if (!strcmp(name, "pow")) {
        for (long i = 0; i < n; i += NNEF_VL) nnef_vstore(out + i, nnef_vpow(nnef_vload(xs + i), nnef_vload(ys + i)));
        return 0;
    }
    return 4;
}
/* driver NAME COUNT [vector]: COUNT float32 inputs (pairs x, y for pow) on stdin, results on stdout. */
int main(int argc, char **argv)
{
    if (argc != 3 && argc != 4) return 2;
    long n = atol(argv[2]);
    int two = !strcmp(argv[1], "pow");
    if (n > CAPACITY || fread(in, 4, (size_t)(n * (two ? 2 : 1)), stdin) != (size_t)(n * (two ? 2 : 1))) return 3;
    for (long i = 0; i < n; ++i) {
        xs[i] = two ? in[2 * i] : in[i];
        ys[i] = two ? in[2 * i + 1] : 0.0f;
    }
    if (argc == 4 ? strcmp(argv[3], "vector") || vector_forms(argv[1], n) : scalar_forms(argv[1], n)) return 4;
    fwrite(out, 4, (size_t)n, stdout);
    return 0;
}
"""

UNARY = {"exp": T.exp, "log": T.log, "tanh": T.tanh, "sigmoid": T.sigmoid, "softplus": T.softplus, "erf": T.erf}
SPECIAL = [0.0, -0.0, np.inf, -np.inf, np.nan, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 2.0 ** 22 + 0.5, 2.0 ** 23 - 0.5,
           -(2.0 ** 23 - 0.5), 2.0 ** 23, 1e-45, -1e-45, 0.49999997, -0.49999997, 88.72283, 88.72284, -103.972,
           -104.0, 9.01, 44.4, 1e-30]


class MathCheckError(RuntimeError):
    """The driver did not build or run (a compiler diagnostic, a libm reference)."""


@dataclass(frozen=True)
class Mismatch:
    function: str
    count: int
    first_input: tuple[float, ...]
    c_value: float
    reference_value: float


def sample_inputs(random: int, seed: int = 11) -> np.ndarray:
    """Special values, then `random` random bit patterns, `random` normal and `random / 2` uniform values."""
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, 2 ** 32, random, dtype=np.uint64).astype(np.uint32).view(np.float32)
    return np.concatenate([np.array(SPECIAL, np.float32), bits, rng.normal(0, 10, random).astype(np.float32),
                           rng.uniform(-3, 3, random // 2).astype(np.float32)])


def pow_exponents(count: int, seed: int = 12) -> np.ndarray:
    rng = np.random.default_rng(seed)
    y = np.concatenate([rng.uniform(-4, 4, count // 2), rng.integers(-5, 6, count - count // 2)]).astype(np.float32)
    y[:10] = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, 2.0, 0.5, -1.0, 3.0]
    return y


def write_headers(folder: Path, lanes: int, math: str | None = None) -> None:
    """nnef_math.h (`math`, else as generated), the runtime headers and nnef_config.h in `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "nnef_math.h").write_text(math_header() if math is None else math, encoding="utf-8")
    for header in ("nnef_runtime.h", "nnef_sync.h"):
        shutil.copy(RUNTIME_DIR / header, folder)
    (folder / "nnef_config.h").write_text(f"#define NNEF_VL {lanes}\n", encoding="utf-8")


def build_driver(folder: Path, lanes: int = 4, math: str | None = None, platform: Platform | None = None) -> Path:
    """Write and compile the driver in `folder` with the build flags of `platform` (default host),
    without -lm (`math`: another nnef_math.h than the generated one, for tests that plant a defect)."""
    target = platform or host_platform()
    cc = target.cc()
    if shutil.which(cc) is None:
        raise MathCheckError(f"{cc} is not installed (Debian package {target.compiler_package or 'gcc'})")
    write_headers(folder, lanes, math)
    (folder / "driver.c").write_text(DRIVER, encoding="utf-8")
    flags, _ = build_flags(lanes, platform=target)
    binary = folder / "driver"
    try:
        proc = process.run([cc, *flags, "-I.", "driver.c", *target.link_flags, "-o", str(binary)], cwd=folder,
                           timeout=600)
        undefined = process.run([binutil("nm", platform=target), "-u", str(binary)], timeout=600).out.split() \
            if proc.returncode == 0 and not proc.stderr else []
    except PipelineError as error:
        raise MathCheckError(f"the math driver does not build: {error.code}: {error.message[:300]}") from None
    if proc.returncode != 0 or proc.stderr:
        raise MathCheckError(f"the math driver does not build cleanly: {proc.err.strip()[:400]}")
    used = sorted(set(LIBM_SYMBOLS) & set(undefined))
    if used:
        raise MathCheckError(f"the math driver references libm: {', '.join(used)}")
    return binary


def run_driver(binary: Path, name: str, data: np.ndarray, count: int, vector: bool = False,
               session: Any = None) -> np.ndarray:
    """`name` on `count` inputs: the scalar function, or with `vector` its nnef_v* form, run in `session`
    (a platform's runner, pipeline/toolchain/runners.py; default here)."""
    where = session or LOCAL
    mode = ["vector"] if vector else []
    try:
        proc = where.run([where.program(binary), name, str(count), *mode], timeout=600, stdin=data.tobytes())
    except PipelineError as error:
        raise MathCheckError(f"the math driver did not run: {error.code}: {error.message[:300]}") from None
    if proc.returncode != 0:
        raise MathCheckError(f"the math driver ({name}) exited {proc.returncode}: {proc.stderr.strip()[:300]}")
    return np.frombuffer(proc.stdout, np.float32)


def same_bits(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a.view(np.uint32) == b.view(np.uint32)) | (np.isnan(a) & np.isnan(b))


def compare(binary: Path, name: str, x: np.ndarray, y: np.ndarray | None = None,
            vector: bool = False, session: Any = None) -> Mismatch | None:
    """Run one function in C (its vector form with `vector`) and with the NumPy program; the
    mismatches, or None."""
    with np.errstate(all="ignore"):
        expected = np.asarray(T.pow(x, y) if name == "pow" else UNARY[name](x), np.float32)
    data = np.stack([x, y], 1) if name == "pow" else x
    got = run_driver(binary, name, data, x.size, vector, session)
    if got.size != x.size:
        raise MathCheckError(f"the math driver ({name}) wrote {got.size} results for {x.size} inputs")
    wrong = ~same_bits(got, expected)
    if not wrong.any():
        return None
    at = int(np.argmax(wrong))
    first = (float(x[at]),) if y is None else (float(x[at]), float(y[at]))
    label = f"{name} (NNEF_VL lanes)" if vector else name
    return Mismatch(label, int(wrong.sum()), first, float(got[at]), float(expected[at]))


def check_programs(scratch: Path, random: int = 20_000, lanes: int = 4, platform: Platform | None = None,
                   session: Any = None) -> tuple[list[Mismatch], int]:
    """Every transcendental program in C against NumPy, scalar and vector forms at `lanes` lanes, built
    for `platform` and run in `session` (defaults: the host, here); (mismatches, inputs compared)."""
    binary = build_driver(scratch, lanes, platform=platform)
    x = sample_inputs(random)
    y = pow_exponents(x.size)
    mismatches = [m for vector in (False, True) for name in UNARY
                  if (m := compare(binary, name, x, None, vector, session))]
    mismatches += [m for vector in (False, True) if (m := compare(binary, "pow", x, y, vector, session))]
    return mismatches, 2 * x.size * (len(UNARY) + 1)

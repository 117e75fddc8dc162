"""The vector forms of the transcendental programs against the lane-by-lane form, per compiler setting.

    python benchmarks/transcendental_bench.py [--elements 4608] [--repeats 2000] [--best-of 3]

nnef_math.h gives each program (exp, log, tanh, sigmoid, softplus, pow) a vector form written
out on `nnef_vf` (docs/codegen.md "Vectors"); the peer is what the header had before, the
scalar function applied lane by lane (NNEF_VMAP1/NNEF_VMAP2, still the portable build's form),
which only runs as vector code where the compiler's auto-vectorizer turns it into some. Both
are compiled here with the qualified flags at 4 and 8 lanes, once as given (gcc 12 vectorizes
at -O2) and once with `-fno-tree-vectorize` (what gcc before 12 does at -O2, and the closest
stand-in here for an older target toolchain), and timed on the same inputs (a MobileNet-style
block's activation, 4,608 floats, by default) in one process each, alternated; the table gives
the best of the rounds in µs per call over all elements, the ratio lane-by-lane / written-out,
and whether both forms gave the same bits on every element (they must: same steps, same order).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pipeline.codegen.c.mathcheck import write_headers  # noqa: E402
from pipeline.codegen.c.programs import math_header  # noqa: E402
from pipeline.toolchain.cc import build_flags, compiler_version  # noqa: E402

FUNCTIONS = ("exp", "log", "tanh", "sigmoid", "softplus", "pow")
VECTOR_BRANCH = "#if defined(NNEF_VECTOR_EXT)\n"

DRIVER = r"""
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "nnef_math.h"
static float xs[ELEMENTS + NNEF_VL], ys[ELEMENTS + NNEF_VL], out[ELEMENTS + NNEF_VL];
/* One step as the generator emits it (elementwise.py: a function per NNEF instruction, one loop). */
static void nnef_op(const float *restrict x, const float *restrict x2, float *restrict y)
{
    (void)x2;
    for (int i = 0; i < ELEMENTS; i += NNEF_VL)
        nnef_vstore(y + i, nnef_vFUNCTION(nnef_vload(x + i)FUNCTION_SECOND));
}
int main(int argc, char **argv)
{
    long repeats = argc > 1 ? atol(argv[1]) : 1000;
    unsigned s = 12345u;
    for (int i = 0; i < ELEMENTS; ++i) {          /* seeded values in [-12, 12) and [0.25, 4) */
        s = s * 1664525u + 1013904223u;
        xs[i] = (float)(s >> 8) / 16777216.0f * 24.0f - 12.0f;
        ys[i] = 0.25f + (float)(i % 61) / 16.0f;
    }
    if (!strcmp("FUNCTION_NAME", "log") || !strcmp("FUNCTION_NAME", "pow"))
        for (int i = 0; i < ELEMENTS; ++i) xs[i] = nnef_fabs(xs[i]) + 0.001f;
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (long r = 0; r < repeats; ++r) {
        nnef_op(xs, ys, out);
        __asm__ volatile("" ::: "memory");
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    double ns = (double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec);
    fprintf(stderr, "%.3f\n", ns / (double)repeats / 1e3);
    fwrite(out, 4, ELEMENTS, stdout);
    return 0;
}
"""


def headers(folder: Path, lanes: int, written_out: bool) -> None:
    """nnef_math.h as generated (written-out vector forms), or with the lane maps in their place."""
    header = math_header()
    if not written_out:
        assert header.count(VECTOR_BRANCH) == 1
        header = header.replace(VECTOR_BRANCH, "#if 0  /* benchmark peer: the lane maps */\n")
    write_headers(folder, lanes, header)


def build(folder: Path, function: str, lanes: int, elements: int, vectorize: bool) -> Path:
    second = ", nnef_vload(x2 + i)" if function == "pow" else ""
    source = (DRIVER.replace("FUNCTION_NAME", function).replace("FUNCTION_SECOND", second)
              .replace("FUNCTION", function).replace("ELEMENTS", str(elements)))
    (folder / f"{function}.c").write_text(source, encoding="utf-8")
    binary = folder / function
    extra = [] if vectorize else ["-fno-tree-vectorize"]
    flags = [f for f in build_flags(lanes)[0] if f != "-Werror"]   # the driver's own code is not judged here
    subprocess.run(["gcc", *flags, *extra, "-I.", f"{function}.c", "-o", str(binary)], cwd=folder, check=True)
    return binary


def run(binary: Path, repeats: int) -> tuple[float, bytes]:
    proc = subprocess.run([str(binary), str(repeats)], capture_output=True, check=True)
    return float(proc.stderr.decode().strip()), proc.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--elements", type=int, default=4608)
    parser.add_argument("--repeats", type=int, default=2000)
    parser.add_argument("--best-of", type=int, default=3)
    args = parser.parse_args()
    if shutil.which("gcc") is None:
        sys.exit("transcendental_bench: gcc is not installed")
    print(f"compiler: {compiler_version()}; {args.elements} elements per call, {args.repeats} calls per run, "
          f"best of {args.best_of} alternated runs")
    print()
    print("| function | lanes | auto-vectorizer | lane by lane µs | written out µs | lane by lane / written out "
          "| bit-identical |")
    print("|---|---:|---|---:|---:|---:|---|")
    with tempfile.TemporaryDirectory(prefix="nnef-transcendental-") as tmp:
        for lanes in (4, 8):
            for vectorize in (True, False):
                binaries = {}
                for written_out in (False, True):
                    folder = Path(tmp) / f"{lanes}-{vectorize}-{written_out}"
                    folder.mkdir()
                    headers(folder, lanes, written_out)
                    binaries[written_out] = {f: build(folder, f, lanes, args.elements, vectorize) for f in FUNCTIONS}
                for function in FUNCTIONS:
                    best = {False: float("inf"), True: float("inf")}
                    bits: dict[bool, bytes] = {}
                    for _ in range(args.best_of):
                        for written_out in (False, True):
                            micros, bits[written_out] = run(binaries[written_out][function], args.repeats)
                            best[written_out] = min(best[written_out], micros)
                    print(f"| {function} | {lanes} | {'on' if vectorize else 'off (-fno-tree-vectorize)'} | "
                          f"{best[False]:.2f} | {best[True]:.2f} | {best[False] / best[True]:.2f} | "
                          f"{'yes' if bits[False] == bits[True] else 'NO'} |", flush=True)


if __name__ == "__main__":
    main()

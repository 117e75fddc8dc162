"""The generated nnef_math.h (exp, log, tanh, sigmoid, softplus, pow) and the exact rint, floor,
ceil of nnef_runtime.h, compiled with the build flags and linked without -lm, against the
NumPy programs of pipeline.semantics.transcendental bit for bit."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from pipeline.codegen.c.generate import RUNTIME_DIR
from pipeline.codegen.c.programs import math_header, unknown_primitives
from pipeline.semantics import transcendental as T
from pipeline.target.build import build_flags

DRIVER = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "nnef_math.h"
static float in[2 * 700000], out[700000];
int main(int argc, char **argv)
{
    if (argc != 3) return 2;
    long n = atol(argv[2]);
    int two = !strcmp(argv[1], "pow");
    if (n > 700000 || fread(in, 4, (size_t)(n * (two ? 2 : 1)), stdin) != (size_t)(n * (two ? 2 : 1))) return 3;
    for (long i = 0; i < n; ++i) {
        float x = two ? in[2 * i] : in[i], y = two ? in[2 * i + 1] : 0.0f;
        if (!strcmp(argv[1], "exp")) out[i] = nnef_exp(x);
        else if (!strcmp(argv[1], "log")) out[i] = nnef_log(x);
        else if (!strcmp(argv[1], "tanh")) out[i] = nnef_tanh(x);
        else if (!strcmp(argv[1], "sigmoid")) out[i] = nnef_sigmoid(x);
        else if (!strcmp(argv[1], "softplus")) out[i] = nnef_softplus(x);
        else if (!strcmp(argv[1], "pow")) out[i] = nnef_pow(x, y);
        else if (!strcmp(argv[1], "rint")) out[i] = nnef_rint(x);
        else if (!strcmp(argv[1], "floor")) out[i] = nnef_floor(x);
        else if (!strcmp(argv[1], "ceil")) out[i] = nnef_ceil(x);
        else if (!strcmp(argv[1], "sqrt")) out[i] = nnef_sqrt(x);
        else return 4;
    }
    fwrite(out, 4, (size_t)n, stdout);
    return 0;
}
"""


@pytest.fixture(scope="module")
def driver(tmp_path_factory):
    if not shutil.which("gcc"):
        pytest.skip("gcc is not installed")
    folder = tmp_path_factory.mktemp("math")
    (folder / "nnef_math.h").write_text(math_header(), encoding="utf-8")
    shutil.copy(RUNTIME_DIR / "nnef_runtime.h", folder)
    (folder / "nnef_config.h").write_text("#define NNEF_VL 4\n", encoding="utf-8")
    (folder / "driver.c").write_text(DRIVER, encoding="utf-8")
    flags, _ = build_flags(4)
    binary = folder / "driver"
    proc = subprocess.run(["gcc", *flags, "-I.", "driver.c", "-o", str(binary)], cwd=folder, capture_output=True,
                          text=True)
    assert proc.returncode == 0 and not proc.stderr, proc.stderr  # no -lm: a libm call would not link
    symbols = subprocess.run(["nm", "-u", str(binary)], capture_output=True, text=True).stdout
    for name in ("expf", "logf", "powf", "tanhf", "rintf", "floorf", "sqrtf", "ceilf"):
        assert name not in symbols.split(), f"{name} referenced"
    return binary


def inputs() -> np.ndarray:
    rng = np.random.default_rng(11)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 2.0 ** 22 + 0.5,
                        2.0 ** 23 - 0.5, -(2.0 ** 23 - 0.5), 2.0 ** 23, 1e-45, -1e-45, 0.49999997, -0.49999997,
                        88.72283, 88.72284, -103.972, -104.0, 9.01, 44.4, 1e-30], np.float32)
    bits = rng.integers(0, 2 ** 32, 300_000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    return np.concatenate([special, bits, rng.normal(0, 10, 200_000).astype(np.float32),
                           rng.uniform(-3, 3, 100_000).astype(np.float32)])


def _run(binary: Path, name: str, data: np.ndarray, count: int) -> np.ndarray:
    proc = subprocess.run([str(binary), name, str(count)], input=data.tobytes(), capture_output=True, check=True)
    return np.frombuffer(proc.stdout, np.float32)


def _same(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a.view(np.uint32) == b.view(np.uint32)) | (np.isnan(a) & np.isnan(b))


def test_every_primitive_has_c():
    assert unknown_primitives() == set()


@pytest.mark.parametrize("name", ["exp", "log", "tanh", "sigmoid", "softplus", "rint", "floor", "ceil", "sqrt"])
def test_unary_bit_identical(driver, name):
    x = inputs()
    reference = {"exp": T.exp, "log": T.log, "tanh": T.tanh, "sigmoid": T.sigmoid, "softplus": T.softplus,
                 "rint": np.rint, "floor": np.floor, "ceil": np.ceil, "sqrt": np.sqrt}[name]
    with np.errstate(all="ignore"):
        expected = np.asarray(reference(x), np.float32)
    got = _run(driver, name, x, x.size)
    mismatch = ~_same(got, expected)
    assert not mismatch.any(), f"{name}: {int(mismatch.sum())} mismatches, first x = {x[np.argmax(mismatch)]!r}"


def test_pow_bit_identical(driver):
    x = inputs()[:500_000]
    rng = np.random.default_rng(12)
    y = np.concatenate([rng.uniform(-4, 4, x.size // 2), rng.integers(-5, 6, x.size - x.size // 2)]).astype(np.float32)
    y[:10] = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, 2.0, 0.5, -1.0, 3.0]
    with np.errstate(all="ignore"):
        expected = T.pow(x, y)
    got = _run(driver, "pow", np.stack([x, y], 1), x.size)
    assert not (~_same(got, expected)).any()

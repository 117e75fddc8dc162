"""The generated nnef_math.h (exp, log, tanh, sigmoid, softplus, pow) and the exact rint, floor,
ceil of nnef_runtime.h, compiled with the build flags and linked without -lm, against the
NumPy programs of pipeline.semantics.transcendental bit for bit."""

from __future__ import annotations

import shutil
import numpy as np
import pytest

from pipeline.codegen.c.mathcheck import (build_driver, check_programs, compare, pow_exponents, run_driver,
                                          same_bits, sample_inputs)
from pipeline.codegen.c.programs import unknown_primitives
from pipeline.semantics import transcendental as T

@pytest.fixture(scope="module")
def driver(tmp_path_factory):
    if not shutil.which("gcc"):
        pytest.skip("gcc is not installed")
    return build_driver(tmp_path_factory.mktemp("math"))  # fails on any diagnostic or libm reference


def inputs() -> np.ndarray:
    return sample_inputs(100_000)


def test_every_primitive_has_c():
    assert unknown_primitives() == set()


@pytest.mark.parametrize("name", ["exp", "log", "tanh", "sigmoid", "softplus", "rint", "floor", "ceil", "sqrt"])
def test_unary_bit_identical(driver, name):
    x = inputs()
    reference = {"exp": T.exp, "log": T.log, "tanh": T.tanh, "sigmoid": T.sigmoid, "softplus": T.softplus,
                 "rint": np.rint, "floor": np.floor, "ceil": np.ceil, "sqrt": np.sqrt}[name]
    with np.errstate(all="ignore"):
        expected = np.asarray(reference(x), np.float32)
    got = run_driver(driver, name, x, x.size)
    mismatch = ~same_bits(got, expected)
    assert not mismatch.any(), f"{name}: {int(mismatch.sum())} mismatches, first x = {x[np.argmax(mismatch)]!r}"


def test_pow_bit_identical(driver):
    x = inputs()
    assert compare(driver, "pow", x, pow_exponents(x.size)) is None


def test_the_check_reports_no_mismatch(tmp_path):
    if not shutil.which("gcc"):
        pytest.skip("gcc is not installed")
    mismatches, compared = check_programs(tmp_path)
    assert mismatches == [] and compared > 300_000

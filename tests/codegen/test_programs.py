"""The generated nnef_math.h (exp, log, tanh, sigmoid, softplus, pow) and the exact rint, floor,
ceil of nnef_runtime.h, compiled with the build flags and linked without -lm, against the
NumPy programs of pipeline.semantics.transcendental bit for bit."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from pipeline.codegen.c.mathcheck import (build_driver, check_programs, compare, pow_exponents, run_driver,
                                          same_bits, sample_inputs)
from pipeline.codegen.c.programs import V_OPS, math_header, unknown_primitives
from pipeline.semantics import transcendental as T
from pipeline.semantics.elementwise import sign
from pipeline.toolchain.cc import host_isa

# The NumPy definitions each C function must match bit for bit (sign: the reference's select form).
REFERENCE = {"exp": T.exp, "log": T.log, "tanh": T.tanh, "sigmoid": T.sigmoid, "softplus": T.softplus,
             "rint": np.rint, "floor": np.floor, "ceil": np.ceil, "sqrt": np.sqrt, "sign": sign}


def assert_bit_identical(binary, name: str, x: np.ndarray, vector: bool) -> None:
    with np.errstate(all="ignore"):
        expected = np.asarray(REFERENCE[name](x), np.float32)
    got = run_driver(binary, name, x, x.size, vector)
    mismatch = ~same_bits(got, expected)
    assert not mismatch.any(), f"{name}: {int(mismatch.sum())} mismatches, first x = {x[np.argmax(mismatch)]!r}"


@pytest.fixture(scope="module")
def driver(tmp_path_factory):
    if not shutil.which("gcc"):
        pytest.skip("gcc is not installed")
    return build_driver(tmp_path_factory.mktemp("math"))  # fails on any diagnostic or libm reference


def inputs() -> np.ndarray:
    return sample_inputs(100_000)


def test_every_primitive_has_c():
    assert unknown_primitives() == set()
    assert {op for op in T.OPS if op != "select"} <= set(V_OPS)


@pytest.fixture(scope="module", params=[4, 8, 16])
def vector_driver(request, tmp_path_factory):
    """The driver at 4, 8 and 16 lanes (8: AVX2 vectors, 16: AVX-512F vectors where the host has them,
    else the portable lanes)."""
    if not shutil.which("gcc"):
        pytest.skip("gcc is not installed")
    return build_driver(tmp_path_factory.mktemp(f"math{request.param}"), request.param)


@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_vector_forms_bit_identical(vector_driver, name):
    """nnef_v<name> (the programs' steps on whole vectors) gives the NumPy program's bits on every
    lane, including the padded tail and NaN, infinities, subnormals and -0 among the inputs."""
    assert_bit_identical(vector_driver, name, sample_inputs(40_000)[:-3], vector=True)   # not a multiple of the lanes


def test_vector_pow_bit_identical(vector_driver):
    x = sample_inputs(40_000)
    assert compare(vector_driver, "pow", x, pow_exponents(x.size), vector=True) is None


def test_vector_forms_are_vector_code_where_the_compiler_has_vectors():
    """With vector extensions the programs are emitted on nnef_vf (no lane-by-lane fallback); the
    fallback stays for the portable build."""
    header = math_header()
    vector, _, portable = header.partition("#else")
    assert "#if defined(NNEF_VECTOR_EXT)" in vector and "NNEF_INLINE nnef_vf nnef_vsigmoid(nnef_vf v_x)" in vector
    assert "nnef_vexp(v__t2)" in vector and "NNEF_VMAP1" not in vector
    assert "NNEF_VMAP1(nnef_vsigmoid, nnef_sigmoid)" in portable


@pytest.mark.skipif(host_isa() not in ("avx2", "avx512"), reason="the vector form is checked in AVX2 or AVX-512 code")
@pytest.mark.parametrize("lanes", [8, 16])
def test_planted_lane_error_is_caught(tmp_path, lanes):
    """The comparison sees one wrong step in the vector form (a polynomial coefficient off by one ulp)."""
    if lanes == 16 and host_isa() != "avx512":
        pytest.skip("16 lanes are vectors only with AVX-512F")
    header = math_header()
    start = header.index("NNEF_INLINE nnef_vf nnef_vexp(")
    planted = header[:start] + header[start:].replace("nnef_vset1(0x1.fffffcp-2f)", "nnef_vset1(0x1.fffff8p-2f)", 1)
    assert planted != header
    binary = build_driver(tmp_path, lanes, math=planted)
    x = sample_inputs(2_000)
    assert compare(binary, "exp", x, vector=True) is not None
    assert compare(binary, "exp", x) is None      # the scalar form is untouched


@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_unary_bit_identical(driver, name):
    assert_bit_identical(driver, name, inputs(), vector=False)


def test_pow_bit_identical(driver):
    x = inputs()
    assert compare(driver, "pow", x, pow_exponents(x.size)) is None


def test_the_check_reports_no_mismatch(tmp_path):
    if not shutil.which("gcc"):
        pytest.skip("gcc is not installed")
    mismatches, compared = check_programs(tmp_path)
    assert mismatches == [] and compared > 600_000

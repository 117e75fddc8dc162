"""exp, log, tanh, sigmoid, softplus, pow, erf: accuracy against float64, edge cases, exact
constants, documentation in sync, and bit-exact reproduction by C compiled from the
programs (the claim the code generators rely on)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest


from tests.semantics import accuracy_sweep
from tests.semantics import c_render

from pipeline.semantics import transcendental as T

F32 = np.float32
ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "semantics" / "transcendental.md"

# Documented bounds (docs/semantics/transcendental.md), with a little room: the sweep
# here is sparse, the documented figures come from the exhaustive sweep.
BOUNDS_ULP = {"exp": 1.0, "log": 1.0, "tanh": 1.1, "sigmoid": 2.45, "softplus": 2.0, "erf": 1.3}


@pytest.mark.parametrize("name", sorted(BOUNDS_ULP))
def test_accuracy_sparse_sweep(name):
    acc = accuracy_sweep.sweep(name, stride=1021)
    assert acc.count > 2_000_000
    assert acc.max_ulp <= BOUNDS_ULP[name], acc.line()


def bits(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, F32).view(np.uint32)


def f(*values: float) -> np.ndarray:
    return np.array(values, dtype=F32)


def test_exp_edge_cases():
    inf, nan = np.inf, np.nan
    y = T.exp(f(0.0, -0.0, inf, -inf, nan, 88.72283, 88.72284, -103.972, -104.0, -87.33654, 1e-30, -1e-45))
    assert y[0] == 1.0 and y[1] == 1.0
    assert y[2] == inf and y[3] == 0.0 and not np.signbit(y[3]) and np.isnan(y[4])
    assert np.isfinite(y[5]) and y[6] == inf  # overflow threshold ln(FLT_MAX) = 88.7228391
    assert 0 < y[7] <= 2.0 ** -149 * 2 and y[8] == 0.0  # subnormal, then underflow to +0
    assert accuracy_sweep.ulp_error(y[9:10], np.exp(f(-87.33654).astype(np.float64)))[0] < 1  # near FLT_MIN
    assert y[10] == 1.0 and y[11] == 1.0


def test_exp_is_exact_at_small_integers_of_ln2():
    """e^(k ln2) for the float32 nearest k*ln2 is within 1 ULP of 2^k (sanity of the scaling)."""
    k = np.arange(-126, 128)
    x = (k * np.log(2.0)).astype(F32)
    y = T.exp(x).astype(np.float64)
    ref = np.exp(x.astype(np.float64))
    assert np.all(np.abs(y - ref) <= 2.0 ** (np.floor(np.log2(ref)) - 23))


def test_log_edge_cases():
    inf, nan = np.inf, np.nan
    y = T.log(f(1.0, 0.0, -0.0, -1.0, inf, -inf, nan, 2.0 ** -149, 2.0 ** -126, 3.4028235e38, 2.0))
    assert bits(y[0]) == 0  # log(1) = +0 exactly
    assert y[1] == -inf and y[2] == -inf
    assert np.isnan(y[3]) and y[4] == inf and np.isnan(y[5]) and np.isnan(y[6])
    assert abs(float(y[7]) - (-149 * np.log(2))) < 1e-5 and abs(float(y[8]) - (-126 * np.log(2))) < 1e-5
    assert abs(float(y[9]) - 88.72283905) < 1e-5
    assert y[10] == F32(np.log(2.0))  # correctly rounded ln 2: the log2 divisor


def test_log_subnormals_sweep():
    x = np.arange(1, 1 << 23, 97, dtype=np.int32).view(F32)
    err = accuracy_sweep.ulp_error(T.log(x), np.log(x.astype(np.float64)))
    assert err.max() <= 1.0


def test_tanh_edge_cases():
    y = T.tanh(f(0.0, -0.0, 1e-40, -1e-40, 9.1, -9.1, 50.0, -50.0, np.inf, -np.inf, np.nan, 0.75, -0.75))
    assert bits(y[0]) == 0 and bits(y[1]) == 0x80000000  # signed zeros kept
    assert y[2] == F32(1e-40) and y[3] == F32(-1e-40)  # tanh(x) = x for tiny x
    assert y[4] == 1.0 and y[5] == -1.0 and y[6] == 1.0 and y[7] == -1.0
    assert y[8] == 1.0 and y[9] == -1.0 and np.isnan(y[10])
    assert y[11] == -y[12]  # odd on both sides of the switch point


def test_tanh_is_odd_everywhere():
    x = np.random.default_rng(3).standard_normal(100_000).astype(F32) * F32(4)
    assert np.array_equal(bits(T.tanh(-x)), bits(-T.tanh(x)))


def test_sigmoid_and_softplus_edge_cases():
    y = T.sigmoid(f(0.0, -0.0, np.inf, -np.inf, np.nan, 100.0, -100.0, -88.0, 15.0))
    assert y[0] == 0.5 and y[1] == 0.5 and y[2] == 1.0 and y[3] == 0.0 and np.isnan(y[4])
    assert y[5] == 1.0 and 0 < y[6] < 1e-43  # subnormal, not flushed
    assert abs(float(y[7]) / np.exp(-88.0) - 1) < 1e-6 and y[8] < 1.0
    s = T.softplus(f(0.0, np.inf, -np.inf, np.nan, 100.0, -100.0, 1e-30))
    assert abs(float(s[0]) - np.log(2)) < 1e-7 and s[1] == np.inf and s[2] == 0.0 and np.isnan(s[3])
    assert s[4] == 100.0 and 0 < s[5] < 1e-43 and s[6] == F32(np.log(2))


def test_pow_special_cases():
    inf, nan = np.inf, np.nan
    x = f(2.0, -2.0, -2.0, -2.0, 0.0, -0.0, -0.0, 0.0, nan, 1.0, -1.0, 4.0, -inf, 0.5, 3.0)
    y = f(3.0, 3.0, 2.0, 0.5, -1.0, -1.0, 3.0, 0.0, 0.0, nan, inf, 0.5, 0.5, inf, -2.0)
    r = T.pow(x, y)
    assert abs(r[0] - 8) < 1e-5 and abs(r[1] + 8) < 1e-5 and abs(r[2] - 4) < 1e-5
    assert np.isnan(r[3])  # negative base, non-integer exponent
    assert r[4] == inf and r[5] == -inf  # 0^-1, -0^-1
    assert r[6] == 0.0 and np.signbit(r[6])  # (-0)^3 = -0
    assert r[7] == 1.0 and r[8] == 1.0 and r[9] == 1.0 and r[10] == 1.0  # x^0, 1^y, (-1)^inf
    assert abs(r[11] - 2) < 1e-6 and r[12] == inf and r[13] == 0.0
    assert abs(float(r[14]) - 1 / 9) < 1e-7


def test_pow_accuracy_in_the_lrn_range():
    rng = np.random.default_rng(5)
    x = rng.uniform(1.0, 3.0, 200_000).astype(F32)
    y = rng.uniform(0.5, 1.0, 200_000).astype(F32)
    err = accuracy_sweep.ulp_error(T.pow(x, y), np.power(x.astype(np.float64), y.astype(np.float64)))
    assert err.max() <= 2.5


def test_constants_are_exact_float32_with_documented_bits():
    for program in T.PROGRAMS.values():
        for const in program.constants:
            value = const.value
            if const.type == "f" and np.isfinite(value):
                assert float(value) == float.fromhex(const.literal)
                assert const.bits == f"{int(np.array([value], F32).view(np.uint32)[0]):#010x}"
    assert T.EXP.constants[6].bits == "0x3f317200"  # LN2_HI: 15 significant bits


def test_programs_use_only_defined_operations_and_names():
    for program in T.PROGRAMS.values():
        defined = set(program.params) | {c.name for c in program.constants}
        for step in T.flatten(program):
            if step.op == T.CALL:
                assert step.args[0] in T.PROGRAMS
                args = step.args[1:]
            else:
                assert step.op in T.OPS, step.op
                assert len(step.args) == len(T.OPS[step.op].args), step
                args = step.args
            assert all(a in defined for a in args), (program.name, step)
            assert step.dest not in defined, (program.name, step.dest)
            defined.add(step.dest)
        assert program.result in defined
        used = {a for step in T.flatten(program) for a in step.args} | {program.result}
        assert {c.name for c in program.constants} <= used, (program.name, "unused constant")


FORBIDDEN_NUMPY = {"exp", "expm1", "exp2", "log", "log1p", "log2", "log10", "tanh", "sinh", "cosh", "power",
                   "float_power", "sum", "mean", "dot", "vdot", "inner", "matmul", "einsum", "tensordot", "nansum",
                   "cumsum", "average", "prod"}


def test_semantics_modules_use_no_library_transcendentals_or_reductions():
    """No NumPy transcendental, no pairwise/BLAS reduction on data, no `@` in the package."""
    import ast

    for path in sorted((ROOT / "pipeline" / "semantics").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            where = f"{path.name}:{getattr(node, 'lineno', '?')}"
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "np":
                assert node.attr not in FORBIDDEN_NUMPY, f"{where}: np.{node.attr}"
            if isinstance(node, ast.Attribute) and node.attr in ("reduce", "accumulate", "reduceat"):
                owner = node.value
                is_ufunc = isinstance(owner, ast.Attribute) and isinstance(owner.value, ast.Name) and owner.value.id == "np"
                assert not is_ufunc, f"{where}: ufunc .{node.attr}"
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and not (
                    isinstance(node.func.value, ast.Name) and node.func.value.id == "math"):
                assert node.func.attr not in ("sum", "mean", "dot", "prod"), f"{where}: .{node.func.attr}()"
            assert not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult)), f"{where}: @"


def test_documentation_lists_every_program_verbatim():
    text = DOC.read_text()
    for program in T.PROGRAMS.values():
        assert program.listing() in text, f"docs/semantics/transcendental.md is out of date for {program.name}"


def _inputs(name: str, rng: np.random.Generator) -> np.ndarray:
    pattern = rng.integers(0, 1 << 32, 400_000, dtype=np.uint64).astype(np.uint32)
    specials = f(0.0, -0.0, np.inf, -np.inf, np.nan, 88.72284, -103.98, 1e-40, -1e-40, 0.75, -0.75, 1.0, 2.0)
    x = np.concatenate([pattern.view(F32), specials, rng.standard_normal(100_000).astype(F32) * F32(8)])
    if name == "pow":
        y = np.concatenate([rng.standard_normal(x.size - 6).astype(F32) * F32(3), f(0.0, 0.5, 2.0, 3.0, np.inf, np.nan)])
        return np.stack([x, y], axis=1).ravel()
    return x


@pytest.mark.skipif(shutil.which("gcc") is None, reason="no gcc on this machine")
@pytest.mark.parametrize("flags", [["-O2"], ["-O3", "-march=native"]], ids=["O2", "O3-native"])
def test_c_code_from_the_programs_reproduces_numpy_bit_for_bit(tmp_path, flags):
    source = tmp_path / "t.c"
    programs = list(T.PROGRAMS.values())
    source.write_text(c_render.render(programs) + c_render.c_driver(programs))
    exe = tmp_path / "t"
    cmd = ["gcc", "-std=gnu99", "-Wall", "-Werror", *flags, "-ffp-contract=off", "-fno-fast-math", str(source), "-o", str(exe), "-lm"]
    compiled = subprocess.run(cmd, capture_output=True, text=True)
    assert compiled.returncode == 0, compiled.stderr
    rng = np.random.default_rng(11)
    for program in programs:
        data = _inputs(program.name, rng)
        n = data.size // len(program.params)
        run = subprocess.run([str(exe), program.name, str(n)], input=data.tobytes(), capture_output=True, check=True)
        c_out = np.frombuffer(run.stdout, dtype=F32)
        args = data.reshape(n, len(program.params)).T
        ours = T.evaluate(program, *args)
        same = (bits(c_out) == bits(ours)) | (np.isnan(c_out) & np.isnan(ours))
        assert same.all(), f"{program.name}: {int((~same).sum())} differ, first x = {args[:, np.argmin(same)]}"


def test_c_rendering_has_no_fused_or_library_transcendental_calls():
    text = c_render.render(list(T.PROGRAMS.values()))
    assert not re.search(r"\b(fmaf?|expf?|logf?|tanhf?|powf?)\(", text)


def test_erf_edge_cases():
    """Odd (the sign of -0 kept), +-1 at and beyond 4 and at infinities, NaN propagated, tiny inputs
    scaled by 2/sqrt(pi), the two branches meeting at 0.921875 within an ULP of each other."""
    inf, nan = np.inf, np.nan
    y = T.erf(f(0.0, -0.0, inf, -inf, nan, 4.0, -7.5, 1e-30, -1e-30, 0.5))
    assert bits(y[0]) == 0 and bits(y[1]) == 0x80000000
    assert y[2] == 1.0 and y[3] == -1.0 and np.isnan(y[4]) and y[5] == 1.0 and y[6] == -1.0
    tiny = float(F32(1e-30)) * 2 / np.sqrt(np.pi)
    assert accuracy_sweep.ulp_error(y[7:8], np.array([tiny]))[0] <= 1 and y[8] == -y[7]
    assert accuracy_sweep.ulp_error(y[9:10], np.array([0.5204998778130465]))[0] < 1
    below = np.nextafter(F32(0.921875), F32(0))
    ends = T.erf(f(below, 0.921875)).astype(np.float64)
    assert 0 <= ends[1] - ends[0] <= 2.0 ** -23


def test_erf_is_odd_everywhere_swept():
    x = np.arange(0, np.array([F32(4.5)]).view(np.int32)[0], 4099, dtype=np.int32).view(F32)
    assert np.array_equal(bits(T.erf(-x)), bits(T.erf(x)) ^ np.uint32(0x80000000))

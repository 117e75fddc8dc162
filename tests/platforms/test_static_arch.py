"""The instruction scans of codegen.static per architecture (pipeline/codegen/static.py).

On AArch64 fused multiply-add is base instruction set and -ffp-contract=off is the only guard;
the branch-free check on selection primitives used to know x86 mnemonics only, so on AArch64
it passed without looking. Planted here, in code built by Debian's cross compiler: a
contraction (-ffp-contract=fast) and a branching selection primitive, each caught; on x86-64 a
contraction with -mfma caught; an architecture the scans do not know is `not run`, never pass.
"""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

from tests.codegen import cghelpers as H
from tests.codegen.test_static import BODY

from pipeline.codegen import checks, static
from pipeline.ledger.checks import Verdict
from pipeline.toolchain import cc, platforms as P

ARM = P.resolve("aarch64_qemu")
needs_cross = pytest.mark.skipif(shutil.which(ARM.cc()) is None,
                                 reason="aarch64-linux-gnu-gcc is not installed (Debian package gcc-aarch64-linux-gnu)")

BRANCHING = """
float nnef_probe_escape(float a);
float probe_nnef_max(float a, float b);
float probe_nnef_max(float a, float b) { if (a > b) return nnef_probe_escape(a); return b; }
"""


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    root = tmp_path_factory.mktemp("arch")
    _, code = H.generated_code(root, BODY, {"f": np.random.default_rng(4).standard_normal((4, 3, 3, 3)),
                                            "b": np.arange(4, dtype=np.float32).reshape(1, 4)})
    return root, code


def _by_id(results):
    return {r.check_id: r for r in results}


@needs_cross
def test_clean_aarch64_code_passes_the_scans(generated, tmp_path):
    root, code = generated
    results = _by_id(checks.evaluate("t/u", code, root, tmp_path, platform=ARM))
    static_result = results[checks.STATIC]
    assert static_result.verdict is Verdict.PASS, static_result.reason
    assert static_result.measured["architecture"] == "aarch64" and static_result.measured["fused_multiply_adds"] == 0
    assert "probe_nnef_max" in static_result.measured["branch_free_primitives"]


@needs_cross
def test_planted_contraction_in_aarch64_code_is_caught(generated, tmp_path, monkeypatch):
    root, code = generated
    planted = tuple("-ffp-contract=fast" if f == "-ffp-contract=off" else f for f in cc.QUALIFIED_FLAGS)
    monkeypatch.setattr(cc, "QUALIFIED_FLAGS", planted)          # a driver regression that lets contraction through
    monkeypatch.setattr(cc, "FORBIDDEN_FLAGS", tuple(f for f in cc.FORBIDDEN_FLAGS if f != "-ffp-contract=fast"))
    results = _by_id(checks.evaluate("t/u", code, root, tmp_path, platform=ARM))
    static_result = results[checks.STATIC]
    assert static_result.verdict is Verdict.FAIL
    found = [p for p in static_result.measured["first_problems"] if p.startswith("fused multiply-add")]
    assert found and any(m in found[0] for m in ("fmadd", "fmla", "fmsub", "fmls")), found
    assert static_result.measured["fused_multiply_adds"] > 0
    assert results[checks.PLATFORM].verdict is Verdict.FAIL      # the qualified -ffp-contract=off is missing


@needs_cross
def test_planted_branch_in_an_aarch64_selection_primitive_is_caught(generated, tmp_path, monkeypatch):
    root, code = generated
    clean = static.probe_source()
    monkeypatch.setattr(static, "probe_source", lambda: clean.replace(
        "float probe_nnef_max(float a, float b);\nfloat probe_nnef_max(float a, float b) { return nnef_max(a, b); }",
        BRANCHING.strip()))
    assert static.probe_source() != clean
    static_result = _by_id(checks.evaluate("t/u", code, root, tmp_path, platform=ARM))[checks.STATIC]
    assert static_result.verdict is Verdict.FAIL
    assert any("probe_nnef_max compiles to conditional jumps" in p for p in static_result.measured["first_problems"])


@needs_cross
def test_aarch64_mnemonics(tmp_path):
    (tmp_path / "f.c").write_text(
        "float f(float a, float b, float c) { return a * b + c; }\n"
        "void g(float *restrict y, const float *restrict a, const float *restrict b)\n"
        "{ for (int i = 0; i < 64; ++i) y[i] += a[i] * b[i]; }\n"
        "int h(const float *p, int n) { for (int i = 0; i < n; ++i) if (p[i] > 0.5f) return i; return -1; }\n"
        "int k(int c) { return c ? 3 : 5; }\n")
    for contract in ("fast", "off"):
        subprocess.run([ARM.cc(), "-O3", "-mcpu=cortex-a78ae", f"-ffp-contract={contract}", "-c", "f.c", "-o",
                        f"{contract}.o"], cwd=tmp_path, check=True)
    objdump = cc.binutil("objdump", platform=ARM)
    fast = static.fused_multiply_adds(static.disassemble(objdump, tmp_path / "fast.o"), "aarch64")
    assert static.elf_architecture(tmp_path / "fast.o") == "aarch64"
    assert {"f", "g"} <= set(fast) and any(i.startswith("fmla") for i in fast["g"]), fast
    assert static.fused_multiply_adds(static.disassemble(objdump, tmp_path / "off.o"), "aarch64") == {}
    subprocess.run([ARM.cc(), "-O2", "-S", "f.c", "-o", "f.s"], cwd=tmp_path, check=True)
    jumps = static.conditional_jumps((tmp_path / "f.s").read_text(), ["h", "k", "f"], "aarch64")
    assert jumps["h"] and not jumps["k"] and not jumps["f"], jumps     # k is a csel, no branch


@pytest.mark.skipif(P.host_architecture() != "x86_64" or shutil.which("gcc") is None, reason="an x86-64 host with gcc")
def test_x86_contraction_is_caught(tmp_path):
    (tmp_path / "f.c").write_text("float f(float a, float b, float c) { return a * b + c; }\n")
    subprocess.run(["gcc", "-O2", "-mfma", "-ffp-contract=fast", "-c", "f.c", "-o", "f.o"], cwd=tmp_path, check=True)
    found = static.fused_multiply_adds(static.disassemble("objdump", tmp_path / "f.o"), "x86_64")
    assert found and found["f"][0].startswith("vfmadd"), found


def test_an_unknown_architecture_is_not_judged(generated, tmp_path, monkeypatch):
    root, code = generated
    assert static.fused_multiply_adds("", "riscv64") is None
    assert static.conditional_jumps("", ["f"], "riscv64") is None
    monkeypatch.setattr(static, "elf_architecture", lambda path: "riscv64")
    odd = P.Platform("rv", "riscv64", "gcc", "gcc", lanes=4)
    results = _by_id(checks.evaluate("t/u", code, root, tmp_path, platform=odd))
    assert results[checks.STATIC].verdict is Verdict.NOT_RUN
    assert "do not know architecture riscv64" in results[checks.STATIC].reason


def test_objects_of_another_architecture_than_declared_fail(generated, tmp_path):
    root, code = generated
    liar = P.Platform("liar", "aarch64", "gcc", "gcc", lanes=4)     # host gcc: x86-64 objects
    if P.host_architecture() == "aarch64":
        pytest.skip("the host compiler builds aarch64 here")
    static_result = _by_id(checks.evaluate("t/u", code, root, tmp_path, platform=liar))[checks.STATIC]
    assert static_result.verdict is Verdict.FAIL and "declares aarch64" in static_result.reason

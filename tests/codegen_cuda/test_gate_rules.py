"""The gate's rules on hand-written PTX, SASS and ptxas text (runs without nvcc: CI has none).

The nvcc-built counterparts are in test_gate.py; here each rule is fed one offending line.
"""

from __future__ import annotations

import pytest

from pipeline.codegen.cuda_gate import GateReport, check_ptx, check_ptxas, check_sass, nnef_file_of

KERNEL = "nnef_k_GPU0_L7_conv1"


def _ptx(*lines: str) -> str:
    body = "\n".join(f"\t{line}" for line in lines)
    return f".visible .entry {KERNEL}(\n\t.param .u64 p\n)\n{{\n{body}\n\tret;\n}}\n"


def _sass(*ops: str) -> str:
    body = "\n".join(f"        /*{16 * i:04x}*/                   {op} ;   /* 0x000 */" for i, op in enumerate(ops))
    return f"\tcode for sm_90\n\t\tFunction : {KERNEL}\n{body}\n"


@pytest.mark.parametrize("line, why", [
    ("fma.rn.f32 %f3, %f1, %f2, %f3;", "fused multiply-add"),
    ("mul.f32 %f3, %f1, %f2;", "without .rn"),
    ("add.f32 %f3, %f1, %f2;", "without .rn"),
    ("ex2.approx.ftz.f32 %f2, %f1;", "approximate"),
    ("rcp.rn.f32 %f2, %f1;", "approximate"),
    ("div.full.f32 %f3, %f1, %f2;", "approximate"),
    ("sqrt.approx.f32 %f2, %f1;", "approximate"),
    ("atom.global.add.f32 %f2, [%rd1], %f1;", "atomic"),
    ("red.global.add.f32 [%rd1], %f1;", "atomic"),
    ("@%p1 fma.rn.f32 %f3, %f1, %f2, %f3;", "fused multiply-add"),
])
def test_ptx_rule(line, why):
    report = GateReport()
    check_ptx(_ptx("mul.rn.f32 %f3, %f1, %f2;", line), "sm_90", "split/GPU0.nnef", report)
    assert [f for f in report.findings if why in f.message], report.findings
    assert str(report.findings[0]).startswith(f"split/GPU0.nnef:7: kernel {KERNEL} (PTX sm_90)")


def test_ptx_clean_kernel_passes():
    report = GateReport()
    exact = check_ptx(_ptx("mul.rn.f32 %f3, %f1, %f2;", "add.rn.f32 %f4, %f3, %f1;", "div.rn.f32 %f5, %f4, %f1;",
                           "setp.gt.f32 %p1, %f1, %f2;", "selp.f32 %f6, %f1, %f2, %p1;"), "sm_90", "x.nnef", report)
    assert report.passed and exact == {KERNEL: True}
    assert report.counts["sm_90"][KERNEL]["ptx"] == 6


@pytest.mark.parametrize("op, exact, bad", [
    ("FFMA R1, R2, R3, R4", False, True),
    ("FFMA R1, R2, R3, R4", True, False),     # ptxas's expansion of div.rn / sqrt.rn
    ("MUFU.EX2 R1, R2", False, True),
    ("ATOMG.E.ADD.F32.FTZ.RN.STRONG.GPU PT, R1, [R2.64], R3", True, True),
    ("RED.E.ADD.F32.FTZ.RN.STRONG.GPU [R2.64], R3", True, True),
    ("LDL R1, [R1]", True, True),
    ("@!P0 STL [R1], R2", True, True),
    ("FMUL R1, R2, R3", False, False),
])
def test_sass_rule(op, exact, bad):
    report = GateReport()
    check_sass(_sass("FADD R1, R2, R3", op, "EXIT"), "sm_90", "x.nnef", {KERNEL: exact}, report)
    assert report.passed is not bad, report.findings


def test_ptxas_spills():
    report = GateReport()
    text = (f"ptxas info    : Function properties for {KERNEL}\n"
            "    8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads\n")
    check_ptxas(text, "sm_90", "x.nnef", report)
    assert not report.passed and "spill" in report.findings[0].message


def test_nnef_file_from_the_header_comment():
    assert nnef_file_of("/* nnef_item_G.cu -- generated ...\n * Item G of m/d, from\n * split/d/G.nnef (sha256 ab) and") \
        == "split/d/G.nnef"

"""Findings as an auditor reads them (pipeline/evidence/gaps.py): short, at the input that caused them, with a fix."""

from __future__ import annotations

from pipeline.diagnostics import Severity
from pipeline.evidence import gaps
from pipeline.ledger.checks import Verdict, Where
from pipeline.numerics.tolerance import effective_tolerance
from tests.projects import ROOT


def test_a_tolerance_too_tight_points_at_its_line_and_says_what_would_be_justified() -> None:
    """lenet5 with validation.tolerance.max_abs_error 1e-7: the tolerance rule's own reason (the export and
    compare steps say it) -> models/lenet5/deploy.yaml:12 (where the limit is written) and the justified limit."""
    rule = effective_tolerance(1.0e-7, None, 1.073e-6, "not discriminating")
    reason = f"output 'prob': {rule.reason}"
    gap = gaps.gaps_of("HLR-NUM-002", "lenet5", "export.tolerance", [(Verdict.FAIL, "lenet5", reason, Where.HOST)],
                       False, False, "export")
    assert gap is not None
    finding = gaps.finding(gap, "EVID-E013", Severity.ERROR, gaps.Locator(ROOT).span, None)
    assert (finding.span.file, finding.span.line) == ("models/lenet5/deploy.yaml", 12)
    lines = (ROOT / "models/lenet5/deploy.yaml").read_text().splitlines()
    assert lines[11].strip().startswith("max_abs_error:")
    assert "at least 1.1e-06" in finding.fix and "validation.tolerance.max_abs_error" in finding.fix
    assert finding.message.startswith("HLR-NUM-002 on lenet5: export.tolerance fail: output 'prob'")
    assert len(finding.message) <= gaps.MAX_MESSAGE and "\n" not in finding.message


def test_each_kind_of_gap_names_its_input() -> None:
    locate = gaps.Locator(ROOT).span
    lines = (ROOT / "models/lenet5/deploy.yaml").read_text().splitlines()

    def found(check: str, verdict: Verdict, reason: str, subject: str = "lenet5", step: str = "compare",
              where: Where | None = Where.HOST):
        gap = gaps.gaps_of("HLR-X-001", "lenet5", check, [(verdict, subject, reason, where)], False, False, step)
        assert gap is not None
        return gaps.finding(gap, "EVID-E021", Severity.WARNING, locate, None)

    missing = found("codegen.static", Verdict.NOT_RUN, "platform aarch64_qemu needs aarch64-linux-gnu-gcc (Debian "
                    "package gcc-aarch64-linux-gnu), not installed here; install with: apt-get install "
                    "gcc-aarch64-linux-gnu qemu-user", "lenet5/aarch64", "codegen")
    assert lines[missing.span.line - 1].strip().startswith("platform: aarch64_qemu")
    assert "gcc-aarch64-linux-gnu qemu-user" in missing.fix
    met = found("met.budget", Verdict.NOT_RUN, "host is not the timing platform (deploy.yaml declares no "
                "met.platform); measured here: max 80 us", "lenet5/single")
    assert lines[met.span.line - 1].strip().startswith("met:") and "NNCERT_PLATFORM" in met.fix
    emulated = found("compare.cuda_reference", Verdict.EMULATED, "host emulation: g++ ...", "lenet5/gpu",
                     where=Where.EMULATION)
    assert lines[emulated.span.line - 1].strip().startswith("gpu:") and "gpu-check" in emulated.fix
    export = found("export.khronos", Verdict.FAIL, "the Khronos parser reads conv1 otherwise", step="export")
    assert (export.span.file, export.span.line) == ("models/lenet5/model.onnx", 1)


def test_brief_keeps_the_first_clause() -> None:
    assert gaps.brief("host is not the timing platform (no met.platform); measured here: max 5 us") == \
        "host is not the timing platform (no met.platform)"
    assert gaps.brief("no computed bound: not discriminating: output 'logits', reference: bound 1.1e+05 is "
                      "1.47e+12 times the measured distance", 60) == "no computed bound: not discriminating"
    assert len(gaps.brief("word " * 100, 50)) <= 50

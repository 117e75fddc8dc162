"""The console summary of `doit verify`: fits a terminal, says what is owed, counts as the HTML does."""

from __future__ import annotations

import re
from pathlib import Path

from pipeline.evidence.build import build_reports
from pipeline.evidence.summary import LEGEND, MAX_LINE, shorten, summary_text
from tests.evidence.evidence_fakeproject import FakeProject

LONG = ("host emulation: g++ -x c++ -std=c++17 -O2 -Wall -Wextra -Werror -ffp-contract=off -fno-math-errno "
        "-DNNEF_CUDA_EMULATE with nnef_cuda_emulate.h (launch = loop over every block and thread) ") * 8


def test_shorten_cuts_between_words() -> None:
    text = shorten("alpha beta gamma delta", 14)
    assert text == "alpha beta..." and len(text) <= 14
    assert shorten("one\nline  with  spaces") == "one line  with  spaces"
    cut = shorten(LONG, MAX_LINE)
    assert len(cut) <= MAX_LINE and cut.endswith("...") and LONG.startswith(cut[:-3])
    assert LONG[len(cut) - 3] == " " or cut[-4] in ")"   # the cut falls between two words


def test_summary_fits_a_terminal_and_names_what_is_owed(tmp_path: Path, registry: None) -> None:
    fake = FakeProject(tmp_path)
    fake.add_model("alpha", verdicts={"export.numeric": ("fail", LONG)})
    fake.add_model("beta", verdicts={"petri.final_marking": ("not run", LONG)})
    (tmp_path / "models/gamma").mkdir()
    (tmp_path / "models/gamma/model.onnx").write_bytes(b"")
    matrix = build_reports(tmp_path)
    document = matrix.to_json()
    text = summary_text(document)
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= MAX_LINE
    assert all(line in lines for line in LEGEND)
    assert "Models: alpha, beta; refused: gamma" in text
    assert any(line.startswith("  DEPLOY-E001: model gamma not run: models/gamma: has model.onnx but no deploy.yaml")
               for line in lines)
    # one line per requirement not verified: its ID, what it owes, on how many models, where to read more
    failed = next(line for line in lines if line.strip().startswith("HLR-EXP-001"))
    assert re.search(r"HLR-EXP-001 +a fix: it fails +fail 1 of 2 +export.numeric +fail: .* +#req-HLR-EXP-001$",
                     failed), failed
    not_run = next(line for line in lines if line.strip().startswith("HLR-EXE-001"))
    assert "a passing result" in not_run or "a pass on every model" in not_run
    assert "not run 1" in not_run and "#req-HLR-EXE-001" in not_run
    assert "VERIFY FAILED" in text
    # the same three counts as the HTML page
    counts = re.search(r"Findings: (\d+ errors, \d+ warnings, \d+ notes)", text)
    assert counts is not None
    html = (tmp_path / "reports/trace-matrix.html").read_text(encoding="utf-8")
    assert f"Findings: {counts.group(1)}" in html


def test_the_execute_column_says_where_the_deployments_ran() -> None:
    document = {
        "coverage": {"total": 0, "by_status": {"verified": 0, "partially verified": 0, "failed": 0, "not verified": 0,
                                               "no check": 0}, "by_level": {}},
        "models": ["m"],
        "step_states": {"m": {"execute": "ran", "compare": "ran", "codegen": "failed"}},
        "outcomes": [
            {"model": "m", "step": "compare", "check_id": "compare.reference", "verdict": "pass", "results": [
                {"subject": "m/single", "verdict": "pass", "obtained": {"where": "host", "detail": "x86_64 Linux"}},
                {"subject": "m/gpu", "verdict": "emulated", "obtained": {"where": "emulation", "detail": "g++"}},
                {"subject": "m/board", "verdict": "pass", "obtained": {"where": "target", "detail": "orin"}}]},
            {"model": "m", "step": "compare", "check_id": "compare.onnxruntime", "verdict": "pass", "results": [
                {"subject": "m/gpu", "verdict": "pass", "obtained": {"where": "host", "detail": "x86_64 Linux"}}]},
        ],
    }
    text = summary_text(document)
    row = next(line for line in text.splitlines() if line.startswith("m "))
    assert "target 1 host 1 emulation 1" in row and "step failed" in row


def test_a_row_names_only_the_checks_short_of_pass() -> None:
    from pipeline.evidence.summary import owed_rows

    requirement = {"id": "HLR-X-001", "status": "partially verified", "checks": ["a.ok", "b.short", "c.ok"],
                   "per_model": {"m": "partial", "n": "pass"}, "via_children": False}
    outcomes = [{"check_id": "a.ok", "model": "m", "verdict": "pass"},
                {"check_id": "b.short", "model": "m", "verdict": "not run"},
                {"check_id": "b.short", "model": "n", "verdict": "pass"},
                {"check_id": "c.ok", "model": "m", "verdict": "pass"}]
    rows, _ = owed_rows({"requirements": [requirement], "outcomes": outcomes})
    assert rows[0][0] == "HLR-X-001" and rows[0][3] == "b.short"
    # no outcome known for any of its checks: all of them are named
    rows, _ = owed_rows({"requirements": [requirement], "outcomes": []})
    assert rows[0][3] == "a.ok, b.short, c.ok"


def test_the_execute_column_counts_deployments_not_model_level_results() -> None:
    """One deployment is `host 1`: a model-level result (subject the model: an n/a, a check over the model)
    of a compare check is no deployment (it read `host 2` for one deployment)."""
    document = {
        "coverage": {"total": 0, "by_status": {"verified": 0, "partially verified": 0, "failed": 0, "not verified": 0,
                                               "no check": 0}, "by_level": {}},
        "models": ["m"],
        "step_states": {"m": {"execute": "ran", "compare": "ran"}},
        "outcomes": [
            {"model": "m", "step": "compare", "check_id": "compare.reference", "verdict": "pass", "results": [
                {"subject": "m/single", "verdict": "pass", "obtained": {"where": "host", "detail": "x86_64 Linux"}}]},
            {"model": "m", "step": "compare", "check_id": "compare.nvdla_reference", "verdict": "n/a", "results": [
                {"subject": "m", "verdict": "n/a", "obtained": None}]},
            {"model": "m", "step": "compare", "check_id": "met.budget", "verdict": "not run", "results": [
                {"subject": "m", "verdict": "not run", "obtained": {"where": "host", "detail": "x86_64 Linux"}}]},
        ],
    }
    row = next(line for line in summary_text(document).splitlines() if line.startswith("m "))
    assert " host 1 " in f"{row} " and "host 2" not in row
    # the table counts checks (one per check and model), n/a apart: the legend says so
    assert "n/a 1" in row and "Cells count checks" in LEGEND[0]


def test_every_finding_line_is_short_and_says_what_to_do() -> None:
    from pipeline.evidence.summary import MAX_FINDING, finding_lines

    finding = {"code": "EVID-E021", "severity": "warning", "message": "a reason " * 60, "fix": "install y " * 60,
               "span": {"file": "models/lenet5/deploy.yaml", "line": 52, "column": 5}}
    lines = finding_lines(finding)
    assert lines[0].startswith("  models/lenet5/deploy.yaml:52: EVID-E021: ") and lines[1].startswith("    fix: install")
    assert all(len(line) <= MAX_FINDING for line in lines)


def test_the_summary_names_the_packages_missing_here() -> None:
    document = {
        "coverage": {"total": 0, "by_status": {"verified": 0, "partially verified": 0, "failed": 0, "not verified": 0,
                                               "no check": 0}, "by_level": {}},
        "models": ["m"],
        "outcomes": [{"model": "m", "step": "codegen", "check_id": "codegen.static", "verdict": "not run", "results": [
            {"subject": "m/aarch64", "verdict": "not run", "reason": "platform aarch64_qemu needs aarch64-linux-gnu-gcc "
             "(Debian package gcc-aarch64-linux-gnu), not installed here; install with: apt-get install "
             "gcc-aarch64-linux-gnu"}, {"subject": "m/single", "verdict": "pass", "reason": ""}]}],
    }
    line = next(l for l in summary_text(document).splitlines() if l.startswith("Not installed here"))
    assert "gcc-aarch64-linux-gnu" in line and "bash tools/setup verify" in line

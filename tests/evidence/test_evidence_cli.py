"""`python -m pipeline evidence build | summary | requirements | baseline`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.evidence.evidence_fakeproject import FakeProject
from pipeline import cli
from pipeline.ledger.requirements import load_requirements

ROOT = Path(__file__).parents[2]


def requirement_count() -> int:
    """How many requirements the shipped set holds (it grows as steps add LLRs)."""
    return len(load_requirements(ROOT).requirements)


@pytest.fixture
def run(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):  # type: ignore[no-untyped-def]
    monkeypatch.setattr(cli, "COMMAND_MODULES", ("pipeline.evidence.command",))

    def invoke(*argv: str) -> tuple[int, str, str]:
        code = cli.main(list(argv))
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    return invoke


def test_build_then_summary(project: FakeProject, run) -> None:  # type: ignore[no-untyped-def]
    root = str(project.root)
    code, out, _ = run("evidence", "build", "--root", root)
    assert code == 1  # the real requirement set is far from covered by two fake models
    assert "evidence.zip: verified; no previous package" in out and "VERIFY FAILED" in out
    assert (project.root / "reports/trace-matrix.html").is_file()
    code, out2, _ = run("evidence", "summary", "--root", root)
    assert code == 1 and f"Requirements: {requirement_count()} total" in out2
    code, _, err = run("evidence", "build", "--root", root, "--model", "gamma")
    assert code == 2 and "unknown model(s) gamma" in err


def test_summary_without_reports(tmp_path: Path, run) -> None:  # type: ignore[no-untyped-def]
    code, _, err = run("evidence", "summary", "--root", str(tmp_path))
    assert code == 2 and "EVID-E061" in err


def test_requirements_lint(tmp_path: Path, project: FakeProject, run) -> None:  # type: ignore[no-untyped-def]
    code, out, _ = run("evidence", "requirements", "--root", str(project.root), "--checks")
    assert code == 0 and f"{requirement_count()} requirements in 3 files; 0 errors" in out
    code, out, _ = run("evidence", "requirements", "--root", str(project.root), "--json")
    data = json.loads(out)
    assert len(data["requirements"]) == requirement_count() and len(data["requirements"][0]["fingerprint"]) == 64
    bad = tmp_path / "bad"
    (bad / "requirements").mkdir(parents=True)
    (bad / "requirements/sys.yaml").write_text("schema_version: 1\nlevel: SYS\ntitle: t\nrequirements:\n  - id: SYS-1\n")
    code, out, _ = run("evidence", "requirements", "--root", str(bad))
    assert code == 1 and "requirements/sys.yaml:5:5: error EVID-E002: requirements[0]: missing required field 'title'" in out


def test_baseline_writes_the_lock(project: FakeProject, run) -> None:  # type: ignore[no-untyped-def]
    code, out, _ = run("evidence", "baseline", "--root", str(project.root))
    assert code == 0
    lock = json.loads((project.root / "requirements/links.lock.json").read_text())
    links = {(l["source"], l["target"]) for l in lock["links"]}
    assert ("check:export.numeric", "HLR-EXP-001") in links and ("HLR-EXP-001", "SYS-001") in links


def test_no_subcommand_is_usage_error(run) -> None:  # type: ignore[no-untyped-def]
    code, _, _ = run("evidence")
    assert code == 2

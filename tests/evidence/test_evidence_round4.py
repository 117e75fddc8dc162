"""Hostile input, round four, on the evidence commands (issue 39).

Each case once held badly: a rogue `./artifacts/...` entry in an unsigned package verified OK
(and would overwrite the real artifact when unpacked); `evidence keygen K K` wrote the public
key over the new private one; `verify` without --key said "signed by keyid X" of a signature
nobody checked; reasons from a merged shard starting with `=` were formulas in the CSV; a
baseline of 100,000 nested `[`, a 90 MB JSON or a 96 MB JUnit was PIPE-E900; raw escape
sequences reached the terminal; SIGTERM left a merge's staging folder; a relative --root was
joined twice.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pipeline import cli
from pipeline.diagnostics import PipelineError
from pipeline.evidence.build import build_model_package
from pipeline.evidence.package import verify_package
from pipeline.evidence.regression import read_baseline
from pipeline.evidence.render_text import csv_cell
from pipeline.evidence.signing import ENVELOPE, generate_key_pair, load_signer
from tests.evidence.evidence_fakeproject import FakeProject
from tests.evidence.test_evidence_merge_hostile import shards  # noqa: F401 (fixture)
from tests.evidence.test_evidence_verify_hostile import entries_of, remanifest, write_zip

REPO = Path(__file__).resolve().parents[2]
ESC = "\x1b]0;owned\x07\x1b[2J"


@pytest.fixture
def package(project: FakeProject) -> Path:
    outcome = build_model_package("alpha", project.root)
    assert outcome.verify.ok, outcome.verify.findings
    return outcome.path


@pytest.fixture
def evidence_cli(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli, "COMMAND_MODULES", ("pipeline.evidence.command",))


def _no_control(text: str) -> None:
    assert not any(c in text for c in "\x1b\x07\x00\x9b\u202e\r"), repr(text[:400])


# ---------------------------------------------------------------- package entry names

@pytest.mark.parametrize("rogue", ["./artifacts/alpha/export/graph.nnef", "artifacts//alpha/export/graph.nnef",
                                   "artifacts/alpha/./export/graph.nnef", "artifacts/alpha/export/../export/graph.nnef",
                                   "Artifacts/alpha/export/graph.nnef"])
def test_a_name_that_normalises_onto_another_entry_is_refused_before_any_check(package: Path, tmp_path: Path,
                                                                                rogue: str) -> None:
    entries = entries_of(package)
    entries[rogue] = b"version 1.0;\ngraph rogue() -> () {}\n"   # overwrites the real one when unpacked
    entries.pop(ENVELOPE, None)
    forged = write_zip(tmp_path / "rogue.zip", remanifest(entries))
    report = verify_package(forged)
    assert report.exit_code == 2 and {f.code for f in report.findings} == {"EVID-E055"}, report.findings
    assert rogue in report.findings[0].message and report.checked == 0   # refused before any entry was hashed


def test_every_entry_is_judged_by_where_it_lies(package: Path, tmp_path: Path) -> None:
    entries = entries_of(package)
    entries["notes/readme.txt"] = b"outside every folder a package holds\n"
    entries["models/beta/deploy.yaml"] = b"another model's file\n"
    report = verify_package(write_zip(tmp_path / "odd.zip", remanifest(entries)))
    messages = " ".join(f.message for f in report.findings if f.code == "EVID-E063")
    assert report.exit_code == 1 and "notes/readme.txt" in messages and "models/beta/deploy.yaml" in messages


def test_an_entry_name_with_escape_sequences_never_reaches_the_terminal(package: Path, tmp_path: Path,
                                                                         evidence_cli: None,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    entries = entries_of(package)
    entries[f"evidence/{ESC}.txt"] = b"x"
    forged = write_zip(tmp_path / "escape.zip", remanifest(entries))
    assert cli.main(["evidence", "verify", str(forged)]) == 2
    out = capsys.readouterr()
    _no_control(out.out + out.err)
    assert "\\x1b]0;owned" in out.out + out.err


def test_a_binary_package_line_is_never_drawn_under_its_findings(package: Path, tmp_path: Path, evidence_cli: None,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    entries = entries_of(package)
    entries["artifacts/alpha/export/graph.nnef"] = b"tampered\n"
    forged = write_zip(tmp_path / "tampered.zip", entries)       # not remanifested: EVID-E050 at PACKAGE:1:1
    assert cli.main(["evidence", "verify", str(forged)]) == 1
    out = capsys.readouterr().out
    _no_control(out)
    assert "PK\x03\x04" not in out and "    PK" not in out


# ---------------------------------------------------------------- signatures and keys

def test_keygen_refuses_one_file_for_both_keys(tmp_path: Path, evidence_cli: None,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    key = tmp_path / "K"
    assert cli.main(["evidence", "keygen", str(key), str(key)]) == 2
    assert "EVID-E065" in capsys.readouterr().err and not key.exists()
    (tmp_path / "sub").mkdir()
    assert cli.main(["evidence", "keygen", str(key), str(tmp_path / "sub/../K")]) == 2
    assert not key.exists()
    assert cli.main(["evidence", "keygen", str(key), str(tmp_path / "K.pub")]) == 0
    assert load_signer(key) is not None and key.stat().st_mode & 0o077 == 0


def test_a_signature_nobody_checked_is_not_called_signed(project: FakeProject, tmp_path: Path, evidence_cli: None,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    private, public = tmp_path / "k.pem", tmp_path / "k.pub"
    generate_key_pair(private, public)
    assert cli.main(["evidence", "build", "--root", str(project.root), "--model", "alpha", "--sign-key",
                     str(private)]) in (0, 1)
    capsys.readouterr()
    package = project.root / "reports/alpha/evidence.zip"
    assert cli.main(["evidence", "verify", str(package)]) == 0
    out = capsys.readouterr().out
    assert "signature present, not checked" in out and "signed by" not in out
    assert cli.main(["evidence", "verify", str(package), "--json"]) == 0
    signature = json.loads(capsys.readouterr().out)["signature"]
    assert signature["signed"] is False and signature["present"] is True and signature["authenticated"] is None
    assert cli.main(["evidence", "verify", str(package), "--json", "--key", str(public)]) == 0
    assert json.loads(capsys.readouterr().out)["signature"]["signed"] is True


# ---------------------------------------------------------------- the CSV

@pytest.mark.parametrize("cell", ["=HYPERLINK(\"http://x\")", "+1+1", "-2+3", "@SUM(A1)", "\tx", "\rx"])
def test_formula_cells_are_neutralised(cell: str) -> None:
    assert csv_cell(cell) == "'" + cell
    assert csv_cell("pass") == "pass" and csv_cell("a=b") == "a=b"


def test_a_reason_from_a_shard_is_no_formula_in_the_trace_matrix(project: FakeProject, evidence_cli: None,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    checks = project.root / "artifacts/alpha/export/checks.json"
    document = json.loads(checks.read_text())
    document["results"][0].update(verdict="fail", reason='=HYPERLINK("http://evil","x")')
    checks.write_text(json.dumps(document))
    cli.main(["evidence", "build", "--root", str(project.root)])
    capsys.readouterr()
    csv_text = (project.root / "reports/trace-matrix.csv").read_text()
    assert "=HYPERLINK" in csv_text and not any(cell.startswith(("=", "+", "-", "@")) for line in csv_text.splitlines()
                                               for cell in line.replace('"', "").split(","))


# ---------------------------------------------------------------- baselines

def _refused_baseline(path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    started = time.perf_counter()
    with pytest.raises(PipelineError) as caught:
        read_baseline(path)
    assert time.perf_counter() - started < 60
    assert caught.value.code == "EVID-E083", caught.value
    return caught.value.message


def test_a_deeply_nested_baseline_is_refused_before_parsing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    deep = tmp_path / "deep.json"
    deep.write_bytes(b"[" * 100_000)
    assert "nested deeper" in _refused_baseline(deep, capsys)
    deep_xml = tmp_path / "deep.xml"
    deep_xml.write_text("<testsuites>" + "<a>" * 100_000 + "</a>" * 100_000 + "</testsuites>")
    assert "deeper" in _refused_baseline(deep_xml, capsys)


def _limited(code: str, limit: int = 2_000_000_000) -> subprocess.CompletedProcess[str]:
    """`code` run in a child under an address-space limit (bytes)."""
    prefix = f"import resource; resource.setrlimit(resource.RLIMIT_AS, ({limit}, {limit}))\n"
    return subprocess.run([sys.executable, "-c", prefix + code], capture_output=True, text=True, timeout=600,
                          cwd=REPO)


def test_baselines_the_size_limit_allows_are_refused_within_2_gb(tmp_path: Path) -> None:
    """A 90 MB JSON of small values and a 96 MB JUnit of bare tags: coded refusals, never MemoryError."""
    big_json = tmp_path / "big.json"
    with open(big_json, "wb") as out:
        out.write(b'{"models": [' + b"[]," * 30_000_000 + b"[]]}")
    big_xml = tmp_path / "big.xml"
    with open(big_xml, "w") as out:
        out.write("<testsuites>" + "<a/>" * 24_000_000 + "</testsuites>")
    for path in (big_json, big_xml):
        assert path.stat().st_size > 89_000_000
        done = _limited("from pipeline.evidence.regression import read_baseline\n"
                        "from pipeline.diagnostics import PipelineError\n"
                        f"try:\n    read_baseline({str(path)!r})\nexcept PipelineError as e:\n    print(e.code, e.message)")
        assert done.returncode == 0 and done.stdout.startswith("EVID-E083"), (done.stdout, done.stderr[-2000:])


def test_baseline_model_names_are_escaped_on_the_terminal(project: FakeProject, tmp_path: Path, evidence_cli: None,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["evidence", "build", "--root", str(project.root)]) in (0, 1)
    capsys.readouterr()
    trace = json.loads((project.root / "reports/trace.json").read_text())
    trace["models"].append(f"gone{ESC}")
    baseline = tmp_path / "baseline.json"
    baseline.write_text(json.dumps(trace))
    assert cli.main(["evidence", "build", "--root", str(project.root), "--baseline", str(baseline)]) in (0, 1)
    out = capsys.readouterr()
    _no_control(out.out + out.err)
    assert "gone\\x1b]0;owned" in out.out + out.err


# ---------------------------------------------------------------- merges

def test_a_relative_root_is_joined_once(shards: tuple[Path, Path, Path], monkeypatch: pytest.MonkeyPatch,  # noqa: F811
                                        capsys: pytest.CaptureFixture[str]) -> None:
    a, b, merged = shards
    monkeypatch.chdir(merged.parent)
    status = cli.main(["evidence", "merge", a.name, b.name, "--root", merged.name])
    out = capsys.readouterr()
    assert "PIPE-E901" not in out.err and f"{merged.name}/{merged.name}" not in out.out + out.err, out
    assert status in (0, 1) and (merged / "artifacts/alpha/export/graph.nnef").is_file()
    assert "reports/alpha/evidence.zip: verified" in out.out


SLOW_MERGE = """
import sys, time
from pipeline.evidence import merge as M
copy = M._copy_file
def slow(*args):
    copy(*args)
    time.sleep(0.3)
M._copy_file = slow
M.merge_shards(sys.argv[1:3], sys.argv[3])
"""


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_merge_stopped_by_a_signal_removes_its_staging_folder(shards: tuple[Path, Path, Path],  # noqa: F811
                                                                signum: int) -> None:
    a, b, merged = shards
    child = subprocess.Popen([sys.executable, "-c", SLOW_MERGE, str(a), str(b), str(merged)], cwd=REPO,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while not any(p.name.startswith(".merge-") and any(p.rglob("*")) for p in merged.iterdir()):
            assert child.poll() is None and time.monotonic() < deadline, child.communicate()
            time.sleep(0.05)
        child.send_signal(signum)
        child.wait(timeout=60)
    finally:
        child.kill()
    assert child.returncode != 0
    assert not [p for p in merged.iterdir() if p.name.startswith(".merge-")], "the staging folder was left"
    assert not (merged / "artifacts/alpha").exists() and not (merged / "artifacts/beta").exists()

"""`doit verify` end to end on fake projects: passes when covered, fails on gaps, skips no-ops."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.evidence.evidence_fakeproject import MINIMAL_CHECKS, REPO, FakeProject, isolated_registry



FAKECHECKS = """\
from pipeline.ledger.checks import register_check
{registrations}
"""

DODO = """\
from pipeline.ledger import checks
checks.CHECK_MODULES = ("fakechecks", "pipeline.evidence.selfchecks")
import fakechecks  # noqa: F401

DOIT_CONFIG = {{"default_tasks": ["verify"], "backend": "json", "dep_file": ".doit.db", "verbosity": 2}}


def _export(model):
    from tests.evidence.evidence_fakeproject import FakeProject
    FakeProject(__import__("pathlib").Path("."), requirements=False).add_model(model, steps=("export",))
    return True


def task_export():
    for model in ("alpha",):
        yield {{"name": model, "actions": [(_export, [model])], "file_dep": ["models/alpha/deploy.yaml"],
               "targets": ["artifacts/alpha/export/graph.nnef"]}}


from pipeline.evidence.tasks import evidence_tasks

task_evidence, task_verify = evidence_tasks(after=("export",))
"""


def doit(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-m", "doit", *args], cwd=root, env=env, capture_output=True, text=True, timeout=300)


def registrations(specs: dict[str, tuple[str, tuple[str, ...]]]) -> str:
    return "\n".join(f"register_check({cid!r}, 'fake {cid}', {step!r}, {list(reqs)!r})" for cid, (step, reqs) in specs.items())


@pytest.fixture
def covered(tmp_path: Path) -> Path:
    """A project whose minimal requirement set is fully verified by the fake + evidence checks."""
    with isolated_registry(MINIMAL_CHECKS):
        fake = FakeProject(tmp_path, minimal=True)
        fake.add_model("alpha", steps=("export", "codegen"))
    (tmp_path / "fakechecks.py").write_text(FAKECHECKS.format(registrations=registrations(MINIMAL_CHECKS)))
    (tmp_path / "dodo.py").write_text(DODO.format())
    return tmp_path


def test_verify_passes_when_every_requirement_is_verified_and_reruns_are_cheap(covered: Path) -> None:
    first = doit(covered, "verify")
    assert first.returncode == 0, first.stdout + first.stderr
    out = first.stdout
    assert out.index(".  export:alpha") < out.index(".  evidence:alpha") < out.index(".  evidence:reports") < out.index(".  verify")
    assert "VERIFY PASSED" in out and "Requirements: 14 total: 14 verified" in out
    assert "alpha  pass 1" in out  # the model x step table
    for name in ("trace-matrix.html", "trace-matrix.csv", "trace-matrix.md", "trace.json", "junit.xml", "alpha/evidence.zip"):
        assert (covered / "reports" / name).is_file()

    started = time.perf_counter()
    again = doit(covered, "verify")
    elapsed = time.perf_counter() - started
    assert again.returncode == 0
    assert "-- export:alpha" in again.stdout and "-- evidence:alpha" in again.stdout and "-- evidence:reports" in again.stdout
    assert "VERIFY PASSED" in again.stdout  # the summary is printed on every run
    assert elapsed < 10, f"no-op doit verify took {elapsed:.1f}s"

    baseline = doit(covered, "--always-execute", "verify")
    assert baseline.returncode == 0
    assert ".  export:alpha" in baseline.stdout and ".  evidence:alpha" in baseline.stdout
    package = (covered / "reports/alpha/package-check.json").read_text()
    assert '"identical_to_previous_build": true' in package


def test_verify_fails_on_a_requirement_no_check_verifies(covered: Path) -> None:
    assert doit(covered, "verify").returncode == 0
    llr = covered / "requirements/llr.yaml"
    llr.write_text(llr.read_text() + textwrap.dedent("""\
      - id: LLR-EXP-001
        title: Export writes one line per instruction
        text: Each NNEF instruction is written on its own line.
        rationale: Line-level trace.
        parents: [HLR-EXP-001]
        verification: [test]
        source: [test]
    """))
    result = doit(covered, "verify")
    assert result.returncode != 0
    assert "EVID-E012: LLR-EXP-001 is verified by no check" in result.stdout and "VERIFY FAILED" in result.stdout


def test_verify_fails_on_a_check_with_no_requirement(covered: Path) -> None:
    assert doit(covered, "verify").returncode == 0
    specs = dict(MINIMAL_CHECKS, **{"codegen.orphan": ("codegen", ())})
    (covered / "fakechecks.py").write_text(FAKECHECKS.format(registrations=registrations(specs)))
    result = doit(covered, "verify")  # the registry changed: evidence must re-run without help
    assert result.returncode != 0
    assert "EVID-E011: check codegen.orphan (step codegen) traces to no requirement" in result.stdout


def test_verify_fails_on_a_failing_check(covered: Path) -> None:
    path = covered / "artifacts/alpha/codegen/checks.json"
    path.write_text(path.read_text().replace('"verdict": "pass"', '"verdict": "fail"').replace('"reason": ""', '"reason": "line 12 not traced"'))
    result = doit(covered, "verify")
    assert result.returncode != 0
    assert "EVID-E013: HLR-COD-002 on alpha: codegen.trace fail: line 12 not traced" in result.stdout
    assert "    fix: " in result.stdout    # every finding printed says what to do
    # checks.json changed after record_step: the records check says so too
    assert "codegen/checks.json changed since it was recorded" in result.stdout


def test_zero_models(tmp_path: Path) -> None:
    with isolated_registry(MINIMAL_CHECKS):
        FakeProject(tmp_path, minimal=True)
    (tmp_path / "fakechecks.py").write_text(FAKECHECKS.format(registrations=registrations(MINIMAL_CHECKS)))
    (tmp_path / "dodo.py").write_text(DODO.format().replace('for model in ("alpha",)', "for model in ()"))
    result = doit(tmp_path, "verify")
    assert result.returncode != 0
    assert "Models: none under models/" in result.stdout and "no model results" in result.stdout
    assert (tmp_path / "reports/trace-matrix.html").is_file() and (tmp_path / "reports/junit.xml").is_file()


def test_step_that_produced_nothing_is_not_run(covered: Path) -> None:
    # codegen's folder disappears (e.g. a failed generator left nothing): never a pass
    import shutil

    shutil.rmtree(covered / "artifacts/alpha/codegen")
    result = doit(covered, "verify")
    assert result.returncode != 0
    assert ("on alpha: codegen.trace not run: no results produced (artifacts/alpha/codegen/checks.json missing or "
            "unreadable)") in result.stdout

"""The run-level rules: a model whose chain did not run fails the run; nothing may get worse than a baseline."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pipeline.evidence.build import build_reports
from pipeline.evidence.regression import read_baseline
from pipeline.diagnostics import PipelineError
from tests.evidence.evidence_fakeproject import MINIMAL_CHECKS, REPO, FakeProject, isolated_registry, load
from tests.evidence.test_evidence_cli import run  # noqa: F401 (the fixture that calls the evidence CLI)
from tests.evidence.test_evidence_tasks import DODO, FAKECHECKS, doit, registrations


@pytest.fixture
def minimal(tmp_path: Path) -> FakeProject:
    """Two models on the minimal requirement set, every requirement verified (the run passes)."""
    with isolated_registry(MINIMAL_CHECKS):
        fake = FakeProject(tmp_path / "project", minimal=True)
        fake.add_model("alpha", steps=("export", "codegen"))
        fake.add_model("beta", steps=("export", "codegen"))
        yield fake


def codes(root: Path) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for finding in load(root / "reports/trace.json")["findings"]:  # type: ignore[index]
        found.setdefault(finding["code"], []).append(finding["message"])
    return found


def test_complete_run_passes(minimal: FakeProject, run) -> None:  # type: ignore[no-untyped-def]
    code, out, _ = run("evidence", "build", "--root", str(minimal.root))
    assert code == 0 and "VERIFY PASSED" in out, out
    assert not {"EVID-E080", "EVID-E081"} & set(codes(minimal.root))
    assert "did not run" not in out


def test_a_model_whose_chain_did_not_run_fails_the_run_and_is_named(minimal: FakeProject, run) -> None:  # type: ignore[no-untyped-def]
    shutil.rmtree(minimal.root / "artifacts/beta")   # the CI job of beta never ran
    code, out, _ = run("evidence", "build", "--root", str(minimal.root))
    assert code == 1 and "VERIFY FAILED" in out
    assert "Models whose chain did not run (the run fails):" in out
    assert "beta: its chain did not run: all 2 checks of its steps are not run (no step left results)" in out
    assert codes(minimal.root)["EVID-E080"] == [m for m in codes(minimal.root)["EVID-E080"] if m.startswith("beta:")]
    # without the rule this run would pass: every requirement is verified on alpha, partially overall
    assert "EVID-E014" not in codes(minimal.root)


def test_every_result_not_run_fails_too(minimal: FakeProject, run) -> None:  # type: ignore[no-untyped-def]
    with isolated_registry(MINIMAL_CHECKS):
        minimal.add_model("beta", {"export.numeric": ("not run", "onnxruntime missing"),
                                   "codegen.trace": ("not run", "no compiler")}, steps=("export", "codegen"))
    code, out, _ = run("evidence", "build", "--root", str(minimal.root))
    assert code == 1 and "beta: its chain did not run" in out and "(every result says not run)" in out


def test_a_chain_that_stopped_part_way_fails(minimal: FakeProject, run) -> None:  # type: ignore[no-untyped-def]
    shutil.rmtree(minimal.root / "artifacts/beta/codegen")
    code, out, _ = run("evidence", "build", "--root", str(minimal.root))
    assert code == 1
    assert "beta: its chain stopped part way: step(s) codegen left no results" in out
    assert "EVID-E081" in codes(minimal.root)


def test_exclusion_on_the_command_line(minimal: FakeProject, run) -> None:  # type: ignore[no-untyped-def]
    shutil.rmtree(minimal.root / "artifacts/beta")
    code, out, _ = run("evidence", "build", "--root", str(minimal.root), "--exclude", "beta")
    assert code == 0, out
    assert "Excluded models:\n  beta: excluded on the command line; a run where its chain did not run passes" in out
    code, _, err = run("evidence", "build", "--root", str(minimal.root), "--exclude", "gamma")
    assert code == 2 and "EVID-E060" in err and "gamma" in err


def test_exclusion_in_deploy_yaml(minimal: FakeProject, run) -> None:  # type: ignore[no-untyped-def]
    spec = (REPO / "models/branch3/deploy.yaml").read_text(encoding="utf-8").replace("model: branch3", "model: beta")
    (minimal.root / "models/beta/deploy.yaml").write_text(spec + "excluded: needs a board we have one of\n")
    shutil.rmtree(minimal.root / "artifacts/beta")
    code, out, _ = run("evidence", "build", "--root", str(minimal.root))
    assert code == 0, out
    assert "beta: excluded by its deploy.yaml: needs a board we have one of" in out
    finding = next(f for f in load(minimal.root / "reports/trace.json")["findings"]  # type: ignore[index]
                   if f["code"] == "EVID-E082")
    assert finding["span"]["file"] == "models/beta/deploy.yaml" and finding["span"]["line"] > 1


def test_doit_verify_fails_when_a_models_chain_did_not_run(tmp_path: Path) -> None:
    with isolated_registry(MINIMAL_CHECKS):
        fake = FakeProject(tmp_path, minimal=True)
        fake.add_model("alpha", steps=("export", "codegen"))
        fake.add_model("beta", steps=())   # shipped, but nothing ran for it
    (tmp_path / "fakechecks.py").write_text(FAKECHECKS.format(registrations=registrations(MINIMAL_CHECKS)))
    # beta's export task runs and leaves nothing (a step that silently produced no results)
    dodo = DODO.format().replace('for model in ("alpha",)', 'for model in ("alpha", "beta")')
    dodo = dodo.replace('    FakeProject(', '    if model == "beta":\n        return True\n    FakeProject(')
    dodo = dodo.replace('"file_dep": ["models/alpha/deploy.yaml"]', '"file_dep": [f"models/{model}/deploy.yaml"]')
    dodo = dodo.replace('"targets": ["artifacts/alpha/export/graph.nnef"]', '"targets": []')
    (tmp_path / "dodo.py").write_text(dodo)
    result = doit(tmp_path, "verify")
    assert result.returncode != 0, result.stdout + result.stderr
    assert "beta: its chain did not run" in result.stdout and "VERIFY FAILED" in result.stdout
    excused = doit(tmp_path, "verify", "exclude=beta")
    assert excused.returncode == 0, excused.stdout
    assert "beta: excluded on the command line" in excused.stdout and "VERIFY PASSED" in excused.stdout


# ---------------------------------------------------------------------- the baseline


def keep(root: Path, name: str) -> Path:
    target = root.parent / f"previous-{name}"
    shutil.copyfile(root / "reports" / name, target)
    return target


@pytest.mark.parametrize("kind", ["trace.json", "junit.xml"])
def test_baseline_regression_fails_and_improvement_is_listed(minimal: FakeProject, run, kind: str) -> None:  # type: ignore[no-untyped-def]
    root = str(minimal.root)
    assert run("evidence", "build", "--root", root)[0] == 0
    good = keep(minimal.root, kind)
    with isolated_registry(MINIMAL_CHECKS):
        minimal.add_model("beta", {"export.numeric": ("not run", "onnxruntime missing")}, steps=("export", "codegen"))
    code, out, _ = run("evidence", "build", "--root", root, "--baseline", str(good))
    assert code == 1 and "VERIFY FAILED" in out, out
    assert "Worse than the baseline (the run fails):" in out
    assert "beta/export.numeric: pass -> not run" in out
    assert ("HLR-EXP-001: verified -> partially verified (verified on 1 model(s), was 2; "
            "beta: pass -> not run)") in out
    # the same run without a baseline passes: a partial requirement is only a warning
    assert run("evidence", "build", "--root", root)[0] == 0
    worse = keep(minimal.root, kind)
    with isolated_registry(MINIMAL_CHECKS):
        minimal.add_model("beta", steps=("export", "codegen"))
    code, out, _ = run("evidence", "build", "--root", root, "--baseline", str(worse))
    assert code == 0, out
    assert "Better than the baseline:" in out and "beta/export.numeric: not run -> pass" in out
    assert "HLR-EXP-001: partially verified -> verified (verified on 2 model(s), was 1; beta: not run -> pass)" in out
    assert "0 worse" in out


def test_baseline_lost_model_is_a_regression_unless_excluded(minimal: FakeProject, run) -> None:  # type: ignore[no-untyped-def]
    root = str(minimal.root)
    assert run("evidence", "build", "--root", root)[0] == 0
    good = keep(minimal.root, "trace.json")
    shutil.rmtree(minimal.root / "artifacts/beta")
    code, out, _ = run("evidence", "build", "--root", root, "--baseline", str(good), "--exclude", "beta")
    assert code == 0, out   # excluded: what got worse on beta alone is excused, and listed
    found = codes(minimal.root)
    assert "EVID-E084" not in found
    assert any("only on excluded models: beta/export.numeric: pass -> not run" in m for m in found["EVID-E085"])
    shutil.rmtree(minimal.root / "models/beta")   # a model gone from the project
    code, out, _ = run("evidence", "build", "--root", root, "--baseline", str(good))
    assert code == 1 and "model beta: in the baseline -> absent from this run" in out
    assert "HLR-EXP-001: verified -> partially verified" not in out   # still verified on every model it has
    assert "beta: pass -> absent" in out


@pytest.mark.parametrize("content, message", [
    (b"", "neither JUnit XML nor JSON"),
    (b"\xff\xfe", "not UTF-8"),
    (b"[1, 2]", "missing 'models'"),
    (b'{"models": ["a"], "outcomes": [{"model": "a", "check_id": "x", "verdict": "great"}], "requirements": []}',
     "unknown value 'great'"),
    (b'{"models": [], "outcomes": [], "requirements": []}', "no requirements"),
    (b"<testsuites/>", "no 'traceability' testsuite"),
    (b"<testsuites><testsuite name='a'><testcase name='x'/></testsuite></testsuites>", "testcase without properties"),
    (b"<html/>", "expected <testsuites>"),
    (b"<testsuites><unclosed></testsuites>", "not well-formed XML"),
    (b'<!DOCTYPE t [<!ENTITY a "aaaa"><!ENTITY b "&a;&a;&a;&a;">]><testsuites>&b;</testsuites>', "<!DOCTYPE>"),
])
def test_hostile_baseline_is_a_coded_error(tmp_path: Path, minimal: FakeProject, run, content: bytes,  # type: ignore[no-untyped-def]
                                           message: str) -> None:
    bad = tmp_path / "bad-baseline"
    bad.write_bytes(content)
    code, out, err = run("evidence", "build", "--root", str(minimal.root), "--baseline", str(bad))
    assert code == 2 and "EVID-E083" in err and message in err and "Traceback" not in err, err
    assert not (minimal.root / "reports/trace.json").exists()   # refused before anything was built


def test_baseline_must_be_a_regular_file(tmp_path: Path) -> None:
    with pytest.raises(PipelineError) as caught:
        read_baseline(tmp_path)
    assert caught.value.code == "EVID-E083" and "not a regular file" in str(caught.value)
    with pytest.raises(PipelineError):
        read_baseline(tmp_path / "missing.json")


def test_build_reports_without_rules_arguments_still_applies_completeness(minimal: FakeProject) -> None:
    shutil.rmtree(minimal.root / "artifacts/alpha/export")
    with isolated_registry(MINIMAL_CHECKS):
        matrix = build_reports(minimal.root)
    assert any(f.code == "EVID-E081" and f.message.startswith("alpha:") for f in matrix.findings)


@pytest.mark.parametrize("written, code", [("needs the board", None), ('""', "DEPLOY-E"), ("[1, 2]", "DEPLOY-E")])
def test_deploy_yaml_excluded_is_a_reason(written: str, code: str | None) -> None:
    from pipeline.project.deploy import DeployError, parse_deploy_text

    spec = (REPO / "models/branch3/deploy.yaml").read_text(encoding="utf-8") + f"excluded: {written}\n"
    if code is None:
        assert parse_deploy_text(spec).excluded == written
        return
    with pytest.raises(DeployError) as caught:
        parse_deploy_text(spec)
    assert code in str(caught.value) and "excluded" in str(caught.value)

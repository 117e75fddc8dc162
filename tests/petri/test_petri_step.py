"""The petri step on a project tree: artifacts, verdicts, determinism, missing and bad inputs; the doit task."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest


from tests.petri.petri_helpers import DATA, LENET, ROOT

from pipeline.evidence.checklinks import all_checks
from pipeline.ledger.checks import Verdict, read_results_document
from pipeline.petri.step import run_petri_step

SPLIT = DATA / "lenet5_split2"


def project(tmp_path: Path, split: bool = True, trace: bool = True) -> Path:
    """A project with lenet5 exported, its split2 deployment split, and a trace of split2."""
    model = tmp_path / "models" / "lenet5"
    model.mkdir(parents=True)
    shutil.copy(ROOT / "models" / "lenet5" / "deploy.yaml", model / "deploy.yaml")
    (model / "model.onnx").write_bytes(b"")
    export = tmp_path / "artifacts" / "lenet5" / "export"
    export.mkdir(parents=True)
    shutil.copy(LENET, export / "graph.nnef")
    if split:
        target = tmp_path / "artifacts" / "lenet5" / "split" / "split2"
        target.mkdir(parents=True)
        for name in ("CPU0.nnef", "CPU1.nnef", "plan.json", "schedule.json"):
            shutil.copy(SPLIT / name, target / name)
    if trace:  # the trace of the split step's executable semantics
        target = tmp_path / "artifacts" / "lenet5" / "split" / "split2"
        target.mkdir(parents=True, exist_ok=True)
        shutil.copy(SPLIT / "trace.json", target / "trace-interpreter.json")
    return tmp_path


def results_by(root: Path) -> dict[tuple[str, str], object]:
    document = json.loads((root / "artifacts" / "lenet5" / "petri" / "checks.json").read_text())
    return {(r.subject, r.check_id): r for r in read_results_document(document)}


def test_step_writes_nets_report_and_verdicts(tmp_path: Path) -> None:
    root = project(tmp_path)
    results = run_petri_step("lenet5", root)
    assert results
    out = root / "artifacts" / "lenet5" / "petri"
    for name in ("original.pnml", "original.dot", "split2.pnml", "split2.dot", "report.json", "checks.json", "record.json"):
        assert (out / name).is_file(), name
    by = results_by(root)
    for check in ("petri.reachability", "petri.deadlock", "petri.termination", "petri.once", "petri.pipeline"):
        assert by[("lenet5", check)].verdict is Verdict.PASS
        assert by[("lenet5/split2", check)].verdict is Verdict.PASS
    for check in ("petri.equivalence", "petri.schedule", "petri.trace"):
        assert by[("lenet5/split2", check)].verdict is Verdict.PASS, by[("lenet5/split2", check)].reason
        assert ("lenet5", check) not in by
    reach = by[("lenet5", "petri.reachability")]
    assert reach.measured["valid_paths"] == 1
    assert (reach.measured["paper_net_places"], reach.measured["paper_net_transitions"],
            reach.measured["paper_net_initial_tokens"]) == (24, 13, 11)
    assert by[("lenet5/split2", "petri.pipeline")].measured["pipeline_depth"] == 2
    single = by[("lenet5/single", "petri.equivalence")]
    assert single.verdict is Verdict.NOT_RUN and "no split outputs artifacts/lenet5/split/single/plan.json" in single.reason
    report = json.loads((out / "report.json").read_text())
    assert report["nets"]["split2"]["analyses"]["equivalence"]["verdict"] == "pass"
    assert report["nets"]["original"]["counts"]["paper"]["places"] == 24
    # no absolute path, no time in the artifacts
    for name in ("report.json", "checks.json", "original.pnml", "split2.pnml", "split2.dot"):
        assert str(tmp_path) not in (out / name).read_text(), name
    assert "artifacts/lenet5/split/split2/CPU0.nnef" in (out / "split2.pnml").read_text()


def test_step_is_deterministic(tmp_path: Path) -> None:
    root = project(tmp_path)
    run_petri_step("lenet5", root)
    out = root / "artifacts" / "lenet5" / "petri"
    first = {p.name: p.read_bytes() for p in out.iterdir()}
    run_petri_step("lenet5", root)
    second = {p.name: p.read_bytes() for p in out.iterdir()}
    assert first == second


def test_step_without_split_or_export_does_not_crash(tmp_path: Path) -> None:
    root = project(tmp_path, split=False, trace=False)
    run_petri_step("lenet5", root)
    by = results_by(root)
    assert by[("lenet5", "petri.deadlock")].verdict is Verdict.PASS
    assert by[("lenet5/split2", "petri.schedule")].verdict is Verdict.NOT_RUN
    (root / "artifacts" / "lenet5" / "export" / "graph.nnef").unlink()
    run_petri_step("lenet5", root)
    by = results_by(root)
    assert by[("lenet5", "petri.deadlock")].verdict is Verdict.NOT_RUN
    assert "no exported description" in by[("lenet5", "petri.deadlock")].reason
    assert not (root / "artifacts" / "lenet5" / "petri" / "original.pnml").exists()   # stale nets removed


def test_no_trace_is_not_run_and_a_bad_plan_fails(tmp_path: Path) -> None:
    root = project(tmp_path, trace=False)
    run_petri_step("lenet5", root)
    trace = results_by(root)[("lenet5/split2", "petri.trace")]
    assert trace.verdict is Verdict.NOT_RUN and "no execution trace" in trace.reason
    plan = root / "artifacts" / "lenet5" / "split" / "split2" / "plan.json"
    data = json.loads(plan.read_text())
    data["pipeline_depth"] = "two"
    plan.write_text(json.dumps(data))
    run_petri_step("lenet5", root)
    failed = results_by(root)[("lenet5/split2", "petri.equivalence")]
    assert failed.verdict is Verdict.FAIL and "PETRI-E011" in failed.reason and "pipeline_depth" in failed.reason


def test_a_failing_trace_fails_its_check(tmp_path: Path) -> None:
    root = project(tmp_path)
    trace = root / "artifacts" / "lenet5" / "split" / "split2" / "trace-interpreter.json"
    data = json.loads(trace.read_text())
    cpu1 = data["items"]["CPU1"]
    data["items"]["CPU1"] = [cpu1[0], cpu1[2], cpu1[1]] + cpu1[3:]   # fc1 starts before the get ended
    trace.write_text(json.dumps(data))
    run_petri_step("lenet5", root)
    result = results_by(root)[("lenet5/split2", "petri.trace")]
    assert result.verdict is Verdict.FAIL and result.reason.startswith("PETRI-E131")


def test_checks_are_registered_with_existing_requirements() -> None:
    checks = all_checks()
    ids = {c for c in checks if c.startswith("petri.")}
    assert ids == {"petri.reachability", "petri.deadlock", "petri.termination", "petri.once", "petri.equivalence",
                   "petri.schedule", "petri.trace", "petri.pipeline"}
    from pipeline.ledger.requirements import load_requirements
    known = set(load_requirements(ROOT).ids())
    for check in ids:
        assert set(checks[check].requirements) <= known, check


def test_doit_task(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = project(tmp_path)
    monkeypatch.chdir(root)
    from pipeline.petri.tasks import task_petri
    tasks = list(task_petri())
    assert [t["name"] for t in tasks] == ["lenet5"]
    task = tasks[0]
    assert "artifacts/lenet5/export/graph.nnef" in task["file_dep"]
    assert "artifacts/lenet5/split/split2/plan.json" in task["file_dep"]
    assert "artifacts/lenet5/split/split2/CPU0.nnef" in task["file_dep"]
    # the split step's interpreter trace (generated code's traces are the compare step's)
    assert "artifacts/lenet5/split/split2/trace-interpreter.json" in task["file_dep"]
    assert "artifacts/lenet5/petri/report.json" in task["targets"]
    assert "artifacts/lenet5/petri/split2.pnml" in task["targets"]

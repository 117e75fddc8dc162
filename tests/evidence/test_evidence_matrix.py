"""The trace matrix: coverage rules and every kind of gap, on fake trees."""

from __future__ import annotations

import json
from pathlib import Path

from tests.evidence.evidence_fakeproject import FakeProject
from pipeline.evidence.baseline import write_baseline
from pipeline.ledger.checks import Verdict, register_check
from pipeline.evidence.matrix import build_matrix
from pipeline.evidence.checklinks import load_checks
from pipeline.ledger.requirements import load_requirements


def finding(matrix, code: str, text: str = ""):  # type: ignore[no-untyped-def]
    found = [f for f in matrix.findings if f.code == code and text in f.message]
    assert found, f"no {code} finding containing {text!r}; findings: {[(f.code, f.message) for f in matrix.findings]}"
    return found[0]


def test_passing_checks_verify_their_requirements(project: FakeProject) -> None:
    matrix = build_matrix(project.root)
    assert matrix.models == ["alpha", "beta"]
    assert matrix.statuses["HLR-EXP-001"].status == "verified"
    assert matrix.statuses["HLR-EXP-001"].per_model == {"alpha": "pass", "beta": "pass"}
    assert matrix.outcome("alpha", "export.numeric").verdict is Verdict.PASS
    # artifacts are traced with the hash the record holds
    info = matrix.artifacts["artifacts/alpha/export/graph.nnef"]
    assert info.step == "export" and info.sha256 and "export.numeric" in info.written_by
    assert "petri.final_marking" in info.read_by
    # the evidence checks ran on records and trace; the package check waits for a package
    assert matrix.outcome("alpha", "evidence.records").verdict is Verdict.PASS
    assert matrix.outcome("alpha", "evidence.trace").verdict is Verdict.PASS
    assert matrix.outcome("alpha", "evidence.package").verdict is Verdict.NOT_RUN
    assert len(matrix.code_traces) == 2 and len(matrix.code_traces[0].entries) == 8


def test_requirement_with_no_check_is_a_gap(project: FakeProject) -> None:
    matrix = build_matrix(project.root)
    gap = finding(matrix, "EVID-E012", "HLR-NUM-004 is verified by no check")
    assert gap.is_error and gap.span.file == "requirements/hlr.yaml"
    assert matrix.statuses["HLR-NUM-004"].status == "no check"
    # a system requirement is judged through its children, and inherits their worst status
    assert matrix.statuses["SYS-001"].via_children and matrix.statuses["SYS-001"].status == "no check"


def test_check_with_no_requirement_and_unknown_requirement(project: FakeProject) -> None:
    register_check("petri.orphan", "an orphan", "petri", [])
    register_check("petri.typo", "a typo", "petri", ["HLR-EXE-099"])
    specs, _ = load_checks()
    matrix = build_matrix(project.root)
    assert "petri.orphan" in specs
    assert finding(matrix, "EVID-E011", "petri.orphan").is_error
    assert finding(matrix, "EVID-E010", "HLR-EXE-099").is_error
    # their results are missing from petri/checks.json, so they did not run
    assert matrix.outcome("alpha", "petri.orphan").reason.startswith("no result for this check in artifacts/alpha/petri/checks.json")


def test_failing_check_is_never_coverage(tmp_path: Path, registry: None) -> None:
    fake = FakeProject(tmp_path)
    fake.add_model("alpha", verdicts={"export.numeric": ("fail", "output[0][3]: 0.51 vs 0.49 (abs error 2e-2 > 1e-5)")})
    fake.add_model("beta")
    matrix = build_matrix(tmp_path)
    status = matrix.statuses["HLR-EXP-001"]
    assert status.status == "failed" and status.per_model == {"alpha": "fail", "beta": "pass"}
    failed = finding(matrix, "EVID-E013", "HLR-EXP-001 on alpha: export.numeric fail")
    assert "output[0][3]" in failed.message and len(failed.message) <= 200
    # it points at the input that caused it, the tolerance of the model's deploy.yaml, and says what to do
    assert (failed.span.file, failed.span.line) == ("models/alpha/deploy.yaml", 5)
    assert "validation.tolerance" in failed.fix
    # one finding per requirement, model and check: nothing for beta, whose check passed
    assert not [f for f in matrix.findings if f.code == "EVID-E013" and "beta" in f.message]


def test_not_run_and_missing_results_are_not_coverage(tmp_path: Path, registry: None) -> None:
    fake = FakeProject(tmp_path)
    fake.add_model("alpha", verdicts={"petri.final_marking": ("not run", "no Petri tool on this machine")}, steps=("export", "check", "petri"))
    matrix = build_matrix(tmp_path)
    assert matrix.statuses["HLR-EXE-001"].status == "not verified"
    assert "no Petri tool" in finding(matrix, "EVID-E014", "HLR-EXE-001").message
    codegen = matrix.outcome("alpha", "codegen.trace")
    assert codegen.verdict is Verdict.NOT_RUN
    assert codegen.reason == "no results produced (artifacts/alpha/codegen/checks.json missing or unreadable)"
    assert matrix.statuses["HLR-COD-002"].status == "not verified"


def test_emulated_is_not_coverage_and_partial_is_a_warning(tmp_path: Path, registry: None) -> None:
    fake = FakeProject(tmp_path)
    fake.add_model("alpha", verdicts={"codegen.trace": ("emulated", "NVDLA emulator")})
    fake.add_model("beta", verdicts={"export.numeric": ("not run", "onnxruntime missing")})
    matrix = build_matrix(tmp_path)
    assert matrix.statuses["HLR-COD-002"].per_model == {"alpha": "emulated", "beta": "pass"}
    assert matrix.statuses["HLR-COD-002"].status == "partially verified"
    partial = finding(matrix, "EVID-E021", "HLR-COD-002")
    assert not partial.is_error and partial.message == "HLR-COD-002 on alpha: codegen.trace emulated: NVDLA emulator"
    assert partial.fix and partial.span.file == "models/alpha/deploy.yaml"
    assert matrix.statuses["HLR-EXP-001"].status == "partially verified"


def test_zero_models(tmp_path: Path, registry: None) -> None:
    FakeProject(tmp_path)
    matrix = build_matrix(tmp_path)
    assert matrix.models == [] and matrix.outcomes == {}
    assert matrix.statuses["HLR-EXP-001"].status == "not verified"
    assert "no model results" in finding(matrix, "EVID-E014", "HLR-EXP-001").message
    json.dumps(matrix.to_json())


def test_unregistered_results_and_unreadable_results(project: FakeProject) -> None:
    path = project.root / "artifacts/alpha/petri/checks.json"
    data = json.loads(path.read_text())
    data["results"].append({"check_id": "petri.ghost", "subject": "alpha", "verdict": "pass", "requirements": ["HLR-EXE-001"]})
    path.write_text(json.dumps(data))
    (project.root / "artifacts/beta/check/checks.json").write_text("{not json")
    matrix = build_matrix(project.root)
    ghost = finding(matrix, "EVID-E023", "petri.ghost")
    assert ghost.span.file == "artifacts/alpha/petri/checks.json"
    assert finding(matrix, "EVID-E022", "unreadable").span.file == "artifacts/beta/check/checks.json"
    assert matrix.outcome("beta", "nnef.syntax").verdict is Verdict.NOT_RUN
    assert matrix.outcome("alpha", "evidence.trace").verdict is Verdict.FAIL
    assert matrix.outcome("beta", "evidence.trace").verdict is Verdict.FAIL


def test_result_recorded_against_other_requirements(project: FakeProject) -> None:
    path = project.root / "artifacts/alpha/export/checks.json"
    path.write_text(path.read_text().replace('"HLR-EXP-001"', '"HLR-EXP-002"'))
    matrix = build_matrix(project.root)
    assert "re-execute step export" in finding(matrix, "EVID-E024", "export.numeric").message


def test_stale_link_after_requirement_change(project: FakeProject) -> None:
    specs, _ = load_checks()
    write_baseline(specs, load_requirements(project.root), project.root)
    clean = build_matrix(project.root)
    assert not [f for f in clean.findings if f.code in ("EVID-E015", "EVID-E016")]
    hlr = project.root / "requirements/hlr.yaml"
    hlr.write_text(hlr.read_text().replace("max_abs_error: 1.0e-5\n    source:\n      - \"Gauffriau et al., ERTS 2024: Introduction (trained model to description)\"",
                                           "max_abs_error: 1.0e-6\n    source:\n      - \"Gauffriau et al., ERTS 2024: Introduction (trained model to description)\""))
    matrix = build_matrix(project.root)
    stale = finding(matrix, "EVID-E015", "stale link check:export.numeric -> HLR-EXP-001")
    assert stale.is_error
    # a pass through a stale link is not coverage
    assert matrix.statuses["HLR-EXP-001"].status == "not verified"
    assert matrix.outcome("alpha", "evidence.trace").verdict is Verdict.FAIL
    # changing only the rationale keeps the link fresh
    write_baseline(specs, load_requirements(project.root), project.root)
    hlr.write_text(hlr.read_text().replace("Export is a transformation;", "Export is a model transformation;"))
    assert not [f for f in build_matrix(project.root).findings if f.code == "EVID-E015"]


def test_new_links_and_obsolete_entries_are_warnings(project: FakeProject) -> None:
    specs, _ = load_checks()
    write_baseline(specs, load_requirements(project.root), project.root)
    register_check("petri.new", "new", "petri", ["HLR-EXE-002"])
    del specs["nnef.syntax"]
    from pipeline.ledger import checks

    del checks._REGISTRY["nnef.syntax"]
    matrix = build_matrix(project.root)
    assert not finding(matrix, "EVID-E016", "check:petri.new -> HLR-EXE-002").is_error
    assert not finding(matrix, "EVID-E017", "check:nnef.syntax -> HLR-FMT-001").is_error


def test_bad_code_trace_fails_evidence_trace(project: FakeProject) -> None:
    path = project.root / "artifacts/alpha/codegen/c/trace.json"
    data = json.loads(path.read_text())
    data["entries"][0]["code_lines"] = [1, 999]
    data["entries"][1]["nnef_line"] = 500
    path.write_text(json.dumps(data))
    matrix = build_matrix(project.root)
    assert "code lines 1-999 outside" in finding(matrix, "EVID-E040", "entries[0]").message
    assert "NNEF line 500 outside" in finding(matrix, "EVID-E040", "entries[1]").message
    trace = matrix.outcome("alpha", "evidence.trace")
    assert trace.verdict is Verdict.FAIL and "EVID-E040" in trace.reason
    assert matrix.outcome("beta", "evidence.trace").verdict is Verdict.PASS


def test_changed_artifact_fails_evidence_records(project: FakeProject) -> None:
    (project.root / "artifacts/beta/codegen/c/ITEM1.c").write_text("/* edited */\n")
    matrix = build_matrix(project.root)
    records = matrix.outcome("beta", "evidence.records")
    assert records.verdict is Verdict.FAIL and "ITEM1.c changed since it was recorded" in records.reason
    assert matrix.statuses["LLR-TRC-002"].per_model["beta"] == "fail"


def test_missing_check_module_is_reported(project: FakeProject) -> None:
    from pipeline.ledger import checks

    checks.CHECK_MODULES = ("pipeline.evidence.selfchecks", "pipeline.nosuchstep.checks")
    matrix = build_matrix(project.root)
    assert "pipeline.nosuchstep.checks" in finding(matrix, "EVID-E018").message


def test_trace_json_document_is_deterministic(project: FakeProject) -> None:
    first = json.dumps(build_matrix(project.root).to_json(), sort_keys=True)
    second = json.dumps(build_matrix(project.root).to_json(), sort_keys=True)
    assert first == second


def test_not_applicable_is_kept_out_of_coverage_and_counted_apart(tmp_path: Path, registry: None) -> None:
    """A check with nothing to judge on a model says n/a: that model is left out of its requirements' statuses;
    a requirement n/a on every model is `not applicable` (a note), never a gap; summary, CSV and JUnit agree."""
    from pipeline.evidence.junit import junit_xml
    from pipeline.evidence.render_text import render_csv
    from pipeline.evidence.summary import summary_text

    fake = FakeProject(tmp_path)
    fake.add_model("alpha")
    fake.add_model("beta", verdicts={"codegen.trace": ("n/a", "no deployment of this model has a cuda item")})
    matrix = build_matrix(tmp_path)
    status = matrix.statuses["HLR-COD-002"]
    assert status.per_model == {"alpha": "pass", "beta": "n/a"} and status.status == "verified"
    assert not [f for f in matrix.findings if "HLR-COD-002" in f.message]
    assert matrix.outcome("beta", "codegen.trace").verdict is Verdict.NOT_APPLICABLE

    fake.add_model("alpha", verdicts={"codegen.trace": ("n/a", "no deployment of this model has a cuda item")})
    matrix = build_matrix(tmp_path)
    assert matrix.statuses["HLR-COD-002"].status == "not applicable"
    assert matrix.coverage()["by_status"]["not applicable"] == 1
    note = finding(matrix, "EVID-E027", "HLR-COD-002 applies to no model")
    assert note.severity.value == "note" and note.fix
    assert not [f for f in matrix.errors if "HLR-COD-002" in f.message]
    document = matrix.to_json()
    text = summary_text(document)
    assert "1 apply to no model (n/a, counted apart)" in text
    assert not [line for line in text.splitlines() if line.strip().startswith("HLR-COD-002 ")]
    row = next(line for line in text.splitlines() if line.startswith("alpha "))
    assert "n/a 1" in row
    csv_rows = [r for r in render_csv(matrix).splitlines() if r.startswith("HLR-COD-002,") and ",codegen.trace," in r]
    assert csv_rows and all(",not applicable," in r and ",n/a," in r for r in csv_rows)
    junit = junit_xml(matrix)
    assert "n/a (does not apply): no deployment of this model has a cuda item" in junit
    assert "not applicable: HLR-COD-002 applies to no model" in junit


def test_a_model_to_which_checks_do_not_apply_changes_no_other_status(tmp_path: Path, registry: None) -> None:
    """Adding a model whose checks of other kinds of deployment say n/a (a CPU-only model) leaves every
    requirement's status as it was; before n/a, its `not run` made them `not verified`."""
    fake = FakeProject(tmp_path)
    fake.add_model("alpha", verdicts={"codegen.trace": ("emulated", "host emulation of a cuda item")})
    fake.add_model("beta", verdicts={"codegen.trace": ("emulated", "host emulation of a cuda item")})
    before = {r: s.status for r, s in build_matrix(tmp_path).statuses.items()}
    assert before["HLR-COD-002"] == "not verified"
    fake.add_model("cpuonly", verdicts={"codegen.trace": ("n/a", "no deployment of this model has a cuda item")})
    after = build_matrix(tmp_path)
    assert {r: s.status for r, s in after.statuses.items()} == before
    assert after.statuses["HLR-COD-002"].per_model["cpuonly"] == "n/a"


def test_a_platform_whose_tools_are_missing_leaves_the_host_verdicts_standing(tmp_path: Path, registry: None) -> None:
    """codegen.static-like: pass on the host deployment, not run on the aarch64 one (no cross compiler): the
    requirement is partially verified on that model (a warning), never not verified; the finding points at the
    deployment's `platform:` line and names the Debian package."""
    from pipeline.files.atomic import write_text
    from pipeline.ledger.checks import CheckResult, results_document
    from pipeline.project.layout import checks_path
    from tests.evidence.evidence_fakeproject import FAKE_SPEC

    fake = FakeProject(tmp_path)
    fake.add_model("alpha")
    spec = FAKE_SPEC.format(model="alpha").replace(
        "deployments:\n", "deployments:\n  aarch64:\n    platform: aarch64_qemu\n"
                          "    items: [{name: ITEM1, target: cpu}]\n    default_item: ITEM1\n    sync: event\n")
    write_text(tmp_path / "models/alpha/deploy.yaml", spec)
    why = ("platform aarch64_qemu needs aarch64-linux-gnu-gcc (Debian package gcc-aarch64-linux-gnu), not installed "
           "here; install with: apt-get install gcc-aarch64-linux-gnu")
    results = [CheckResult("codegen.trace", "alpha/single", Verdict.PASS),
               CheckResult("codegen.trace", "alpha/aarch64", Verdict.NOT_RUN, why)]
    path = checks_path("alpha", "codegen", tmp_path)
    path.write_text(json.dumps(results_document(results)), encoding="utf-8")
    matrix = build_matrix(tmp_path)
    assert matrix.outcome("alpha", "codegen.trace").verdict is Verdict.NOT_RUN       # the check's own verdict
    assert matrix.statuses["HLR-COD-002"].per_model == {"alpha": "partial"}
    assert matrix.statuses["HLR-COD-002"].status == "partially verified"
    partial = finding(matrix, "EVID-E021", "HLR-COD-002 on alpha: codegen.trace not run (alpha/aarch64)")
    assert not partial.is_error and len(partial.message) <= 200
    assert (partial.span.file, partial.span.line) == ("models/alpha/deploy.yaml", 8)   # `platform: aarch64_qemu`
    assert "gcc-aarch64-linux-gnu" in partial.fix and "tools/setup" in partial.fix

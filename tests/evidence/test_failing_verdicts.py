"""Issue 42: defects of the trace matrix and the nightly gate that turn a failure into a pass, planted.

A result recorded against other requirements than its check now traces to (an error that fails
evidence.trace, not a note), a model whose requirement went from pass to fail in the nightly
regression gate while the requirement's overall status stayed `failed` (a regression, never an
improvement), and a failing child requirement (its parent fails on that model).
"""

from __future__ import annotations

from pipeline.diagnostics import Severity
from pipeline.evidence.matrix import MODEL_STATUS_ORDER, STATUS_ORDER, build_matrix
from pipeline.evidence.regression import Snapshot, compare, comparison_findings
from pipeline.ledger.checks import Verdict
from tests.evidence.evidence_fakeproject import FakeProject
from tests.evidence.test_evidence_matrix import finding


def test_a_result_traced_to_other_requirements_is_an_error_that_fails_the_trace(project: FakeProject) -> None:
    path = project.root / "artifacts/alpha/export/checks.json"
    path.write_text(path.read_text().replace('"HLR-EXP-001"', '"HLR-EXP-002"'))
    matrix = build_matrix(project.root)
    found = finding(matrix, "EVID-E024", "export.numeric")
    assert found.severity is Severity.ERROR and found.is_error
    assert found.span.file == "artifacts/alpha/export/checks.json"
    assert matrix.outcome("alpha", "evidence.trace").verdict is Verdict.FAIL
    assert matrix.outcome("beta", "evidence.trace").verdict is Verdict.PASS


def test_a_failing_child_requirement_fails_its_parent_on_that_model(tmp_path, registry: None) -> None:  # type: ignore[no-untyped-def]
    fake = FakeProject(tmp_path)
    fake.add_model("alpha", verdicts={"export.numeric": ("fail", "output y: max abs error 0.5 exceeds 1e-05")})
    fake.add_model("beta")
    matrix = build_matrix(tmp_path)
    assert matrix.statuses["HLR-EXP-001"].per_model["alpha"] == "fail"
    parent = matrix.statuses["SYS-001"]
    assert parent.via_children and parent.per_model["alpha"] == "fail" and parent.status == "failed"


def _snapshot(per_model: dict[str, str], overall: str) -> Snapshot:
    return Snapshot("trace.json", tuple(sorted(per_model)), {}, {"HLR-X": overall},
                    {("HLR-X", m): s for m, s in per_model.items()})


def test_a_model_gone_from_pass_to_fail_is_a_regression_while_the_requirement_stays_failed() -> None:
    baseline = _snapshot({"a": "fail", "b": "pass"}, "failed")
    tonight = _snapshot({"a": "fail", "b": "fail"}, "failed")
    result = compare(baseline, tonight)
    assert [c.subject for c in result.regressions] == ["HLR-X"] and not result.improvements
    assert "b: pass -> fail" in result.regressions[0].text()
    assert [f.severity for f in comparison_findings(result, "trace.json")] == [Severity.ERROR]
    back = compare(tonight, baseline)           # and fail -> pass is an improvement, not a regression
    assert not back.regressions and [c.subject for c in back.improvements] == ["HLR-X"]


def test_the_status_orders_put_fail_first_and_pass_after_every_shortfall() -> None:
    assert MODEL_STATUS_ORDER[0] == "fail" and STATUS_ORDER[0] == "failed"
    for worse in ("fail", "no check", "not run", "emulated", "partial", "pass off target"):
        assert MODEL_STATUS_ORDER.index(worse) < MODEL_STATUS_ORDER.index("pass")
    assert MODEL_STATUS_ORDER[-1] == "n/a"

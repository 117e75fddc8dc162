"""Issue 42: the trace matrix's status rules (pipeline/evidence/matrix.py) on in-memory verdicts, light per mutant.

Each rule is planted at the point where it decides: one failing result fails the model, a pass obtained off
the target is no target pass, an emulated or not-run result is no pass, n/a never lowers or raises another,
a stale link is `not run`, and a parent takes its worst child. No project, no pipeline run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest

from pipeline.evidence import matrix as M
from pipeline.evidence.baseline import Link
from pipeline.ledger.checks import CheckResult, CheckSpec, Obtained, Verdict

P, F, N, E, A = Verdict.PASS, Verdict.FAIL, Verdict.NOT_RUN, Verdict.EMULATED, Verdict.NOT_APPLICABLE


@pytest.mark.parametrize("verdicts, places, status", [
    ([], [], M.M_NO_CHECK),
    ([A, A], [True, True], M.M_NA),
    ([P, F], [True, True], M.M_FAIL),
    ([F, A], [True, True], M.M_FAIL),
    ([P, P], [True, True], M.M_PASS),
    ([P, A], [True, False], M.M_PASS),          # an n/a result's place is not looked at
    ([P, P], [True, False], M.M_OFF_PLATFORM),
    ([P, N], [True, True], M.M_PARTIAL),
    ([P, E], [True, True], M.M_PARTIAL),
    ([E, N], [True, True], M.M_EMULATED),
    ([N, A], [True, True], M.M_NOT_RUN),
    ([N], [True], M.M_NOT_RUN),
])
def test_a_model_s_status_from_its_verdicts(verdicts: list[Verdict], places: list[bool], status: str) -> None:
    assert M.model_status(verdicts, places) == status


@pytest.mark.parametrize("per_model, target, status", [
    ({}, False, M.NOT_VERIFIED),
    ({"a": M.M_NA}, False, M.NOT_APPLICABLE),
    ({"a": M.M_PASS, "b": M.M_FAIL}, False, M.FAILED),
    ({"a": M.M_PASS, "b": M.M_NA}, False, M.VERIFIED),
    ({"a": M.M_PASS, "b": M.M_OFF_PLATFORM}, True, M.OFF_PLATFORM),
    ({"a": M.M_PASS, "b": M.M_EMULATED}, True, M.OFF_PLATFORM),
    ({"a": M.M_PASS, "b": M.M_EMULATED}, False, M.PARTIAL),
    ({"a": M.M_EMULATED}, True, M.OFF_PLATFORM),
    ({"a": M.M_PASS, "b": M.M_NOT_RUN}, True, M.PARTIAL),
    ({"a": M.M_PARTIAL}, False, M.PARTIAL),
    ({"a": M.M_OFF_PLATFORM}, False, M.PARTIAL),
    ({"a": M.M_NO_CHECK, "b": M.M_NO_CHECK}, False, M.NO_CHECK),
    ({"a": M.M_NO_CHECK, "b": M.M_NOT_RUN}, False, M.NOT_VERIFIED),
    ({"a": M.M_EMULATED}, False, M.NOT_VERIFIED),
])
def test_a_requirement_s_status_from_its_models(per_model: dict[str, str], target: bool, status: str) -> None:
    assert M._overall(per_model, target) == status


def test_the_orders_put_the_worst_first_and_n_a_last() -> None:
    assert M.STATUS_ORDER == ("failed", "no check", "not verified", "partially verified",
                              "verified only on host or by emulation", "verified", "not applicable")
    assert M.MODEL_STATUS_ORDER == ("fail", "no check", "not run", "emulated", "partial", "pass off target", "pass",
                                    "n/a")


def _outcome(*results: CheckResult, verdict: Verdict = N, model: str = "m", reason: str = "why") -> Any:
    return SimpleNamespace(results=[SimpleNamespace(result=r) for r in results], verdict=verdict, model=model,
                           reason=reason, step="compare")


def _result(verdict: Verdict, obtained: Obtained | None = None, subject: str = "m") -> CheckResult:
    return CheckResult("compare.reference", subject, verdict, "" if verdict is P else "because", obtained=obtained)


ON_TARGET, ON_HOST = Obtained.target("orin"), Obtained.host()


def test_a_pass_counts_for_a_target_requirement_only_where_obtained_on_the_target() -> None:
    both = _outcome(_result(P, ON_TARGET), _result(P, ON_HOST))
    assert M._on_platform(both, False) is True and M._on_platform(both, True) is False
    assert M._on_platform(_outcome(_result(P, ON_TARGET)), True) is True
    assert M._on_platform(_outcome(_result(F, ON_HOST)), True) is False        # no pass at all: not on platform
    assert M._on_platform(_outcome(), False) is True
    assert M.result_verdicts(both, True) == ([P, P], [True, False])
    assert M.result_verdicts(both, False) == ([P, P], [True, True])
    assert M.result_verdicts(_outcome(_result(F, ON_HOST), _result(E)), True) == ([F, E], [True, True])
    assert M.result_verdicts(both, True, stale=True) == ([N], [True])
    assert M.result_verdicts(_outcome(verdict=F), True) == ([F], [False])
    assert M.result_verdicts(_outcome(verdict=A), False) == ([A], [True])
    assert M._results(_outcome(verdict=F, reason="crashed")) == [(F, "m", "crashed", None)]
    assert M._results(_outcome(_result(P, ON_TARGET, "m/d"))) == [(P, "m/d", "", ON_TARGET.where)]


@dataclass
class _Requirement:
    id: str
    verified_on: str = "host"
    parent: str | None = None
    span: Any = None


@dataclass
class _Requirements:
    """What compute_statuses reads of a RequirementSet: iteration, lookup, children."""

    items: list[_Requirement] = field(default_factory=list)

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self.items)

    def __getitem__(self, key: str) -> _Requirement:
        return next(r for r in self.items if r.id == key)

    def children(self, key: str) -> list[str]:
        return [r.id for r in self.items if r.parent == key]


def _statuses(outcomes: dict[tuple[str, str], Any], stale: set[Link] | None = None,
              models: tuple[str, ...] = ("a", "b")) -> dict[str, M.RequirementStatus]:
    requirements = _Requirements([_Requirement("HLR-1"), _Requirement("LLR-1", parent="HLR-1"),
                                  _Requirement("LLR-2", "target", parent="HLR-1"), _Requirement("LLR-3"),
                                  _Requirement("HLR-2")])
    specs = {"c.one": CheckSpec("c.one", "", "s", ("LLR-1", "LLR-9")), "c.two": CheckSpec("c.two", "", "s", ("LLR-2",)),
             "c.three": CheckSpec("c.three", "", "s", ("LLR-1", "HLR-2"))}
    return M.compute_statuses(requirements, specs, list(models), outcomes, stale or set())  # type: ignore[arg-type]


def _all(verdict: Verdict, obtained: Obtained | None = None) -> dict[tuple[str, str], Any]:
    return {(m, c): _outcome(_result(verdict, obtained)) for m in ("a", "b") for c in ("c.one", "c.two", "c.three")}


def test_statuses_of_checks_children_and_no_check() -> None:
    found = _statuses(_all(P, ON_TARGET))
    assert found["LLR-1"].checks == ["c.one", "c.three"] and found["LLR-1"].status == M.VERIFIED
    assert found["LLR-1"].per_model == {"a": M.M_PASS, "b": M.M_PASS} and not found["LLR-1"].via_children
    assert found["LLR-2"].status == M.VERIFIED and found["LLR-2"].verified_on == "target"
    assert found["HLR-1"].via_children and found["HLR-1"].children == ["LLR-1", "LLR-2"]
    assert found["HLR-1"].status == M.VERIFIED and found["HLR-1"].detail == "through its children"
    assert found["LLR-3"].status == M.NO_CHECK and found["LLR-3"].per_model == {"a": M.M_NO_CHECK, "b": M.M_NO_CHECK}
    assert found["LLR-3"].detail == "no check verifies it" and found["LLR-3"].checks == []
    assert list(found) == ["HLR-1", "LLR-1", "LLR-2", "LLR-3", "HLR-2"]
    host = _statuses(_all(P, ON_HOST))
    assert host["LLR-2"].status == M.OFF_PLATFORM and host["LLR-2"].per_model["a"] == M.M_OFF_PLATFORM
    assert host["LLR-2"].open_for_target and not host["LLR-1"].open_for_target
    assert host["HLR-1"].status == M.OFF_PLATFORM and not host["HLR-1"].open_for_target
    assert host["HLR-1"].per_model == {"a": M.M_OFF_PLATFORM, "b": M.M_OFF_PLATFORM}


def test_one_failing_result_fails_its_model_its_requirement_and_the_parent() -> None:
    outcomes = _all(P, ON_TARGET)
    outcomes["b", "c.three"] = _outcome(_result(P, ON_TARGET), _result(F, ON_TARGET))
    found = _statuses(outcomes)
    assert found["LLR-1"].per_model == {"a": M.M_PASS, "b": M.M_FAIL} and found["LLR-1"].status == M.FAILED
    assert found["HLR-2"].status == M.FAILED
    assert found["HLR-1"].status == M.FAILED and found["HLR-1"].per_model == {"a": M.M_PASS, "b": M.M_FAIL}
    outcomes["b", "c.three"] = _outcome(_result(N))
    partial = _statuses(outcomes)
    assert partial["LLR-1"].per_model["b"] == M.M_PARTIAL and partial["HLR-1"].status == M.PARTIAL
    stale = _statuses(_all(P, ON_TARGET), {Link("check:c.two", "LLR-2")})
    assert stale["LLR-2"].status == M.NOT_VERIFIED and stale["LLR-2"].per_model == {"a": M.M_NOT_RUN, "b": M.M_NOT_RUN}
    assert stale["LLR-1"].status == M.VERIFIED and stale["HLR-1"].status == M.NOT_VERIFIED
    assert stale["HLR-1"].per_model == {"a": M.M_NOT_RUN, "b": M.M_NOT_RUN}
    none = _statuses({}, models=())
    assert none["LLR-1"].status == M.NOT_VERIFIED and none["LLR-1"].detail == "no model results"
    assert none["LLR-3"].detail == "no check verifies it"


def test_a_status_open_for_the_target_is_only_a_target_requirement_short_of_a_target_pass() -> None:
    status = M.RequirementStatus("R", M.PARTIAL, {}, ["c"], [], False, verified_on="target")
    assert status.open_for_target
    for other in (M.NOT_VERIFIED, M.OFF_PLATFORM):
        assert M.RequirementStatus("R", other, {}, ["c"], [], False, verified_on="target").open_for_target
    for closed in (M.FAILED, M.VERIFIED, M.NO_CHECK, M.NOT_APPLICABLE):
        assert not M.RequirementStatus("R", closed, {}, ["c"], [], False, verified_on="target").open_for_target
    assert not M.RequirementStatus("R", M.PARTIAL, {}, ["c"], [], True, verified_on="target").open_for_target
    assert not M.RequirementStatus("R", M.PARTIAL, {}, ["c"], [], False).open_for_target


def _requirements_with_spans() -> Any:
    from pipeline.diagnostics import Span

    class WithSpans(_Requirements):
        def __contains__(self, key: str) -> bool:
            return any(r.id == key for r in self.items)

    return WithSpans([_Requirement("LLR-1", span=Span("requirements/x.yaml", 7, 3))])


def test_requirement_findings_without_models_and_for_a_stale_link(tmp_path: Any) -> None:
    from pipeline.diagnostics import Span

    requirements = _requirements_with_spans()
    specs = {"c.one": CheckSpec("c.one", "", "s", ("LLR-1",))}
    none = M.compute_statuses(requirements, specs, [], {}, set())
    found = M._gap_findings(requirements, none, {}, [], set(), root=tmp_path)
    assert [(f.code, f.message) for f in found] == [(M.E_REQUIREMENT_NOT_VERIFIED,
                                                     "LLR-1 is not verified: no model results")]
    assert found[0].span == Span("requirements/x.yaml", 7, 3) and none["LLR-1"].why == "no model results"
    outcomes = {("a", "c.one"): _outcome(_result(P, ON_HOST))}
    stale = {Link("check:c.one", "LLR-1")}
    statuses = M.compute_statuses(requirements, specs, ["a"], outcomes, stale)
    found = M._gap_findings(requirements, statuses, outcomes, ["a"], stale, root=tmp_path)
    assert [f.code for f in found] == [M.E_REQUIREMENT_NOT_VERIFIED]
    assert found[0].span == Span("requirements/x.yaml", 7, 3)        # a stale link is the requirement's to review


def test_trace_integrity_findings_of_one_model() -> None:
    from pipeline.evidence import selfchecks

    requirements = _requirements_with_spans()
    specs = {"c.one": CheckSpec("c.one", "", "s", ("LLR-1", "LLR-9")), "c.two": CheckSpec("c.two", "", "s", ("LLR-1",))}

    def outcome(step: str, recorded: tuple[str, ...], source: str = "artifacts/a/s/checks.json") -> Any:
        return SimpleNamespace(results=[SimpleNamespace(source=source, recorded_requirements=recorded)], step=step)

    collected = SimpleNamespace(model="a", unregistered={"c.gone": SimpleNamespace(source="artifacts/a/s/checks.json")},
                                outcomes={"c.one": outcome("s", ("LLR-1", "LLR-9")), "c.two": outcome("s", ("LLR-2",))})
    found = M._model_link_findings(collected, specs, requirements, {Link("check:c.two", "LLR-1")})
    assert [(f.code, f.severity.value) for f in found] == [(M.E_UNREGISTERED_RESULT, "error"), ("EVID-E010", "error"),
                                                           (M.E_RECORDED_REQUIREMENTS, "error"), ("EVID-E015", "error")]
    assert found[1].message == "a: check c.one produced results but names requirement LLR-9, which does not exist"
    assert found[2].message == ("a: result of c.two recorded requirements LLR-2 but the check now traces to LLR-1; "
                                "re-execute step s")
    assert found[3].message == "a: results of c.two trace to LLR-1 through a stale link"
    own = SimpleNamespace(model="a", unregistered={}, outcomes={
        "c.one": outcome(selfchecks.STEP, ("LLR-1", "LLR-9"), selfchecks.SOURCE)})
    assert M._model_link_findings(own, specs, requirements, set()) == []     # the evidence step's own checks
    empty = SimpleNamespace(model="a", unregistered={}, outcomes={"c.one": SimpleNamespace(results=[], step="s")})
    assert M._model_link_findings(empty, specs, requirements, set()) == []   # no result: nothing traced


def test_the_artifacts_a_check_read_and_wrote_are_indexed_with_their_digests(tmp_path: Any) -> None:
    from pipeline.ledger.hashing import FileDigest, file_digest

    folder = tmp_path / "artifacts/m/execute/inputs"
    folder.mkdir(parents=True)
    (folder / "a.dat").write_bytes(b"aaaa")
    (folder / "b.dat").write_bytes(b"bb")
    (tmp_path / "artifacts/m/compare").mkdir(parents=True)
    (tmp_path / "artifacts/m/compare/numeric.json").write_text("{}")
    recorded = FileDigest("artifacts/m/compare/checks.json", "0" * 64, 9)
    records = SimpleNamespace(records={"compare": SimpleNamespace(outputs=[recorded])},
                              current={recorded.path: FileDigest(recorded.path, "1" * 64, 10)})
    outcome = SimpleNamespace(check_id="compare.reference", artifacts_read=["artifacts/m/execute/inputs",
                                                                            str(tmp_path / "artifacts/m/execute/inputs")],
                              artifacts_written=["artifacts/m/compare/numeric.json", "artifacts/m/missing.json"])
    artifacts: dict[str, M.ArtifactInfo] = {}
    M._index_artifacts("m", records, [outcome], tmp_path, artifacts)  # type: ignore[arg-type]
    checks = artifacts["artifacts/m/compare/checks.json"]
    assert (checks.step, checks.sha256, checks.size, checks.model) == ("compare", "1" * 64, 10, "m")
    inputs = artifacts["artifacts/m/execute/inputs"]
    members = [file_digest(folder / "a.dat", tmp_path), file_digest(folder / "b.dat", tmp_path)]
    assert inputs.kind == "folder" and inputs.files == ["artifacts/m/execute/inputs/a.dat",
                                                        "artifacts/m/execute/inputs/b.dat"]
    assert inputs.sha256 == M.listing_digest("artifacts/m/execute/inputs", members) and inputs.size == 6
    assert inputs.read_by == {"compare.reference"} and inputs.written_by == set()
    assert artifacts["artifacts/m/execute/inputs/a.dat"].read_by == {"compare.reference"}
    assert artifacts["artifacts/m/execute/inputs/b.dat"].sha256 == members[1].sha256
    written = artifacts["artifacts/m/compare/numeric.json"]
    assert written.written_by == {"compare.reference"} and written.read_by == set() and written.size == 2
    assert written.sha256 == file_digest(tmp_path / "artifacts/m/compare/numeric.json", tmp_path).sha256
    missing = artifacts["artifacts/m/missing.json"]
    assert (missing.sha256, missing.size, missing.kind) == (None, None, "file")


def test_a_model_folder_doit_refuses_is_one_error_saying_why(tmp_path: Any) -> None:
    (tmp_path / "models/nodeploy").mkdir(parents=True)
    (tmp_path / "models/nodeploy/model.onnx").write_bytes(b"")
    found = M._refusal_findings(tmp_path)
    assert list(found) == ["nodeploy"] and found["nodeploy"].code == "DEPLOY-E001"
    assert found["nodeploy"].severity.value == "error"
    assert found["nodeploy"].message.startswith("model nodeploy not run: ")
    assert "DEPLOY-E001" not in found["nodeploy"].message


# ------------------------------------------- issue 42, the seed-7 mutation sample: reported figures read

def test_an_artifact_s_record_names_its_path() -> None:
    info = M.ArtifactInfo("artifacts/m/compare/numeric.json", "m", "compare", "1" * 64, 2, {"c.one"})
    record = info.to_json({"c.one": CheckSpec("c.one", "", "s", ("LLR-1",))})
    assert record["path"] == "artifacts/m/compare/numeric.json" and record["model"] == "m"


def test_a_requirement_that_applies_to_no_model_is_a_note_at_the_requirement_saying_why() -> None:
    """The note names the first model and check, how many more, and the first clause of the check's reason, and
    points at the requirement's line (an auditor's editor jumps there)."""
    from pipeline.diagnostics import Span

    requirements = _requirements_with_spans()
    specs = {"c.one": CheckSpec("c.one", "", "s", ("LLR-1",))}
    na = SimpleNamespace(results=[SimpleNamespace(result=CheckResult("c.one", "a", A, "no cuda item; details"))],
                         verdict=A, model="a", reason="no deployment of this model has a cuda item; details",
                         step="compare")
    outcomes = {(m, "c.one"): na for m in ("a", "b")}
    statuses = M.compute_statuses(requirements, specs, ["a", "b"], outcomes, set())
    assert statuses["LLR-1"].status == M.NOT_APPLICABLE
    found = M._gap_findings(requirements, statuses, outcomes, ["a", "b"], set())
    assert [(f.code, f.severity.value) for f in found] == [("EVID-E027", "note")]
    assert found[0].message == ("LLR-1 applies to no model: c.one n/a on a and 1 more: "
                                "no deployment of this model has a cuda item")
    assert found[0].span == Span("requirements/x.yaml", 7, 3)

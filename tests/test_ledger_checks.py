"""Issue 42: the ledger's check results (pipeline/ledger/checks.py) on small in-memory results, light per mutant.

The closed verdict set and where a verdict was obtained are what every report reads: a verdict other than
pass needs its reason, an emulated verdict is obtained by emulation and never elsewhere, an n/a verdict was
obtained nowhere, and a checks.json document keeps every field through writing and reading back.
"""

from __future__ import annotations

import pytest

from pipeline.ledger import checks as ledger
from pipeline.ledger.checks import (CheckResult, Obtained, Verdict, Where, check_spec, not_applicable,
                                    read_results_document, register_check, results_document)

ID = "test.ledger_check"


@pytest.fixture(autouse=True)
def registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """A registry of this test's own check: the pipeline's registry is left as the other tests read it."""
    monkeypatch.setattr(ledger, "_REGISTRY", {})
    register_check(ID, "a check of the ledger's tests", "test", ["HLR-EXP-001", "HLR-NUM-002"], "planted")


def test_the_closed_sets_are_spelled_as_the_reports_read_them() -> None:
    assert [v.value for v in Verdict] == ["pass", "fail", "not run", "emulated", "n/a"]
    assert [w.value for w in Where] == ["host", "emulation", "target"]
    assert ledger.SCHEMA_VERSION == 1


def test_where_a_verdict_was_obtained_and_its_label() -> None:
    import platform

    host = Obtained.host()
    assert host == Obtained(Where.HOST, f"{platform.machine()} {platform.system()}")
    assert host.label() == f"host ({platform.machine()} {platform.system()})"
    assert Obtained.emulation("qemu").label() == "emulation (qemu)" and Obtained.emulation("qemu").where is Where.EMULATION
    assert Obtained.target("orin").label() == "target:orin" and Obtained.target("orin").where is Where.TARGET
    assert Obtained.target("orin").to_json() == {"where": "target", "detail": "orin"}
    assert Obtained.from_json({"where": "emulation", "detail": "qemu"}) == Obtained.emulation("qemu")
    assert Obtained.from_json({"where": "target"}) == Obtained(Where.TARGET, "")


def test_a_registered_check_is_found_and_an_unknown_one_named() -> None:
    spec = check_spec(ID)
    assert (spec.id, spec.title, spec.step, spec.requirements, spec.description) == (
        ID, "a check of the ledger's tests", "test", ("HLR-EXP-001", "HLR-NUM-002"), "planted")
    assert register_check(ID, "a check of the ledger's tests", "test", ["HLR-EXP-001", "HLR-NUM-002"], "planted") == spec
    with pytest.raises(ValueError, match="'test.ledger_check' registered twice with different definitions"):
        register_check(ID, "a check of the ledger's tests", "test", ["HLR-EXP-001"], "planted")
    with pytest.raises(KeyError, match="check 'test.nothing' is not registered"):
        check_spec("test.nothing")
    assert check_spec(ID) == spec


def test_a_verdict_other_than_pass_needs_its_reason_and_says_where_it_was_obtained() -> None:
    for verdict in (Verdict.FAIL, Verdict.NOT_RUN, Verdict.EMULATED, Verdict.NOT_APPLICABLE):
        with pytest.raises(ValueError, match=f"check {ID}: verdict '{verdict.value}' needs a reason"):
            CheckResult(ID, "m", verdict)
    assert CheckResult(ID, "m", Verdict.PASS).obtained == Obtained.host()
    assert CheckResult(ID, "m", "fail", "off").verdict is Verdict.FAIL
    assert CheckResult(ID, "m", Verdict.EMULATED, "on qemu").obtained == Obtained.emulation("on qemu")
    assert CheckResult(ID, "m", Verdict.NOT_APPLICABLE, "no gpu", obtained=Obtained.host()).obtained is None
    assert not_applicable(ID, "m", "no gpu") == CheckResult(ID, "m", Verdict.NOT_APPLICABLE, "no gpu")
    assert CheckResult(ID, "m", Verdict.FAIL, "x", obtained=Obtained.target("orin")).obtained == Obtained.target("orin")
    for elsewhere in (Obtained.host(), Obtained.target("orin")):
        with pytest.raises(ValueError, match=f"check {ID}: an emulated verdict is obtained by emulation"):
            CheckResult(ID, "m", Verdict.EMULATED, "said emulated", obtained=elsewhere)
    assert CheckResult(ID, "m", Verdict.FAIL, "x").requirements == ("HLR-EXP-001", "HLR-NUM-002")


def test_a_checks_document_keeps_every_field_in_order() -> None:
    results = [CheckResult(ID, "m/b", Verdict.FAIL, "off", {"max": 1.5}, ["z", "a"], ["w2", "w1"],
                           Obtained.target("orin")),
               CheckResult(ID, "m/a", Verdict.PASS),
               CheckResult(ID, "m/a", Verdict.NOT_APPLICABLE, "no gpu")]
    document = results_document(results)
    assert document["schema_version"] == 1 and [r["subject"] for r in document["results"]] == ["m/a", "m/a", "m/b"]
    assert document["results"][2] == {"check_id": ID, "subject": "m/b", "verdict": "fail", "reason": "off",
                                      "requirements": ["HLR-EXP-001", "HLR-NUM-002"], "measured": {"max": 1.5},
                                      "read": ["a", "z"], "written": ["w1", "w2"],
                                      "obtained": {"where": "target", "detail": "orin"}}
    assert [r["obtained"] for r in document["results"][:2]].count(None) == 1
    back = read_results_document(document)
    assert back[2] == CheckResult(ID, "m/b", Verdict.FAIL, "off", {"max": 1.5}, ["a", "z"], ["w1", "w2"],
                                  Obtained.target("orin"))
    assert back[0].verdict in (Verdict.PASS, Verdict.NOT_APPLICABLE) and {r.verdict for r in back[:2]} == {
        Verdict.PASS, Verdict.NOT_APPLICABLE}
    minimal = CheckResult.from_json({"check_id": ID, "subject": "m", "verdict": "pass"})
    assert minimal == CheckResult(ID, "m", Verdict.PASS, "", {}, [], [], Obtained.host())
    for version in (2, None):
        with pytest.raises(ValueError, match=f"checks document has schema_version {version!r}, expected 1"):
            read_results_document({"schema_version": version, "results": []})

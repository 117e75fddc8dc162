"""JUnit XML: validates against the published junit-10.xsd and reads back with junitparser."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.evidence.evidence_fakeproject import FakeProject
from pipeline.evidence.build import build_reports
from pipeline.evidence.junit import junit_xml
from pipeline.evidence.matrix import build_matrix

xmlschema = pytest.importorskip("xmlschema", reason="xmlschema (PyPI) validates the JUnit XML against the XSD")
junitparser = pytest.importorskip("junitparser", reason="junitparser (PyPI) is the JUnit consumer of these tests")

DATA = Path(__file__).parent / "data"


@pytest.fixture
def mixed(tmp_path: Path, registry: None) -> Path:
    """alpha: one failure, one not run, one emulated; beta: all pass; plus an unregistered result."""
    fake = FakeProject(tmp_path)
    fake.add_model(
        "alpha",
        verdicts={
            "export.numeric": ("fail", "output[0][3]: 0.51 vs 0.49 <abs 2e-2> & more"),
            "petri.final_marking": ("not run", "no Petri tool"),
            "codegen.trace": ("emulated", "NVDLA emulator"),
        },
    )
    fake.add_model("beta")
    path = tmp_path / "artifacts/beta/petri/checks.json"
    data = json.loads(path.read_text())
    data["results"].append({"check_id": "petri.ghost", "subject": "beta", "verdict": "pass", "requirements": []})
    path.write_text(json.dumps(data))
    build_reports(tmp_path)
    return tmp_path / "reports/junit.xml"


def test_strict_form_validates_against_published_junit_10_xsd(mixed: Path) -> None:
    schema = xmlschema.XMLSchema(DATA / "junit-10.xsd")
    strict = junit_xml(build_matrix(mixed.parents[1]), testcase_properties=False)
    schema.validate(strict)
    # the default form adds testcase <properties>, which junit-10.xsd does not allow...
    assert not schema.is_valid(str(mixed))
    # ...and which is the only difference: junit-10.xsd with that one override accepts it
    xmlschema.XMLSchema11(DATA / "junit-10-testcase-properties.xsd").validate(str(mixed))


def test_consumer_reads_expected_counts(mixed: Path) -> None:
    from pipeline.ledger import checks

    xml = junitparser.JUnitXml.fromfile(str(mixed))
    suites = {suite.name: suite for suite in xml}
    n_checks = len(checks._REGISTRY)
    matrix = build_matrix(mixed.parents[1])
    n_reqs = len(matrix.requirements)
    assert set(suites) == {"alpha", "beta", "traceability"}
    alpha, beta, trace = suites["alpha"], suites["beta"], suites["traceability"]
    assert alpha.tests == n_checks and alpha.failures == 1 and alpha.errors == 0
    # not run: petri.final_marking + evidence.package; emulated: codegen.trace
    assert alpha.skipped == 3
    # the ghost result is an error; editing checks.json after record_step fails evidence.records,
    # and the unregistered result fails evidence.trace
    assert beta.tests == n_checks + 1 and beta.errors == 1 and beta.failures == 2
    failed = sorted(c.name for c in beta if c.result and isinstance(c.result[0], junitparser.Failure))
    assert failed == [
        "evidence.records [HLR-TRC-001, LLR-TRC-001, LLR-TRC-002]",
        "evidence.trace [HLR-TRC-002, LLR-TRC-003, LLR-TRC-004, LLR-TRC-005]",
    ]
    assert trace.tests == n_reqs
    expected_failed = sum(1 for s in matrix.statuses.values() if s.status in ("failed", "not verified", "no check"))
    assert trace.failures == expected_failed
    assert xml.tests == 2 * n_checks + 1 + n_reqs


def test_testcase_names_properties_and_messages(mixed: Path) -> None:
    xml = junitparser.JUnitXml.fromfile(str(mixed))
    cases = {(suite.name, case.name): case for suite in xml for case in suite}
    failed = cases[("alpha", "export.numeric [HLR-EXP-001]")]
    assert failed.classname == "alpha.export"
    failure = failed.result[0]
    assert isinstance(failure, junitparser.Failure) and failure.message == "output[0][3]: 0.51 vs 0.49 <abs 2e-2> & more"
    props = {p.get("name"): p.get("value") for p in failed._elem.iter("property")}  # junitparser has no testcase-properties API
    assert props["requirements"] == "HLR-EXP-001" and props["verdict"] == "fail" and props["model"] == "alpha"
    assert props["requirement.HLR-EXP-001"].startswith("sha256:")
    skipped = cases[("alpha", "petri.final_marking [HLR-EXE-001]")].result[0]
    assert isinstance(skipped, junitparser.Skipped) and skipped.message == "not run: no Petri tool"
    emulated = cases[("alpha", "codegen.trace [HLR-COD-002]")].result[0]
    assert isinstance(emulated, junitparser.Skipped) and emulated.message.startswith("emulated (not coverage): NVDLA emulator")
    assert cases[("beta", "export.numeric [HLR-EXP-001]")].is_passed
    ghost = cases[("beta", "petri.ghost [NO REQUIREMENT]")].result[0]
    assert isinstance(ghost, junitparser.Error) and ghost.type == "EVID-E023"
    req = [c for (s, n), c in cases.items() if s == "traceability" and n.startswith("HLR-NUM-004 ")][0]
    assert isinstance(req.result[0], junitparser.Failure) and "verified by no check" in req.result[0].message


def test_no_models_still_valid(tmp_path: Path, registry: None) -> None:
    FakeProject(tmp_path)
    matrix = build_matrix(tmp_path)
    xmlschema.XMLSchema(DATA / "junit-10.xsd").validate(junit_xml(matrix, testcase_properties=False))
    xml = junitparser.JUnitXml.fromstring(junit_xml(matrix).encode("utf-8"))  # bytes: lxml refuses str with a declaration
    assert [s.name for s in xml] == ["traceability"]

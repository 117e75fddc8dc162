"""The requirement set: the shipped set is valid and complete; every kind of error is caught."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from tests.evidence.evidence_fakeproject import REPO
from pipeline.ledger.requirements import RequirementsInvalid, load_requirements, read_requirements

GOOD_SYS = """\
schema_version: 1
level: SYS
title: System
requirements:
  - id: SYS-001
    title: Top
    text: The system does the thing.
    rationale: Because.
    verification: [test]
    source: ["paper"]
"""


def write(root: Path, name: str, text: str) -> None:
    (root / "requirements").mkdir(parents=True, exist_ok=True)
    (root / "requirements" / name).write_text(textwrap.dedent(text), encoding="utf-8")


def hlr(entries: str) -> str:
    return "schema_version: 1\nlevel: HLR\ntitle: High\nrequirements:\n" + textwrap.dedent(entries)


def codes(findings) -> list[str]:  # type: ignore[no-untyped-def]
    return [f.code for f in findings]


def test_shipped_set_is_valid_and_has_every_contract_id() -> None:
    requirements, findings = read_requirements(REPO)
    assert findings == []
    table = (REPO / "docs" / "conventions.md").read_text(encoding="utf-8")
    contract = re.findall(r"^\| ((?:SYS|HLR)-[A-Z0-9-]+) \|", table, flags=re.MULTILINE)
    assert len(contract) == 33
    missing = [rid for rid in contract if rid not in requirements]
    assert missing == []
    for req in requirements:
        assert req.text and req.rationale and req.source and req.verification
        if req.level != "SYS":
            assert req.parents, req.id
    assert any(r.level == "LLR" for r in requirements)


def test_fingerprint_ignores_reflow_and_informative_fields(tmp_path: Path) -> None:
    write(tmp_path, "sys.yaml", GOOD_SYS)
    before = load_requirements(tmp_path)["SYS-001"].fingerprint
    write(tmp_path, "sys.yaml", GOOD_SYS.replace("The system does the thing.", "The system   does\n      the thing.").replace("Because.", "Other."))
    assert load_requirements(tmp_path)["SYS-001"].fingerprint == before
    write(tmp_path, "sys.yaml", GOOD_SYS.replace("does the thing", "does another thing"))
    assert load_requirements(tmp_path)["SYS-001"].fingerprint != before


def test_duplicate_ids_across_files_name_both_places(tmp_path: Path) -> None:
    write(tmp_path, "a.yaml", GOOD_SYS)
    write(tmp_path, "b.yaml", GOOD_SYS)
    _, findings = read_requirements(tmp_path)
    dup = [f for f in findings if f.code == "EVID-E003"]
    assert len(dup) == 1
    assert dup[0].span.file == "requirements/b.yaml" and dup[0].span.line == 5
    assert "requirements/a.yaml:5" in dup[0].message


def test_dangling_parent_and_level_rules(tmp_path: Path) -> None:
    write(tmp_path, "sys.yaml", GOOD_SYS)
    write(tmp_path, "hlr.yaml", hlr("""\
      - id: HLR-ABC-001
        title: a
        text: a
        rationale: a
        parents: [SYS-009]
        verification: [test]
        source: [s]
      - id: HLR-ABC-002
        title: b
        text: b
        rationale: b
        verification: [test]
        source: [s]
      - id: HLR-ABC-003
        title: c
        text: c
        rationale: c
        parents: [HLR-ABC-001]
        verification: [test]
        source: [s]
      - id: HLR-ABC-004
        title: d
        text: d
        rationale: d
        derived: true
        verification: [analysis]
        source: [s]
    """))
    _, findings = read_requirements(tmp_path)
    by_code = {(f.code, f.message.split(":")[0]) for f in findings}
    assert ("EVID-E005", "HLR-ABC-001") in by_code  # dangling
    assert ("EVID-E007", "HLR-ABC-002") in by_code  # no parent, not derived
    assert ("EVID-E007", "HLR-ABC-003") in by_code  # HLR may only trace to SYS
    assert not any("HLR-ABC-004" in f.message for f in findings)  # derived is allowed
    dangling = next(f for f in findings if f.code == "EVID-E005")
    assert dangling.span.file == "requirements/hlr.yaml" and dangling.span.line == 5


def test_cycle_is_reported_once_with_its_path(tmp_path: Path) -> None:
    write(tmp_path, "sys.yaml", GOOD_SYS)
    write(tmp_path, "hlr.yaml", hlr("""\
      - id: HLR-ABC-001
        title: a
        text: a
        rationale: a
        parents: [SYS-001]
        verification: [test]
        source: [s]
    """))
    llr = "schema_version: 1\nlevel: LLR\ntitle: Low\nrequirements:\n"
    for rid, parent in (("LLR-ABC-001", "LLR-ABC-003"), ("LLR-ABC-002", "LLR-ABC-001"), ("LLR-ABC-003", "LLR-ABC-002")):
        llr += f"  - id: {rid}\n    title: t\n    text: t\n    rationale: r\n    parents: [{parent}]\n    verification: [test]\n    source: [s]\n"
    write(tmp_path, "llr.yaml", llr)
    _, findings = read_requirements(tmp_path)
    cycles = [f for f in findings if f.code == "EVID-E006"]
    assert len(cycles) == 1
    assert "LLR-ABC-001 -> LLR-ABC-003 -> LLR-ABC-002 -> LLR-ABC-001" in cycles[0].message
    with pytest.raises(RequirementsInvalid) as caught:
        load_requirements(tmp_path)
    assert caught.value.code == "EVID-E006"


def test_bad_fields_give_key_path_and_line(tmp_path: Path) -> None:
    write(tmp_path, "sys.yaml", """\
        schema_version: 1
        level: SYS
        title: System
        requirements:
          - id: SYS-001
            title: Top
            text: t
            rationale: r
            verification: [test, guess]
            source: ["paper"]
            owner: me
          - id: SYS-002
            title: ""
            text: t
            rationale: r
            verification: [test]
          - id: SYS-3
            title: t
            text: t
            rationale: r
            verification: [test]
            source: [s]
    """)
    _, findings = read_requirements(tmp_path)
    messages = {f.message: f for f in findings}
    unknown = next(f for m, f in messages.items() if m.startswith("requirements[0].owner"))
    assert unknown.code == "EVID-E002" and unknown.span.line == 11
    method = next(f for m, f in messages.items() if m.startswith("requirements[0].verification[1]"))
    assert "guess" in method.message and method.span.line == 9
    assert any(m.startswith("requirements[1]: missing required field 'source'") for m in messages)
    bad_id = next(f for f in findings if f.code == "EVID-E004")
    assert "requirements[2].id" in bad_id.message and bad_id.span.line == 17


def test_duplicate_yaml_key_and_syntax_error(tmp_path: Path) -> None:
    write(tmp_path, "sys.yaml", GOOD_SYS.replace("    title: Top\n", "    title: Top\n    title: Again\n"))
    _, findings = read_requirements(tmp_path)
    dup = next(f for f in findings if f.code == "EVID-E008")
    assert dup.span.line == 7 and "requirements[0].title" in dup.message
    write(tmp_path, "sys.yaml", GOOD_SYS.replace("verification: [test]", "verification: [test"))
    _, findings = read_requirements(tmp_path)
    assert codes(findings) == ["EVID-E001"]
    assert findings[0].span.file == "requirements/sys.yaml" and findings[0].span.line >= 9


def test_wrong_level_id_hints_at_the_right_file(tmp_path: Path) -> None:
    write(tmp_path, "sys.yaml", GOOD_SYS.replace("SYS-001", "HLR-FMT-001"))
    _, findings = read_requirements(tmp_path)
    assert any(f.code == "EVID-E004" and "move it to the HLR file" in f.message for f in findings)


def test_no_requirement_files(tmp_path: Path) -> None:
    _, findings = read_requirements(tmp_path)
    assert codes(findings) == ["EVID-E009"]


def test_parameters_are_normative(tmp_path: Path) -> None:
    requirements = load_requirements(REPO)
    assert requirements.parameter("HLR-NUM-001", "max_ulp") == 0
    with pytest.raises(KeyError):
        requirements.parameter("HLR-NUM-001", "nope")


@pytest.mark.parametrize("written", ['"SYS-001 "', '" SYS-001"', '"SYS-001\\n"', '"SYS-001\\t"'])
def test_an_id_with_white_space_is_refused_not_stripped(tmp_path: Path, written: str) -> None:
    """Issue 28: 'SYS-001 ' was silently stripped into SYS-001; an ID is compared as written."""
    write(tmp_path, "sys.yaml", GOOD_SYS.replace("id: SYS-001", f"id: {written}"))
    requirements, findings = read_requirements(tmp_path)
    assert codes(findings) == ["EVID-E004"] and "white space" in findings[0].message
    assert len(requirements) == 0


def test_a_parent_with_white_space_is_refused(tmp_path: Path) -> None:
    write(tmp_path, "sys.yaml", GOOD_SYS)
    write(tmp_path, "hlr.yaml", hlr("""\
        - id: HLR-FMT-001
          title: T
          text: X.
          rationale: R.
          parents: ["SYS-001 "]
          verification: [test]
          source: ["paper"]
    """))
    _, findings = read_requirements(tmp_path)
    assert "EVID-E004" in codes(findings) and any("white space" in f.message for f in findings)

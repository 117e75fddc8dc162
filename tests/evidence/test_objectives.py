"""The DO-178C objectives requirements cite: every shipped requirement names one, every number is
checked against Annex A, and each slip a reviewer makes is caught (pipeline/ledger/objectives.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.evidence.test_evidence_requirements import GOOD_SYS
from tests.evidence.evidence_fakeproject import MINIMAL_CHECKS, REPO, FakeProject, isolated_registry
from pipeline.evidence.matrix import build_matrix
from pipeline.evidence.render_html import render_html
from pipeline.evidence.render_text import render_markdown
from pipeline.ledger.objectives import OBJECTIVES, E_OBJECTIVE, citation_problems
from pipeline.ledger.requirements import read_requirements


def sys_file(objectives: str, source: str) -> str:
    """test_evidence_requirements' one system requirement, naming `objectives` and citing `source`."""
    return GOOD_SYS.replace('    source: ["paper"]', f'    objectives: {objectives}\n    source: ["{source}"]')


def problems_of(tmp_path: Path, objectives: str, source: str) -> list[str]:
    (tmp_path / "requirements").mkdir(exist_ok=True)
    (tmp_path / "requirements" / "system.yaml").write_text(sys_file(objectives, source), encoding="utf-8")
    _, findings = read_requirements(tmp_path)
    return [f"{f.code}: {f.message}" for f in findings]


def test_annex_a_tables_have_their_objective_counts() -> None:
    """DO-178C Annex A: A-2 has 7 objectives, A-3 7, A-4 13, A-5 9, A-6 5, A-7 9, A-8 6."""
    counts: dict[str, int] = {}
    for objective in OBJECTIVES.values():
        counts[objective.table] = counts.get(objective.table, 0) + 1
    assert counts == {"A-2": 7, "A-3": 7, "A-4": 13, "A-5": 9, "A-6": 5, "A-7": 9, "A-8": 6}
    assert OBJECTIVES["A-5.4"].title == "Source Code conforms to standards"
    assert OBJECTIVES["A-5.4"].sections == ("6.3.4.d",)
    assert OBJECTIVES["A-7.7"].sections == ("6.4.4.c",)


def test_every_shipped_requirement_names_the_objectives_it_serves() -> None:
    requirements, findings = read_requirements(REPO)
    assert [f for f in findings if f.code == E_OBJECTIVE] == []
    missing = [r.id for r in requirements if not r.objectives]
    assert missing == [], f"requirements without `objectives`: {missing}"
    for req in requirements:
        assert all(key in OBJECTIVES for key in req.objectives), req.id


def test_a_number_its_words_contradict_is_caught(tmp_path: Path) -> None:
    """The slip the shipped HLR-COD-003 had: objective 6 cited with the words of objective 4."""
    found = problems_of(tmp_path, "[A-5.6]", "DO-178C Table A-5 objective 6 (source code conforms to standards)")
    assert len(found) == 1 and found[0].startswith(E_OBJECTIVE) and "describe A-5.4" in found[0]
    assert problems_of(tmp_path, "[A-5.4]", "DO-178C Table A-5 objective 4 (source code conforms to standards)") == []


def test_an_objective_that_does_not_exist_is_caught(tmp_path: Path) -> None:
    assert "does not exist" in problems_of(tmp_path, "[A-5.10]", "DO-178C 6.3.4")[0]
    assert "not of the form" in problems_of(tmp_path, "[A5.4]", "DO-178C 6.3.4")[0]
    found = problems_of(tmp_path, "[A-6.1]", "DO-178C Table A-6 objective 6 (object code)")
    assert any("cites A-6.6, which does not exist" in f for f in found)


def test_a_citation_the_field_does_not_name_is_caught(tmp_path: Path) -> None:
    found = problems_of(tmp_path, "[A-8.1]", "DO-178C Table A-8 objectives 1-4: identification, baselines")
    assert sorted(f.split(" cites ")[1][:5] for f in found) == ["A-8.2", "A-8.3", "A-8.4"]
    # a section of an objective is a citation of it too
    found = problems_of(tmp_path, "[A-5.5]", "DO-178C 6.3.4.f (worst-case execution timing)")
    assert len(found) == 1 and "section of A-5.6" in found[0]
    found = problems_of(tmp_path, "[A-4.1]", "DO-178C 6.3.1.b-c: accuracy")
    assert len(found) == 2 and "A-3.2" in found[0] and "A-3.3" in found[1]


def test_citations_that_agree_pass() -> None:
    assert citation_problems(["A-7.3", "A-7.4"], ["DO-178C 6.5, 11.21 (trace data), Table A-7 objectives 3 and 4"]) == []
    # 6.4.4.c is the section of, 6, 7 and 9: naming one of them is enough
    assert citation_problems(["A-7.7"], ["DO-178C 6.4.4.c (statement coverage)"]) == []
    # a section number followed by a word is not a lettered reference, and 11.21 is no objective's section
    assert citation_problems(["A-6.1"], ["DO-178C 6.4 and Table A-6 objective 1", "DO-178C 11.21 (trace data)"]) == []
    # another standard's citation is not judged
    assert citation_problems([], ["DO-330 Table T-7 objective 99"]) == []


def test_the_matrix_lists_objectives_with_their_requirements(tmp_path: Path, registry: None) -> None:
    project = FakeProject(tmp_path)
    project.add_model("alpha")
    matrix = build_matrix(project.root)
    rows = {row["objective"]: row for row in matrix.objectives()}
    assert list(rows) == list(OBJECTIVES)
    assert "HLR-COD-003" in rows["A-5.4"]["requirements"]
    assert rows["A-8.5"]["requirements"] == [] and rows["A-8.5"]["status"] is None
    assert matrix.to_json()["objectives"] == matrix.objectives()
    page = render_html(matrix)
    assert 'id="objectives"' in page and "Software load control is established" in page
    assert "## DO-178C objectives" in render_markdown(matrix)


@pytest.mark.parametrize("verdict, status", [("pass", "verified"), ("fail", "failed")])
def test_an_objective_fails_when_one_of_its_requirements_fails(tmp_path: Path, verdict: str, status: str) -> None:
    """A-5.5 (Source Code is traceable to low-level requirements) rests on HLR-COD-002 and LLR-TRC-005 in
    the minimal set: a failing codegen.trace fails HLR-COD-002, and so the objective."""
    with isolated_registry(MINIMAL_CHECKS):
        project = FakeProject(tmp_path, minimal=True)
        project.add_model("alpha", verdicts={"codegen.trace": (verdict, "planted")})
        matrix = build_matrix(project.root)
    row = next(r for r in matrix.objectives() if r["objective"] == "A-5.5")
    assert row["requirements"] == ["HLR-COD-002", "LLR-TRC-005"]
    assert matrix.statuses["LLR-TRC-005"].status == "verified"
    assert row["status"] == status

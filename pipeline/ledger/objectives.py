"""The DO-178C objectives a requirement serves, and the check that its citations name real ones.

An auditor reads a requirement's DO-178C citation to find which objective of the standard its
verification gives evidence for. A citation with a wrong objective number ("Table A-5
objective 6 (source code conforms to standards)", where conformance to standards is objective
4) sends the audit to the wrong row; nothing but a table of the objectives catches that. So a
requirement names the objectives it serves in a structured field, `objectives: [A-5.4, A-5.6]`
(table A-5, objectives 4 and 6), and `citation_findings` judges it against OBJECTIVES:

* every named objective exists;
* every "Table A-N objective k" (or "objectives k-m", "k and m", "k, m") in a DO-178C source
  string is an existing objective and is named in `objectives` (the prose and the field agree);
* every section reference of an objective cited in a source string ("6.3.4.f", "6.3.4 f",
  "6.3.1.b-c") names an objective that is in `objectives`;
* the words after a citation of one objective ("Table A-5 objective 6 (source code conforms to
  standards)") describe that objective at least as well as any other of its table: a number
  that the words contradict is the slip this check exists for.

OBJECTIVES is RTCA DO-178C (2011), Annex A, Tables A-2 to A-8: each objective's number, a short
title and the section references the table gives. Tables A-1 (planning), A-9 (quality
assurance) and A-10 (certification liaison) are about the applicant's processes, which no
check of this pipeline produces evidence for; a citation of them is reported as unknown.
docs/evidence.md "DO-178C objectives" lists the table.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable

E_OBJECTIVE = "EVID-E090"


@dataclass(frozen=True)
class Objective:
    """One row of an Annex A table."""

    table: str          # "A-5"
    number: int         # 4
    title: str          # the table's short wording
    sections: tuple[str, ...]   # the section references, "6.3.4.d"

    @property
    def key(self) -> str:
        """The form requirements write: "A-5.4"."""
        return f"{self.table}.{self.number}"


def _table(table: str, rows: Iterable[tuple[str, str]]) -> dict[str, Objective]:
    objectives = {}
    for number, (title, sections) in enumerate(rows, start=1):
        objective = Objective(table, number, title, tuple(sections.split()))
        objectives[objective.key] = objective
    return objectives


OBJECTIVES: dict[str, Objective] = {
    **_table("A-2", [
        ("High-level requirements are developed", "5.1.1.a"),
        ("Derived high-level requirements are defined and provided to the system processes", "5.1.1.b"),
        ("Software architecture is developed", "5.2.1.a"),
        ("Low-level requirements are developed", "5.2.1.a"),
        ("Derived low-level requirements are defined and provided to the system processes", "5.2.1.b"),
        ("Source Code is developed", "5.3.1.a"),
        ("Executable Object Code is produced and integrated in the target computer", "5.4.1.a"),
    ]),
    **_table("A-3", [
        ("High-level requirements comply with system requirements", "6.3.1.a"),
        ("High-level requirements are accurate and consistent", "6.3.1.b"),
        ("High-level requirements are compatible with the target computer", "6.3.1.c"),
        ("High-level requirements are verifiable", "6.3.1.d"),
        ("High-level requirements conform to standards", "6.3.1.e"),
        ("High-level requirements are traceable to system requirements", "6.3.1.f"),
        ("Algorithms are accurate", "6.3.1.g"),
    ]),
    **_table("A-4", [
        ("Low-level requirements comply with high-level requirements", "6.3.2.a"),
        ("Low-level requirements are accurate and consistent", "6.3.2.b"),
        ("Low-level requirements are compatible with the target computer", "6.3.2.c"),
        ("Low-level requirements are verifiable", "6.3.2.d"),
        ("Low-level requirements conform to standards", "6.3.2.e"),
        ("Low-level requirements are traceable to high-level requirements", "6.3.2.f"),
        ("Algorithms are accurate", "6.3.2.g"),
        ("Software architecture is compatible with high-level requirements", "6.3.3.a"),
        ("Software architecture is consistent", "6.3.3.b"),
        ("Software architecture is compatible with the target computer", "6.3.3.c"),
        ("Software architecture is verifiable", "6.3.3.d"),
        ("Software architecture conforms to standards", "6.3.3.e"),
        ("Software partitioning integrity is confirmed", "6.3.3.f"),
    ]),
    **_table("A-5", [
        ("Source Code complies with low-level requirements", "6.3.4.a"),
        ("Source Code complies with software architecture", "6.3.4.b"),
        ("Source Code is verifiable", "6.3.4.c"),
        ("Source Code conforms to standards", "6.3.4.d"),
        ("Source Code is traceable to low-level requirements", "6.3.4.e"),
        ("Source Code is accurate and consistent", "6.3.4.f"),
        ("Output of the software integration process is complete and correct", "6.3.5"),
        ("Parameter Data Item File is correct and complete", "6.6.a"),
        ("Verification of the Parameter Data Item File is achieved", "6.6.b"),
    ]),
    **_table("A-6", [
        ("Executable Object Code complies with high-level requirements", "6.4.a"),
        ("Executable Object Code is robust with high-level requirements", "6.4.b"),
        ("Executable Object Code complies with low-level requirements", "6.4.c"),
        ("Executable Object Code is robust with low-level requirements", "6.4.d"),
        ("Executable Object Code is compatible with the target computer", "6.4.e"),
    ]),
    **_table("A-7", [
        ("Test procedures are correct", "6.4.5.b"),
        ("Test results are correct and discrepancies explained", "6.4.5.c"),
        ("Test coverage of high-level requirements is achieved", "6.4.4.a"),
        ("Test coverage of low-level requirements is achieved", "6.4.4.b"),
        ("Test coverage of software structure (modified condition/decision coverage) is achieved", "6.4.4.c"),
        ("Test coverage of software structure (decision coverage) is achieved", "6.4.4.c"),
        ("Test coverage of software structure (statement coverage) is achieved", "6.4.4.c"),
        ("Test coverage of software structure (data coupling and control coupling) is achieved", "6.4.4.d"),
        ("Verification of additional code that cannot be traced to Source Code is achieved", "6.4.4.c"),
    ]),
    **_table("A-8", [
        ("Configuration items are identified", "7.2.1"),
        ("Baselines and traceability are established", "7.2.2"),
        ("Problem reporting, change control, change review and configuration status accounting are established",
         "7.2.3 7.2.4 7.2.5 7.2.6"),
        ("Archive, retrieval and release are established", "7.2.7"),
        ("Software load control is established", "7.2.8"),
        ("Software life cycle environment control is established", "7.2.9"),
    ]),
}

KEY = re.compile(r"^A-(\d+)\.(\d+)$")
# "Table A-5 objective 4", "Table A-8 objectives 1-4", "Table A-7 objectives 3 and 4", "Table A-6 objectives 1, 3"
TABLE_CITATION = re.compile(r"Table\s+(A-\d+)(?:\s+objectives?\s+(\d+(?:\s*(?:-|–|,|and)\s*\d+(?![.\d]))*))?")
# "6.3.4.f", "6.3.4 f", "6.3.1.b-c" (letters of objective references), "7.2.7" (a numbered one)
SECTION_CITATION = re.compile(r"(?<![\d.])(\d+\.\d+(?:\.\d+)*)(?:(?:\.|\s)([a-g])(?:-([a-g]))?(?![A-Za-z]))?(?![\d])")


def _numbers(text: str) -> list[int]:
    """'1-4' -> [1, 2, 3, 4]; '3 and 5' -> [3, 5]; '1, 3' -> [1, 3]."""
    numbers: list[int] = []
    for part in re.split(r"\s*(?:,|and)\s*", text.strip()):
        if not part:
            continue
        bounds = [int(b) for b in re.split(r"\s*[-–]\s*", part) if b]
        numbers.extend(range(bounds[0], bounds[-1] + 1) if len(bounds) == 2 else bounds)
    return numbers


def cited_objectives(source: str) -> list[tuple[str, bool]]:
    """The objective keys a DO-178C source string cites by table and number, each with whether
    it exists; a table without an objective number cites nothing."""
    found = []
    for match in TABLE_CITATION.finditer(source):
        if match.group(2):
            for number in _numbers(match.group(2)):
                key = f"{match.group(1)}.{number}"
                found.append((key, key in OBJECTIVES))
    return found


def sectioned_objectives(source: str) -> list[str]:
    """The objective keys whose section references a DO-178C source string cites."""
    by_section: dict[str, list[str]] = {}
    for objective in OBJECTIVES.values():
        for section in objective.sections:
            by_section.setdefault(section, []).append(objective.key)
    keys: list[str] = []
    for match in SECTION_CITATION.finditer(source):
        number, first, last = match.groups()
        sections = [number] if first is None else [f"{number}.{chr(c)}" for c in range(ord(first), ord(last or first) + 1)]
        for section in sections:
            keys.extend(k for k in by_section.get(section, []) if k not in keys)
    return keys


STOP_WORDS = frozenset({"with", "that", "this", "from", "their", "into", "achieved", "established"})


def _stems(text: str) -> set[str]:
    """Words of four letters or more, cut to five letters so that 'accuracy' meets 'accurate'."""
    return {w[:5] for w in re.findall(r"[a-z]+", text.lower()) if len(w) >= 4 and w not in STOP_WORDS}


def described(source: str) -> list[tuple[str, str]]:
    """(key, words) for each citation of exactly one objective followed by its description in
    parentheses or after a colon."""
    found = []
    for match in TABLE_CITATION.finditer(source):
        numbers = _numbers(match.group(2)) if match.group(2) else []
        if len(numbers) != 1:
            continue
        rest = source[match.end():]
        words = re.match(r"\s*\(([^)]*)\)", rest) or re.match(r"\s*:\s*([^;]*)", rest)
        if words:
            found.append((f"{match.group(1)}.{numbers[0]}", words.group(1)))
    return found


def _best_described(key: str, words: str) -> list[str]:
    """The objectives of `key`'s table whose titles share most word stems with `words`."""
    table = OBJECTIVES[key].table
    wanted = _stems(words)
    scores = {k: len(wanted & _stems(o.title)) for k, o in OBJECTIVES.items() if o.table == table}
    best = max(scores.values())
    return [k for k, score in scores.items() if score == best] if best else []


def citation_problems(objectives: Iterable[str], sources: Iterable[str]) -> list[str]:
    """What is wrong with a requirement's objectives and its DO-178C citations, in words ([] when
    nothing is); see the module docstring for the rules."""
    named = list(objectives)
    problems = []
    for key in named:
        if not KEY.match(key):
            problems.append(f"objective {key!r} is not of the form A-<table>.<number> (e.g. A-5.4)")
        elif key not in OBJECTIVES:
            problems.append(f"objective {key} does not exist in DO-178C Annex A (docs/evidence.md 'DO-178C objectives')")
    for source in sources:
        if "DO-178C" not in source:
            continue
        for key, exists in cited_objectives(source):
            if not exists:
                problems.append(f"source {source!r} cites {key}, which does not exist in DO-178C Annex A")
            elif key not in named:
                problems.append(f"source {source!r} cites {key} ({OBJECTIVES[key].title}), not named in `objectives`")
        for key, words in described(source):
            best = _best_described(key, words) if key in OBJECTIVES else []
            if best and key not in best:
                problems.append(f"source {source!r} cites {key} ({OBJECTIVES[key].title}) but its words describe "
                                f"{' or '.join(f'{k} ({OBJECTIVES[k].title})' for k in best)}")
        for key in sectioned_objectives(source):
            if key not in named and not any(k in named for k in _same_section(key)):
                problems.append(f"source {source!r} cites the section of {key} ({OBJECTIVES[key].title}), "
                                "not named in `objectives`")
    return problems


def _same_section(key: str) -> list[str]:
    """The objectives sharing `key`'s section references (A-7.5, 6 and 7 are all 6.4.4.c): citing
    the section names one of them, not all."""
    sections = set(OBJECTIVES[key].sections)
    return [k for k, o in OBJECTIVES.items() if sections & set(o.sections)]

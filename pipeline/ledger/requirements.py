"""The requirement set: loading, schema checks, the parent graph and fingerprints.

Requirements live in `requirements/*.yaml`, one file per level (SYS, HLR, LLR). Every problem
in the set is reported at once as a `Finding` with a stable `EVID-Ennn` code, the file, the
line and the YAML key path, so that a reviewer can fix them in one pass.

A requirement's *fingerprint* is the SHA-256 of its normative content (ID, title,
whitespace-normalised text, verification methods, parameters, and `verified_on` when it is
not the default).

`verified_on` says where a requirement must be verified: `host` (the default: any machine
running the pipeline; what a static analysis or a bit-exact host run establishes) or
`target` (a property of the target platform: measured execution time, on-device GPU/DLA
results). A target requirement verified only on a host or by emulation is reported as open
for the target (docs/evidence.md). Rationale, sources and parent
links are informative and do not change it. Links record the fingerprint they were reviewed
against (see `baseline.py`); a different current fingerprint makes the link stale.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

from pipeline.diagnostics import Finding, Location, PipelineError, Severity, Span, sorted_findings
from pipeline.ledger.objectives import E_OBJECTIVE, citation_problems
from pipeline.ledger.yamlsource import Located, join_path, load_located
from pipeline.project.layout import REQUIREMENTS_DIR, requirement_files  # noqa: F401 (re-exported)

SCHEMA_VERSION = 1

LEVELS: tuple[str, ...] = ("SYS", "HLR", "LLR")
VERIFICATION_METHODS: tuple[str, ...] = ("test", "analysis", "review")
ID_PATTERNS: dict[str, re.Pattern[str]] = {
    "SYS": re.compile(r"^SYS-\d{3}$"),
    "HLR": re.compile(r"^HLR-[A-Z]{3}-\d{3}$"),
    "LLR": re.compile(r"^LLR-[A-Z]{3}-\d{3}$"),
}
# Which levels a requirement of each level may name as parent.
ALLOWED_PARENT_LEVELS: dict[str, tuple[str, ...]] = {"SYS": (), "HLR": ("SYS",), "LLR": ("HLR", "LLR")}

DOC_FIELDS = {"schema_version", "level", "title", "requirements"}
REQUIRED_FIELDS = ("id", "title", "text", "rationale", "verification", "source")
OPTIONAL_FIELDS = ("parents", "derived", "parameters", "verified_on", "objectives")
PLATFORMS: tuple[str, ...] = ("host", "target")

E_SCHEMA = "EVID-E002"
E_DUPLICATE_ID = "EVID-E003"
E_BAD_ID = "EVID-E004"
E_DANGLING_PARENT = "EVID-E005"
E_CYCLE = "EVID-E006"
E_PARENT_LEVEL = "EVID-E007"
E_NO_FILES = "EVID-E009"


@dataclass(frozen=True)
class Requirement:
    """One requirement as written, plus where it was written."""

    id: str
    level: str
    title: str
    text: str
    rationale: str
    verification: tuple[str, ...]
    source: tuple[str, ...]
    parents: tuple[str, ...] = ()
    derived: bool = False
    parameters: Mapping[str, Any] = field(default_factory=dict)
    span: Span = Span("", 0, 0)
    verified_on: str = "host"
    objectives: tuple[str, ...] = ()     # the DO-178C Annex A objectives it serves ("A-5.4"); informative

    def normative(self) -> dict[str, Any]:
        """The content whose change invalidates a link (see module docstring)."""
        content = {
            "id": self.id,
            "title": " ".join(self.title.split()),
            "text": " ".join(self.text.split()),
            "verification": sorted(self.verification),
            "parameters": dict(self.parameters),
        }
        if self.verified_on != "host":
            content["verified_on"] = self.verified_on
        return content

    @property
    def fingerprint(self) -> str:
        canonical = json.dumps(self.normative(), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "level": self.level,
            "title": self.title,
            "text": " ".join(self.text.split()),
            "rationale": " ".join(self.rationale.split()),
            "verification": list(self.verification),
            "source": list(self.source),
            "parents": list(self.parents),
            "derived": self.derived,
            "parameters": dict(self.parameters),
            "verified_on": self.verified_on,
            "objectives": list(self.objectives),
            "fingerprint": self.fingerprint,
            "location": f"{self.span.file}:{self.span.line}",
        }


@dataclass
class RequirementSet:
    """The loaded requirements by ID, in file order, and the files they came from."""

    requirements: dict[str, Requirement] = field(default_factory=dict)
    files: tuple[str, ...] = ()

    def __contains__(self, req_id: object) -> bool:
        return req_id in self.requirements

    def __getitem__(self, req_id: str) -> Requirement:
        return self.requirements[req_id]

    def __iter__(self) -> Iterator[Requirement]:
        return iter(self.requirements.values())

    def __len__(self) -> int:
        return len(self.requirements)

    def ids(self) -> list[str]:
        return list(self.requirements)

    def children(self, req_id: str) -> list[str]:
        return [r.id for r in self if req_id in r.parents]

    def fingerprints(self) -> dict[str, str]:
        return {r.id: r.fingerprint for r in self}

    def parameter(self, req_id: str, name: str) -> Any:
        """A normative parameter (e.g. a tolerance) that a check should read, not copy."""
        try:
            return self.requirements[req_id].parameters[name]
        except KeyError:
            raise KeyError(f"requirement {req_id} has no parameter {name!r}") from None


class RequirementsInvalid(PipelineError):
    """The requirement set has errors; `findings` lists all of them."""

    def __init__(self, findings: list[Finding]) -> None:
        self.findings = findings
        first = findings[0]
        more = f" (and {len(findings) - 1} more)" if len(findings) > 1 else ""
        super().__init__(first.code, first.message + more, Location.of_span(first.span))


def _error(code: str, message: str, span: Span) -> Finding:
    return Finding(code, Severity.ERROR, message, span)


def _string_list(value: Any, key_path: str, doc: Located, findings: list[Finding]) -> tuple[str, ...] | None:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        findings.append(_error(E_SCHEMA, f"{key_path}: expected a list of non-empty strings", doc.span(key_path)))
        return None
    return tuple(v.strip() for v in value)


def _parse_requirement(
    item: Any, key_path: str, level: str, doc: Located, findings: list[Finding]
) -> Requirement | None:
    if not isinstance(item, dict):
        findings.append(_error(E_SCHEMA, f"{key_path}: a requirement must be a mapping", doc.span(key_path)))
        return None
    ok = True
    for key in sorted(set(item) - set(REQUIRED_FIELDS) - set(OPTIONAL_FIELDS), key=str):
        path = join_path(key_path, str(key))
        allowed = ", ".join(REQUIRED_FIELDS + OPTIONAL_FIELDS)
        findings.append(_error(E_SCHEMA, f"{path}: unknown field {key!r} (allowed: {allowed})", doc.span(path)))
        ok = False
    for key in REQUIRED_FIELDS:
        if key not in item:
            findings.append(_error(E_SCHEMA, f"{key_path}: missing required field {key!r}", doc.span(key_path)))
            return None
    strings_ok = True
    for key in ("id", "title", "text", "rationale"):
        if not isinstance(item[key], str) or not item[key].strip():
            path = join_path(key_path, key)
            findings.append(_error(E_SCHEMA, f"{path}: expected a non-empty string", doc.span(path)))
            strings_ok = False
    if not strings_ok:
        return None
    req_id = item["id"]   # never stripped: 'HLR-EXP-001 ' is another string than the ID links name
    id_path = join_path(key_path, "id")
    if not ID_PATTERNS[level].fullmatch(req_id):
        other = [lv for lv, pattern in ID_PATTERNS.items() if pattern.fullmatch(req_id)]
        if req_id != req_id.strip() and ID_PATTERNS[level].fullmatch(req_id.strip()):
            hint = " (it has white space around it; remove it)"
        else:
            hint = f" (it is a {other[0]} ID; move it to the {other[0]} file)" if other else ""
        findings.append(
            _error(E_BAD_ID, f"{id_path}: {req_id!r} is not a valid {level} ID like {_example(level)}{hint}", doc.span(id_path))
        )
        ok = False
    verification = _string_list(item["verification"], join_path(key_path, "verification"), doc, findings)
    if verification is not None:
        for index, method in enumerate(verification):
            if method not in VERIFICATION_METHODS:
                path = join_path(join_path(key_path, "verification"), index)
                findings.append(
                    _error(E_SCHEMA, f"{path}: unknown verification method {method!r} (allowed: {', '.join(VERIFICATION_METHODS)})", doc.span(path))
                )
                ok = False
    source = _string_list(item["source"], join_path(key_path, "source"), doc, findings)
    parents = _string_list(item.get("parents", []), join_path(key_path, "parents"), doc, findings) if item.get("parents", []) != [] else ()
    raw_parents = item.get("parents", [])
    for index, parent in enumerate(raw_parents if isinstance(raw_parents, list) else [raw_parents]):
        if isinstance(parent, str) and parent != parent.strip():   # an ID, compared as written
            path = join_path(join_path(key_path, "parents"), index)
            findings.append(_error(E_BAD_ID, f"{path}: {parent!r} has white space around it; remove it", doc.span(path)))
            ok = False
    derived = item.get("derived", False)
    if not isinstance(derived, bool):
        path = join_path(key_path, "derived")
        findings.append(_error(E_SCHEMA, f"{path}: expected true or false", doc.span(path)))
        ok = False
    parameters = item.get("parameters", {})
    if not isinstance(parameters, dict) or not all(
        isinstance(k, str) and isinstance(v, (int, float, str, bool)) for k, v in parameters.items()
    ):
        path = join_path(key_path, "parameters")
        findings.append(_error(E_SCHEMA, f"{path}: expected a mapping of names to numbers or strings", doc.span(path)))
        ok = False
    verified_on = item.get("verified_on", "host")
    if verified_on not in PLATFORMS:
        path = join_path(key_path, "verified_on")
        findings.append(_error(E_SCHEMA, f"{path}: expected one of {', '.join(PLATFORMS)}, found {verified_on!r}",
                               doc.span(path)))
        ok = False
    objectives: tuple[str, ...] | None = ()
    if "objectives" in item:
        objectives = _string_list(item["objectives"], join_path(key_path, "objectives"), doc, findings)
    if objectives is not None and source is not None:
        path = join_path(key_path, "objectives" if "objectives" in item else "source")
        for problem in citation_problems(objectives, source):
            findings.append(_error(E_OBJECTIVE, f"{req_id}: {problem}", doc.span(path)))
            ok = False
    if not ok or verification is None or source is None or parents is None or objectives is None:
        return None
    if not verification:
        path = join_path(key_path, "verification")
        findings.append(_error(E_SCHEMA, f"{path}: at least one verification method is required", doc.span(path)))
        return None
    return Requirement(
        id=req_id,
        level=level,
        title=" ".join(item["title"].split()),
        text=item["text"].strip(),
        rationale=item["rationale"].strip(),
        verification=verification,
        source=source,
        parents=parents,
        derived=derived,
        parameters=dict(sorted(parameters.items())),
        span=doc.span(id_path),
        verified_on=verified_on,
        objectives=objectives,
    )


def _example(level: str) -> str:
    return {"SYS": "SYS-001", "HLR": "HLR-FMT-001", "LLR": "LLR-FMT-001"}[level]


def _parse_document(doc: Located, findings: list[Finding]) -> list[Requirement]:
    data = doc.value
    if not isinstance(data, dict):
        findings.append(_error(E_SCHEMA, "the file must be a mapping with schema_version, level, title, requirements", doc.span("")))
        return []
    for key in sorted(set(data) - DOC_FIELDS, key=str):
        findings.append(_error(E_SCHEMA, f"{key}: unknown top-level field (allowed: {', '.join(sorted(DOC_FIELDS))})", doc.span(str(key))))
    if data.get("schema_version") != SCHEMA_VERSION:
        findings.append(
            _error(E_SCHEMA, f"schema_version: expected {SCHEMA_VERSION}, found {data.get('schema_version')!r}", doc.span("schema_version"))
        )
        return []
    level = data.get("level")
    if level not in LEVELS:
        findings.append(_error(E_SCHEMA, f"level: expected one of {', '.join(LEVELS)}, found {level!r}", doc.span("level")))
        return []
    if not isinstance(data.get("title"), str) or not data["title"].strip():
        findings.append(_error(E_SCHEMA, "title: expected a non-empty string", doc.span("title")))
    items = data.get("requirements")
    if not isinstance(items, list) or not items:
        findings.append(_error(E_SCHEMA, "requirements: expected a non-empty list", doc.span("requirements")))
        return []
    parsed = []
    for index, item in enumerate(items):
        requirement = _parse_requirement(item, join_path("requirements", index), level, doc, findings)
        if requirement is not None:
            parsed.append(requirement)
    return parsed


def _check_links(requirements: dict[str, Requirement], findings: list[Finding]) -> None:
    for req in requirements.values():
        if not req.parents and req.level != "SYS" and not req.derived:
            findings.append(
                _error(E_PARENT_LEVEL, f"{req.id}: an {req.level} needs parents, or `derived: true` with a rationale saying why", req.span)
            )
        if req.level == "SYS" and req.derived:
            findings.append(_error(E_SCHEMA, f"{req.id}: a system requirement cannot be derived", req.span))
        for parent in req.parents:
            if parent == req.id:
                findings.append(_error(E_CYCLE, f"{req.id}: lists itself as parent", req.span))
            elif parent not in requirements:
                findings.append(_error(E_DANGLING_PARENT, f"{req.id}: parent {parent} does not exist", req.span))
            elif requirements[parent].level not in ALLOWED_PARENT_LEVELS[req.level]:
                allowed = " or ".join(ALLOWED_PARENT_LEVELS[req.level]) or "no level"
                findings.append(
                    _error(E_PARENT_LEVEL, f"{req.id}: parent {parent} is {requirements[parent].level}; an {req.level} may trace to {allowed}", req.span)
                )
    for cycle in _cycles(requirements):
        first = requirements[cycle[0]]
        findings.append(_error(E_CYCLE, f"parent cycle: {' -> '.join(cycle + [cycle[0]])}", first.span))


def _cycles(requirements: dict[str, Requirement]) -> list[list[str]]:
    """Every elementary cycle reached by depth-first search over parent links, once each."""
    white, grey, black = 0, 1, 2
    colour = {rid: white for rid in requirements}
    stack: list[str] = []
    found: list[list[str]] = []
    seen: set[frozenset[str]] = set()

    def visit(rid: str) -> None:
        colour[rid] = grey
        stack.append(rid)
        for parent in requirements[rid].parents:
            if parent not in requirements or parent == rid:
                continue
            if colour[parent] == grey:
                cycle = stack[stack.index(parent):]
                key = frozenset(cycle)
                if key not in seen:
                    seen.add(key)
                    start = cycle.index(min(cycle))
                    found.append(cycle[start:] + cycle[:start])
            elif colour[parent] == white:
                visit(parent)
        stack.pop()
        colour[rid] = black

    for rid in sorted(requirements):
        if colour[rid] == white:
            visit(rid)
    return found


def read_requirements(root: str | Path = ".", files: Iterable[str | Path] | None = None) -> tuple[RequirementSet, list[Finding]]:
    """Load every requirement file and return the set with *all* problems found.

    The set holds the requirements that parsed; callers that need a valid set use
    `load_requirements`.
    """
    paths = [Path(p) for p in files] if files is not None else requirement_files(root)
    findings: list[Finding] = []
    if not paths:
        findings.append(_error(E_NO_FILES, f"no requirement files (*.yaml) in {Path(root) / REQUIREMENTS_DIR}", Span(REQUIREMENTS_DIR, 1, 1)))
        return RequirementSet(), findings
    requirements: dict[str, Requirement] = {}
    names = []
    for path in paths:
        try:
            display = Path(path).resolve().relative_to(Path(root).resolve()).as_posix()
        except ValueError:
            display = str(path)
        names.append(display)
        doc, doc_findings = load_located(path, display)
        findings.extend(doc_findings)
        if doc is None:
            continue
        for req in _parse_document(doc, findings):
            if req.id in requirements:
                first = requirements[req.id].span
                findings.append(_error(E_DUPLICATE_ID, f"{req.id}: duplicate requirement ID (first defined at {first})", req.span))
                continue
            requirements[req.id] = req
    _check_links(requirements, findings)
    return RequirementSet(requirements, tuple(names)), sorted_findings(findings)


def load_requirements(root: str | Path = ".", files: Iterable[str | Path] | None = None) -> RequirementSet:
    """The requirement set, or `RequirementsInvalid` carrying every error found."""
    requirements, findings = read_requirements(root, files)
    errors = [f for f in findings if f.is_error]
    if errors:
        raise RequirementsInvalid(errors)
    return requirements

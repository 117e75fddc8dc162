"""Code trace data: which generated code lines implement which NNEF instruction.

Code generation writes one `trace.json` per item anywhere under artifacts/<model>/codegen/
(shape in docs/evidence.md, schema pipeline/schemas/codetrace-1.schema.json). We read them
all, validate them against the schema, and check that every
entry points at an existing NNEF line and an existing range of generated code lines, and
that every infrastructure part (`parts`: the run function, the buffer plan, the runtime...)
names existing code lines and requirements that exist.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Container

from pipeline.diagnostics import Finding, Severity, Span
from pipeline.ledger.hashing import relative_posix, sha256_file
from pipeline.project.layout import step_dir
from pipeline.files.schema import validate

SCHEMA_VERSION = 1
TRACE_FILE = "trace.json"
TARGETS = ("c", "cuda", "nvdla")

E_TRACE = "EVID-E040"


@dataclass(frozen=True)
class TraceEntry:
    """One NNEF instruction and the code lines [first, last] implementing it."""

    nnef_line: int
    instruction: str
    code_file: str
    first_line: int
    last_line: int


@dataclass(frozen=True)
class TracePart:
    """Lines [first, last] of generated code that are a named part of the infrastructure, and the
    requirements it serves (pipeline/codegen/shared/parts.py)."""

    name: str
    requirements: tuple[str, ...]
    code_file: str
    first_line: int
    last_line: int


@dataclass
class CodeTrace:
    """One item's trace.json."""

    model: str
    path: str
    item: str
    target: str
    nnef_file: str
    nnef_sha256: str
    entries: list[TraceEntry] = field(default_factory=list)
    parts: list[TracePart] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "path": self.path,
            "item": self.item,
            "target": self.target,
            "nnef_file": self.nnef_file,
            "nnef_sha256": self.nnef_sha256,
            "entries": [
                {
                    "nnef_line": e.nnef_line,
                    "instruction": e.instruction,
                    "code_file": e.code_file,
                    "code_lines": [e.first_line, e.last_line],
                }
                for e in self.entries
            ],
            "parts": [{"part": p.name, "requirements": list(p.requirements), "code_file": p.code_file,
                       "code_lines": [p.first_line, p.last_line]} for p in self.parts],
        }


def _line_count(path: Path, cache: dict[Path, int]) -> int:
    if path not in cache:
        with open(path, "rb") as handle:
            cache[path] = sum(1 for _ in handle)
    return cache[path]


def _parse(model: str, rel: str, data: Any) -> tuple[CodeTrace | None, list[str]]:
    """The trace of a document that follows codetrace-1.schema.json, else None and every problem."""
    problems = validate(data, "codetrace-1", E_TRACE)
    if problems:
        return None, [f"{p.path}: {p.message}" if p.path else p.message for p in problems]
    trace = CodeTrace(model, rel, data["item"], data["target"], data["nnef_file"], data["nnef_sha256"])
    trace.entries = [TraceEntry(e["nnef_line"], e.get("instruction", ""), e["code_file"], *e["code_lines"])
                     for e in data["entries"]]
    trace.parts = [TracePart(p["part"], tuple(p["requirements"]), p["code_file"], *p["code_lines"])
                   for p in data.get("parts", [])]
    return trace, []


def read_code_traces(model: str, root: str | Path = ".", requirements: Container[str] | None = None
                     ) -> tuple[list[CodeTrace], list[Finding]]:
    """Every codegen trace.json of `model`, validated against the files it names (and the requirement
    IDs its parts name against `requirements`, when given)."""
    base = Path(root)
    folder = step_dir(model, "codegen", base)
    traces: list[CodeTrace] = []
    findings: list[Finding] = []
    if not folder.is_dir():
        return traces, findings
    lines_cache: dict[Path, int] = {}
    for path in sorted(folder.rglob(TRACE_FILE)):
        rel = relative_posix(path, base)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            findings.append(Finding(E_TRACE, Severity.ERROR, f"{model}: unreadable code trace: {exc}", Span(rel, 1, 1)))
            continue
        trace, problems = _parse(model, rel, data)
        findings.extend(Finding(E_TRACE, Severity.ERROR, f"{model}: {p}", Span(rel, 1, 1)) for p in problems)
        if trace is None:
            continue
        traces.append(trace)
        nnef = base / trace.nnef_file
        if not nnef.is_file():
            findings.append(Finding(E_TRACE, Severity.ERROR, f"{model}: NNEF file {trace.nnef_file} does not exist", Span(rel, 1, 1)))
            continue
        if sha256_file(nnef) != trace.nnef_sha256:
            findings.append(
                Finding(E_TRACE, Severity.ERROR, f"{model}: {trace.nnef_file} changed since the code was generated (sha256 differs)", Span(rel, 1, 1))
            )
        nnef_lines = _line_count(nnef, lines_cache)
        for index, entry in enumerate(trace.entries):
            where = f"{model}: entries[{index}]"
            if not 1 <= entry.nnef_line <= nnef_lines:
                findings.append(
                    Finding(E_TRACE, Severity.ERROR, f"{where}: NNEF line {entry.nnef_line} outside {trace.nnef_file} (1..{nnef_lines})", Span(rel, 1, 1))
                )
            code = base / entry.code_file
            if not code.is_file():
                findings.append(Finding(E_TRACE, Severity.ERROR, f"{where}: code file {entry.code_file} does not exist", Span(rel, 1, 1)))
                continue
            count = _line_count(code, lines_cache)
            if not 1 <= entry.first_line <= entry.last_line <= count:
                findings.append(
                    Finding(
                        E_TRACE,
                        Severity.ERROR,
                        f"{where}: code lines {entry.first_line}-{entry.last_line} outside {entry.code_file} (1..{count})",
                        Span(rel, 1, 1),
                    )
                )
        for index, part in enumerate(trace.parts):
            where = f"{model}: parts[{index}] ({part.name})"
            unknown = [r for r in part.requirements if requirements is not None and r not in requirements]
            if unknown:
                findings.append(Finding(E_TRACE, Severity.ERROR, f"{where}: names requirements that do not exist: "
                                        f"{', '.join(unknown)}", Span(rel, 1, 1)))
            code = base / part.code_file
            if not code.is_file():
                findings.append(Finding(E_TRACE, Severity.ERROR, f"{where}: code file {part.code_file} does not exist",
                                        Span(rel, 1, 1)))
                continue
            count = _line_count(code, lines_cache)
            if not 1 <= part.first_line <= part.last_line <= count:
                findings.append(Finding(E_TRACE, Severity.ERROR, f"{where}: code lines {part.first_line}-"
                                        f"{part.last_line} outside {part.code_file} (1..{count})", Span(rel, 1, 1)))
    return traces, findings

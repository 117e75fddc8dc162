"""Findings with a stable code, a severity and a source location.

Every step reports problems the same way so that the CLI can print them like a compiler
(`file:line:col: error CODE: message`, the source line, a caret) and machines can read
them as JSON. A finding is data, never an exception: checkers return *all* of them.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Iterable, NamedTuple


class Severity(str, enum.Enum):
    """Severity of a finding; `error` makes a check fail."""

    ERROR = "error"
    WARNING = "warning"
    NOTE = "note"


class Span(NamedTuple):
    """A region of a source file: 1-based line and column; `end_column` is one past the end.

    A named tuple rather than a dataclass: parsers create one per AST node, and tuple
    construction is three times cheaper.
    """

    file: str
    line: int
    column: int
    end_line: int = 0
    end_column: int = 0

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"

    def to_json(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "line": self.line,
            "column": self.column,
            "end_line": self.end_line or self.line,
            "end_column": self.end_column or self.column,
        }


@dataclass(frozen=True)
class Finding:
    """One diagnosed problem: `code` is stable across releases (documented in docs/)."""

    code: str
    severity: Severity
    message: str
    span: Span | None = None
    related: tuple[tuple[str, Span], ...] = field(default=())

    @property
    def is_error(self) -> bool:
        return self.severity is Severity.ERROR

    def sort_key(self) -> tuple[Any, ...]:
        span = self.span or Span("", 0, 0)
        return (span.file, span.line, span.column, self.code, self.message)

    def to_json(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "severity": self.severity.value,
            "message": self.message,
            "span": self.span.to_json() if self.span else None,
            "related": [{"message": m, "span": s.to_json()} for m, s in self.related],
        }


def sorted_findings(findings: Iterable[Finding]) -> list[Finding]:
    """Findings in file/line/column order, duplicates removed (deterministic output)."""
    unique = {(f.code, f.severity, f.message, f.span, f.related): f for f in findings}
    return sorted(unique.values(), key=Finding.sort_key)


def has_errors(findings: Iterable[Finding]) -> bool:
    return any(f.is_error for f in findings)


class PipelineError(Exception):
    """An input the pipeline cannot process; carries a stable code and a location.

    Raised for bad input that stops a step (unsupported ONNX operator, unreadable tensor
    file, malformed deployment spec). `location` is free text: file:line:col, a YAML key
    path or an ONNX node name.
    """

    def __init__(self, code: str, message: str, location: str = "") -> None:
        self.code = code
        self.message = message
        self.location = location
        prefix = f"{location}: " if location else ""
        super().__init__(f"{prefix}{code}: {message}")

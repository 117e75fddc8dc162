"""Findings with a stable code, a severity and a source location.

Every step reports problems the same way so that the CLI can print them like a compiler
(`file:line:col: error CODE: message`, the source line, a caret) and machines can read
them as JSON. A finding is data, never an exception: checkers return *all* of them.
"""

from __future__ import annotations

import enum
import os
import re
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
    fix: str = ""          # what to do about it, in one line ("" when the message says it)

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
            **({"fix": self.fix} if self.fix else {}),
        }


def sorted_findings(findings: Iterable[Finding]) -> list[Finding]:
    """Findings in file/line/column order, duplicates removed (deterministic output)."""
    unique = {(f.code, f.severity, f.message, f.span, f.related, f.fix): f for f in findings}
    return sorted(unique.values(), key=Finding.sort_key)


def has_errors(findings: Iterable[Finding]) -> bool:
    return any(f.is_error for f in findings)


@dataclass(frozen=True)
class Location:
    """Where an input problem is: a position in a file, a key path in a document, a model element.

    Every coded error carries one, so that the command line draws the same
    `file:line:col: ... ` head and caret for a deployment spec, a plan or an NNEF file
    (`pipeline.terminal.render_error`). Any field may be empty: a missing tensor file has
    only `file`; an ONNX node has only `element`; a YAML key has all of file, line, column
    and `key_path`.
    """

    file: str = ""
    line: int = 0
    column: int = 0
    end_line: int = 0
    end_column: int = 0
    key_path: str = ""    # dotted path inside a YAML/JSON document: deployments.single.sync
    element: str = ""     # a named element of a model: "node 'conv1'", "graph output 'y'"

    @classmethod
    def of_span(cls, span: Span | None, key_path: str = "", element: str = "") -> "Location":
        """The location of a source span (an NNEF token, a YAML node); empty without one."""
        if span is None:
            return cls(key_path=key_path, element=element)
        return cls(span.file, span.line, span.column, span.end_line, span.end_column, key_path, element)

    @classmethod
    def in_file(cls, path: Any, key_path: str = "") -> "Location":
        """A whole file (or a key of it whose line is unknown)."""
        return cls(file=str(path), key_path=key_path)

    @property
    def span(self) -> Span | None:
        """The source span, when a line is known (for the caret)."""
        if not self.file or self.line <= 0:
            return None
        return Span(self.file, self.line, self.column, self.end_line, self.end_column)

    def __bool__(self) -> bool:
        return bool(self.file or self.key_path or self.element)

    def __str__(self) -> str:
        position = self.file + (f":{self.line}:{self.column}" if self.file and self.line > 0 else "")
        return ": ".join(part for part in (position, self.key_path, self.element) if part)

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "column": self.column,
                "end_line": self.end_line or self.line, "end_column": self.end_column or self.column,
                "key_path": self.key_path, "element": self.element}


NOWHERE = Location()


class PipelineError(Exception):
    """An input the pipeline cannot process; carries a stable code and a structured location.

    Raised for bad input that stops a step (unsupported ONNX operator, unreadable tensor
    file, malformed deployment spec). `location` says where (`Location`); the command line
    renders it with `pipeline.terminal.render_error`.
    """

    def __init__(self, code: str, message: str, location: Location = NOWHERE) -> None:
        if not isinstance(location, Location):
            raise TypeError(f"{code}: location must be a Location, not {type(location).__name__}")
        self.code = code
        self.message = message
        self.location = location
        prefix = f"{location}: " if location else ""
        super().__init__(f"{prefix}{code}: {message}")

    def all_problems(self) -> list["PipelineError"]:
        """Every problem this error stands for: itself; a document validator's error lists them all."""
        return [self]


# What never reaches a terminal raw (`printable`): C0 controls but tab and newline (ESC starts the
# sequences that move the cursor, set the title or hide text; CR overwrites a line), DEL, the C1
# controls (U+0080-U+009F: CSI is one), the line and paragraph separators, and the bidirectional
# overrides and isolates that make a line read differently from its bytes (CVE-2021-42574).
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
                       "\ufeff\ufff9-\ufffb]")
_CONTROLS_AND_NEWLINES = re.compile(_CONTROLS.pattern[:-1] + "\n]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: Any, newlines: bool = True) -> str:
    """`text` as it may reach a terminal: every control character written as an escape (`\\x1b`,
    `\\u202e`), so a name, a message or a line quoted from a file can neither drive the terminal nor
    hide what it says. Tabs stay, and newlines unless `newlines` is False (a name on one line).
    The one escaping every command's output goes through (pipeline/terminal.py `say`)."""
    value = text if isinstance(text, str) else str(text)
    return (_CONTROLS if newlines else _CONTROLS_AND_NEWLINES).sub(_escape, value)


# Errors no step anticipated (docs/conventions.md, "Errors"): every command and doit action
# reports them with a code, never with a traceback unless asked.
INTERNAL_ERROR = "PIPE-E900"  # an exception no step anticipated: a bug, reported as such
IO_ERROR = "PIPE-E901"  # the system refused a read or write (disk full, read-only, permission, quota)
DEBUG_ENV = "NNCERT_DEBUG"  # set to 1 (or pass --debug) to see the traceback of an internal error


def debug_requested() -> bool:
    """Whether tracebacks are wanted: NNCERT_DEBUG set to anything but "", 0, false, no, off."""
    return os.environ.get(DEBUG_ENV, "").strip().lower() not in ("", "0", "false", "no", "off")


def _first_line(text: str) -> str:
    lines = [line for line in str(text).strip().splitlines() if line.strip()]
    return lines[0].strip()[:500] if lines else ""


def describe_unexpected(exc: BaseException) -> str:
    """One coded line for an exception that is not a PipelineError.

    An OSError (ENOSPC, EROFS, EACCES, EDQUOT, ...) is the system's answer, not a bug:
    PIPE-E901 with the path. Anything else is PIPE-E900 `internal error` with the type and
    the first line of its message.
    """
    return printable(_described(exc))


def _described(exc: BaseException) -> str:
    if isinstance(exc, PipelineError):
        return "\n".join(f"{p.location}: error {p.code}: {p.message}" if p.location else f"error {p.code}: {p.message}"
                         for p in exc.all_problems())
    if isinstance(exc, OSError):
        import errno

        name = errno.errorcode.get(exc.errno, "") if exc.errno is not None else ""
        where = f"{exc.filename}: " if exc.filename else ""
        reason = exc.strerror or _first_line(str(exc)) or type(exc).__name__
        return f"{where}error {IO_ERROR}: {reason}" + (f" ({name})" if name else "")
    message = _first_line(str(exc))
    return (f"error {INTERNAL_ERROR}: internal error: {type(exc).__name__}" + (f": {message}" if message else "")
            + f" (a bug in the pipeline; set {DEBUG_ENV}=1 or pass --debug for the traceback)")

"""A line-numbered text builder: generated code that knows where each construct landed.

The trace (trace.json) maps NNEF instructions to [first, last] line ranges of the file it
is written to, so the emitter records the line numbers while it writes, not afterwards.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator


class CodeWriter:
    """Lines of C with indentation; `line_number` is 1-based and counts what is written."""

    def __init__(self, indent: str = "    ") -> None:
        self._lines: list[str] = []
        self._indent = indent
        self._level = 0

    @property
    def line_number(self) -> int:
        """The number the next written line will have."""
        return len(self._lines) + 1

    def line(self, text: str = "") -> int:
        """Write one line (indented unless empty); returns its number."""
        for part in text.split("\n"):
            self._lines.append(f"{self._indent * self._level}{part}" if part else "")
        return len(self._lines)

    def lines(self, texts: list[str]) -> None:
        for text in texts:
            self.line(text)

    def comment(self, text: str) -> None:
        """A block comment; `*/` inside the text is defused."""
        body = text.replace("*/", "* /").splitlines() or [""]
        if len(body) == 1:
            self.line(f"/* {body[0]} */")
            return
        self.line(f"/* {body[0]}")
        for part in body[1:]:
            self.line(f" * {part}" if part else " *")
        self.line(" */")

    @contextmanager
    def block(self, header: str, closer: str = "}") -> Iterator[None]:
        """`header {` ... `}` with the body indented one level."""
        self.line(f"{header} {{" if header else "{")
        self._level += 1
        try:
            yield
        finally:
            self._level -= 1
            self.line(closer)

    def indent(self) -> None:
        self._level += 1

    def dedent(self) -> None:
        self._level -= 1

    def text(self) -> str:
        return "\n".join(self._lines) + "\n"

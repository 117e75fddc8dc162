"""Atomic file writes: temp file in the same directory, fsync, then rename.

An interrupted run must never leave a half-written artifact that doit would take as
up to date, so every artifact the pipeline writes goes through here. A write the system
refuses (disk full, read-only file system, permission, quota: any OSError) leaves the
previous file untouched, removes the temp file and raises `WriteError` (PIPE-E901, a
PipelineError naming the path, still an OSError for callers that catch those).
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, Iterable

from pipeline.diagnostics import Location, PipelineError

WRITE_ERROR = "PIPE-E901"


class WriteError(PipelineError, OSError):
    """A file the system would not let us write; nothing half-written is left behind."""

    def __init__(self, path: str | os.PathLike[str], cause: OSError) -> None:
        reason = cause.strerror or str(cause) or type(cause).__name__
        name = errno_name(cause.errno)
        super().__init__(WRITE_ERROR, f"cannot write {os.fspath(path)}: {reason}" + (f" ({name})" if name else ""),
                         Location.in_file(os.fspath(path)))
        self.errno = cause.errno
        self.strerror = cause.strerror
        self.filename = os.fspath(path)

    def __str__(self) -> str:
        return f"{self.location}: {self.code}: {self.message}"


def errno_name(number: int | None) -> str:
    """`ENOSPC` for 28, "" when unknown."""
    import errno

    return errno.errorcode.get(number, "") if number is not None else ""


def write_bytes(path: str | os.PathLike[str], data: bytes | Iterable[bytes]) -> Path:
    """Write `data` (or its pieces in turn: a document too large to hold at once) to `path`
    atomically, creating parent directories."""
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except WriteError:
        raise
    except OSError as exc:
        raise WriteError(target, exc) from None
    try:
        with os.fdopen(fd, "wb") as handle:
            if isinstance(data, bytes):
                handle.write(data)
            else:
                for piece in data:
                    handle.write(piece)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except BaseException as exc:
        try:
            if os.path.exists(tmp):
                os.unlink(tmp)
        except OSError:
            pass  # the original error says more than a failed clean-up
        if isinstance(exc, OSError) and not isinstance(exc, WriteError):
            raise WriteError(target, exc) from None
        raise
    return target


def write_text(path: str | os.PathLike[str], text: str) -> Path:
    """Write UTF-8 text atomically with Unix newlines."""
    return write_bytes(path, text.encode("utf-8"))


def write_text_pieces(path: str | os.PathLike[str], pieces: Iterable[str]) -> Path:
    """Write UTF-8 text given in pieces atomically: `write_text("".join(pieces))` without the whole text."""
    return write_bytes(path, (piece.encode("utf-8") for piece in pieces))


def canonical_json(value: Any) -> str:
    """The one JSON rendering used for hashed artifacts: sorted keys, 2-space indent, final newline."""
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"


def write_json(path: str | os.PathLike[str], value: Any) -> Path:
    """Write `value` as canonical JSON atomically."""
    return write_text(path, canonical_json(value))

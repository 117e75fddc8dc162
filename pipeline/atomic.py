"""Atomic file writes: temp file in the same directory, fsync, then rename.

An interrupted run must never leave a half-written artifact that doit would take as
up to date, so every artifact the pipeline writes goes through here.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any


def write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write `data` to `path` atomically, creating parent directories."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return target


def write_text(path: str | os.PathLike[str], text: str) -> Path:
    """Write UTF-8 text atomically with Unix newlines."""
    return write_bytes(path, text.encode("utf-8"))


def canonical_json(value: Any) -> str:
    """The one JSON rendering used for hashed artifacts: sorted keys, 2-space indent, final newline."""
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"


def write_json(path: str | os.PathLike[str], value: Any) -> Path:
    """Write `value` as canonical JSON atomically."""
    return write_text(path, canonical_json(value))

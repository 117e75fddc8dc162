"""SHA-256 of files and bytes, computed by us.

doit's database is not evidence (MD5 of inputs only, skipped while the modification time is
unchanged), so every digest in a record, a manifest or the trace matrix comes from here.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Iterator

CHUNK = 1 << 20


@dataclass(frozen=True, order=True)
class FileDigest:
    """A file identified by its project-relative POSIX path, SHA-256 and size in bytes."""

    path: str
    sha256: str
    size: int

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "sha256": self.sha256, "size": self.size}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "FileDigest":
        return cls(str(data["path"]), str(data["sha256"]), int(data["size"]))


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: str | os.PathLike[str]) -> str:
    """Streamed digest: weight files may be large."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def relative_posix(path: str | os.PathLike[str], root: str | os.PathLike[str]) -> str:
    """`path` relative to `root` in POSIX form; ValueError if it lies outside `root`."""
    absolute = Path(path) if Path(path).is_absolute() else Path(root) / path
    rel = os.path.relpath(os.path.abspath(absolute), os.path.abspath(root))
    posix = PurePosixPath(Path(rel).as_posix())
    if posix.parts and posix.parts[0] == "..":
        raise ValueError(f"{path} lies outside the project root {root}")
    return str(posix)


def file_digest(path: str | os.PathLike[str], root: str | os.PathLike[str] = ".") -> FileDigest:
    """Digest of one file, named relative to `root`."""
    rel = relative_posix(path, root)
    full = Path(root) / rel
    return FileDigest(rel, sha256_file(full), full.stat().st_size)


def is_temporary(name: str) -> bool:
    """Files left by an interrupted atomic write (`.<name>.<random>.tmp`) are not artifacts."""
    return name.startswith(".") and name.endswith(".tmp")


def iter_files(directory: str | os.PathLike[str]) -> Iterator[Path]:
    """Every regular file under `directory`, sorted, skipping atomic-write temporaries."""
    base = Path(directory)
    if not base.is_dir():
        return
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames.sort()
        for name in sorted(filenames):
            if is_temporary(name):
                continue
            candidate = Path(dirpath) / name
            if candidate.is_file():
                yield candidate


def digest_tree(directory: str | os.PathLike[str], root: str | os.PathLike[str] = ".") -> list[FileDigest]:
    """Digests of every file under `directory`, sorted by path."""
    return sorted(file_digest(p, root) for p in iter_files(directory))

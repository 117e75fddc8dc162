"""Opening a file from a user-given folder: never through a link, a regular file, size-bounded.

Every reader of hostile input goes through `open_input` (or `read_input`), so that the same
three rules hold everywhere and are judged on the opened file itself (no race between a
check and the read):

- no symbolic link is followed below the folder the user named. With `base`, the path is
  walked one component at a time from `base` with `O_NOFOLLOW` (`openat`), so neither a
  linked file nor a linked sub-folder can lead out of it, and a `..` component is refused;
  without `base`, the last component is opened with `O_NOFOLLOW` (the folders above it
  are the user's own choice, e.g. a checkout's `models/` linked for a test);
- only a regular file is read: a FIFO, a device, a socket or a directory is refused
  (`O_NONBLOCK` on the open, so that a FIFO without writer cannot block);
- the file's size, from `fstat` of the open descriptor, is at most `max_bytes`, and never
  more than `max_bytes` bytes are read.

A refusal (`InputRefused`) names the file and the rule, never the file's content: a link
to /etc/passwd is "a symbolic link (not followed)", not its first bytes. Callers turn it
into their own coded error.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path, PurePosixPath
from typing import BinaryIO

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)


# What kind of refusal (callers map them onto their codes): the file is absent or cannot be opened
# (permissions), a link, not a regular file, or larger than the limit.
MISSING, UNREADABLE, LINK, SPECIAL, TOO_LARGE = "missing", "unreadable", "link", "special", "too large"


class InputRefused(Exception):
    """A file that is not read: `path` (as given), `reason` (a sentence), `kind` (MISSING, LINK, ...)."""

    def __init__(self, path: str | os.PathLike[str], reason: str, kind: str = SPECIAL, size: int = 0) -> None:
        super().__init__(f"{os.fspath(path)}: {reason}")
        self.path = os.fspath(path)
        self.reason = reason
        self.kind = kind
        self.size = size

    @property
    def missing(self) -> bool:
        return self.kind == MISSING

    @property
    def unreadable(self) -> bool:
        """Absent or not openable (as opposed to refused for what it is)."""
        return self.kind in (MISSING, UNREADABLE)


def _why(error: OSError) -> tuple[str, str]:
    """The reason for a failed open, without the file's content; (reason, kind)."""
    if error.errno == errno.ELOOP:
        return "a symbolic link (links are not followed out of the folder)", LINK
    if error.errno == errno.ENOENT:
        return "no such file", MISSING
    if error.errno == errno.ENXIO:
        return "not a regular file (a socket or a FIFO is never read)", SPECIAL
    if error.errno == errno.ENOTDIR:
        return "a component of its path is not a folder (or is a symbolic link, which is not followed)", LINK
    return f"cannot be opened: {error.strerror or error}", UNREADABLE


def _components(relative: str | os.PathLike[str]) -> list[str]:
    text = os.fspath(relative)
    parts = [p for p in PurePosixPath(Path(text).as_posix()).parts]
    if not parts or Path(text).is_absolute() or any(p in ("", ".", "..") for p in parts):
        raise ValueError(f"{text!r} is not a path inside the folder (absolute, empty or with '..')")
    return parts


def _open_below(base: str | os.PathLike[str], relative: str | os.PathLike[str], shown: str) -> int:
    """`base/relative` opened for reading, no component below `base` a link; a descriptor."""
    try:
        parts = _components(relative)
    except ValueError as error:
        raise InputRefused(shown, str(error), LINK) from None
    try:
        folder = os.open(base, os.O_RDONLY | _DIRECTORY | _CLOEXEC)
    except OSError as error:
        reason, kind = _why(error)
        raise InputRefused(shown, f"its folder {os.fspath(base)}: {reason}", kind) from None
    try:
        for part in parts[:-1]:
            try:
                inner = os.open(part, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC, dir_fd=folder)
            except OSError as error:
                if error.errno in (errno.ENOTDIR, errno.ELOOP) and _is_link(part, folder):
                    raise InputRefused(shown, f"its folder '{part}' is a symbolic link (links are not followed "
                                       "out of the folder)", LINK) from None
                reason, kind = _why(error)
                raise InputRefused(shown, reason, kind) from None
            os.close(folder)
            folder = inner
        try:
            return os.open(parts[-1], os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _CLOEXEC, dir_fd=folder)
        except OSError as error:
            reason, kind = _why(error)
            raise InputRefused(shown, reason, kind) from None
    finally:
        os.close(folder)


def _is_link(name: str, folder: int) -> bool:
    try:
        return stat.S_ISLNK(os.lstat(name, dir_fd=folder).st_mode)
    except OSError:
        return False


def open_input(path: str | os.PathLike[str], *, base: str | os.PathLike[str] | None = None,
               max_bytes: int | None = None, variable: str = "", follow: bool = False) -> tuple[int, int]:
    """(descriptor, size) of the regular file `path` (relative to `base` when given); InputRefused otherwise.

    `variable` names the environment variable that raises `max_bytes` (said in the refusal).
    `follow` (without `base` only) follows a link at the last component: for a file the user
    names on the command line that is no part of a hostile folder (a key in a CI secret
    mount). The caller closes the descriptor.
    """
    shown = os.fspath(Path(base) / path) if base is not None else os.fspath(path)
    if base is not None:
        fd = _open_below(base, path, shown)
    else:
        try:
            fd = os.open(path, os.O_RDONLY | (0 if follow else _NOFOLLOW) | _NONBLOCK | _CLOEXEC)
        except OSError as error:
            reason, kind = _why(error)
            raise InputRefused(shown, reason, kind) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise InputRefused(shown, "not a regular file (a FIFO, device, socket or directory is never read)", SPECIAL)
        if max_bytes is not None and info.st_size > max_bytes:
            how = f"; raise it with the environment variable {variable}" if variable else ""
            raise InputRefused(shown, f"{info.st_size} bytes, more than the limit of {max_bytes}{how}", TOO_LARGE,
                               info.st_size)
    except BaseException:
        os.close(fd)
        raise
    return fd, info.st_size


def read_input(path: str | os.PathLike[str], *, base: str | os.PathLike[str] | None = None,
               max_bytes: int, variable: str = "", follow: bool = False) -> bytes:
    """The bytes of the regular file `path` (see `open_input`); at most `max_bytes` are read.

    Never reserves more than the file holds: the first read asks for the size `fstat` gave (plus
    one byte, to see a file that grows), never for the limit (`read(limit + 1)` reserved 2 GiB
    for a 300-byte file: every export failed under a 2 GB address-space limit); a file that grows
    while it is read is read on in chunks of CHUNK bytes until the limit is passed.
    """
    fd, size = open_input(path, base=base, max_bytes=max_bytes, variable=variable, follow=follow)
    with os.fdopen(fd, "rb", buffering=0) as handle:
        data = read_bounded(handle, size, max_bytes)
    if len(data) > max_bytes:
        shown = os.fspath(Path(base) / path) if base is not None else os.fspath(path)
        raise InputRefused(shown, f"it grew past the limit of {max_bytes} bytes while being read", TOO_LARGE, len(data))
    return data


CHUNK = 1024 * 1024


def read_bounded(handle: BinaryIO, size: int, max_bytes: int) -> bytes:
    """At most `max_bytes + 1` bytes of `handle`, whose size was `size` when judged: one read of
    what the file holds, then chunks while it still grows (the caller refuses more than `max_bytes`)."""
    want = max(0, min(size, max_bytes)) + 1
    first = handle.read(want) or b""
    if len(first) < want:
        return first
    parts, total = [first], len(first)
    while total <= max_bytes:
        chunk = handle.read(min(CHUNK, max_bytes + 1 - total))
        if not chunk:
            break
        parts.append(chunk)
        total += len(chunk)
    return b"".join(parts)

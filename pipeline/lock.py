"""One `doit` run per project folder at a time.

Two runs in one folder would write the same artifacts and doit's state file at once (one of
them then crashes, or records the other's outputs as its own). The first run holds an
exclusive `flock` on `<root>/.doit.lock` for its whole life, its worker processes
included; the kernel drops the lock when the process ends, however it ends, so there is no
stale lock to clean up after a crash or a SIGKILL. A second run is refused at once with
PIPE-E010, naming the process that holds the lock.
"""

from __future__ import annotations

import errno
import fcntl
import os
from pathlib import Path
from typing import IO

from pipeline.diagnostics import Location, PipelineError

LOCK_FILE = ".doit.lock"
E_LOCKED = "PIPE-E010"
E_LOCK_IO = "PIPE-E011"

_HELD: dict[str, IO[str]] = {}


def hold_project_lock(root: str | os.PathLike[str] = ".") -> Path:
    """Take the project folder's lock for the rest of this process (idempotent).

    Raises PipelineError PIPE-E010 when another process holds it, PIPE-E011 when the lock
    file cannot be opened (a read-only folder, say).
    """
    path = Path(root) / LOCK_FILE
    key = str(path.resolve())
    if key in _HELD:
        return path
    try:
        stream = open(path, "a+", encoding="utf-8")
    except OSError as exc:
        raise PipelineError(E_LOCK_IO, f"cannot open the run lock: {exc.strerror or exc}", Location(str(path))) from None
    try:
        fcntl.flock(stream.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        stream.seek(0)
        holder = stream.read(64).strip() or "another process"
        stream.close()
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            raise PipelineError(E_LOCKED, f"another doit run is using this project folder ({holder}); "
                                "wait for it to finish, or run in a copy of the project", Location(str(path))) from None
        raise PipelineError(E_LOCK_IO, f"cannot lock the project folder: {exc.strerror or exc}", Location(str(path))) from None
    stream.seek(0)
    stream.truncate()
    stream.write(f"pid {os.getpid()}\n")
    stream.flush()
    _HELD[key] = stream
    return path

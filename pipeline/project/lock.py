"""One `doit` run per project folder at a time, and its timing campaigns alone within it.

Two runs in one folder would write the same artifacts and doit's state file at once (one of
them then crashes, or records the other's outputs as its own). The first run holds an
exclusive `flock` on `<root>/.doit.lock` for its whole life, its worker processes
included; the kernel drops the lock when the process ends, however it ends, so there is no
stale lock to clean up after a crash or a SIGKILL. A second run is refused at once with
PIPE-E010, naming the process that holds the lock.

Within a run, doit executes tasks on every core (dodo.py); `working` and `measuring` keep a
measured execution time free of the other tasks (below).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import logging
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Iterator

from pipeline.diagnostics import Location, PipelineError
from pipeline.project.tasklog import PROGRESS

log = logging.getLogger(__name__)

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


# --- Measurements alone: doit runs tasks on every core; a timing campaign runs by itself -----------

MEASURE_FILE = ".doit-measure.lock"
GATE_FILE = ".doit-measure-gate.lock"

# Per process (doit's workers are forked: a lock opened before the fork would be shared with
# the parent, so the files are opened again in each process), keyed by (pid, root).
@dataclass
class _Slot:
    gate: IO[str]
    measure: IO[str]
    depth: int = 0   # nested `working` calls in this process share one shared lock

    def through_gate(self, mode: int, announce: bool = False) -> None:
        """Take the measurement lock in `mode` behind the gate, which a waiting measurement holds.

        `announce`: a timing campaign that waits longer than GATE_NOTICE_AFTER seconds says so
        on the console (pipeline.project.tasklog), and how long it waited once through.
        """
        notice = _GateNotice() if announce else None
        try:
            fcntl.flock(self.gate.fileno(), fcntl.LOCK_EX)
            try:
                fcntl.flock(self.measure.fileno(), mode)
            finally:
                fcntl.flock(self.gate.fileno(), fcntl.LOCK_UN)
        finally:
            if notice is not None:
                notice.done()


GATE_NOTICE_AFTER = 10.0   # seconds a timing campaign waits at the gate before it says so


class _GateNotice:
    """Says "waiting at the measuring gate" once the wait exceeds GATE_NOTICE_AFTER, and how long it took."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.said = threading.Event()
        self.timer = threading.Timer(GATE_NOTICE_AFTER, self._say)
        self.timer.daemon = True
        self.timer.start()

    def _say(self) -> None:
        self.said.set()
        log.info("waiting at the measuring gate for %.0f s: the other tasks at work finish first, so that the "
                 "timing campaign runs alone", GATE_NOTICE_AFTER, extra=PROGRESS)

    def done(self) -> None:
        self.timer.cancel()
        self.timer.join()   # a notice being written is finished before its sequel
        if self.said.is_set():
            log.info("through the measuring gate after %.1f s: timing alone", time.monotonic() - self.started,
                     extra=PROGRESS)


_SLOTS: dict[tuple[int, str], _Slot] = {}


def _slot(root: str | os.PathLike[str]) -> _Slot:
    base = Path(root).resolve()
    key = (os.getpid(), str(base))
    slot = _SLOTS.get(key)
    if slot is None:
        try:
            slot = _Slot(open(base / GATE_FILE, "a+", encoding="utf-8"), open(base / MEASURE_FILE, "a+", encoding="utf-8"))
        except OSError as exc:
            raise PipelineError(E_LOCK_IO, f"cannot open the measurement lock: {exc.strerror or exc}",
                                Location(str(base / MEASURE_FILE))) from None
        _SLOTS[key] = slot
    return slot


@contextlib.contextmanager
def working(root: str | os.PathLike[str] = ".") -> Iterator[None]:
    """A step action at work: a shared slot that a measurement waits for (see `measuring`).

    New actions pass the gate first, so a measurement that is waiting is not starved by
    actions that keep starting on the other cores. Nested calls in one process share one slot.
    """
    slot = _slot(root)
    if slot.depth == 0:
        slot.through_gate(fcntl.LOCK_SH)
    slot.depth += 1
    try:
        yield
    finally:
        slot.depth -= 1
        if slot.depth == 0:
            fcntl.flock(slot.measure.fileno(), fcntl.LOCK_UN)


@contextlib.contextmanager
def measuring(root: str | os.PathLike[str] = ".") -> Iterator[None]:
    """Run a timing campaign with no other step action of this project running (MET figures).

    `doit verify` runs tasks in parallel (dodo.py); a campaign measured next to a compiler on
    the other core would report that compiler's interference. This waits until every other
    action has left its slot (`working`), keeps new ones at the gate, and gives this process's
    own slot back afterwards. The slot is released before the gate is taken, so two
    measurements wait for each other in turn, never in a cycle.
    """
    slot = _slot(root)
    measure = slot.measure.fileno()
    held = slot.depth > 0
    if held:
        fcntl.flock(measure, fcntl.LOCK_UN)
    slot.through_gate(fcntl.LOCK_EX, announce=True)
    try:
        yield
    finally:
        # a held slot converts back to shared (no wait: this process holds the exclusive lock)
        fcntl.flock(measure, fcntl.LOCK_SH if held else fcntl.LOCK_UN)

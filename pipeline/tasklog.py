"""The steps' logging under `doit`: every line says which task wrote it, and goes where it is useful.

doit runs the step actions in forked worker processes and shows nothing of the `logging`
records the steps write. `configure` (called by dodo.py before the workers fork) sends them:

* to the console (stderr): warnings and errors always, INFO with `doit verify log=info`,
  and the few progress notices that matter while waiting (a timing campaign waiting for the
  measuring gate: records logged with `extra=PROGRESS`), each prefixed by its task;
* to `LOG_FILE` in the project folder: every INFO record, prefixed by its task, for reading
  afterwards (the progress reporter truncates it when a run starts and names it at the end).

`in_task` names the task for the records logged inside it (the step and evidence actions
use it: pipeline.registry.freshness).
"""

from __future__ import annotations

import contextlib
import logging
import sys
from pathlib import Path
from typing import Iterator, TextIO

LOG_FILE = ".doit.log"
PROGRESS = {"progress": True}   # `log.info(..., extra=PROGRESS)`: shown on the console at any level
LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}

_CURRENT: list[str] = []


def current_task() -> str:
    """The task whose action is running in this process ("" outside one)."""
    return _CURRENT[-1] if _CURRENT else ""


@contextlib.contextmanager
def in_task(label: str) -> Iterator[None]:
    """Records logged inside the block are prefixed with `label` (`codegen:lenet5`)."""
    _CURRENT.append(label)
    try:
        yield
    finally:
        _CURRENT.pop()


class _TaskPrefix(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        task = current_task()
        level = "" if record.levelno == logging.INFO else f"{record.levelname.lower()}: "
        text = f"{level}{record.getMessage()}"
        return f"  {task}: {text}" if task else f"  {text}"


class _ConsoleFilter(logging.Filter):
    def __init__(self, level: int) -> None:
        super().__init__()
        self.level = level

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= self.level or bool(getattr(record, "progress", False))


_HANDLERS: list[logging.Handler] = []


def console_level(value: str | None) -> int:
    """The console threshold named by `doit ... log=<level>` (warning when unset or unknown)."""
    return LEVELS.get(str(value or "").strip().lower(), logging.WARNING)


def configure(root: str | Path = ".", level: int = logging.WARNING, stream: TextIO | None = None) -> None:
    """Route the `pipeline` loggers to the console (at `level`) and to `LOG_FILE` (at INFO); idempotent."""
    logger = logging.getLogger("pipeline")
    for handler in _HANDLERS:
        logger.removeHandler(handler)
        handler.close()
    _HANDLERS.clear()
    console = logging.StreamHandler(stream if stream is not None else sys.stderr)
    console.setFormatter(_TaskPrefix())
    console.addFilter(_ConsoleFilter(level))
    console.setLevel(logging.DEBUG)
    logfile = logging.FileHandler(Path(root) / LOG_FILE, mode="a", encoding="utf-8", delay=True)
    logfile.setFormatter(_TaskPrefix())
    logfile.setLevel(min(level, logging.INFO))
    for handler in (console, logfile):
        logger.addHandler(handler)
        _HANDLERS.append(handler)
    logger.setLevel(min(level, logging.INFO))
    logger.propagate = False


def start_log(root: str | Path = ".") -> Path:
    """Empty `LOG_FILE` for a new run (best effort: a log that cannot be written costs nothing else)."""
    path = Path(root) / LOG_FILE
    try:
        path.write_text("", encoding="utf-8")
    except OSError:
        pass
    return path

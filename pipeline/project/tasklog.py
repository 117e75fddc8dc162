"""The steps' logging under `doit`: every line says which task wrote it, and goes where it is useful.

doit runs the step actions in forked worker processes and shows nothing of the `logging`
records the steps write. `configure` (called by dodo.py before the workers fork) sends them:

* to the console (stderr): warnings and errors always, INFO with `doit verify log=info`,
  and the few progress notices that matter while waiting (a timing campaign waiting for the
  measuring gate: records logged with `extra=PROGRESS`), each prefixed by its task;
* to `RUN_LOG` in the project folder while doit runs: every INFO record, prefixed by its
  task; when the run ends, the progress reporter keeps it as `LOG_FILE` if any task ran (a
  run with nothing to do keeps the previous run's log) and names it at the end.

`in_task` names the task for the records logged inside it (the step and evidence actions
use it: pipeline.ledger.freshness).
"""

from __future__ import annotations

import contextlib
import logging
import sys
from pathlib import Path
from typing import Iterator, TextIO

from pipeline.project.oneline import shorten

LOG_FILE = ".doit.log"         # the step log of the last run that did work
RUN_LOG = ".doit-run.log"      # the step log of the run in progress
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
    """`  <task>: [level: ]message`; on the console, one line of at most MAX_LINE characters."""

    def __init__(self, one_line: bool = False) -> None:
        super().__init__()
        self.one_line = one_line

    def format(self, record: logging.LogRecord) -> str:
        task = current_task()
        level = "" if record.levelno == logging.INFO else f"{record.levelname.lower()}: "
        text = f"{level}{record.getMessage()}"
        line = f"  {task}: {text}" if task else f"  {text}"
        return shorten(line) if self.one_line else line


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


def reset() -> None:
    """Undo `configure`: the `pipeline` loggers propagate to the root logger again."""
    logger = logging.getLogger("pipeline")
    for handler in _HANDLERS:
        logger.removeHandler(handler)
        handler.close()
    _HANDLERS.clear()
    logger.setLevel(logging.NOTSET)
    logger.propagate = True


def configure(root: str | Path = ".", level: int = logging.WARNING, stream: TextIO | None = None) -> None:
    """Route the `pipeline` loggers to the console (at `level`) and to `LOG_FILE` (at INFO); idempotent."""
    reset()
    logger = logging.getLogger("pipeline")
    console = logging.StreamHandler(stream if stream is not None else sys.stderr)
    console.setFormatter(_TaskPrefix(one_line=True))
    console.addFilter(_ConsoleFilter(level))
    console.setLevel(logging.DEBUG)
    logfile = logging.FileHandler(Path(root) / RUN_LOG, mode="a", encoding="utf-8", delay=True)
    logfile.setFormatter(_TaskPrefix())
    logfile.setLevel(min(level, logging.INFO))
    for handler in (console, logfile):
        logger.addHandler(handler)
        _HANDLERS.append(handler)
    logger.setLevel(min(level, logging.INFO))
    logger.propagate = False


def start_log(root: str | Path = ".") -> None:
    """Empty `RUN_LOG` before a run's first task (best effort: a log that cannot be written costs nothing else)."""
    try:
        (Path(root) / RUN_LOG).write_text("", encoding="utf-8")
    except OSError:
        pass


def keep_log(root: str | Path = ".", worked: bool = True) -> Path | None:
    """At the end of a run: `RUN_LOG` becomes `LOG_FILE` when tasks ran, else it goes; the log kept."""
    run, kept = Path(root) / RUN_LOG, Path(root) / LOG_FILE
    try:
        if worked and run.is_file():
            run.replace(kept)
        else:
            run.unlink(missing_ok=True)
    except OSError:
        return None
    return kept if kept.is_file() else None

"""No stale output: a step run starts from an empty folder, and a failed run leaves a failure record.

The rule (docs/conventions.md, "Stale outputs"): when `doit` runs step S for model m,

0. the evidence built from m's previous outputs is removed first (reports/<m>/ and the
   cross-model reports: trace matrix, trace.json, JUnit), so a run that stops at S (doit
   runs no evidence task after a failed step) leaves no report still showing the old verdicts;
1. before S does anything, artifacts/<m>/<S>/ is removed as a whole (renamed aside in one
   step, then deleted), so every file found there afterwards was written by this run;
2. while the run is active, `record_step` refuses to name an output outside that folder
   (`check_output`), so no record names a file this run did not write;
3. if S raises, its folder is removed again (whatever it wrote before failing goes too), and
   artifacts/<m>/<S>/failed.json records the step, the error code and the one-line message;
   `check_records` turns it into an error finding (EVID-E036) naming the failed step;
4. whether S passed or failed, every later step of m whose record names an input under
   artifacts/<m>/ that is now missing or different (size, then SHA-256) is removed, in chain
   order (so its own dependents follow): a later step never keeps a `pass` made from files
   that are gone or changed, even when doit cannot re-run it (its file_dep is missing);
5. the doit action returns TaskFailed with the coded message (never a traceback; an
   exception no step anticipated is PIPE-E900, an OSError PIPE-E901 with its path).

`step_action(step, function)` packages 1-5 for a step's tasks.py.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterator

from pipeline.files.atomic import write_json
from pipeline.diagnostics import INTERNAL_ERROR, IO_ERROR, Location, PipelineError, debug_requested, describe_unexpected
from pipeline.project.layout import REPORT_FILES, REPORTS_DIR, STEPS, check_output_folders, step_dir
from pipeline.project.lock import working
from pipeline.project.tasklog import in_task

log = logging.getLogger(__name__)

FAILED_FILE = "failed.json"
SCHEMA_VERSION = 1
E_STEP_FAILED = "EVID-E036"
E_OUTPUT_NOT_WRITTEN = "EVID-E037"

_ACTIVE: dict[tuple[str, str], Path] = {}  # (model, step) -> the step folder this run started empty


def remove_folder(folder: Path) -> None:
    """Remove `folder` so that no reader ever sees it half-deleted: rename aside, then delete."""
    if not folder.exists() and not folder.is_symlink():
        return
    if folder.is_symlink() or not folder.is_dir():
        folder.unlink()
        return
    aside = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", suffix=".stale", dir=folder.parent))
    os.replace(folder, aside / folder.name)
    shutil.rmtree(aside, ignore_errors=True)


def later_steps(step: str) -> tuple[str, ...]:
    """The steps after `step` in the chain."""
    return STEPS[STEPS.index(step) + 1:]


def _input_changed(entry: Any, base: Path, prefix: str) -> bool:
    """Whether a recorded input under artifacts/<m>/ is missing or differs from what was recorded."""
    from pipeline.ledger.hashing import sha256_file

    path = str(entry.get("path", "")) if isinstance(entry, dict) else ""
    if not path.startswith(prefix):
        return False
    full = base / path
    try:
        if not full.is_file() or full.stat().st_size != entry.get("size"):
            return True
        return sha256_file(full) != entry.get("sha256")
    except OSError:
        return True


def invalidate_dependents(model: str, step: str, root: str | os.PathLike[str] = ".") -> list[str]:
    """Remove every later step of `model` whose recorded artifact inputs are missing or changed; their names."""
    base = Path(root)
    prefix = step_dir(model, step, base).parent.relative_to(base).as_posix() + "/"
    removed = []
    for name in later_steps(step):
        folder = step_dir(model, name, base)
        record = folder / "record.json"
        if not record.is_file():
            continue
        try:
            inputs = json.loads(record.read_text(encoding="utf-8")).get("inputs", [])
        except (OSError, ValueError, AttributeError):
            inputs = None  # an unreadable record vouches for nothing
        if inputs is None or not isinstance(inputs, list) or any(_input_changed(e, base, prefix) for e in inputs):
            remove_folder(folder)
            removed.append(name)
            log.info("%s/%s removed: its inputs changed or are gone after %s ran", model, name, step)
    return removed


def failure_document(model: str, step: str, error: BaseException) -> dict[str, Any]:
    """failed.json: which step failed, with which code and message (no traceback, no path of this host)."""
    if isinstance(error, PipelineError):
        code, message = error.code, f"{error.location}: {error.message}" if error.location else error.message
    else:
        code = IO_ERROR if isinstance(error, OSError) else INTERNAL_ERROR
        message = describe_unexpected(error)
    return {"schema_version": SCHEMA_VERSION, "model": model, "step": step, "code": code,
            "message": message.splitlines()[0] if message else code}


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def failure_path(model: str, step: str, root: str | os.PathLike[str] = ".") -> Path:
    return step_dir(model, step, root) / FAILED_FILE


@contextlib.contextmanager
def fresh_run(model: str, step: str, root: str | os.PathLike[str] = ".") -> Iterator[Path]:
    """Run `step` for `model` from an empty folder; on an exception, invalidate and record the failure."""
    check_output_folders(root)   # a linked artifacts/ or reports/ is refused before anything is removed or written
    folder = step_dir(model, step, root)
    remove_reports(model, root)
    remove_folder(folder)
    key = (model, step)
    _ACTIVE[key] = folder.resolve()
    try:
        yield folder
    except Exception as error:
        remove_folder(folder)
        try:
            write_json(failure_path(model, step, root), failure_document(model, step, error))
        except OSError as exc:  # a full disk must not hide the step's own error
            log.warning("cannot record the failure of %s/%s: %s", model, step, exc)
        raise
    finally:
        _ACTIVE.pop(key, None)
        try:
            invalidate_dependents(model, step, root)
        except OSError as exc:  # the step's own outcome (or error) says more
            log.warning("cannot remove the steps after %s/%s: %s", model, step, exc)


def remove_reports(model: str, root: str | os.PathLike[str] = ".") -> None:
    """Rule 0: the evidence of `model` and the cross-model reports, which its new outputs will replace."""
    reports = Path(root) / REPORTS_DIR
    remove_folder(reports / model)
    for name in REPORT_FILES.values():
        (reports / name).unlink(missing_ok=True)


def check_output(model: str, step: str, path: Path) -> None:
    """While `step` runs for `model` under fresh_run, an output must lie in its (emptied) folder."""
    folder = _ACTIVE.get((model, step))
    if folder is None:
        return
    resolved = path.resolve()
    if resolved != folder and folder not in resolved.parents:
        raise PipelineError(E_OUTPUT_NOT_WRITTEN, f"{model}/{step}: output {path} lies outside the step folder, so this "
                            "run cannot have been the one that wrote it", Location.in_file(path))


def _task_failed(head: str, error: BaseException) -> Any:
    from doit.exceptions import TaskFailed

    if debug_requested():
        import traceback

        traceback.print_exception(type(error), error, error.__traceback__)
    return TaskFailed(f"{head}\n{describe_unexpected(error)}")


class coded_action:  # noqa: N801 - used like a function in task dicts
    """A doit python-action that reports an exception as a coded TaskFailed (PIPE-E900/E901), never a traceback.

    A class rather than a closure so that doit can pickle the task for `doit -n N`.
    """

    def __init__(self, function: Callable[..., Any], label: str = "") -> None:
        self.function = function
        self.label = label or function.__name__
        functools.update_wrapper(self, function)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            with in_task(self.label), working("."):
                return self.function(*args, **kwargs)
        except Exception as error:  # noqa: BLE001 - no traceback reaches the user
            return _task_failed(f"{self.label} failed", error)


class step_action:  # noqa: N801 - used like a function in task dicts
    """A doit python-action for `step`: `function(model)` under fresh_run, failures as coded TaskFailed."""

    def __init__(self, step: str, function: Callable[[str], Any]) -> None:
        self.step = step
        self.function = function
        functools.update_wrapper(self, function)

    def __call__(self, model: str) -> Any:
        from doit.exceptions import TaskFailed

        try:
            with in_task(f"{self.step}:{model}"), working("."), fresh_run(model, self.step, "."):
                result = self.function(model)
                if result is False or isinstance(result, TaskFailed):
                    message = result.message if isinstance(result, TaskFailed) else "the action returned False"
                    raise PipelineError(E_STEP_FAILED, _first_line(message))
                return result
        except Exception as error:  # noqa: BLE001 - no traceback reaches the user
            return _task_failed(f"{self.step}:{model} failed", error)

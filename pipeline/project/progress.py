"""doit's console while `doit verify` works: one line per finished task, notices, a profile per step.

doit's own console reporter prints a task's name when it starts and nothing after. This
reporter (dodo.py `DOIT_CONFIG["reporter"]`) prints, in the main doit process:

* each task when it ends, with its time and what its checks said, read from the files the
  step wrote (`ok    codegen:resnet8     6.2 s  pass 6`; `FAIL` and the coded message when
  it failed): one count per check, its verdict the worst of its results (deployments, items),
  `n/a` only when none applies: the unit the summary's table counts;
* every `NOTICE_EVERY` seconds of silence, the tasks still running and for how long;
* one line for the tasks that were up to date, instead of a line each;
* the time per step (the task groups: export, check, ...), before the summary of `verify`,
  or at the end when `verify` does not run.

The worker processes' log records reach the console through pipeline.project.tasklog. Nothing
here decides a verdict: it only reads what the steps left.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any, Iterable, TextIO

from pipeline.project.layout import CHECKS_FILE, REPORTS_DIR, STEPS, step_dir
from pipeline.project.tasklog import LOG_FILE, keep_log, start_log
from pipeline.project.oneline import shorten

NOTICE_EVERY = 30.0          # seconds without a line before the running tasks are listed
VERDICT_ORDER = ("fail", "not run", "emulated", "pass", "n/a")
MAX_READ = 64 << 20          # a results file larger than this is not read for the console
FINAL_TASK = "verify"
# The execute step has no checks of its own (compare judges its runs): its line counts the
# deployments it ran, one result file each (pipeline/execute/outputs.py RUN_FILE; this module
# sits below the steps and cannot import it; tests/test_progress.py keeps the two equal).
RUN_STEP, RUN_FILE = "execute", "run.json"


def verdict_counts(verdicts: Iterable[str]) -> str:
    """`not run 1 pass 5`: the count of each verdict present, worst first."""
    found = Counter(verdicts)
    return " ".join(f"{v} {found[v]}" for v in VERDICT_ORDER if found[v])


def duration(seconds: float) -> str:
    """`6.2 s`, `2 min 43 s`."""
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(int(round(seconds)), 60)
    return f"{minutes} min {rest} s"


def _read_json(path: Path) -> Any:
    try:
        if not path.is_file() or path.stat().st_size > MAX_READ:
            return None
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _verdicts(document: Any) -> list[str]:
    """One verdict per check of a checks.json: the worst of its results (pipeline/evidence/collect.py's rule)."""
    results = document.get("results") if isinstance(document, dict) else None
    if not isinstance(results, list):
        return []
    by_check: dict[str, list[str]] = {}
    for r in results:
        if isinstance(r, dict):
            by_check.setdefault(str(r.get("check_id")), []).append(str(r.get("verdict")))
    rank = {v: i for i, v in enumerate(VERDICT_ORDER)}
    return [min(found, key=lambda v: rank.get(v, -1)) for found in by_check.values()]


def task_outcome(name: str, root: str | Path = ".") -> str:
    """What a finished task's checks said, from the files it wrote ("" when it wrote none)."""
    group, _, model = name.partition(":")
    base = Path(root)
    if group == RUN_STEP and model:
        ran = len(list(step_dir(model, group, base).glob(f"*/{RUN_FILE}")))
        return f"ran {ran} deployment{'s' if ran != 1 else ''}, judged by compare" if ran else ""
    if group in STEPS and model:
        return verdict_counts(_verdicts(_read_json(step_dir(model, group, base) / CHECKS_FILE)))
    if group == "evidence" and model == "reports":
        document = _read_json(base / REPORTS_DIR / "trace.json")
        if not isinstance(document, dict):
            return ""
        severities = Counter(f.get("severity") for f in document.get("findings", []) if isinstance(f, dict))
        return f"{len(document.get('requirements', []))} requirements, {severities['error']} error findings"
    if group == "evidence" and model:
        return verdict_counts(_verdicts(_read_json(base / REPORTS_DIR / model / "package-check.json")))
    return ""


class ProgressReporter:
    """A doit reporter (see the module docstring); `doit --reporter=...` still picks any other."""

    desc = "one line per finished task with its time and verdicts, still-running notices, a profile per step"

    def __init__(self, outstream: TextIO, options: dict[str, Any]) -> None:
        self.outstream = outstream
        self.failure_verbosity = options.get("failure_verbosity", 0)
        self.root = Path(".")
        self.lock = threading.Lock()
        self.running: dict[str, float] = {}
        self.times: dict[str, float] = {}
        self.up_to_date: list[str] = []
        self.failures: list[tuple[Any, Any]] = []
        self.runtime_errors: list[str] = []
        self.width = 20
        self.started = time.monotonic()
        self.last_line = self.started
        self.profile_shown = False
        self.stop = threading.Event()
        self.watch: threading.Thread | None = None

    # --- output -----------------------------------------------------------------------------
    def write(self, text: str) -> None:
        with self.lock:
            self.outstream.write(text)
            self.outstream.flush()
            self.last_line = time.monotonic()

    def _line(self, status: str, name: str, seconds: float | None, detail: str = "") -> None:
        took = duration(seconds).rjust(9) if seconds is not None else " " * 9
        self.write(shorten(f"{status:<5} {name:<{self.width}} {took}{'  ' + detail if detail else ''}".rstrip()) + "\n")

    # --- doit's reporter interface -------------------------------------------------------------
    def initialize(self, tasks: dict[str, Any], selected_tasks: list[str]) -> None:
        names = [n for n, t in tasks.items() if t.actions and not n.startswith("_")]
        self.width = min(max((len(n) for n in names), default=20), 40)
        start_log(self.root)   # before any worker starts: the run's step log
        self.started = self.last_line = time.monotonic()
        self.watch = threading.Thread(target=self._watch, name="doit-progress", daemon=True)
        self.watch.start()

    def get_status(self, task: Any) -> None:
        # doit selects `verify` in this process once every task it depends on has ended, before a
        # worker runs it (and prints the summary): the profile goes right before the summary
        if task.name == FINAL_TASK:
            self.show_profile()

    def execute_task(self, task: Any) -> None:
        if not task.actions or task.name.startswith("_"):
            return
        if task.name == FINAL_TASK:
            return
        with self.lock:
            self.running[task.name] = time.monotonic()

    def _finished(self, task: Any) -> float | None:
        with self.lock:
            began = self.running.pop(task.name, None)
        if began is None:
            return None
        self.times[task.name] = time.monotonic() - began
        return self.times[task.name]

    def add_success(self, task: Any) -> None:
        seconds = self._finished(task)
        if seconds is None:
            return
        self._line("ok", task.name, seconds, task_outcome(task.name, self.root))

    def add_failure(self, task: Any, fail: Any) -> None:
        seconds = self._finished(task)
        if not getattr(fail, "report", True):
            return
        self.failures.append((task, fail))
        if task.name == FINAL_TASK:
            return   # the summary above says why
        self._line("FAIL", task.name, seconds, task_outcome(task.name, self.root))
        message = fail.get_msg() if hasattr(fail, "get_msg") else str(fail)
        lines = [line for line in message.splitlines() if line.strip()]
        self.write("".join(shorten(f"      {line}") + "\n" for line in lines[:20]))

    def skip_uptodate(self, task: Any) -> None:
        if not task.name.startswith("_") and task.actions:
            self.up_to_date.append(task.name)

    def skip_ignore(self, task: Any) -> None:
        self._line("skip", task.name, None, "ignored")

    def cleanup_error(self, exception: Any) -> None:
        sys.stderr.write(exception.get_msg())

    def runtime_error(self, msg: str) -> None:
        self.runtime_errors.append(msg)

    def teardown_task(self, task: Any) -> None:
        pass

    def complete_run(self) -> None:
        self.stop.set()
        self.show_profile()
        keep_log(self.root, worked=bool(self.times))
        if self.runtime_errors:
            self.write("Execution aborted.\n" + "\n".join(self.runtime_errors) + "\n")

    # --- notices and profile ------------------------------------------------------------------
    def _watch(self) -> None:
        while not self.stop.wait(min(NOTICE_EVERY, 5.0)):
            now = time.monotonic()
            with self.lock:
                quiet = now - self.last_line
                running = sorted(self.running.items(), key=lambda kv: kv[1])
            if running and quiet >= NOTICE_EVERY:
                listed = ", ".join(f"{name} {duration(now - began)}" for name, began in running)
                self.write(shorten(f"...   still running: {listed}") + "\n")

    def profile_lines(self) -> list[str]:
        """Time per step (task group), in chain order, from the tasks that ran in this invocation."""
        groups: dict[str, list[tuple[str, float]]] = {}
        for name, seconds in self.times.items():
            groups.setdefault(name.partition(":")[0], []).append((name, seconds))
        order = list(STEPS) + ["evidence"]
        names = sorted(groups, key=lambda g: (order.index(g) if g in order else len(order), g))
        wall = time.monotonic() - self.started
        lines = []
        if names:
            lines.append(f"Time per step ({len(self.times)} tasks ran in {duration(wall)}; a step's time is the sum "
                         "of its tasks', which run side by side):")
            for group in names:
                items = groups[group]
                longest = max(items, key=lambda kv: kv[1])
                lines.append(f"  {group:<10} {len(items):>3} tasks {duration(sum(s for _, s in items)):>11}   "
                             f"longest {longest[0]} {duration(longest[1])}")
        if self.up_to_date:
            lines.append(f"Up to date, not run: {len(self.up_to_date)} tasks")
        if names:
            lines.append(f"Step log (INFO records, by task): {LOG_FILE}; `doit verify log=info` shows them here")
        return lines

    def show_profile(self) -> None:
        if self.profile_shown:
            return
        self.profile_shown = True
        lines = self.profile_lines()
        if lines:
            self.write(("\n" if self.times else "") + "\n".join(lines) + "\n\n")

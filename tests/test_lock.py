"""One doit run per project folder: the second is refused with a coded message."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pipeline.diagnostics import PipelineError
from pipeline.project.lock import E_LOCKED, LOCK_FILE, hold_project_lock
from tests.projects import ROOT

HOLDER = "import sys; from pipeline.project.lock import hold_project_lock; hold_project_lock(sys.argv[1]); print('held', flush=True); sys.stdin.read()"


def _holder(folder: Path) -> subprocess.Popen[str]:
    process = subprocess.Popen([sys.executable, "-c", HOLDER, str(folder)], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None and process.stdout.readline().strip() == "held"
    return process


def test_second_holder_is_refused_until_the_first_ends(tmp_path: Path) -> None:
    process = _holder(tmp_path)
    try:
        with pytest.raises(PipelineError) as raised:
            hold_project_lock(tmp_path)
        assert raised.value.code == E_LOCKED and f"pid {process.pid}" in str(raised.value)
    finally:
        process.communicate("", timeout=30)
    # the kernel released the lock with the process: no stale lock file to clean up
    assert (tmp_path / LOCK_FILE).is_file()
    assert hold_project_lock(tmp_path) == tmp_path / LOCK_FILE
    assert hold_project_lock(tmp_path) == tmp_path / LOCK_FILE  # idempotent within a process


def test_doit_in_a_locked_folder_exits_2_with_the_code_and_no_traceback(tmp_path: Path) -> None:
    for name in ("dodo.py", "pipeline", "models", "requirements"):
        (tmp_path / name).symlink_to(ROOT / name)
    process = _holder(tmp_path)
    try:
        env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
        result = subprocess.run([sys.executable, "-m", "doit", "list"], cwd=tmp_path, env=env,
                                capture_output=True, text=True, timeout=120)
    finally:
        process.communicate("", timeout=30)
    assert result.returncode == 2, result.stdout + result.stderr
    assert E_LOCKED in result.stderr and "another doit run" in result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    listed = subprocess.run([sys.executable, "-m", "doit", "list"], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=120)
    assert listed.returncode == 0 and "verify" in listed.stdout, listed.stderr


# --- timing campaigns alone: `measuring` waits for every `working` action, and holds new ones ---

WORKER = """
import sys, time
from pipeline.project.lock import measuring, working
root, kind, log, hold = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
def note(what):
    with open(log, "a") as stream:
        stream.write(f"{time.monotonic():.6f} {kind} {what}\\n")
with working(root):
    if kind == "measure":
        time.sleep(0.2)                      # let the other action start first
        with measuring(root):
            note("start"); time.sleep(hold); note("end")
    else:
        note("start"); time.sleep(hold); note("end")
"""


def _spans(log: Path) -> dict[str, tuple[float, float]]:
    times: dict[str, dict[str, float]] = {}
    for line in log.read_text().splitlines():
        stamp, kind, what = line.split()
        times.setdefault(kind, {})[what] = float(stamp)
    return {kind: (t["start"], t["end"]) for kind, t in times.items()}


def _overlap(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def test_a_measurement_waits_for_running_actions_and_holds_new_ones(tmp_path: Path) -> None:
    log = tmp_path / "log.txt"
    compile_like = subprocess.Popen([sys.executable, "-c", WORKER, str(tmp_path), "build", str(log), "1.0"])
    measure = subprocess.Popen([sys.executable, "-c", WORKER, str(tmp_path), "measure", str(log), "1.0"])
    time.sleep(1.5)   # the measurement is waiting or running: an action starting now must not overlap it
    late = subprocess.Popen([sys.executable, "-c", WORKER, str(tmp_path), "late", str(log), "0.3"])
    for process in (compile_like, measure, late):
        assert process.wait(timeout=60) == 0
    spans = _spans(log)
    assert not _overlap(spans["measure"], spans["build"]), spans
    assert not _overlap(spans["measure"], spans["late"]), spans


def test_without_a_measurement_actions_run_side_by_side(tmp_path: Path) -> None:
    """The lock must not serialise ordinary work (else parallel doit would gain nothing)."""
    log = tmp_path / "log.txt"
    first = subprocess.Popen([sys.executable, "-c", WORKER, str(tmp_path), "one", str(log), "1.0"])
    second = subprocess.Popen([sys.executable, "-c", WORKER, str(tmp_path), "two", str(log), "1.0"])
    assert first.wait(timeout=60) == 0 and second.wait(timeout=60) == 0
    spans = _spans(log)
    assert _overlap(spans["one"], spans["two"]), spans


def test_two_measurements_take_turns(tmp_path: Path) -> None:
    log = tmp_path / "log.txt"
    worker = WORKER.replace('kind == "measure"', 'kind.startswith("measure")')
    first = subprocess.Popen([sys.executable, "-c", worker, str(tmp_path), "measure1", str(log), "0.5"])
    second = subprocess.Popen([sys.executable, "-c", worker, str(tmp_path), "measure2", str(log), "0.5"])
    assert first.wait(timeout=60) == 0 and second.wait(timeout=60) == 0   # no deadlock
    spans = _spans(log)
    assert not _overlap(spans["measure1"], spans["measure2"]), spans

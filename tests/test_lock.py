"""One doit run per project folder: the second is refused with a coded message."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.diagnostics import PipelineError
from pipeline.lock import E_LOCKED, LOCK_FILE, hold_project_lock
from tests.projects import ROOT

HOLDER = "import sys; from pipeline.lock import hold_project_lock; hold_project_lock(sys.argv[1]); print('held', flush=True); sys.stdin.read()"


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

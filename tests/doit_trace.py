"""Run one doit task and record what its action imported and read of pipeline/ (run inside a scratch project).

    python tests/doit_trace.py OUT.json TASK     (cwd: a project holding its own copy of pipeline/)

An audit hook records every file opened under the project's pipeline/ while a step action runs
(`pipeline.ledger.freshness.step_action` is wrapped before dodo.py loads), and the modules of
the package it loaded. doit runs the action in this process (`-n 0`), so what the action touches is this
step's (a module dodo.py loaded before is not seen again: the e2e test judges those by the oracle).
Writes {"code": doit's exit status, "modules": [...], "opened": [...]} (project-relative paths).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, os.getcwd())   # the project's own pipeline/ and dodo.py
HERE = str(Path(__file__).resolve().parent)
if HERE in sys.path:
    sys.path.remove(HERE)

PACKAGE = Path("pipeline").resolve()
ACTIVE = [False]
OPENED: set[str] = set()
LOADED: set[str] = set()


def _hook(event: str, args: tuple) -> None:
    if event == "open" and ACTIVE[0] and args and isinstance(args[0], (str, bytes, os.PathLike)):
        try:
            path = Path(os.fsdecode(args[0])).resolve()
        except (OSError, ValueError):
            return
        if path.is_relative_to(PACKAGE) and "__pycache__" not in path.parts:
            OPENED.add(path.relative_to(PACKAGE.parent).as_posix())


def main() -> None:
    out, task = Path(sys.argv[1]), sys.argv[2]
    from pipeline.ledger import freshness

    original = freshness.step_action

    def traced(step: str, fn):   # type: ignore[no-untyped-def]
        action = original(step, fn)

        def run(*args, **kwargs):   # type: ignore[no-untyped-def]
            before = set(sys.modules)
            ACTIVE[0] = True
            try:
                return action(*args, **kwargs)
            finally:
                ACTIVE[0] = False
                LOADED.update(set(sys.modules) - before)
        return run

    freshness.step_action = traced
    sys.addaudithook(_hook)
    from doit.cmd_base import DodoTaskLoader
    from doit.doit_cmd import DoitMain

    code = DoitMain(DodoTaskLoader()).run(["-n", "0", task])   # no worker process: the action runs here
    modules = sorted(name for name in LOADED if name == "pipeline" or name.startswith("pipeline."))
    out.write_text(json.dumps({"code": code, "modules": modules, "opened": sorted(OPENED)}, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()

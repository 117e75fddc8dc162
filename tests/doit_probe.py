"""doit's own up-to-date decision when a file of pipeline/ or a tool changes (run inside a scratch project).

    python tests/doit_probe.py OUT.json [FILE ...]     (cwd: a project holding its own copy of pipeline/)

Loads the project's dodo.py as doit does, records every task as done (the states of its file
dependencies and the values its `uptodate` objects save, as after a successful run; missing
inputs and targets are created empty, outside pipeline/), then asks doit's Dependency.get_status,
with the project's file checker, for every task:

- after each FILE (default: every file under pipeline/) is changed (a comment appended), and
  again after its bytes are restored;
- with $CC naming another compiler (a copy of gcc), and again without;
- with a newer `nnef` distribution installed ahead of the real one, and again without.

Writes {"tasks": {task: the module of its creator}, "baseline": [...], "changed": {file: [...]},
"restored": {file: [...]}, "tools": {probe: {"changed": [...], "restored": [...]}}}, each list
naming the tasks doit would run. Tasks that always run (`verify`) and task groups are left out.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any


sys.path.insert(0, os.getcwd())   # the project's own pipeline/ and dodo.py, ahead of the installed package
sys.path.remove(str(Path(__file__).resolve().parent)) if str(Path(__file__).resolve().parent) in sys.path else None


def _tasks() -> tuple[list[Any], dict[str, str]]:
    from doit.loader import load_tasks

    import dodo  # noqa: E402 - the project's own, as doit loads it

    namespace = vars(dodo)
    tasks = load_tasks(namespace)
    creators = {name[len("task_"):]: getattr(ref, "__wrapped__", ref).__module__
                for name, ref in namespace.items() if name.startswith("task_") and callable(ref)}
    kept = [t for t in tasks if t.actions and not any(u is False for u, _, _ in t.uptodate)]
    return kept, {t.name: creators[t.name.split(":")[0]] for t in kept}


def _placeholder(path: str) -> None:
    file = Path(path)
    if file.exists():
        return
    if file.resolve().is_relative_to(Path("pipeline").resolve()):
        raise SystemExit(f"a task depends on {path}, which does not exist")
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_bytes(b"")


def _forget() -> None:
    from pipeline.ledger import identities

    identities.forget()


def main() -> None:
    from doit.dependency import Dependency, JsonDB

    from pipeline.project.tasking import ContentChecker

    out = Path(sys.argv[1])
    import pipeline

    if not Path(pipeline.__file__).resolve().is_relative_to(Path.cwd().resolve()):
        raise SystemExit(f"pipeline imported from {pipeline.__file__}, not from the project's copy")
    tasks, creators = _tasks()
    by_name = {t.name: t for t in tasks}
    for task in tasks:
        for path in list(task.file_dep) + list(task.targets):
            _placeholder(path)
    db = Dependency(JsonDB, ".probe.db", checker_cls=ContentChecker)
    for task in tasks:
        db.get_status(task, by_name)   # as doit does before running a task (config_changed computes its digest here)
        for saver in task.value_savers:
            task.values.update(saver())
        db.save_success(task)

    def stale() -> list[str]:
        return sorted(t.name for t in tasks if db.get_status(t, by_name).status != "up-to-date")

    files = sys.argv[2:] or sorted(p.as_posix() for p in Path("pipeline").rglob("*")
                                   if p.is_file() and "__pycache__" not in p.parts)
    result: dict[str, Any] = {"tasks": creators, "baseline": stale(), "changed": {}, "restored": {}, "tools": {}}
    for name in files:
        path = Path(name)
        original = path.read_bytes()
        path.write_bytes(original + (b"\n# probe\n" if path.suffix == ".py" else b"\n"))
        result["changed"][name] = stale()
        path.write_bytes(original)
        result["restored"][name] = stale()

    # a different C compiler: $CC names a copy of gcc (same program, another binary path and name)
    compiler = Path("probe-bin") / "cc-probe"
    compiler.parent.mkdir(exist_ok=True)
    shutil.copy(shutil.which("gcc") or "/usr/bin/gcc", compiler)
    os.environ["CC"] = str(compiler.resolve())
    _forget()
    changed = stale()
    del os.environ["CC"]
    _forget()
    result["tools"]["CC"] = {"changed": changed, "restored": stale()}

    # a newer nnef (the Khronos parser) installed ahead of the real one
    site = Path("probe-site").resolve()
    info = site / "nnef-99.0.0.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: nnef\nVersion: 99.0.0\n", encoding="utf-8")
    (info / "top_level.txt").write_text("nnef\n", encoding="utf-8")
    (info / "RECORD").write_text("nnef/__init__.py,,\n", encoding="utf-8")
    sys.path.insert(0, str(site))
    _forget()
    changed = stale()
    sys.path.remove(str(site))
    _forget()
    result["tools"]["nnef"] = {"changed": changed, "restored": stale()}
    out.write_text(json.dumps(result, indent=1, sort_keys=True), encoding="utf-8")


if __name__ == "__main__":
    main()

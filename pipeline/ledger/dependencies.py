"""A step's dependencies beyond its input files: its code and its tools (docs/conventions.md "A step's code and tools").

A verdict is only as current as the code and the tools that produced it. dodo.py passes every
task creator it defines through `code_dependencies`, so that each task the creator yields

- depends (`file_dep`) on every file of the import closure of the creator's module
  (pipeline.project.closure: each module its code imports, at module level or in a function,
  through every package reached, and the data files those modules read), and
- carries a `ToolStamp` in its `uptodate`: the identities (pipeline.ledger.identities) of the
  programs those modules declare in `TOOLS`, of the third-party libraries they import and of
  the interpreter; a task whose name is a model also gets the programs of that model's own
  platforms (deploy.yaml `platforms:`) when its code compiles or runs for a platform.

A new step gets both by being named in dodo.py, with no list of sources. `step_dependencies`
gives the same two things for a step's record.json (pipeline.ledger.records): the digest of
the code files and the identities the up-to-date check compared.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from pipeline.ledger.identities import PYTHON, identities
from pipeline.project.closure import PACKAGE, PACKAGE_DIR, Closure, closure, project_paths

STAMP_KEY = "tool_identities"
# A TOOLS name that stands for the programs of the model's own platforms (deploy.yaml `platforms:`).
PLATFORM_TOOLS = "@platforms"


def task_module(step: str) -> str:
    """The module that defines the doit tasks of `step` (its code starts there)."""
    return f"{PACKAGE}.{step}.tasks"


def code_of(module: str, root: Path | str = ".") -> Closure:
    """The import closure of `module`: what a task defined there runs."""
    return closure([module], root=root)


def tool_names(code: Closure, model: str | None = None, root: Path | str = ".") -> list[str]:
    """The programs whose identity the code's verdicts depend on: TOOLS of its modules, the interpreter,
    and for `model` the programs of its own platforms where the code names @platforms."""
    names = set(code.tools) | {PYTHON}
    if PLATFORM_TOOLS in names:
        names.discard(PLATFORM_TOOLS)
        if model is not None:
            from pipeline.project.tasking import platform_tools

            names.update(platform_tools(model, root))
    return sorted(names)


class ToolStamp:
    """doit `uptodate` object: up to date while the identities of the code's tools and libraries are unchanged.

    Computed when doit checks the task, once per process for every task (identities are cached),
    and saved with the task's values after it ran.
    """

    def __init__(self, code: Closure, model: str | None = None, root: Path | str = ".") -> None:
        self.code, self.model, self.root = code, model, root

    def identities(self) -> dict[str, str]:
        return identities(tool_names(self.code, self.model, self.root), self.code.libraries, root=self.root)

    def configure_task(self, task: Any) -> None:
        task.value_savers.append(lambda: {STAMP_KEY: self.identities()})

    def __call__(self, task: Any, values: dict[str, Any]) -> bool:
        previous = values.get(STAMP_KEY)
        return previous is not None and previous == self.identities()


def _with_dependencies(task: dict[str, Any], code: Closure, files: list[str], root: Path | str) -> dict[str, Any]:
    if any(check is False for check in task.get("uptodate", ())):
        return task   # it runs every time (`verify`): nothing can leave it stale
    model = task.get("name") if isinstance(task.get("name"), str) else None
    task["file_dep"] = list(dict.fromkeys(list(task.get("file_dep", [])) + files))
    task["uptodate"] = list(task.get("uptodate", [])) + [ToolStamp(code, model, root)]
    return task


def with_code(creator: Callable[[], Any], root: Path | str = ".") -> Callable[[], Any]:
    """`creator` (a doit task creator of a module of the package) whose tasks depend on its module's code and tools."""
    module = creator.__module__

    @functools.wraps(creator)
    def create() -> Any:
        code = code_of(module, root)
        files = project_paths(code.files, root)
        made = creator()
        if isinstance(made, dict):
            return _with_dependencies(made, code, files, root)

        def each() -> Iterator[dict[str, Any]]:
            for task in made:
                yield _with_dependencies(task, code, files, root)

        return each()

    return create


def code_dependencies(namespace: Mapping[str, Any], root: Path | str = ".") -> dict[str, Callable[[], Any]]:
    """Every doit task creator of `namespace` (a dodo file's globals) defined in the package, wrapped by `with_code`.

    dodo.py: `globals().update(code_dependencies(globals()))`, after the creators are named.
    """
    return {name: with_code(ref, root) for name, ref in namespace.items()
            if name.startswith("task_") and inspect.isfunction(ref)
            and str(getattr(ref, "__module__", "")).split(".")[0] == PACKAGE}


def code_digest(code: Closure) -> str:
    """SHA-256 over the code's files (package-relative path and bytes of each, in order)."""
    digest = hashlib.sha256()
    for path in code.files:
        rel = path.relative_to(PACKAGE_DIR.parent).as_posix() if path.is_relative_to(PACKAGE_DIR.parent) else path.name
        digest.update(rel.encode() + b"\0" + hashlib.sha256(path.read_bytes()).hexdigest().encode() + b"\0")
    return digest.hexdigest()


def step_dependencies(model: str, step: str, root: Path | str = ".") -> dict[str, Any]:
    """What `step`'s up-to-date check compares beyond its input files, for its record: the code (how
    many files, their digest) and the identities of its tools and libraries ({} for a step without
    a tasks module)."""
    from pipeline.project.closure import module_file

    module = task_module(step)
    if module_file(module) is None:
        return {}
    code = code_of(module, root)
    return {"code": {"files": len(code.files), "sha256": code_digest(code)},
            "tools": ToolStamp(code, model, root).identities()}

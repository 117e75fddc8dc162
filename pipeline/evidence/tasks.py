"""doit tasks of the evidence step: `evidence` (packages, matrix, JUnit) and `verify`.

    doit verify                   run what changed, then print the summary; fails if any
                                  requirement fails (or any other error finding); lists the
                                  requirements open for the target without failing
    doit verify strict=1          the certification run on the target: fails unless every
                                  requirement is verified on its platform (the evidence
                                  packages record the mode)
    doit verify exclude=m1,m2     models this run may leave out (a model whose chain did not
                                  run fails the run otherwise; pipeline/evidence/completeness.py)
    doit --always-execute verify  certification baseline: every task re-runs, so doit's skip
                                  logic is no part of the evidence chain

The evidence tasks run after the step task groups dodo.py names when it creates them
(`evidence_tasks(after=...)`): explicit, rather than guessed from the modules loaded. They decide whether to re-run from a stamp of the
artifact trees (paths, sizes, modification times) and the git state taken when doit checks
them, i.e. after the steps ran in the same invocation; the evidence itself never trusts that
stamp and re-hashes every file. `verify` always runs: it only reads reports/trace.json.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from doit.tools import config_changed

from pipeline.ledger import checks
from pipeline.evidence.modes import DEVELOPMENT, STRICT
from pipeline.evidence.paths import baseline_path, model_report_path, package_check_path, package_path, report_paths
from pipeline.evidence.signing import signing_key_fingerprint
from pipeline.project.layout import ARTIFACTS_DIR, MODELS_DIR, STEPS, requirement_files
from pipeline.ledger.freshness import coded_action
from pipeline.project.tasking import runnable_models

STAMP_KEY = "evidence_stamp"


Signature = tuple[str, int, int, int, int]


def _signature(path: str, st: os.stat_result) -> Signature:
    """What identifies a file's content without reading it: path, size, mtime, ctime, inode.

    The change time is set by the kernel on every write and on every metadata change,
    `os.utime` included, and cannot be set back from user space: an in-place edit that keeps
    the size and restores the modification time still changes it (doit's own file check,
    mtime then MD5, would miss that edit; see pipeline.project.tasking.ContentChecker).
    """
    return (path, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def _walk(folder: str, entries: list[Signature]) -> None:
    try:
        with os.scandir(folder) as scan:
            children = sorted(scan, key=lambda e: e.name)
    except OSError:
        return
    for entry in children:
        if entry.is_dir(follow_symlinks=False):
            _walk(entry.path, entries)
            continue
        try:
            entries.append(_signature(entry.path, entry.stat()))
        except OSError:
            continue


def _tree_signature(paths: list[Path]) -> list[Signature]:
    entries: list[Signature] = []
    for base in paths:
        if base.is_file():
            entries.append(_signature(base.as_posix(), base.stat()))
        else:
            _walk(base.as_posix(), entries)
    return entries


class TreeStamp:
    """doit `uptodate` object: up to date while the trees and the git state are unchanged.

    Unlike `config_changed`, the stamp is computed when doit checks the task (after its
    dependencies ran), not when dodo.py is loaded, so it does not lag one run.
    """

    def __init__(self, paths: Callable[[], list[Path]]) -> None:
        self.paths = paths

    def stamp(self) -> str:
        git = _git_state()
        payload = json.dumps([_tree_signature(self.paths()), git.commit, git.dirty])
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()

    def configure_task(self, task: Any) -> None:
        task.value_savers.append(lambda: {STAMP_KEY: self.stamp()})

    def __call__(self, task: Any, values: dict[str, Any]) -> bool:
        previous = values.get(STAMP_KEY)
        return previous is not None and previous == self.stamp()


_GIT_STATE: list[Any] = []


def _git_state() -> Any:
    """The checkout's state, queried once per doit process (the steps write only ignored files)."""
    if not _GIT_STATE:
        from pipeline.ledger.tools import git_state

        _GIT_STATE.append(git_state("."))
    return _GIT_STATE[0]


def _check_module_sources() -> list[str]:
    """Source files of the modules CHECK_MODULES names at run time (a project may register its own,
    outside the package): a changed registry changes the trace."""
    # Only the top-level package is looked up with importlib: find_spec on a dotted name imports
    # every parent package (pipeline.semantics loads NumPy), which task listing must not pay for.
    sources = []
    for name in checks.CHECK_MODULES:
        top, *rest = name.split(".")
        try:
            spec = importlib.util.find_spec(top)
        except (ImportError, ValueError):
            spec = None
        if spec is None:
            continue
        if not rest:
            if spec.origin and Path(spec.origin).is_file():
                sources.append(_relative(Path(spec.origin)))
            continue
        for folder in spec.submodule_search_locations or ():
            base = Path(folder).joinpath(*rest)
            found = next((c for c in (base.with_suffix(".py"), base / "__init__.py") if c.is_file()), None)
            if found is not None:
                sources.append(_relative(found))
                break
    return sources


def _common_file_deps() -> list[str]:
    """The requirement set, the accepted baseline and the registered check modules; the evidence step's
    own code (its import closure) and tools are added by dodo.py (pipeline/ledger/dependencies.py)."""
    deps = [p.as_posix() for p in requirement_files(".")]
    if baseline_path(".").is_file():
        deps.append(baseline_path(".").as_posix())
    return sorted(set(deps + _check_module_sources()))


def _relative(path: Path) -> str:
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def evidence_mode() -> str:
    """The mode of this doit run: `strict` when the command line says `strict=1` (a doit variable).

    Read when the tasks are created (in the main process), so that `doit -n N` workers get it
    as an action argument.
    """
    from doit import get_var

    value = str(get_var("strict", "") or "").strip().lower()
    return STRICT if value not in ("", "0", "false", "no", "off") else DEVELOPMENT


def excluded_on_command_line() -> list[str]:
    """The models named by `exclude=m1,m2` on the doit command line (a doit variable), sorted."""
    from doit import get_var

    value = str(get_var("exclude", "") or "")
    return sorted({name.strip() for name in value.split(",") if name.strip()})


def _package_action(model: str, mode: str = DEVELOPMENT) -> bool:
    from pipeline.evidence.build import build_model_package

    build_model_package(model, ".", mode=mode)   # the verdict: package-check.json, which the console reads
    return True  # the verdict goes to package-check.json; `verify` decides pass/fail


def _reports_action(mode: str = DEVELOPMENT, exclude: Sequence[str] = ()) -> bool:
    from pipeline.evidence.build import build_reports

    build_reports(".", mode=mode, exclude=exclude)
    return True


def _model_trees(model: str) -> Callable[[], list[Path]]:
    return lambda: [Path(ARTIFACTS_DIR) / model]


def _verify_action() -> bool:
    from pipeline.evidence.summary import error_count, summary_text
    from pipeline.terminal import say

    document = json.loads(report_paths(".")["json"].read_text(encoding="utf-8"))
    say(summary_text(document))
    return error_count(document) == 0


def evidence_tasks(after: Sequence[str] = ()) -> tuple[Callable[[], Iterator[dict[str, Any]]], Callable[[], dict[str, Any]]]:
    """`task_evidence` and `task_verify` for a dodo file whose step task groups are `after`.

    dodo.py: `task_evidence, task_verify = evidence_tasks(after=("export", ...))`.
    """
    unknown = [name for name in after if name not in STEPS]
    if unknown:
        raise ValueError(f"unknown step task group(s) {', '.join(unknown)}; steps are {', '.join(STEPS)}")

    def task_evidence() -> Iterator[dict[str, Any]]:
        """Evidence package per model, then trace matrix (HTML, CSV, Markdown, JSON) and JUnit XML."""
        models = runnable_models(".")
        common = _common_file_deps()
        mode = evidence_mode()
        exclude = excluded_on_command_line()
        for model in models:
            inputs = sorted(p.as_posix() for p in (Path(MODELS_DIR) / model).rglob("*") if p.is_file())
            yield {
                "name": model,
                "doc": f"evidence package reports/{model}/evidence.zip",
                "actions": [(coded_action(_package_action, f"evidence:{model}"), [model, mode])],
                "file_dep": common + inputs,
                # its own model's steps only: a package starts while other models' steps still run
                "task_dep": [f"{step}:{model}" for step in after],
                "targets": [package_path(model).as_posix(), package_check_path(model).as_posix()],
                "uptodate": [TreeStamp(_model_trees(model)),
                             config_changed({"mode": mode, "signing_key": signing_key_fingerprint()})],
                "clean": True,
            }
        yield {
            "name": "reports",
            "doc": "trace matrix and JUnit XML under reports/",
            "actions": [(coded_action(_reports_action, "evidence:reports"), [mode, exclude])],
            "file_dep": common + [package_check_path(m).as_posix() for m in models],
            "task_dep": list(after),
            "targets": [p.as_posix() for p in report_paths(".").values()] + [model_report_path(m).as_posix() for m in models],
            "uptodate": [TreeStamp(lambda: [Path(ARTIFACTS_DIR), Path(MODELS_DIR)]),
                         config_changed({"mode": mode} | ({"exclude": exclude} if exclude else {}))],
            "clean": True,
        }

    def task_verify() -> dict[str, Any]:
        """Everything, then the summary (model x step verdicts, coverage); fails if any requirement fails."""
        models = runnable_models(".")
        return {
            "actions": [coded_action(_verify_action, "verify")],
            "file_dep": [p.as_posix() for p in report_paths(".").values()] + [package_path(m).as_posix() for m in models],
            "task_dep": ["evidence"],
            "uptodate": [False],
            "verbosity": 2,
        }

    return task_evidence, task_verify

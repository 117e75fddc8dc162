"""Merging the evidence of shards: one CI job per model, one job that builds the whole trace.

A shard is a project checkout where the chain ran for some models (`doit
evidence:<m>` and the tasks before it), leaving artifacts/<m>/ and reports/<m>/. The merge
copies those trees of every shard into one project (the merge job's checkout, the same
commit: models/ and requirements/ are its own), refusing a model that two shards bring or a
shard that brings a model the project does not ship, then builds the packages, the trace
matrix and the JUnit XML exactly as a single run does. Nothing is trusted from the shards'
reports: the merged reports are built from the artifacts, whose every file is re-hashed.
The evidence of a merged run therefore equals that of one machine running every model
(tests/evidence/test_evidence_platforms.py).

A shard comes from a CI runner, which may be compromised: its trees are hostile input.
The merge therefore works in three phases, and nothing is placed in the project unless
every phase succeeds for every shard:

1. judge: each tree is walked with `lstat` (no link followed, not even at the top); a
   symbolic link, a device, a FIFO or a socket anywhere, a file over MAX_FILE_BYTES, more
   than MAX_FILES files or MAX_TOTAL_BYTES bytes in a shard refuse the merge (EVID-E071),
   naming the path and what it is, before a byte is copied;
2. copy: every accepted file into a temporary folder inside the merge project, opened again
   without following a link (pipeline.files.readguard, `O_NOFOLLOW` per component) and copied
   only up to the size judged, so a file swapped for a link or grown since phase 1 is
   refused too;
3. rename: each model's staged trees are renamed into place; the temporary folder is
   removed whatever happens: SIGTERM and SIGINT raise within the merge (Python's default for
   SIGTERM would end the process without cleaning up) and are held back while it is removed.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import stat
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator

from pipeline.diagnostics import Location, PipelineError
from pipeline.project.layout import ARTIFACTS_DIR, REPORTS_DIR, check_output_folders, model_names
from pipeline.files.readguard import InputRefused, open_input
from pipeline.files.yamlguard import limit_from_env

E_MERGE = "EVID-E070"
E_SHARD_FILE = "EVID-E071"

# Bounds on what one shard may bring (docs/evidence.md, "Limits"); each can be raised by the
# environment variable named beside it. A tensor file holds at most 2 GiB of data
# (pipeline/nnef/tensorfile.py), so one file may be a little more.
MAX_FILE_BYTES = 2**31 + 4096      # PIPELINE_MAX_SHARD_FILE_BYTES
MAX_TOTAL_BYTES = 16 * 2**30       # PIPELINE_MAX_SHARD_BYTES
MAX_FILES = 100_000                # PIPELINE_MAX_SHARD_FILES
LIMIT_VARIABLES = {"file": "PIPELINE_MAX_SHARD_FILE_BYTES", "total": "PIPELINE_MAX_SHARD_BYTES",
                   "files": "PIPELINE_MAX_SHARD_FILES"}
CHUNK = 1 << 20


@dataclass
class _Tree:
    """One accepted tree of a shard: its folder, sub-folders and files (relative paths, sizes)."""

    source: Path
    folder: str          # ARTIFACTS_DIR or REPORTS_DIR
    model: str
    directories: list[str] = field(default_factory=list)
    files: list[tuple[str, int]] = field(default_factory=list)


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file or folder"


def _refuse(path: Path, message: str) -> PipelineError:
    return PipelineError(E_SHARD_FILE, f"{message}; the shard is refused and nothing was copied",
                         Location.in_file(path.as_posix()))


def _limits() -> dict[str, int]:
    return {"file": limit_from_env(LIMIT_VARIABLES["file"], MAX_FILE_BYTES),
            "total": limit_from_env(LIMIT_VARIABLES["total"], MAX_TOTAL_BYTES),
            "files": limit_from_env(LIMIT_VARIABLES["files"], MAX_FILES)}


def _real_folder(path: Path) -> bool:
    """Whether `path` is a folder that is not a link (False when absent); EVID-E071 for anything else."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return False
    if stat.S_ISDIR(info.st_mode):
        return True
    raise _refuse(path, f"{path.as_posix()} is {_kind(info.st_mode)}, not a folder")


def shard_models(shard: Path) -> list[str]:
    """The models a shard ran: the folders under its artifacts/ (never followed through a link)."""
    base = Path(shard) / ARTIFACTS_DIR
    if not _real_folder(base):
        raise PipelineError(E_MERGE, "not a shard: it has no artifacts/ folder", Location.in_file(shard))
    models = []
    with os.scandir(base) as entries:
        for entry in entries:
            mode = entry.stat(follow_symlinks=False).st_mode
            if stat.S_ISDIR(mode):
                models.append(entry.name)
            elif not stat.S_ISREG(mode):   # a plain file beside the model folders is not copied
                raise _refuse(Path(entry.path), f"artifacts/{entry.name} is {_kind(mode)}, which a shard may not hold")
    return sorted(models)


def _walk(tree: _Tree, limits: dict[str, int], totals: list[int]) -> None:
    """Judge every entry of `tree.source` with lstat; fill the tree's folders and files."""
    pending = [""]
    while pending:
        relative = pending.pop()
        folder = tree.source / relative if relative else tree.source
        with os.scandir(folder) as entries:
            listed = sorted(entries, key=lambda e: e.name)
        for entry in listed:
            path = f"{relative}/{entry.name}" if relative else entry.name
            shown = Path(tree.folder) / tree.model / path
            info = entry.stat(follow_symlinks=False)
            if stat.S_ISDIR(info.st_mode):
                tree.directories.append(path)
                pending.append(path)
            elif stat.S_ISREG(info.st_mode):
                if info.st_size > limits["file"]:
                    raise _refuse(shown, f"{shown.as_posix()} has {info.st_size} bytes, more than the limit of "
                                  f"{limits['file']} (raise it with {LIMIT_VARIABLES['file']})")
                totals[0] += 1
                totals[1] += info.st_size
                if totals[0] > limits["files"]:
                    raise _refuse(shown, f"the shard holds more than {limits['files']} files "
                                  f"(raise the limit with {LIMIT_VARIABLES['files']})")
                if totals[1] > limits["total"]:
                    raise _refuse(shown, f"the shard holds more than {limits['total']} bytes "
                                  f"(raise the limit with {LIMIT_VARIABLES['total']})")
                tree.files.append((path, info.st_size))
            else:
                raise _refuse(shown, f"{shown.as_posix()} is {_kind(info.st_mode)}, which a shard may not hold")


def judge_shard(shard: Path, models: Iterable[str]) -> list[_Tree]:
    """Every tree (artifacts/<m>, reports/<m>) of `shard` for `models`, walked and accepted, or EVID-E071."""
    limits = _limits()
    totals = [0, 0]   # files, bytes
    trees = []
    for model in models:
        for folder in (ARTIFACTS_DIR, REPORTS_DIR):
            source = shard / folder / model
            if folder == REPORTS_DIR and not _real_folder(shard / REPORTS_DIR):
                continue
            if not _real_folder(source):
                continue
            tree = _Tree(source, folder, model)
            _walk(tree, limits, totals)
            trees.append(tree)
    return trees


def _copy_file(tree: _Tree, relative: str, size: int, target: Path) -> None:
    """Copy one judged file: reopened without following a link, exactly the size judged."""
    shown = Path(tree.folder) / tree.model / relative
    try:
        fd, now = open_input(relative, base=tree.source, max_bytes=size)
    except InputRefused as refused:
        raise _refuse(shown, f"{shown.as_posix()}: {refused.reason} (it changed since the shard was judged)") from None
    with os.fdopen(fd, "rb") as source, open(target, "xb") as sink:
        remaining = size
        while remaining:
            chunk = source.read(min(CHUNK, remaining))
            if not chunk:
                break
            sink.write(chunk)
            remaining -= len(chunk)
        if remaining or source.read(1) or now != size:
            raise _refuse(shown, f"{shown.as_posix()} changed size while it was copied")


def _stage(trees: list[_Tree], staging: Path) -> None:
    for tree in trees:
        top = staging / tree.folder / tree.model
        top.mkdir(parents=True)
        for relative in tree.directories:
            (top / relative).mkdir()
        for relative, size in tree.files:
            _copy_file(tree, relative, size, top / relative)


def merge_shards(shards: Iterable[str | Path], root: str | Path = ".") -> dict[str, str]:
    """Copy every shard's artifacts/<m>/ and reports/<m>/ into `root`; model -> shard it came from.

    Raises PipelineError before anything is placed in `root`: EVID-E070 when a model comes
    from two shards, is not shipped by `root`, or is already present in `root`; EVID-E071
    when a shard holds a link, a device, a FIFO, a socket or more than the limits allow;
    PIPE-E012 when `root`'s artifacts/ or reports/ is a link.
    """
    base = Path(root)
    check_output_folders(base)
    shipped = set(model_names(base))
    origin: dict[str, str] = {}
    for shard in (Path(s) for s in shards):
        for model in shard_models(shard):
            if model not in shipped:
                raise PipelineError(E_MERGE, f"shard brings model '{model}', which this project does not ship "
                                    f"(models: {', '.join(sorted(shipped)) or 'none'})", Location.in_file(shard))
            if model in origin:
                raise PipelineError(E_MERGE, f"model '{model}' comes from two shards: {origin[model]} and {shard}",
                                    Location.in_file(shard))
            if os.path.lexists(base / ARTIFACTS_DIR / model) or os.path.lexists(base / REPORTS_DIR / model):
                raise PipelineError(E_MERGE, f"artifacts/{model} or reports/{model} already exists in the merge "
                                    "project; merge into a clean checkout", Location.in_file(base / ARTIFACTS_DIR / model))
            origin[model] = str(shard)
    by_shard: dict[str, list[str]] = {}
    for model, shard in sorted(origin.items()):
        by_shard.setdefault(shard, []).append(model)
    trees = [tree for shard, models in sorted(by_shard.items()) for tree in judge_shard(Path(shard), models)]
    for folder in (ARTIFACTS_DIR, REPORTS_DIR):
        (base / folder).mkdir(parents=True, exist_ok=True)
    placed: list[Path] = []
    with _signals_raise():
        staging = Path(tempfile.mkdtemp(prefix=".merge-", suffix=".tmp", dir=base))
        try:
            _stage(trees, staging)
            for tree in trees:
                target = base / tree.folder / tree.model
                os.rename(staging / tree.folder / tree.model, target)
                placed.append(target)
        except BaseException:
            with _signals_held():
                for target in placed:   # all or nothing: what was renamed into place goes again
                    shutil.rmtree(target, ignore_errors=True)
            raise
        finally:
            with _signals_held():
                shutil.rmtree(staging, ignore_errors=True)
    return origin


STOPPING = (signal.SIGTERM, signal.SIGINT)


def _stop(signum: int, frame: Any) -> None:
    """SIGTERM or SIGINT during a merge: an exception, so that the staging folder is removed on the way out
    (Python's default for SIGTERM ends the process at once, leaving it: 527 MB once)."""
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise SystemExit(128 + signum)


@contextlib.contextmanager
def _signals_raise() -> Iterator[None]:
    """Within the block, SIGTERM and SIGINT raise (`_stop`); the previous handlers come back after it.
    Only the main thread can set handlers; elsewhere the block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {signum: signal.signal(signum, _stop) for signum in STOPPING}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """SIGTERM and SIGINT held back while the block cleans up (delivered after it), so a second signal
    cannot stop the removal half way."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    signal.pthread_sigmask(signal.SIG_BLOCK, STOPPING)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOPPING)

"""Tool and environment identification: library versions, interpreter, platform, git commit.

Versions come from `importlib.metadata` (what is installed, not what a module claims). No
host name, user name, path or time is ever collected: records and packages must be
byte-identical on every machine with the same tools.
"""

from __future__ import annotations

import logging
import platform
import zlib
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Iterable

from pipeline.diagnostics import PipelineError
from pipeline.toolchain import process

# The programs it runs, none for a verdict: git names the commit (pipeline/ledger/dependencies.py).
TOOLS: tuple[str, ...] = ()

LOG = logging.getLogger(__name__)

# Distributions whose version can change an artifact or a verdict.
DEFAULT_DISTRIBUTIONS: tuple[str, ...] = (
    "nn-certification-pipeline",
    "numpy",
    "onnx",
    "onnxruntime",
    "nnef",
    "lark",
    "PyYAML",
    "doit",
    "junit-xml",
)
NOT_INSTALLED = "not installed"


def tool_versions(extra: Iterable[str] = ()) -> dict[str, str]:
    """Python plus each distribution's installed version ('not installed' when absent)."""
    versions = {"python": f"{platform.python_implementation()} {platform.python_version()}"}
    for name in sorted(set(DEFAULT_DISTRIBUTIONS) | set(extra), key=str.lower):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = NOT_INSTALLED
    return versions


def environment() -> dict[str, str]:
    """The execution environment at the level that can change results (no host identity)."""
    return {
        "os": platform.system(),
        "machine": platform.machine(),
        "python_implementation": platform.python_implementation(),
        "zlib": zlib.ZLIB_RUNTIME_VERSION,
    }


@dataclass(frozen=True)
class GitState:
    """The source revision: `commit` is None when the tree is not a git checkout."""

    commit: str | None
    dirty: bool = False
    reason: str = ""

    def to_json(self) -> dict[str, object]:
        if self.commit is None:
            return {"available": False, "reason": self.reason}
        return {"available": True, "commit": self.commit, "dirty": self.dirty}


def git_state(root: str | Path = ".") -> GitState:
    """HEAD commit of the checkout containing `root` and whether tracked files differ from it."""
    try:
        inside = process.run(["git", "rev-parse", "--show-toplevel"], cwd=root, timeout=30)
        if inside.returncode != 0:
            return GitState(None, reason="not a git checkout")
        if Path(inside.out.strip()).resolve() != Path(root).resolve():
            return GitState(None, reason="project root is not the root of a git checkout")
        head = process.run(["git", "rev-parse", "HEAD"], cwd=root, timeout=30)
        if head.returncode != 0:
            return GitState(None, reason="git checkout without a commit")
        try:
            status = process.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root, timeout=60,
                                 max_output=1 << 20)
        except process.OutputTooLarge:      # more than a MiB of changed files: dirty
            return GitState(head.out.strip(), dirty=True)
        return GitState(head.out.strip(), dirty=bool(status.out.strip()))
    except process.NotStarted as exc:
        if isinstance(exc.error, FileNotFoundError):
            return GitState(None, reason="git is not installed")
        return GitState(None, reason=f"git query failed: {exc.message}")
    except (OSError, PipelineError) as exc:
        LOG.warning("cannot query git: %s", exc)
        return GitState(None, reason=f"git query failed: {exc}")

"""What the steps' doit task modules share: source files as dependencies, a spec's deployments.

Task modules are imported to list tasks, so this module stays light (no step imported): a
no-op `doit verify` must not pay for onnx, lark or NumPy.
"""

from __future__ import annotations

from pathlib import Path

from pipeline.deploy import DeployError, load_deploy
from pipeline.layout import model_dir

PACKAGE = Path(__file__).resolve().parent
SOURCE_SUFFIXES = (".py", ".lark", ".nnef", ".c", ".h", ".cu", ".fbs", ".json", ".yaml")


def package_sources(globs: tuple[str, ...]) -> list[str]:
    """Project-relative source files under pipeline/ matching `globs` (a step's code as file_dep).

    A glob naming a folder (`"export"`) takes every source file under it, sub-folders included.
    """
    root = PACKAGE.parent
    found: set[Path] = set()
    for pattern in globs:
        folder = PACKAGE / pattern
        matches = sorted(folder.rglob("*")) if folder.is_dir() else sorted(PACKAGE.glob(pattern))
        found.update(p for p in matches if p.is_file() and p.suffix in SOURCE_SUFFIXES)
    return [p.relative_to(root).as_posix() for p in sorted(found)]


def spec_deployments(model: str, root: Path | str = ".") -> dict[str, tuple[str, ...]]:
    """Deployment name -> the targets of its items, from models/<m>/deploy.yaml ({} if unreadable).

    An unreadable spec yields no sub-targets; the step itself then reports the spec's errors.
    """
    try:
        spec = load_deploy(model_dir(model, root) / "deploy.yaml")
    except DeployError:
        return {}
    return {name: tuple(item.target for item in d.items) for name, d in spec.deployments.items()}

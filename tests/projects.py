"""Scratch projects for tests: the repository's models and requirements, linked, plus copied artifacts."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Iterable

from pipeline.project.layout import step_dir

ROOT = Path(__file__).resolve().parents[1]


def link_project(folder: Path) -> Path:
    """A scratch project whose models/ and requirements/ are links to the repository's."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("models", "requirements"):
        link = folder / name
        if not link.exists():
            link.symlink_to(ROOT / name)
    return folder


def copy_exports(source: Path, folder: Path, models: Iterable[str]) -> Path:
    """A scratch project at `folder` holding copies of the exports of `models` made under `source`."""
    root = link_project(folder)
    for model in models:
        shutil.copytree(step_dir(model, "export", source), step_dir(model, "export", root))
    return root


def with_deployments(source: Path, folder: Path, model: str, deployments: str, tail: str = "") -> Path:
    """A scratch project holding `model`'s export (made under `source`) and its own models/<model>/,
    whose deploy.yaml has `deployments` (YAML lines under `deployments:`) instead of the shipped ones
    and `tail` (top-level YAML, e.g. `platforms:`) appended."""
    root = copy_exports(source, folder, [model])
    (root / "models").unlink()
    shutil.copytree(ROOT / "models" / model, root / "models" / model)
    spec = root / "models" / model / "deploy.yaml"
    text = spec.read_text(encoding="utf-8")
    start, end = text.index("deployments:\n"), text.index("\nmet:")
    spec.write_text(text[:start] + "deployments:\n" + deployments.rstrip("\n") + text[end:] + tail, encoding="utf-8")
    return root

"""A copy of this project cut to a few models and deployments, as a git repository (what a CI runner checks out).

The recipe tests run the shipped CI recipe on it: every tracked file as in the working tree, the
models/ folders not kept removed, each kept model's deployments, validation vectors and MET runs
reduced, and the recipe's model matrix listing the kept models (what a team with those models
would write). Nothing else of the recipe is changed.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Mapping, Sequence

import yaml

REPO = Path(__file__).resolve().parents[2]
GIT_IDENTITY = ("-c", "user.name=recipe test", "-c", "user.email=recipe-test@invalid")


def tracked_files(repo: Path = REPO) -> list[str]:
    """The files a checkout of this working tree has: tracked, plus untracked ones git does not ignore."""
    out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=repo,
                         check=True, capture_output=True).stdout.decode("utf-8")
    return sorted({name for name in out.split("\0") if name and (repo / name).is_file()})


def set_gitlab_matrix(recipe: Path, models: Sequence[str]) -> None:
    """Rewrite the `MODEL: [...]` list of the GitLab recipe (the one line a team edits)."""
    text = recipe.read_text(encoding="utf-8")
    new, count = re.subn(r"(- MODEL: )\[[^\]]*\]", lambda m: f"{m.group(1)}[{', '.join(models)}]", text)
    if count != 1:
        raise ValueError(f"{recipe}: expected one `- MODEL: [...]` line, found {count}")
    recipe.write_text(new, encoding="utf-8")


def cut_project(target: Path, keep: Mapping[str, Sequence[str]], vectors: int, runs: int, repo: Path = REPO) -> Path:
    """Copy `repo` to `target` keeping the models of `keep` (model -> deployments), commit it, return it."""
    models = set(keep)
    for name in tracked_files(repo):
        parts = name.split("/")
        if parts[0] == "models" and len(parts) > 2 and not parts[1].startswith("_") and parts[1] not in models:
            continue
        destination = target / name
        destination.parent.mkdir(parents=True, exist_ok=True)
        destination.write_bytes((repo / name).read_bytes())
        destination.chmod((repo / name).stat().st_mode & 0o777)
    for model, deployments in keep.items():
        path = target / "models" / model / "deploy.yaml"
        spec = yaml.safe_load(path.read_text(encoding="utf-8"))
        missing = [d for d in deployments if d not in spec["deployments"]]
        if missing:
            raise ValueError(f"{model}: no deployment(s) {', '.join(missing)}")
        spec["deployments"] = {d: spec["deployments"][d] for d in deployments}
        spec["validation"]["vectors"] = vectors
        spec["met"]["runs"] = runs
        path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    set_gitlab_matrix(target / "ci/gitlab-ci.yml", sorted(models))
    subprocess.run(["git", "init", "-q"], cwd=target, check=True)
    subprocess.run(["git", *GIT_IDENTITY, "add", "-A"], cwd=target, check=True)
    subprocess.run(["git", *GIT_IDENTITY, "commit", "-q", "-m", "cut project"], cwd=target, check=True)
    return target


if __name__ == "__main__":   # for a person trying the recipe by hand: python -m tests.ci.cutproject DIR
    import sys

    print(cut_project(Path(sys.argv[1]), {"branch3": ["single", "paper3"], "lenet5": ["layer2", "convgpu", "convdla"]},
                      vectors=10, runs=100))

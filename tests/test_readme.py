"""The docs stand on their own: the README's commands are CI's, links resolve, nothing points outside."""

from __future__ import annotations

import re
import subprocess

import pytest

from tests.projects import ROOT

OUTSIDE = re.compile(r"\.\./shared|/work/shared|shared/DESIGN|NNEF-EXTENSION\.md|\bDESIGN\.md")


def _tracked() -> list[str]:
    try:
        listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, timeout=60, check=True)
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    return [name for name in listed.stdout.decode().split("\0") if name]


def test_the_readme_commands_are_the_ones_ci_runs() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```sh\n(.*?)```", readme, re.S)
    assert block is not None and readme.index("```sh") < readme.index("\n## "), "the commands come first"
    commands = [line for line in block.group(1).splitlines() if line.strip()]
    assert len(commands) == 2 and commands[0].endswith("doit verify") and commands[1].endswith("-m pytest")
    ci = (ROOT / ".ci/run").read_text(encoding="utf-8").splitlines()
    for command in commands:
        assert command in ci, f"CI does not run the README's `{command}`"


def test_no_file_refers_outside_the_repository() -> None:
    offenders = []
    for name in _tracked():
        path = ROOT / name
        if path.suffix not in (".py", ".md", ".yaml", ".nnef", ".lark", ".toml", ".txt", "") or not path.is_file():
            continue
        if name == "tests/test_readme.py":
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if OUTSIDE.search(line):
                offenders.append(f"{name}:{number}: {line.strip()[:100]}")
    assert offenders == []


@pytest.mark.parametrize("name", ["README.md"] + sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").rglob("*.md")))
def test_relative_links_resolve(name: str) -> None:
    page = ROOT / name
    text = page.read_text(encoding="utf-8")
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        path = target.split("#", 1)[0]
        if path and not (page.parent / path).exists():
            broken.append(target)
    assert broken == [], f"{name}: {broken}"

"""tools/setup: the one package list the README's commands and CI use, and a machine without some tools.

A machine without the AArch64 cross compiler and qemu is made here by a PATH without them (a folder
of links to everything in /usr/bin but those): the pipeline finds its tools on the PATH
(`shutil.which`), and so does the setup script.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from pipeline.toolchain.platforms import AARCH64, PACKAGES
from tests.projects import ROOT

SETUP = ROOT / "tools" / "setup"
HIDDEN = ("aarch64-linux-gnu-", "qemu-aarch64")


def listed() -> dict[str, tuple[str, str, list[str]]]:
    """tools/setup's PACKAGES: command -> (job, what for, Debian packages)."""
    text = SETUP.read_text(encoding="utf-8")
    block = re.search(r"^PACKAGES='\n(.*?)^'", text, re.S | re.M)
    assert block, "tools/setup holds its list in PACKAGES='...'"
    rows = {}
    for line in block.group(1).splitlines():
        job, command, packages, why = line.split("|")
        rows[command] = (job, why, packages.split())
    return rows


def test_one_list_of_packages() -> None:
    """The README's commands and CI come through tools/setup, which names every package the pipeline's
    own messages name (pipeline/toolchain/platforms.py); CI holds no list of its own."""
    rows = listed()
    packages = {p for _, _, found in rows.values() for p in found}
    assert set(PACKAGES.values()) <= packages
    assert {AARCH64.compiler_package, AARCH64.runner.package} <= {p for job, _, found in rows.values() if job == "verify"
                                                                 for p in found}
    ci = (ROOT / ".ci/run").read_text(encoding="utf-8")
    assert "apt-get" not in ci and "bash tools/setup test" in ci and "bash tools/setup verify" in ci
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "bash tools/setup verify && .venv/bin/doit verify" in readme


@pytest.fixture
def without_aarch64(tmp_path: Path) -> str:
    """A PATH with every program of /usr/bin except the AArch64 cross tools and qemu-aarch64."""
    if shutil.which("bash") is None:
        pytest.skip("no bash")
    folder = tmp_path / "bin"
    folder.mkdir()
    for entry in os.scandir("/usr/bin"):
        if not entry.name.startswith(HIDDEN):
            (folder / entry.name).symlink_to(entry.path)
    return str(folder)


def test_setup_says_what_to_install_and_carries_on(without_aarch64: str) -> None:
    env = {**os.environ, "PATH": without_aarch64}
    result = subprocess.run(["bash", str(SETUP), "verify", "--system-only", "--no-system"], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "NOT installed (--no-system)" in result.stdout
    assert "gcc-aarch64-linux-gnu libc6-dev-arm64-cross: the aarch64 deployments" in result.stdout
    assert "qemu-user: the aarch64 deployments" in result.stdout
    assert "sudo apt-get install" in result.stdout and " gcc-aarch64-linux-gnu" in result.stdout
    # a bad argument is a usage error, not an install
    bad = subprocess.run(["bash", str(SETUP), "everything"], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=60)
    assert bad.returncode == 2 and "unknown argument" in bad.stderr


def test_without_the_cross_compiler_the_checks_say_not_run_and_name_the_package(
        without_aarch64: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """codegen.static on an aarch64 deployment: `not run` naming gcc-aarch64-linux-gnu (the source scans still
    run), never a failure; the trace matrix then keeps the host's passes (tests/evidence, partial)."""
    import numpy as np

    from pipeline.codegen import checks
    from pipeline.ledger.checks import Verdict
    from tests.codegen import cghelpers as H

    split = H.single_item(tmp_path / "split", "    x = external<scalar>(shape = [1, 8]);\n    y = relu(x);\n", {})
    code = tmp_path / "code"
    H.generate(split, split, code, 4, tmp_path)
    monkeypatch.setenv("PATH", without_aarch64)
    results = {r.check_id: r for r in checks.evaluate("m/aarch64", code, tmp_path, tmp_path / "scratch",
                                                      platform=AARCH64)}
    static = results[checks.STATIC]
    assert static.verdict is Verdict.NOT_RUN, static.reason
    assert "gcc-aarch64-linux-gnu" in static.reason and "apt-get install" in static.reason
    assert results[checks.PLATFORM].verdict is Verdict.NOT_RUN
    assert results[checks.TRACE].verdict is Verdict.PASS
    assert np.isfinite(static.measured["functions"])

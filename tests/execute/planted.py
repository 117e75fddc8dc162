"""Planted defects shared by the execute checks' tests."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np


def flipped_outputs(expected: Path, folder: Path, name: str) -> Path:
    """A copy of the outputs folder `expected` in `folder` whose output `name` has its last bit flipped:
    a build computing other bits than the qualified one."""
    shutil.copytree(expected, folder)
    data = bytearray((folder / f"{name}.dat").read_bytes())
    data[-1] ^= 0x01
    (folder / f"{name}.dat").write_bytes(bytes(data))
    return folder


def qualified_item(root: Path, body: str, x: np.ndarray) -> tuple[Path, Path, Path, dict[str, Any]]:
    """A small generated item in `root` (conv weights seeded), its input vectors `x` (5 vectors) and the
    qualified build's outputs on them: (code, inputs, expected, manifest), what a check's build is judged
    against."""
    from pipeline.execute.harness import run_harness
    from pipeline.nnef.tensorfile import write_tensor
    from pipeline.toolchain.cc import compile_and_link
    from tests.codegen import cghelpers as H

    _, code = H.generated_code(root, body, {"f": np.random.default_rng(1).standard_normal((3, 2, 3, 3))})
    inputs = root / "inputs"
    write_tensor(inputs / "x.dat", x)
    manifest = json.loads((code / "build.json").read_text())
    expected = root / "expected"
    run_harness(compile_and_link(code, manifest["sources"], root / "plain", 4).binary, inputs, expected, 5)
    return code, inputs, expected, manifest

"""Planted defects shared by the execute checks' tests."""

from __future__ import annotations

import shutil
from pathlib import Path


def flipped_outputs(expected: Path, folder: Path, name: str) -> Path:
    """A copy of the outputs folder `expected` in `folder` whose output `name` has its last bit flipped:
    a build computing other bits than the qualified one."""
    shutil.copytree(expected, folder)
    data = bytearray((folder / f"{name}.dat").read_bytes())
    data[-1] ^= 0x01
    (folder / f"{name}.dat").write_bytes(bytes(data))
    return folder

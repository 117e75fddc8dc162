"""Fixtures every test folder shares.

Helper modules are imported as packages (`from tests.codegen import cghelpers as H`); no
test changes `sys.path`. Exporting the shipped models is the slow common start of many
tests, so it happens once per session (`exported_project`), and tests that write copy it
(`project_copy`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import pytest

from pipeline.project.layout import model_names
from tests.projects import ROOT, copy_exports, link_project


@pytest.fixture(scope="session")
def repo_root() -> Path:
    """The repository checkout (read-only for tests: write under tmp_path)."""
    return ROOT


@pytest.fixture(scope="session")
def shipped_models() -> list[str]:
    """Every model under models/."""
    return model_names(ROOT)


@pytest.fixture(scope="session")
def exported_project(tmp_path_factory: pytest.TempPathFactory, shipped_models: list[str]) -> Path:
    """A scratch project where the export step has run for every shipped model (do not write into it)."""
    from pipeline.export.step import run_export_step

    root = link_project(tmp_path_factory.mktemp("exported"))
    for model in shipped_models:
        run_export_step(model, root)
    return root


@pytest.fixture
def project_copy(tmp_path: Path, exported_project: Path) -> Callable[..., Path]:
    """`project_copy(*models)`: a writable project holding the exports of `models` (default all)."""

    def make(*models: str, folder: str = "project") -> Path:
        return copy_exports(exported_project, tmp_path / folder, models or model_names(ROOT))

    return make


@pytest.fixture(scope="session")
def dla_mixed(exported_project: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple:
    """lenet5 with nvdla items next to cpu items, split, generated, run and compared once (tests/execute/dlamixed.py)."""
    from tests.execute.dlamixed import build

    return build(exported_project, tmp_path_factory.mktemp("dlamixed"))

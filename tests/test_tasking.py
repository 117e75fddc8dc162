"""The doit task plumbing: the spec outline cache and the file-change check (a step's code: tests/test_closure.py)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from pipeline.project import tasking
from pipeline.project.deploy import load_deploy
from pipeline.project.layout import model_names
from tests.projects import ROOT


def _project(tmp_path: Path, model: str = "lenet5") -> Path:
    (tmp_path / "models").mkdir()
    shutil.copytree(ROOT / "models" / model, tmp_path / "models" / model)
    return tmp_path


@pytest.mark.parametrize("model", model_names(ROOT))
def test_outline_matches_the_validated_spec(tmp_path: Path, model: str) -> None:
    root = _project(tmp_path, model)
    spec = load_deploy(root / "models" / model / "deploy.yaml")
    for attempt in ("computed", "cached"):
        outline = tasking.deploy_outline(model, root)
        assert outline is not None, attempt
        assert list(outline) == list(spec.deployments)
        for name, deployment in spec.deployments.items():
            assert outline[name].targets == tuple(item.target for item in deployment.items)
            assert set(outline[name].item_files) >= {deployment.default_item, *deployment.allocation}
            assert outline[name].rewritten == bool(deployment.rewrites)
        assert (root / tasking.OUTLINE_CACHE).is_file()


def test_outline_follows_every_change_of_the_spec(tmp_path: Path) -> None:
    root = _project(tmp_path)
    spec = root / "models" / "lenet5" / "deploy.yaml"
    before = tasking.spec_deployments("lenet5", root)
    assert "single" in before
    text = spec.read_text(encoding="utf-8")
    stat = spec.stat()
    # same size, same modification time, one deployment renamed: the content key still changes
    spec.write_text(text.replace("single:", "singl2:", 1), encoding="utf-8")
    os.utime(spec, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    after = tasking.spec_deployments("lenet5", root)
    assert "singl2" in after and "single" not in after
    spec.write_text("deployments: [unclosed", encoding="utf-8")
    assert tasking.deploy_outline("lenet5", root) is None  # the step reports the spec's errors
    assert tasking.spec_deployments("lenet5", root) == {}


def test_a_corrupt_outline_cache_is_recomputed(tmp_path: Path) -> None:
    root = _project(tmp_path)
    (root / tasking.OUTLINE_CACHE).write_text("{not json", encoding="utf-8")
    assert "single" in tasking.spec_deployments("lenet5", root)
    (root / tasking.OUTLINE_CACHE).write_text('{"loader": "forged", "models": {"lenet5": {"spec": "x"}}}',
                                             encoding="utf-8")
    assert "single" in tasking.spec_deployments("lenet5", root)


def test_content_checker_catches_a_same_size_edit_that_restores_the_mtime(tmp_path: Path) -> None:
    checker = tasking.ContentChecker()
    path = tmp_path / "weights.dat"
    path.write_bytes(b"0123456789")
    state = checker.get_state(str(path), None)
    assert state is not None
    assert not checker.check_modified(str(path), checker.info(str(path)), state)
    assert checker.get_state(str(path), state) is None  # unchanged: doit keeps the saved state

    stat = path.stat()
    path.write_bytes(b"0123456780")
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert path.stat().st_mtime == stat.st_mtime and path.stat().st_size == stat.st_size
    assert checker.check_modified(str(path), checker.info(str(path)), state)

    state = checker.get_state(str(path), state)
    os.utime(path)  # touched, content unchanged: the MD5 decides, as in doit
    assert not checker.check_modified(str(path), checker.info(str(path)), state)


def test_content_checker_judges_a_state_saved_by_another_checker_afresh(tmp_path: Path) -> None:
    checker = tasking.ContentChecker()
    path = tmp_path / "x"
    path.write_text("x")
    md5_state = [path.stat().st_mtime, 1, "9dd4e461268c8034f5c8564e155c67a6"]
    assert checker.check_modified(str(path), checker.info(str(path)), md5_state)

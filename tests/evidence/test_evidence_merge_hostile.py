"""`evidence merge` takes shards from CI runners: a compromised runner must not reach the merge machine.

Each case is a shard as an attacker would publish it (issue 28): a file linked to a file of
the merge machine, a link to /dev/zero, a FIFO, a linked model folder, an oversize file. The
merge must refuse it with a coded error naming the path, before anything is placed in the
merge project, and without reading the link's target.
"""

from __future__ import annotations

import contextlib
import os
import resource
import shutil
import signal
import socket
import time
from pathlib import Path
from typing import Iterator

import pytest

from pipeline import cli
from pipeline.diagnostics import PipelineError
from pipeline.evidence.merge import merge_shards
from tests.evidence.evidence_fakeproject import FakeProject

SECRET = b"merge-machine secret: do not ship\n"
WRITE_LIMIT = 256 << 20


@contextlib.contextmanager
def writes_bounded() -> Iterator[None]:
    """No file this process writes may exceed 256 MiB within the block: a merge that followed the link
    to /dev/zero (or copied the sparse 64 GiB file) would otherwise fill the disk of the machine running
    the tests, as it once filled the merge machine's. Beyond the bound a write fails (EFBIG) instead."""
    previous_handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    previous = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (WRITE_LIMIT, previous[1]))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, previous)
        signal.signal(signal.SIGXFSZ, previous_handler)


def merge(shards: list[Path], merged: Path) -> dict[str, str]:
    with writes_bounded():
        return merge_shards(shards, merged)


@pytest.fixture
def shards(tmp_path: Path, registry: None) -> tuple[Path, Path, Path]:
    """(shard of alpha, shard of beta, clean merge project): the layout of ci/gitlab-ci.yml."""
    built = tmp_path / "built"
    project = FakeProject(built)
    project.add_model("alpha")
    project.add_model("beta")
    roots = []
    for name, model in (("a", "alpha"), ("b", "beta")):
        shard = tmp_path / name
        shutil.copytree(built / "artifacts" / model, shard / "artifacts" / model)
        roots.append(shard)
    merged = tmp_path / "merged"
    shutil.copytree(built / "models", merged / "models")
    shutil.copytree(built / "requirements", merged / "requirements")
    return roots[0], roots[1], merged


def _refused(shards: list[Path], merged: Path, code: str = "EVID-E071") -> PipelineError:
    started = time.perf_counter()
    with pytest.raises(PipelineError) as caught:
        merge(shards, merged)
    assert time.perf_counter() - started < 10
    assert caught.value.code == code, caught.value
    assert not (merged / "artifacts" / "alpha").exists() and not (merged / "artifacts" / "beta").exists(), \
        "a refused merge placed files in the project"
    assert not [p for p in merged.iterdir() if p.name.startswith(".merge-")], "the temporary folder was left"
    return caught.value


def test_clean_shards_merge(shards: tuple[Path, Path, Path]) -> None:
    a, b, merged = shards
    assert merge([a, b], merged) == {"alpha": str(a), "beta": str(b)}
    assert (merged / "artifacts/alpha/export/graph.nnef").read_bytes() == (a / "artifacts/alpha/export/graph.nnef").read_bytes()
    assert not [p for p in merged.iterdir() if p.name.startswith(".merge-")]


def test_a_file_linked_to_the_merge_machine_is_refused_not_copied(shards: tuple[Path, Path, Path], tmp_path: Path) -> None:
    a, b, merged = shards
    secret = tmp_path / "secret.txt"
    secret.write_bytes(SECRET)
    (a / "artifacts/alpha/export/weights/stolen.dat").symlink_to(secret)   # issue 28: once packed and VERIFY PASSED
    error = _refused([a, b], merged)
    assert "stolen.dat" in error.message and "symbolic link" in error.message
    assert not any(SECRET in p.read_bytes() for p in merged.rglob("*") if p.is_file())


def test_a_link_to_dev_zero_is_refused_at_once(shards: tuple[Path, Path, Path]) -> None:
    a, b, merged = shards
    (a / "artifacts/alpha/export/zero.dat").symlink_to("/dev/zero")   # once: wrote until the disk was full
    assert "symbolic link" in _refused([a, b], merged).message


def test_a_fifo_is_refused_before_anything_is_copied(shards: tuple[Path, Path, Path]) -> None:
    a, b, merged = shards
    os.mkfifo(b / "artifacts/beta/petri/pipe")   # once: left a half-copied shard behind
    error = _refused([a, b], merged)
    assert "a FIFO" in error.message and "pipe" in error.message


def test_a_socket_is_refused(shards: tuple[Path, Path, Path], tmp_path: Path) -> None:
    a, b, merged = shards
    path = a / "artifacts/alpha/s.sock"
    if len(str(path)) > 100:
        pytest.skip("the temporary path is too long for a UNIX socket name")
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(str(path))
        assert "a socket" in _refused([a, b], merged).message


def test_linked_folders_are_refused(shards: tuple[Path, Path, Path], tmp_path: Path) -> None:
    a, b, merged = shards
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "record.json").write_bytes(SECRET)
    shutil.move(str(a / "artifacts/alpha/check"), str(tmp_path / "check-real"))
    (a / "artifacts/alpha/check").symlink_to(elsewhere)                  # a linked step folder
    assert "symbolic link" in _refused([a, b], merged).message
    (a / "artifacts/alpha/check").unlink()
    shutil.move(str(tmp_path / "check-real"), str(a / "artifacts/alpha/check"))
    shutil.move(str(b / "artifacts" / "beta"), str(tmp_path / "beta-real"))
    (b / "artifacts" / "beta").symlink_to(tmp_path / "beta-real")        # a linked model folder
    assert "symbolic link" in _refused([a, b], merged).message
    (b / "artifacts" / "beta").unlink()
    shutil.move(str(tmp_path / "beta-real"), str(b / "artifacts" / "beta"))
    shutil.move(str(b / "artifacts"), str(tmp_path / "artifacts-real"))
    (b / "artifacts").symlink_to(tmp_path / "artifacts-real")            # a linked artifacts/
    assert "symbolic link" in _refused([a, b], merged).message


def test_a_linked_reports_folder_is_refused(shards: tuple[Path, Path, Path], tmp_path: Path) -> None:
    a, b, merged = shards
    (tmp_path / "r").mkdir()
    (a / "reports").mkdir()
    (a / "reports" / "alpha").symlink_to(tmp_path / "r")
    assert "symbolic link" in _refused([a, b], merged).message


def test_oversize_and_too_many_files_are_refused(shards: tuple[Path, Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    a, b, merged = shards
    with open(a / "artifacts/alpha/export/huge.dat", "wb") as handle:   # sparse: 64 GiB declared, nothing on disk
        handle.truncate(64 << 30)
    assert "more than the limit" in _refused([a, b], merged).message
    (a / "artifacts/alpha/export/huge.dat").unlink()
    monkeypatch.setenv("PIPELINE_MAX_SHARD_FILES", "3")
    assert "more than 3 files" in _refused([a, b], merged).message
    monkeypatch.setenv("PIPELINE_MAX_SHARD_FILES", "100000")
    monkeypatch.setenv("PIPELINE_MAX_SHARD_BYTES", "100")
    assert "more than 100 bytes" in _refused([a, b], merged).message


def test_a_file_swapped_for_a_link_after_the_walk_is_refused(shards: tuple[Path, Path, Path], tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """The copy reopens every file without following links: a race between the walk and the copy is caught."""
    from pipeline.evidence import merge

    a, b, merged = shards
    secret = tmp_path / "secret.txt"
    secret.write_bytes(SECRET)
    judge = merge.judge_shard

    def judge_then_swap(shard: Path, models: list[str]) -> list:
        trees = judge(shard, models)
        if shard == b:
            target = b / "artifacts/beta/export/graph.nnef"
            target.unlink()
            target.symlink_to(secret)
        return trees

    monkeypatch.setattr(merge, "judge_shard", judge_then_swap)
    assert "symbolic link" in _refused([a, b], merged).message


def test_a_linked_merge_project_output_folder_is_refused(shards: tuple[Path, Path, Path], tmp_path: Path) -> None:
    a, b, merged = shards
    (tmp_path / "out").mkdir()
    (merged / "artifacts").symlink_to(tmp_path / "out")
    with pytest.raises(PipelineError) as caught:
        merge([a, b], merged)
    assert caught.value.code == "PIPE-E012" and not list((tmp_path / "out").iterdir())


def test_the_command_reports_the_refusal_without_traceback(shards: tuple[Path, Path, Path], tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    a, b, merged = shards
    (a / "artifacts/alpha/export/passwd.dat").symlink_to("/etc/passwd")
    monkeypatch.setattr(cli, "COMMAND_MODULES", ("pipeline.evidence.command",))
    with writes_bounded():
        assert cli.main(["evidence", "merge", str(a), str(b), "--root", str(merged)]) == 2
    err = capsys.readouterr().err
    assert "EVID-E071" in err and "passwd.dat" in err and "Traceback" not in err and "root:" not in err

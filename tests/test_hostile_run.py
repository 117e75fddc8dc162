"""A run that goes wrong: no traceback, coded I/O errors, nothing half-written, nothing stale recorded.

- every `python -m pipeline` command turns an exception no step anticipated into PIPE-E900
  (an OSError into PIPE-E901 with the path), exit 2, the traceback only with --debug or
  NNCERT_DEBUG=1;
- pipeline.files.atomic turns a refused write (ENOSPC, EROFS, EACCES, EDQUOT) into WriteError
  (PIPE-E901) and leaves the previous file and no temporary behind: checked with a real
  full tmpfs when this machine lets us mount one, and with os.fsync/os.replace patched (a full disk often shows at fsync);
- a doit step action starts from an emptied folder, records a failure in failed.json and
  removes the later steps that read what is gone; record_step refuses an output this run
  cannot have written;
- end to end: `doit` in a scratch copy of one model, then the export truncated, then the
  ONNX model broken: the failing step's outputs are gone and no later step keeps a `pass`.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline import cli

from pipeline.files import atomic
from pipeline.files.atomic import WriteError, write_bytes, write_json
from pipeline.diagnostics import IO_ERROR, PipelineError
from pipeline.project.layout import STEPS, step_dir
from pipeline.ledger import freshness
from pipeline.ledger.freshness import FAILED_FILE, fresh_run, invalidate_dependents, step_action
from pipeline.ledger.records import check_records, record_step
from tests.projects import ROOT

MODEL = "inception"  # the smallest shipped model


# -- no traceback at the command line

def _boom(*_args: object, **_kwargs: object) -> None:
    raise KeyError("the planted bug")


def _disk_full(*_args: object, **_kwargs: object) -> None:
    raise OSError(errno.ENOSPC, "No space left on device", "/out/graph.nnef")


def _plant(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, fault: object) -> list[str]:
    """`check FILE` whose checker raises `fault` (a bug planted where the command cannot expect it)."""
    monkeypatch.setattr("pipeline.nnef.command.check_paths", fault)
    path = tmp_path / "g.nnef"
    path.write_text("version 1.0;\n")
    return ["check", str(path)]


def test_an_unanticipated_exception_is_an_internal_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    argv = _plant(monkeypatch, tmp_path, _boom)
    monkeypatch.delenv("NNCERT_DEBUG", raising=False)
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert "error PIPE-E900: internal error: KeyError: 'the planted bug'" in err
    assert "Traceback" not in err
    assert cli.main(["--debug", *argv]) == 2
    assert "Traceback (most recent call last)" in capsys.readouterr().err
    monkeypatch.setenv("NNCERT_DEBUG", "1")
    assert cli.main(argv) == 2
    assert "Traceback (most recent call last)" in capsys.readouterr().err


def test_an_os_error_is_coded_with_its_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(_plant(monkeypatch, tmp_path, _disk_full)) == 2
    err = capsys.readouterr().err
    assert f"/out/graph.nnef: error {IO_ERROR}: No space left on device (ENOSPC)" in err and "Traceback" not in err


@pytest.mark.parametrize("argv", [["petri", "/nonexistent/x.nnef"], ["interpret", "/dev/null"],
                                  ["evidence", "verify", "/dev/null"], ["check", "/dev/zero"]])
def test_commands_on_odd_inputs_never_print_a_traceback(argv: list[str]) -> None:
    done = subprocess.run([sys.executable, "-m", "pipeline", *argv], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "NNCERT_DEBUG": ""})
    assert done.returncode in (1, 2), done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    assert any(f"-E{n}" in done.stderr + done.stdout for n in range(10)) or "error:" in done.stderr


# -- refused writes

@pytest.mark.parametrize("number", [errno.ENOSPC, errno.EROFS, errno.EACCES, errno.EDQUOT])
@pytest.mark.parametrize("where", ["fsync", "replace"])
def test_a_refused_write_is_coded_and_leaves_the_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          number: int, where: str) -> None:
    target = tmp_path / "a.json"
    write_json(target, {"schema_version": 1, "old": True})
    before = target.read_bytes()

    def refuse(*_args: object, **_kwargs: object) -> None:
        raise OSError(number, os.strerror(number))

    monkeypatch.setattr(os, where, refuse)
    with pytest.raises(WriteError) as info:
        write_json(target, {"schema_version": 1, "new": True})
    monkeypatch.undo()
    assert info.value.code == IO_ERROR and info.value.errno == number
    assert str(target) in str(info.value) and errno.errorcode[number] in str(info.value)
    assert isinstance(info.value, OSError) and isinstance(info.value, PipelineError)
    assert target.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json"], "no temporary left behind"


@pytest.fixture
def tiny_tmpfs(tmp_path: Path):
    mount = tmp_path / "tiny"
    mount.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root and mount(8)")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], capture_output=True)


def test_a_full_disk_ends_in_a_coded_error_and_nothing_half_written(tiny_tmpfs: Path) -> None:
    target = tiny_tmpfs / "out" / "tensor.dat"
    write_bytes(target, b"old")
    with pytest.raises(WriteError) as info:
        write_bytes(target, b"\0" * (1 << 20))
    assert info.value.errno == errno.ENOSPC and "ENOSPC" in str(info.value)
    assert target.read_bytes() == b"old"
    assert [p.name for p in target.parent.iterdir()] == ["tensor.dat"]
    done = subprocess.run([sys.executable, "-m", "pipeline", "export", str(ROOT / "models" / MODEL / "model.onnx"),
                           str(tiny_tmpfs / "export"), "--no-validate"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "EXPORT-E010" in done.stderr or IO_ERROR in done.stderr
    assert not (tiny_tmpfs / "export").exists(), "the export is all or nothing"


# -- step freshness (unit)

def _project(tmp_path: Path) -> Path:
    for step in ("export", "split", "petri"):
        write_json(step_dir("m", step, tmp_path) / "checks.json", {"schema_version": 1, "results": []})
    write_bytes(step_dir("m", "export", tmp_path) / "graph.nnef", b"version 1.0;\n")
    record_step("m", "export", inputs=[], root=tmp_path)
    record_step("m", "split", inputs=[step_dir("m", "export", tmp_path) / "graph.nnef"], root=tmp_path)
    record_step("m", "petri", inputs=[step_dir("m", "split", tmp_path) / "checks.json"], root=tmp_path)
    return tmp_path


def test_a_failing_step_leaves_only_its_failure_and_removes_what_read_it(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    root = _project(tmp_path)
    monkeypatch.chdir(root)

    def broken(model: str) -> None:
        write_bytes(step_dir(model, "export") / "graph.nnef", b"half")
        raise PipelineError("EXPORT-E001", "not an ONNX model")

    outcome = step_action("export", broken)("m")
    assert "export:m failed" in outcome.message and "EXPORT-E001" in outcome.message
    assert [p.name for p in step_dir("m", "export").iterdir()] == [FAILED_FILE]
    failure = json.loads((step_dir("m", "export") / FAILED_FILE).read_text())
    assert failure["code"] == "EXPORT-E001" and failure["step"] == "export"
    assert not step_dir("m", "split").exists() and not step_dir("m", "petri").exists()
    findings = check_records("m").findings
    assert [f.code for f in findings if f.is_error] == ["EVID-E036"]
    assert "m/export: the step failed, EXPORT-E001" in findings[0].message


def test_a_step_removes_the_reports_built_from_its_previous_outputs(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    root = _project(tmp_path)
    monkeypatch.chdir(root)
    reports = root / "reports"
    for name in ("m/evidence.zip", "m/package-check.json", "other/evidence.zip", "trace.json", "trace-matrix.html",
                 "junit.xml"):
        write_bytes(reports / name, b"old verdicts")

    def broken(model: str) -> None:
        raise PipelineError("EXPORT-E001", "not an ONNX model")

    step_action("export", broken)("m")
    assert not (reports / "m").exists(), "no package of m claims the old verdicts"
    assert not any((reports / name).exists() for name in ("trace.json", "trace-matrix.html", "junit.xml"))
    assert (reports / "other" / "evidence.zip").is_file(), "another model's package is not touched"


def test_an_unanticipated_exception_in_a_step_is_internal_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(_project(tmp_path))
    outcome = step_action("petri", lambda model: 1 / 0)("m")
    assert "PIPE-E900: internal error: ZeroDivisionError" in outcome.message and "Traceback" not in outcome.message
    assert json.loads((step_dir("m", "petri") / FAILED_FILE).read_text())["code"] == "PIPE-E900"
    assert step_dir("m", "split").is_dir(), "an earlier step is not touched"


def test_a_step_starts_from_an_empty_folder_and_keeps_unaffected_dependents(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    root = _project(tmp_path)
    monkeypatch.chdir(root)
    write_bytes(step_dir("m", "export") / "stale.dat", b"from an older run")

    def same_again(model: str) -> bool:
        write_bytes(step_dir(model, "export") / "graph.nnef", b"version 1.0;\n")
        record_step(model, "export", inputs=[])
        return True

    assert step_action("export", same_again)("m") is True
    assert sorted(p.name for p in step_dir("m", "export").iterdir()) == ["graph.nnef", "record.json"]
    assert step_dir("m", "split").is_dir(), "the split read an identical graph.nnef: still valid"
    write_bytes(step_dir("m", "export") / "graph.nnef", b"version 1.0;\n# changed\n")
    assert invalidate_dependents("m", "export") == ["split", "petri"]


def test_a_record_cannot_name_an_output_the_run_did_not_write(tmp_path: Path) -> None:
    old = tmp_path / "artifacts" / "m" / "export" / "old.json"
    write_json(old, {"schema_version": 1})
    with fresh_run("m", "split", tmp_path):
        write_json(step_dir("m", "split", tmp_path) / "checks.json", {"schema_version": 1, "results": []})
        with pytest.raises(PipelineError) as info:
            record_step("m", "split", inputs=[], outputs=[old], root=tmp_path)
        assert info.value.code == freshness.E_OUTPUT_NOT_WRITTEN
        record_step("m", "split", inputs=[], root=tmp_path)
    assert (step_dir("m", "split", tmp_path) / "record.json").is_file()


# -- end to end with doit

def _doit(root: Path, *tasks: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NNCERT_DEBUG": "", "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run([sys.executable, "-m", "doit", *tasks], cwd=root, env=env, capture_output=True, text=True,
                          timeout=600)


def _verdicts(root: Path, step: str) -> list[str]:
    path = step_dir(MODEL, step, root) / "checks.json"
    if not path.is_file():
        return []
    return [r["verdict"] for r in json.loads(path.read_text())["results"]]


def _doit_project(root: Path) -> Path:
    """A scratch project at `root`: a copy of the model and of dodo.py, the package and requirements linked."""
    (root / "models").mkdir(parents=True)
    shutil.copytree(ROOT / "models" / MODEL, root / "models" / MODEL)
    for name in ("pipeline", "requirements"):
        (root / name).symlink_to(ROOT / name)
    shutil.copy(ROOT / "dodo.py", root / "dodo.py")
    return root


def test_doit_after_a_broken_export_keeps_no_stale_pass(tmp_path: Path) -> None:
    root = _doit_project(tmp_path / "project")
    tasks = (f"check:{MODEL}", f"petri:{MODEL}")
    first = _doit(root, *tasks)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "pass" in _verdicts(root, "petri")

    # 1. the export's graph.nnef truncated in place
    (step_dir(MODEL, "export", root) / "graph.nnef").write_text("")
    second = _doit(root, *tasks)
    assert "Traceback" not in second.stdout + second.stderr
    graph = step_dir(MODEL, "export", root) / "graph.nnef"
    if not graph.is_file() or not graph.read_text():  # (a doit that re-hashes its targets re-exports instead)
        assert "fail" in _verdicts(root, "check"), "the check step read the truncated file in this run"
        for step in STEPS[2:]:
            assert "pass" not in _verdicts(root, step), (step, second.stdout + second.stderr)

    # 2. the ONNX model replaced by something that is not a model
    (root / "models" / MODEL / "model.onnx").write_bytes(b"not a model")
    third = _doit(root, *tasks)
    out = third.stdout + third.stderr
    assert third.returncode != 0 and "EXPORT-E001" in out and "Traceback" not in out, out
    assert [p.name for p in step_dir(MODEL, "export", root).iterdir()] == [FAILED_FILE]
    for step in STEPS[1:]:
        assert not step_dir(MODEL, step, root).exists() or "pass" not in _verdicts(root, step), step
    assert any(f.code == "EVID-E036" and f"{MODEL}/export" in f.message for f in check_records(MODEL, root).findings)
    assert atomic.WRITE_ERROR == IO_ERROR


# -- a linked output folder (issue 28): decided once, before the first step, the same way everywhere

@pytest.mark.parametrize("folder", ["artifacts", "reports"])
def test_a_linked_output_folder_is_refused_before_any_step(tmp_path: Path, folder: str) -> None:
    """Five steps once followed a linked artifacts/ and the sixth refused it (NAME-E002)."""
    root = _doit_project(tmp_path / "project")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (root / folder).symlink_to(elsewhere)
    done = _doit(root, f"export:{MODEL}")
    output = done.stdout + done.stderr
    assert done.returncode == 2 and "PIPE-E012" in output and "Traceback" not in output, output
    assert list(elsewhere.iterdir()) == [], "a step wrote through the link"


def test_every_step_action_and_evidence_command_refuse_it_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "artifacts").symlink_to(elsewhere)
    with pytest.raises(PipelineError) as caught:
        with fresh_run(MODEL, "export", tmp_path):
            pass
    assert caught.value.code == "PIPE-E012" and list(elsewhere.iterdir()) == []
    monkeypatch.setattr(cli, "COMMAND_MODULES", ("pipeline.evidence.command",))
    assert cli.main(["evidence", "build", "--root", str(tmp_path)]) == 2
    assert "PIPE-E012" in capsys.readouterr().err

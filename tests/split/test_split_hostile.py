"""Hostile deployment specs from the command line: exit 2, one coded message, no traceback, nothing written outside.

Each case runs `python -m pipeline split <export> --deploy SPEC --out out` as a user would,
from a folder w/a/b/ of a scratch tree, and compares a listing of the whole tree before and
after: before these checks `../../x` as a deployment name wrote w/a/x/ (exit 0), and item
names with a space or a keyword ended in a traceback. The specs are the regression inputs
of tests/deploy/data/hostile/; the cross-check cases change one fact of the shipped spec.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HOSTILE = ROOT / "tests" / "deploy" / "data" / "hostile"
LENET = (ROOT / "models" / "lenet5" / "deploy.yaml").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def export(exported_project: Path) -> Path:
    return exported_project / "artifacts" / "lenet5" / "export"


def _tree(folder: Path) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*")}


def _split(tmp_path: Path, export: Path, spec: Path, *extra: str) -> tuple[int, str, set[str]]:
    """Run the split CLI from tmp/w/a/b with --out out; (exit status, output, paths created in tmp)."""
    work = tmp_path / "w" / "a" / "b"
    work.mkdir(parents=True, exist_ok=True)
    before = _tree(tmp_path)
    done = subprocess.run([sys.executable, "-m", "pipeline", "split", str(export), "--deploy", str(spec),
                           "--out", "out", "--execute", "1", *extra], cwd=work, capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    return done.returncode, done.stdout + done.stderr, _tree(tmp_path) - before


CASES = {   # regression input -> its code
    "deployment_dotdot.yaml": "DEPLOY-E010", "deployment_keyword.yaml": "DEPLOY-E010",
    "item_dotdot.yaml": "DEPLOY-E010", "item_space.yaml": "DEPLOY-E010", "item_keyword.yaml": "DEPLOY-E010",
    "vectors_1e9.yaml": "DEPLOY-E004", "alias_bomb.yaml": "DEPLOY-E011", "deep_nesting.yaml": "DEPLOY-E011",
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_hostile_spec_is_refused_and_nothing_is_written(tmp_path: Path, export: Path, name: str) -> None:
    spec = tmp_path / name
    shutil.copyfile(HOSTILE / name, spec)
    status, output, created = _split(tmp_path, export, spec)
    assert status == 2, output
    assert CASES[name] in output and "Traceback" not in output, output
    assert created == set(), created


@pytest.mark.parametrize("change, where", [
    (("model: lenet5", "model: resnet8"), "'resnet8'"),
    (("shape: [1, 1, 32, 32]", "shape: [1, 1, 28, 28]"), "[1, 1, 28, 28] differs from the model's [1, 1, 32, 32]"),
    (("  input:\n", "  image:\n"), "no input 'image'"),
])
def test_spec_not_describing_the_export_is_refused_before_writing(tmp_path: Path, export: Path,
                                                                    change: tuple[str, str], where: str) -> None:
    spec = tmp_path / "deploy.yaml"
    spec.write_text(LENET.replace(*change, 1), encoding="utf-8")
    status, output, created = _split(tmp_path, export, spec)
    assert status == 2 and "SPLIT-E022" in output and where in output and "Traceback" not in output, output
    assert created == set(), created


def test_symlinked_deployment_folder_is_not_followed(tmp_path: Path, export: Path) -> None:
    spec = tmp_path / "deploy.yaml"
    spec.write_text(LENET, encoding="utf-8")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = tmp_path / "w" / "a" / "b" / "out"
    out.mkdir(parents=True)
    (out / "single").symlink_to(elsewhere)
    status, output, created = _split(tmp_path, export, spec, "--deployment", "single")
    assert status == 2 and "NAME-E002" in output and "Traceback" not in output, output
    assert list(elsewhere.iterdir()) == [] and created == set(), created


def test_model_folder_outside_the_grammar_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "models" / "bad name"
    folder.mkdir(parents=True)
    shutil.copyfile(ROOT / "models" / "lenet5" / "deploy.yaml", folder / "deploy.yaml")
    shutil.copyfile(ROOT / "models" / "lenet5" / "model.onnx", folder / "model.onnx")
    before = _tree(tmp_path)
    done = subprocess.run([sys.executable, "-m", "pipeline", "split", "models/bad name"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    output = done.stdout + done.stderr
    assert done.returncode == 2 and "NAME-E001" in output and "Traceback" not in output, output
    assert _tree(tmp_path) == before


@pytest.mark.parametrize("command", ["execute", "compare"])
def test_model_name_climbing_out_is_refused_by_the_other_steps(tmp_path: Path, command: str) -> None:
    done = subprocess.run([sys.executable, "-m", "pipeline", command, "../../x"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    output = done.stdout + done.stderr
    assert done.returncode == 2 and "NAME-E001" in output and "Traceback" not in output, output
    assert not (tmp_path.parent.parent / "x").exists() and list(tmp_path.iterdir()) == []


# -- round three (issue 28)

def test_many_problems_on_one_long_line_are_reported_within_bounds(tmp_path: Path, export: Path) -> None:
    """Once: each of 100,000 unknown names re-read the 789 KB spec and printed its whole line (1.8 GB)."""
    names = ", ".join(f"t{i}" for i in range(2000))
    spec = tmp_path / "deploy.yaml"
    spec.write_text(LENET.replace("CPU1: [flatten, fc1, relu3, fc2, relu4, fc3, prob]", f"CPU1: [{names}]", 1),
                    encoding="utf-8")
    status, output, created = _split(tmp_path, export, spec, "--deployment", "split2")
    assert status == 2 and "SPLIT-E002" in output and "Traceback" not in output, output[:2000]
    assert "... and 1950 more problem(s)" in output and "PIPELINE_MAX_PROBLEMS_SHOWN" in output
    assert len(output) < 64 * 1024, len(output)   # was 2,000 copies of a 14 KB line
    assert max(len(line) for line in output.splitlines()) < 400
    assert created == set()


def test_a_long_source_line_is_cut_around_its_caret() -> None:
    from pipeline.diagnostics import Span
    from pipeline.terminal import MAX_LINE_CHARS, caret_lines

    text = "x" * 5000 + "TARGET" + "y" * 5000
    source, caret = caret_lines(Span("f", 1, 5001, 1, 5007), {"f": text})
    assert len(source) < MAX_LINE_CHARS + 16 and source.strip().startswith("...") and source.endswith("...")
    assert source[caret.index("^"):caret.index("^") + 6] == "TARGET" and caret.count("~") == 5


def test_the_problems_of_one_error_read_their_file_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline import terminal
    from pipeline.project.deploy import DeployError, DeployProblem

    spec = tmp_path / "s.yaml"
    spec.write_text("a: [" + ", ".join(f"n{i}" for i in range(300)) + "]\n", encoding="utf-8")
    reads = []
    original = terminal._read_source
    monkeypatch.setattr(terminal, "_read_source", lambda file: reads.append(file) or original(file))
    error = DeployError(str(spec), [DeployProblem("SPLIT-E002", f"a[{i}]", "unknown", 1, 5 + 4 * i) for i in range(300)])
    text = terminal.render_error(error)
    assert reads == [str(spec)] and text.count("SPLIT-E002") == terminal.MAX_PROBLEMS_SHOWN
    monkeypatch.setenv("PIPELINE_MAX_PROBLEMS_SHOWN", "300")
    assert terminal.render_error(error).count("SPLIT-E002") == 300


def test_outside_a_project_the_model_name_is_said_not_compared(tmp_path: Path, export: Path) -> None:
    """Issue 28: `split` on an export without record.json compared nothing for `model:`, silently."""
    bare = tmp_path / "bare"
    shutil.copytree(export, bare, ignore=shutil.ignore_patterns("record.json"))
    spec = tmp_path / "deploy.yaml"
    spec.write_text(LENET.replace("model: lenet5", "model: resnet8", 1), encoding="utf-8")
    status, output, _ = _split(tmp_path, bare, spec, "--deployment", "single")
    assert "note: the spec's model 'resnet8' is not compared with the export" in output, output
    assert status in (0, 1) and "Traceback" not in output


@pytest.mark.parametrize("name", ["provenance.json", "record.json"])
def test_export_documents_linked_out_of_the_folder_are_not_read(tmp_path: Path, export: Path, name: str) -> None:
    from pipeline.diagnostics import PipelineError
    from pipeline.split.exported import load_exported

    copy = tmp_path / "export"
    shutil.copytree(export, copy)
    (tmp_path / name).write_bytes((copy / name).read_bytes())
    (copy / name).unlink()
    (copy / name).symlink_to(tmp_path / name)
    if name == "provenance.json":
        with pytest.raises(PipelineError) as caught:
            load_exported(copy)
        assert caught.value.code == "SPLIT-E020" and "symbolic link" in caught.value.message
    else:   # the model name is then unknown: not compared, and said so by the command
        assert load_exported(copy).model is None

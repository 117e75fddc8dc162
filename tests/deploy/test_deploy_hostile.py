"""Hostile deployment specs refused at load time: one coded problem each, bounded, never a traceback.

tests/deploy/data/hostile/ holds the specs that once escaped --out, crashed the split or ran
for minutes (each file's first line: `# expect: CODE`); the CLI view of the same cases, with
the file tree around the output folder, is tests/split/test_split_hostile.py.
"""

from __future__ import annotations

import os
import re
import time
import tracemalloc
from pathlib import Path

import pytest
import yaml

from pipeline.project import deploy
from pipeline.project.deploy import CODES, DeployError, load_deploy, parse_deploy_text
from pipeline.diagnostics import PipelineError
from pipeline.project.layout import model_names, refused_models
from pipeline.files.names import NNEF_KEYWORDS, check_name, confined, name_problem
from pipeline.ledger.yamlsource import load_located

ROOT = Path(__file__).resolve().parents[2]
HOSTILE = Path(__file__).parent / "data" / "hostile"
LENET = (ROOT / "models" / "lenet5" / "deploy.yaml").read_text(encoding="utf-8")


def _expected(path: Path) -> str:
    match = re.match(rb"# expect: (\S+)", path.read_bytes())
    assert match, f"{path.name}: first line must be '# expect: CODE'"
    return match.group(1).decode()


@pytest.mark.parametrize("name", sorted(p.name for p in HOSTILE.glob("*.yaml")))
def test_each_hostile_spec_is_refused_with_its_code(name: str) -> None:
    started = time.perf_counter()
    with pytest.raises(DeployError) as caught:
        load_deploy(HOSTILE / name)
    assert time.perf_counter() - started < 2
    codes = [p.code for p in caught.value.problems]
    assert _expected(HOSTILE / name) in codes, [(p.code, p.message) for p in caught.value.problems]
    assert all(code in CODES for code in codes)
    assert all(p.line > 0 for p in caught.value.problems if p.code not in ("DEPLOY-E001", "DEPLOY-E012"))


def test_alias_bomb_is_refused_at_once_with_bounded_memory() -> None:
    text = (HOSTILE / "alias_bomb.yaml").read_text(encoding="utf-8")
    assert yaml.compose(text) is not None   # PyYAML composes it (shared nodes); every walk is then exponential
    tracemalloc.start()
    started = time.perf_counter()
    try:
        with pytest.raises(DeployError) as caught:
            parse_deploy_text(text, "bomb.yaml")
        elapsed = time.perf_counter() - started
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert caught.value.code == "DEPLOY-E011" and caught.value.location.line == 6
    assert elapsed < 0.5 and peak < 16 << 20, (elapsed, peak)


def test_special_files_are_not_read(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    zero = tmp_path / "zero.yaml"
    zero.symlink_to("/dev/zero")
    for path in (fifo, zero, tmp_path):
        started = time.perf_counter()
        with pytest.raises(DeployError) as caught:
            load_deploy(path)
        assert caught.value.code == "DEPLOY-E012" and time.perf_counter() - started < 1


def test_size_limit_and_its_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    big = tmp_path / "big.yaml"
    big.write_text(LENET + "#" * (deploy.MAX_SPEC_BYTES + 1), encoding="utf-8")
    with pytest.raises(DeployError) as caught:
        load_deploy(big)
    assert caught.value.code == "DEPLOY-E012" and "PIPELINE_MAX_SPEC_BYTES" in caught.value.message
    monkeypatch.setenv("PIPELINE_MAX_SPEC_BYTES", str(4 << 20))
    assert load_deploy(big).model == "lenet5"


def test_configurable_limits_follow_their_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    text = LENET.replace("vectors: 100", "vectors: 20000").replace("runs: 1000", "runs: 200000")
    with pytest.raises(DeployError) as caught:
        parse_deploy_text(text, "t.yaml")
    assert {(p.code, p.path) for p in caught.value.problems} == {("DEPLOY-E004", "validation.vectors"),
                                                                 ("DEPLOY-E004", "met.runs")}
    monkeypatch.setenv("PIPELINE_MAX_VECTORS", "20000")
    monkeypatch.setenv("PIPELINE_MAX_RUNS", "200000")
    spec = parse_deploy_text(text, "t.yaml")
    assert (spec.validation.vectors, spec.met.runs) == (20000, 200000)
    monkeypatch.setenv("PIPELINE_MAX_VECTOR_ELEMENTS", "1000")
    with pytest.raises(DeployError, match="PIPELINE_MAX_VECTOR_ELEMENTS"):
        parse_deploy_text(LENET, "t.yaml")


def test_shipped_specs_stay_valid_and_within_every_limit() -> None:
    for model in model_names(ROOT):
        spec = load_deploy(ROOT / "models" / model / "deploy.yaml")
        assert name_problem(spec.model) is None and spec.model == model
        for name, deployment in spec.deployments.items():
            assert name_problem(name) is None and all(name_problem(i.name) is None for i in deployment.items)


def test_the_name_grammar() -> None:
    for good in ("CPU0", "a", "x" * 64, "GPU_0", "split2"):
        assert check_name(good) == good
    for bad in ("", "0cpu", "_x", "a b", "a-b", "a.b", "../x", "/x", "x" * 65, "ä", "a\n", "a\x00"):
        with pytest.raises(PipelineError) as caught:
            check_name(bad, "item name")
        assert caught.value.code == "NAME-E001"
    assert all(name_problem(k) is not None for k in NNEF_KEYWORDS)


def test_confined_refuses_escapes_and_symlinks(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    assert confined(out, "single", "CPU0.nnef") == out / "single" / "CPU0.nnef"
    (tmp_path / "elsewhere").mkdir()
    (out / "link").symlink_to(tmp_path / "elsewhere")
    for parts in (("..", "x"), ("/etc", "passwd"), ("link", "CPU0.nnef"), ("a", "..", "..", "x")):
        with pytest.raises(PipelineError) as caught:
            confined(out, *parts)
        assert caught.value.code == "NAME-E002"


def test_model_folders_outside_the_grammar_are_refused_not_skipped(tmp_path: Path) -> None:
    for name in ("good1", "bad name", "2bad"):
        (tmp_path / "models" / name).mkdir(parents=True)
        (tmp_path / "models" / name / "model.onnx").write_bytes(b"")
    assert model_names(tmp_path) == ["good1"]
    refused = refused_models(tmp_path)
    assert [e.code for e in refused] == ["NAME-E001", "NAME-E001"]
    assert sorted(e.location.file.rsplit("/", 1)[-1] for e in refused) == ["2bad", "bad name"]


def test_requirement_yaml_refuses_aliases_and_special_files(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text((HOSTILE / "alias_bomb.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    started = time.perf_counter()
    located, findings = load_located(bomb, "bomb.yaml")
    assert located is None and time.perf_counter() - started < 0.5
    assert [(f.code, f.span.line) for f in findings] == [("EVID-E001", 6)]
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    located, findings = load_located(fifo, "fifo.yaml")
    assert located is None and findings[0].code == "EVID-E001" and "regular file" in findings[0].message


def test_model_names_given_on_the_command_line_are_judged() -> None:
    from pipeline.terminal import model_and_root

    assert model_and_root("lenet5") == ("lenet5", Path("."))
    for bad in ("../../x", "/tmp/x", "a b"):
        with pytest.raises(PipelineError) as caught:
            model_and_root(bad)
        assert caught.value.code == "NAME-E001"


def test_task_list_never_reads_a_special_spec(tmp_path: Path) -> None:
    from pipeline.project.tasking import deploy_outline

    folder = tmp_path / "models" / "m"
    folder.mkdir(parents=True)
    os.mkfifo(folder / "deploy.yaml")
    started = time.perf_counter()
    assert deploy_outline("m", tmp_path) is None and time.perf_counter() - started < 1

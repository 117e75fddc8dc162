"""Artifact records: written by the steps, re-hashed and chained by the evidence builder."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.evidence.evidence_fakeproject import FakeProject, load
from pipeline.diagnostics import PipelineError
from pipeline.ledger.hashing import sha256_file
from pipeline.ledger.records import check_records, read_record, record_step


def test_record_lists_outputs_inputs_tools_and_nothing_run_dependent(project: FakeProject) -> None:
    root = project.root
    path = root / "artifacts/alpha/export/record.json"
    data = load(path)
    assert data["schema_version"] == 1 and data["model"] == "alpha" and data["step"] == "export"
    outputs = {d["path"]: d for d in data["outputs"]}
    assert set(outputs) == {
        "artifacts/alpha/export/checks.json",
        "artifacts/alpha/export/graph.nnef",
        "artifacts/alpha/export/weights/conv1.dat",
    }
    dat = outputs["artifacts/alpha/export/weights/conv1.dat"]
    assert dat["sha256"] == sha256_file(root / dat["path"]) and dat["size"] == 4096
    assert data["inputs"][0]["path"] == "models/alpha/model.onnx"
    assert data["command"][:3] == ["python", "-m", "pipeline"]
    assert "numpy" in data["tools"] and data["tools"]["python"].split()[0] in ("CPython", "PyPy")
    text = path.read_text(encoding="utf-8")
    assert str(root) not in text
    before = path.read_bytes()
    record_step("alpha", "export", inputs=["models/alpha/model.onnx"], command=["python", "-m", "pipeline", "export", "models/alpha/model.onnx"], root=root)
    assert path.read_bytes() == before  # same inputs and tools: byte-identical record
    assert read_record(path).outputs[0].path == "artifacts/alpha/export/checks.json"


def test_record_rejects_missing_and_outside_files(project: FakeProject, tmp_path_factory: pytest.TempPathFactory) -> None:
    with pytest.raises(PipelineError) as missing:
        record_step("alpha", "export", inputs=["models/alpha/nope.onnx"], root=project.root)
    assert missing.value.code == "EVID-E030" and "nope.onnx" in missing.value.location.file
    outside = tmp_path_factory.mktemp("elsewhere") / "x.bin"
    outside.write_bytes(b"x")
    with pytest.raises(PipelineError) as out:
        record_step("alpha", "export", inputs=[outside], root=project.root)
    assert "outside the project root" in out.value.message


def test_clean_tree_has_no_record_findings(project: FakeProject) -> None:
    result = check_records("alpha", project.root)
    assert result.findings == []
    assert set(result.records) == {"export", "check", "petri", "codegen"}


def test_changed_output_stale_input_and_unrecorded_file_are_reported(project: FakeProject) -> None:
    root = project.root
    dat = root / "artifacts/alpha/export/weights/conv1.dat"
    dat.write_bytes(b"\x00" + dat.read_bytes()[1:])
    findings = check_records("alpha", root).findings
    changed = [f for f in findings if f.code == "EVID-E031"]
    assert len(changed) == 1 and "conv1.dat changed since it was recorded" in changed[0].message
    # Re-record export after editing graph.nnef: petri, check and codegen now ran on an older input.
    (root / "artifacts/alpha/export/graph.nnef").write_text("version 1.0;\n", encoding="utf-8")
    record_step("alpha", "export", inputs=["models/alpha/model.onnx"], root=root)
    findings = check_records("alpha", root).findings
    stale = sorted(f.message.split(":")[0] for f in findings if f.code == "EVID-E032")
    assert stale == ["alpha/check", "alpha/codegen", "alpha/petri"]
    (root / "artifacts/alpha/petri/extra.txt").write_text("x", encoding="utf-8")
    findings = check_records("alpha", root).findings
    assert any(f.code == "EVID-E033" and not f.is_error and "extra.txt" in f.message for f in findings)
    # A changed shipped input is stale too.
    (root / "models/alpha/model.onnx").write_bytes(b"retrained")
    findings = check_records("alpha", root).findings
    assert any(f.code == "EVID-E032" and "models/alpha/model.onnx changed" in f.message for f in findings)


def test_step_without_record_is_an_error(project: FakeProject) -> None:
    (project.root / "artifacts/beta/petri/record.json").unlink()
    findings = check_records("beta", project.root).findings
    assert [f.code for f in findings] == ["EVID-E034"]
    assert findings[0].span.file == "artifacts/beta/petri/record.json"


def test_unreadable_record(project: FakeProject) -> None:
    (project.root / "artifacts/beta/check/record.json").write_text("{", encoding="utf-8")
    findings = check_records("beta", project.root).findings
    assert [f.code for f in findings] == ["EVID-E035"]


def test_record_of_explicit_outputs(tmp_path: Path) -> None:
    (tmp_path / "models/m").mkdir(parents=True)
    (tmp_path / "models/m/model.onnx").write_bytes(b"onnx")
    out = tmp_path / "artifacts/m/execute/outputs"
    out.mkdir(parents=True)
    (out / "y.bin").write_bytes(b"1234")
    path = record_step("m", "execute", inputs=["models/m/model.onnx"], outputs=[out], command="run --x 1", parameters={"seed": 7}, extra_tools={"gcc": "12.2.0"}, root=tmp_path)
    data = load(path)
    assert [d["path"] for d in data["outputs"]] == ["artifacts/m/execute/outputs/y.bin"]
    assert data["command"] == ["run", "--x", "1"] and data["parameters"] == {"seed": 7} and data["tools"]["gcc"] == "12.2.0"

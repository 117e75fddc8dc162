"""The shipped models: every deployment splits, checks clean, executes bit-identically.

Each model is exported with the exporter's API into a temporary project root, then the
split step runs there as doit runs it. Skipped (with the reason) while the exporter is
not importable.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.split.split_helpers import MODELS, ROOT, khronos_text, khronos_reading, our_reading
from pipeline.ledger.checks import Verdict
from pipeline.project.layout import step_dir
from pipeline.nnef.checker import check_paths
from pipeline.split.plan import load_plan, load_schedule
from pipeline.split.step import run_split_step

export = pytest.importorskip("pipeline.export", reason="the exporter (pipeline.export) is not importable yet")

VECTORS = 2
# deployment -> (items, sync variables, bytes exchanged per inference)
EXPECTED = {
    ("branch3", "single"): (1, 0, 0), ("branch3", "paper3"): (3, 3, 12288),
    ("lenet5", "single"): (1, 0, 0), ("lenet5", "split2"): (2, 1, 1600),
    ("resnet8", "single"): (1, 0, 0), ("resnet8", "stages3"): (3, 3, 114688), ("resnet8", "shortcut2"): (2, 4, 147456),
    ("inception", "single"): (1, 0, 0), ("inception", "branches3"): (3, 9, 71680),
}


def make_root(root: Path, models: tuple[str, ...] = MODELS) -> Path:
    for model in models:
        folder = root / "models" / model
        folder.mkdir(parents=True)
        for name in ("model.onnx", "deploy.yaml"):
            shutil.copy(ROOT / "models" / model / name, folder / name)
        export.export_model(folder / "model.onnx", step_dir(model, "export", root))
    return root


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, list]]:
    root = make_root(tmp_path_factory.mktemp("project"))
    results = {model: run_split_step(model, root, vectors=VECTORS) for model in MODELS}
    return root, results


def test_every_check_passes_on_every_shipped_deployment(project) -> None:
    root, results = project
    for model, model_results in results.items():
        for result in model_results:
            if result.subject == model:  # the model has no rewrite deployment
                assert result.check_id == "split.rewrite" and result.verdict is Verdict.NOT_APPLICABLE
                continue
            deployment = result.subject.split("/", 1)[1]
            rewrites = load_plan(step_dir(model, "split", root) / deployment / "plan.json")["rewrites"]
            assert rewrites or result.check_id != "split.rewrite", result.subject
            assert result.verdict is Verdict.PASS, (result.subject, result.check_id, result.reason)
        subjects = {r.subject for r in model_results} - {model}
        assert subjects >= {f"{m}/{d}" for m, d in EXPECTED if m == model}


def test_a_layer_parallel_deployment_of_lenet5(tmp_path: Path) -> None:
    root = make_root(tmp_path, ("lenet5",))  # the shipped lenet5 spec has the layer2 deployment
    results = [r for r in run_split_step("lenet5", root, vectors=VECTORS) if r.subject == "lenet5/layer2"]
    assert {r.check_id: r.verdict.value for r in results} == {
        "split.items_checked": "pass", "nnef.multiitem": "pass", "split.union": "pass", "split.khronos": "pass",
        "split.execution": "pass", "split.rewrite": "pass"}
    plan = load_plan(step_dir("lenet5", "split", root) / "layer2" / "plan.json")
    assert plan["pipeline_depth"] == 2 and plan["original"] == "rewritten.nnef"
    assert plan["rewrites"][0]["rows"] == [[0, 7], [7, 14]]
    assert [(s["value"], s["writer"], s["readers"]) for s in plan["sync_variables"]] == [("pool1_p1", "CPU1", ["CPU0"])]


def test_numbers_per_deployment(project) -> None:
    root, _ = project
    for (model, deployment), (items, syncs, size) in EXPECTED.items():
        plan = load_plan(step_dir(model, "split", root) / deployment / "plan.json")
        assert (len(plan["items"]), len(plan["sync_variables"]), sum(s["bytes"] for s in plan["sync_variables"])) == \
            (items, syncs, size), (model, deployment)
        assert plan["pipeline_depth"] == 1
        assert plan["original"] == "../../export/graph.nnef"


def test_lenet5_split2_produces_the_output_on_the_non_default_item(project) -> None:
    root, _ = project
    folder = step_dir("lenet5", "split", root) / "split2"
    plan = load_plan(folder / "plan.json")
    assert plan["outputs"] == {"prob": "CPU1"}
    assert [(s["value"], s["writer"], s["readers"]) for s in plan["sync_variables"]] == [("pool2", "CPU0", ["CPU1"])]
    report = check_paths([folder / "CPU1.nnef"], tensor_dir=step_dir("lenet5", "export", root))
    assert report.graphs[0].outputs == ["prob"]
    assert load_schedule(folder / "schedule.json").items["CPU1"][0].kind == "get"


def test_the_khronos_parser_reads_every_item_without_its_extension_lines(project, tmp_path: Path) -> None:
    pytest.importorskip("nnef")
    root, _ = project
    checked = 0
    for model, deployment in EXPECTED:
        folder = step_dir(model, "split", root) / deployment
        for entry in load_plan(folder / "plan.json")["items"]:
            path = folder / entry["file"]
            item = check_paths([path], tensors=False).graphs[0]
            assert khronos_reading(khronos_text(path.read_text()), tmp_path) == our_reading(item), path
            checked += 1
    assert checked == sum(items for items, _, _ in EXPECTED.values())


def test_records_and_traces(project) -> None:
    root, _ = project
    record = json.loads((step_dir("branch3", "split", root) / "record.json").read_text())
    outputs = {o["path"] for o in record["outputs"]}
    assert "artifacts/branch3/split/paper3/ITEM2.nnef" in outputs
    assert "artifacts/branch3/split/checks.json" in outputs
    assert any(i["path"] == "models/branch3/deploy.yaml" for i in record["inputs"])
    trace = json.loads((step_dir("branch3", "split", root) / "paper3" / "trace-interpreter.json").read_text())
    schedule = load_schedule(step_dir("branch3", "split", root) / "paper3" / "schedule.json")
    assert {item: len(events) for item, events in trace["items"].items()} == \
        {item: 2 * len(steps) for item, steps in schedule.items.items()}


def test_the_step_is_deterministic(project, tmp_path: Path) -> None:
    root, _ = project
    again = make_root(tmp_path / "again")
    for model in ("branch3", "lenet5"):
        run_split_step(model, again, vectors=VECTORS)
        first, second = step_dir(model, "split", root), step_dir(model, "split", again)
        files = sorted(p.relative_to(first) for p in first.rglob("*") if p.is_file())
        assert files == sorted(p.relative_to(second) for p in second.rglob("*") if p.is_file())
        for name in files:
            assert (first / name).read_bytes() == (second / name).read_bytes(), name


def test_the_command_line(project, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                          capsys: pytest.CaptureFixture[str]) -> None:
    from pipeline.cli import main

    root, _ = project
    monkeypatch.chdir(root)
    assert main(["split", "models/lenet5", "--execute", "1"]) == 0
    assert "lenet5/split2 split.execution: pass" in capsys.readouterr().out
    out = tmp_path / "cli"
    assert main(["split", "artifacts/branch3/export", "--deploy", "models/branch3/deploy.yaml",
                 "--deployment", "paper3", "--out", str(out), "--execute", "1", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["deployments"][0]["sync_variables"] == 3
    assert sorted(p.name for p in (out / "paper3").iterdir()) == [
        "ITEM1.nnef", "ITEM2.nnef", "ITEM3.nnef", "plan.json", "schedule.json", "trace-interpreter.json"]
    bad = tmp_path / "deploy.yaml"
    bad.write_text((root / "models/branch3/deploy.yaml").read_text().replace("ITEM2: [o2, o3]", "ITEM2: [o2, o9]"))
    assert main(["split", "artifacts/branch3/export", "--deploy", str(bad), "--out", str(out)]) == 2
    assert "deployments.paper3.allocation.ITEM2[1]: error SPLIT-E002: 'o9' is not an instruction result" in capsys.readouterr().err
    assert main(["split", "artifacts/nothing/export", "--deploy", str(bad), "--out", str(out)]) == 2
    assert main(["split", "artifacts/branch3/export", "--out", str(out)]) == 2


def test_the_doit_tasks(project, monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline.split.tasks import task_split

    root, _ = project
    monkeypatch.chdir(root)
    tasks = {task["name"]: task for task in task_split()}
    assert sorted(tasks) == sorted(MODELS)
    for model, task in tasks.items():
        assert f"models/{model}/deploy.yaml" in task["file_dep"]
        assert f"artifacts/{model}/export/graph.nnef" in task["file_dep"]
        assert f"artifacts/{model}/export/provenance.json" in task["file_dep"]
        missing = [t for t in task["targets"] if not (root / t).is_file()]
        assert missing == [], missing  # every target exists after the step: a second run is a no-op

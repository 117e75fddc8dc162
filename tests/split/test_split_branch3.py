"""The paper's three-item example, split by the splitter from the whole network.

The splitter's output for the `paper3` deployment is the paper's Listing 3 as corrected
in docs/design.md (examples/nnef/branch3_items.nnef, written by hand), up to the local
graph names; the step's checks all pass on it; execution is bit-identical in both sync
modes; splitting twice gives byte-identical files.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from tests.split.split_helpers import BRANCH3_ITEMS, branch3_export, branch3_spec
from pipeline.ledger.checks import Verdict
from pipeline.nnef.checker import check_paths
from pipeline.nnef.parser import parse_file, parse_text
from pipeline.semantics import interpret
from pipeline.split.allocation import resolve_deployment
from pipeline.split.workers import compare_with_reference
from pipeline.split.exported import load_exported, vectors_for
from pipeline.split.plan import load_plan, load_schedule, schedule_document, Schedule
from pipeline.split.splitter import Step, split_deployment
from pipeline.split.step import split_to_directory
from pipeline.split.union import check_union


@pytest.fixture()
def branch3(tmp_path: Path):
    export = tmp_path / "export"
    branch3_export(export)
    return load_exported(export), branch3_spec(tmp_path)


def test_paper3_is_the_papers_listing(branch3) -> None:
    exported, spec = branch3
    split = split_deployment(resolve_deployment(spec, "paper3", exported.graph))
    expected = {g.item.value: g for g in parse_file(BRANCH3_ITEMS).document.graphs}
    for item, text in split.texts().items():
        graph = parse_text(text).document.graphs[0]
        hand = expected[item]
        assert graph.name.value == f"dnn_{item}"
        assert replace(graph, name=hand.name) == hand, item


def test_paper3_plan_and_schedule(branch3, tmp_path: Path) -> None:
    exported, spec = branch3
    outcome = split_to_directory(exported, spec, tmp_path / "out", deployments=["paper3"], vectors=2)[0]
    plan = load_plan(outcome.directory / "plan.json")
    assert [(s["name"], s["writer"], s["readers"], s["value"], s["bytes"]) for s in plan["sync_variables"]] == [
        ("s1", "ITEM1", ["ITEM2", "ITEM3"], "o1", 4 * 4 * 16 * 16),
        ("s2", "ITEM2", ["ITEM1"], "o3", 4096),
        ("s3", "ITEM3", ["ITEM1"], "o5", 4096),
    ]
    assert plan["allocation"] == {"o1": "ITEM1", "o2": "ITEM2", "o3": "ITEM2", "o4": "ITEM3", "o5": "ITEM3",
                                  "o6": "ITEM1", "o7": "ITEM1", "out": "ITEM1"}
    assert plan["outputs"] == {"out": "ITEM1"} and plan["pipeline_depth"] == 1 and plan["sync"] == "barrier"
    schedule = load_schedule(outcome.directory / "schedule.json")

    def kinds(item: str) -> list[str]:
        return [s.kind if s.kind != "barrier" else f"barrier{s.id}" for s in schedule.items[item]]

    # the paper's scheme: ITEM1's head, barrier, ITEM2 and ITEM3, barrier, ITEM1's tail
    assert kinds("ITEM1") == ["compute", "send", "barrier1", "barrier2", "get", "get", "compute", "compute", "compute"]
    assert kinds("ITEM2") == ["barrier1", "get", "compute", "compute", "send", "barrier2"]
    assert kinds("ITEM3") == kinds("ITEM2")
    assert {r.check_id: r.verdict for r in outcome.results} == {
        "split.items_checked": Verdict.PASS, "nnef.multiitem": Verdict.PASS, "split.union": Verdict.PASS,
        "split.khronos": Verdict.PASS, "split.execution": Verdict.PASS}  # no rewrite: the check does not apply


@pytest.mark.parametrize("sync", ["event", "barrier"])
def test_execution_is_bit_identical_in_both_sync_modes(branch3, tmp_path: Path, sync: str) -> None:
    exported, spec = branch3
    split = split_deployment(resolve_deployment(spec, "paper3", exported.graph))
    for item, text in split.texts().items():
        (tmp_path / f"{item}.nnef").write_text(text)
    report = check_paths([tmp_path / f"{i.name}.nnef" for i in split.items], tensor_dir=exported.directory)
    assert report.findings == []
    document = schedule_document(split, sync)
    schedule = Schedule(sync, {k: [Step.from_json(s) for s in v] for k, v in document["items"].items()})
    variables = exported.variables()
    vectors = vectors_for(spec, exported.graph, exported.input_names, 4, 11)
    comparison = compare_with_reference(report.graphs, schedule,
                                        lambda i: interpret(exported.graph, vectors[i], variables), vectors, variables)
    assert comparison.ok, comparison.first_difference
    assert comparison.identical_vectors == 4


def test_union_check_catches_a_dropped_and_a_duplicated_instruction(branch3, tmp_path: Path) -> None:
    exported, spec = branch3
    split = split_deployment(resolve_deployment(spec, "paper3", exported.graph))
    texts = split.texts()
    texts["ITEM2"] = texts["ITEM2"].replace("o3 = conv(o2, v5, v6,", "o3 = conv(o2, v3, v4,")
    paths = []
    for item, text in texts.items():
        paths.append(tmp_path / f"{item}.nnef")
        paths[-1].write_text(text)
    union = check_union(exported.graph, check_paths(paths, tensors=False).graphs)
    assert not union.ok
    assert any("o3 = conv" in p and "missing" in p for p in union.problems)
    assert any("item ITEM2" in p and "not an instruction of the original" in p for p in union.problems)


def test_splitting_twice_gives_byte_identical_files(branch3, tmp_path: Path) -> None:
    exported, spec = branch3
    contents = []
    for run in ("a", "b"):
        out = tmp_path / run
        split_to_directory(exported, spec, out, vectors=2)
        contents.append({p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()})
    assert contents[0] == contents[1]
    assert "paper3/trace-interpreter.json" in contents[0]
    trace = json.loads(contents[0]["paper3/trace-interpreter.json"])
    assert trace["schema_version"] == 1 and trace["clock"] == "per-item"
    assert set(trace["items"]) == {"ITEM1", "ITEM2", "ITEM3"}
    assert trace["items"]["ITEM2"][:2] == [{"event": "start", "step": 0}, {"event": "end", "step": 0}]

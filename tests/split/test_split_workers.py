"""The executable split semantics on bad schedules: deadlock, barrier misplacement, mismatch."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pipeline.diagnostics import PipelineError

from tests.split.split_helpers import branch3_export, branch3_spec
from pipeline.nnef.checker import check_paths
from pipeline.split.allocation import resolve_deployment
from pipeline.split.errors import SplitError
from pipeline.split.workers import execute_split, identical, trace_document
from pipeline.split.exported import load_exported, vectors_for
from pipeline.split.plan import Schedule, schedule_document
from pipeline.split.splitter import Step, split_deployment


@pytest.fixture()
def paper3(tmp_path: Path):
    branch3_export(tmp_path / "export")
    exported = load_exported(tmp_path / "export")
    spec = branch3_spec(tmp_path)
    split = split_deployment(resolve_deployment(spec, "paper3", exported.graph))
    paths = []
    for item, text in split.texts().items():
        paths.append(tmp_path / f"{item}.nnef")
        paths[-1].write_text(text)
    graphs = check_paths(paths, tensor_dir=exported.directory).graphs
    vector = vectors_for(spec, exported.graph, exported.input_names, 1, 5)[0]
    return split, graphs, vector, exported.variables()


def schedule(split, sync: str) -> Schedule:
    document = schedule_document(split, sync)
    return Schedule(sync, {k: [Step.from_json(s) for s in v] for k, v in document["items"].items()})


def test_a_per_item_order_that_deadlocks_is_reported(paper3) -> None:
    split, graphs, vector, variables = paper3
    bad = schedule(split, "event")
    steps = bad.items["ITEM1"]
    bad.items["ITEM1"] = [s for s in steps if s.kind == "get"] + [s for s in steps if s.kind != "get"]
    with pytest.raises(SplitError) as caught:
        execute_split(graphs, bad, vector, variables, timeout=1.0)
    assert caught.value.code == "SPLIT-E040" and "deadlock" in caught.value.message


def test_a_get_in_the_phase_of_its_send_is_reported_under_barriers(paper3) -> None:
    split, graphs, vector, variables = paper3
    bad = schedule(split, "barrier")
    item1 = bad.items["ITEM1"]  # compute o1, send s1, barrier 1, ...: send after the barrier
    bad.items["ITEM1"] = [item1[0], item1[2], item1[1]] + item1[3:]
    item2 = bad.items["ITEM2"]  # barrier 1, get s1, ...: get before the barrier
    bad.items["ITEM2"] = [item2[1], item2[0]] + item2[2:]
    with pytest.raises(SplitError) as caught:
        execute_split(graphs, bad, vector, variables, timeout=5.0)
    assert caught.value.code == "SPLIT-E040" and "found no value" in caught.value.message


def test_a_schedule_that_is_not_the_item_file_is_refused(paper3) -> None:
    split, graphs, vector, variables = paper3
    bad = schedule(split, "event")
    bad.items["ITEM2"] = [s for s in bad.items["ITEM2"] if s.result != "o3"]
    with pytest.raises(SplitError) as caught:
        execute_split(graphs, bad, vector, variables)
    assert "missing ['o3']" in caught.value.message
    bad = schedule(split, "event")
    bad.items["ITEM1"][1] = Step("send", var="s1", value="o1", to=("ITEM2",))
    with pytest.raises(SplitError) as caught:
        execute_split(graphs, bad, vector, variables)
    assert "no such send_var" in caught.value.message


def test_a_missing_parameter_stops_every_worker(paper3) -> None:
    split, graphs, vector, variables = paper3
    partial = {k: v for k, v in variables.items() if k != "v7"}
    with pytest.raises(PipelineError) as caught:
        execute_split(graphs, schedule(split, "event"), vector, partial, timeout=5.0)
    assert caught.value.code == "SEM-E002" and "variable 'v7'" in caught.value.message


def test_traces_follow_the_schedule(paper3) -> None:
    split, graphs, vector, variables = paper3
    plan = schedule(split, "barrier")
    run = execute_split(graphs, plan, vector, variables)
    for item, steps in plan.items.items():
        events = run.trace[item]
        assert [(e["event"], e["step"]) for e in events] == [(k, i) for i in range(len(steps)) for k in ("start", "end")]
        assert all(a["t"] <= b["t"] for a, b in zip(events, events[1:]))
    timed = trace_document(run.trace, times=True)
    assert set(timed["items"]["ITEM1"][0]) == {"event", "step", "t"}
    assert trace_document(run.trace)["items"]["ITEM1"][0] == {"event": "start", "step": 0}


def test_bit_identity_is_on_bytes() -> None:
    nan = np.array([np.nan, 1.0], dtype=np.float32)
    assert identical(nan, nan.copy())
    assert not identical(np.array([0.0], np.float32), np.array([-0.0], np.float32))
    assert not identical(np.array([1.0], np.float32), np.array([1.0], np.float64))

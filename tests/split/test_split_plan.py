"""plan.json / schedule.json readers reject what the contract does not allow (SPLIT-E030)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pipeline.split.errors import SplitError
from pipeline.split.plan import load_plan, load_schedule

PLAN: dict[str, Any] = {
    "schema_version": 1, "model": "m", "deployment": "d", "sync": "event", "pipeline_depth": 1,
    "items": [{"name": "A", "target": "cpu", "file": "A.nnef"}, {"name": "B", "target": "cpu", "file": "B.nnef"}],
    "sync_variables": [{"name": "s1", "writer": "A", "readers": ["B"], "value": "x", "shape": [1], "dtype": "scalar",
                        "bytes": 4}],
    "allocation": {"x": "A", "y": "B"}, "outputs": {"y": "B"}, "rewrites": [],
}
SCHEDULE: dict[str, Any] = {
    "schema_version": 1, "sync": "barrier",
    "items": {"A": [{"kind": "compute", "result": "x", "op": "relu"}, {"kind": "send", "var": "s1", "value": "x",
                                                                       "to": ["B"]}, {"kind": "barrier", "id": 1}],
              "B": [{"kind": "barrier", "id": 1}, {"kind": "get", "var": "s1", "result": "x", "from": "A"},
                    {"kind": "compute", "result": "y", "op": "relu"}]},
}


def write(tmp_path: Path, data: Any) -> Path:
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(data))
    return path


def test_valid_documents_read_back(tmp_path: Path) -> None:
    assert load_plan(write(tmp_path, PLAN))["sync_variables"][0]["writer"] == "A"
    schedule = load_schedule(write(tmp_path, SCHEDULE))
    assert schedule.sync == "barrier" and schedule.to_json() == SCHEDULE


@pytest.mark.parametrize("change", [
    {"schema_version": 2}, {"sync": "often"}, {"pipeline_depth": 0}, {"pipeline_depth": True},
    {"items": [{"name": "A"}]}, {"allocation": {"x": "Z"}},
    {"sync_variables": [{**PLAN["sync_variables"][0], "readers": ["Z"]}]},
])
def test_malformed_plans(tmp_path: Path, change: dict[str, Any]) -> None:
    with pytest.raises(SplitError) as caught:
        load_plan(write(tmp_path, {**PLAN, **change}))
    assert caught.value.code == "SPLIT-E030"


@pytest.mark.parametrize("change", [
    {"sync": "event"},  # barrier steps in an event schedule
    {"items": {"A": [{"kind": "barrier", "id": 1}], "B": []}},  # items pass different barriers
    {"items": {"A": [{"kind": "jump"}]}}, {"items": {"A": [{"kind": "get", "var": "s1"}]}}, {"items": []},
])
def test_malformed_schedules(tmp_path: Path, change: dict[str, Any]) -> None:
    with pytest.raises(SplitError) as caught:
        load_schedule(write(tmp_path, {**SCHEDULE, **change}))
    assert caught.value.code == "SPLIT-E030"


def test_unreadable(tmp_path: Path) -> None:
    path = tmp_path / "doc.json"
    path.write_text("{")
    with pytest.raises(SplitError):
        load_plan(path)
    with pytest.raises(SplitError):
        load_schedule(tmp_path / "missing.json")

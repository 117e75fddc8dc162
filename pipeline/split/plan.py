"""plan.json and schedule.json: the split's contract with the Petri analyses and code generators.

plan.json (schema_version 1):
    model, deployment, sync ("event" | "barrier"), pipeline_depth (int >= 1),
    items: [{name, target, file}]          the item files, relative to the plan's folder
    sync_variables: [{name, writer, readers, value, shape, dtype, bytes}]
    allocation: {instruction result: item} every result of every computing instruction
    outputs: {graph output: item}          the item whose header lists the output
    rewrites: [...]                        applied layer-parallel rewrites (layer_parallel.py)
    original: the description that was split, relative to the plan's folder
                                           (../../export/graph.nnef, or rewritten.nnef)
    unused_items: items of the deployment given nothing to do (no file)

schedule.json (schema_version 1):
    sync, items: {ITEM: [step, ...]} with steps
    {"kind": "compute", "result", "op"} | {"kind": "send", "var", "value", "to"} |
    {"kind": "get", "var", "result", "from"} | {"kind": "barrier", "id"}

`load_plan` / `load_schedule` read them back and reject malformed documents (SPLIT-E030),
so a consumer never works from a half-understood file.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any, Mapping

from pipeline.split.allocation import computing
from pipeline.diagnostics import Location
from pipeline.split.codes import SplitError
from pipeline.split.schedule import SYNC_MODES, item_schedules
from pipeline.split.splitter import Split, Step

SCHEMA_VERSION = 1
PLAN_FILE = "plan.json"
SCHEDULE_FILE = "schedule.json"
TRACE_FILE = "trace-interpreter.json"
REWRITTEN_FILE = "rewritten.nnef"


def plan_document(split: Split, original: str) -> dict[str, Any]:
    """plan.json of `split`; `original`: the description split, relative to plan.json's folder."""
    deployment = split.deployment
    allocation = {ref.name: deployment.item_of(op) for op in computing(deployment.graph) for ref in op.output_refs()}
    return {
        "schema_version": SCHEMA_VERSION,
        "model": deployment.model,
        "deployment": deployment.name,
        "sync": deployment.sync,
        "pipeline_depth": deployment.pipeline_depth,
        "items": [{"name": item.name, "target": item.target, "file": item.file} for item in split.items],
        "sync_variables": [s.to_json() for s in split.sync_variables],
        "allocation": dict(sorted(allocation.items())),
        "outputs": dict(split.outputs),
        "rewrites": [r.to_json() for r in deployment.rewrites],
        "original": original,
        "unused_items": list(split.unused_items),
    }


def schedule_document(split: Split, sync: str | None = None) -> dict[str, Any]:
    """schedule.json of `split` for `sync` (default: the deployment's sync mode)."""
    mode = sync or split.deployment.sync
    schedules = item_schedules(split, mode)
    return {"schema_version": SCHEMA_VERSION, "sync": mode,
            "items": {item: [s.to_json() for s in steps] for item, steps in schedules.items()}}


@dataclass(frozen=True)
class Schedule:
    """A schedule read back: the sync mode and each item's steps."""

    sync: str
    items: dict[str, list[Step]]

    def to_json(self) -> dict[str, Any]:
        return {"schema_version": SCHEMA_VERSION, "sync": self.sync,
                "items": {item: [s.to_json() for s in steps] for item, steps in self.items.items()}}


def _read(path: str | os.PathLike[str]) -> Mapping[str, Any]:
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError) as error:
        raise SplitError("SPLIT-E030", f"cannot read: {error}", Location.in_file(path)) from None
    if not isinstance(data, dict) or data.get("schema_version") != SCHEMA_VERSION:
        raise SplitError("SPLIT-E030", f"not a schema_version {SCHEMA_VERSION} document", Location.in_file(path))
    return data


def _require(data: Mapping[str, Any], key: str, kind: type | tuple[type, ...], path: Location) -> Any:
    value = data.get(key)
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        raise SplitError("SPLIT-E030", f"'{key}' missing or of the wrong type", Location(path.file, key_path=key))
    return value


def load_plan(path: str | os.PathLike[str]) -> dict[str, Any]:
    """plan.json, checked for the keys and types of the contract above."""
    where = Location.in_file(path)
    data = dict(_read(path))
    for key, kind in (("model", str), ("deployment", str), ("sync", str), ("pipeline_depth", int),
                      ("items", list), ("sync_variables", list), ("allocation", dict), ("outputs", dict),
                      ("rewrites", list)):
        _require(data, key, kind, where)
    if data["sync"] not in SYNC_MODES or data["pipeline_depth"] < 1:
        raise SplitError("SPLIT-E030", f"sync {data['sync']!r} or pipeline_depth {data['pipeline_depth']!r} invalid", where)
    items = set()
    for entry in data["items"]:
        for key in ("name", "target", "file"):
            _require(entry if isinstance(entry, dict) else {}, key, str, where)
        items.add(entry["name"])
    for entry in data["sync_variables"]:
        if not isinstance(entry, dict):
            raise SplitError("SPLIT-E030", "a sync variable is not an object", where)
        for key, kind in (("name", str), ("writer", str), ("readers", list), ("value", str), ("shape", list),
                          ("dtype", str), ("bytes", int)):
            _require(entry, key, kind, where)
        if entry["writer"] not in items or not set(entry["readers"]) <= items:
            raise SplitError("SPLIT-E030", f"sync variable {entry['name']}: writer or readers not among the items", where)
    if not set(data["allocation"].values()) <= items or not set(data["outputs"].values()) <= items:
        raise SplitError("SPLIT-E030", "allocation or outputs name an item not in 'items'", where)
    return data


def load_schedule(path: str | os.PathLike[str]) -> Schedule:
    """schedule.json as a Schedule, every step checked."""
    where = Location.in_file(path)
    data = _read(path)
    sync = _require(data, "sync", str, where)
    items = _require(data, "items", dict, where)
    if sync not in SYNC_MODES:
        raise SplitError("SPLIT-E030", f"sync {sync!r} is not one of {', '.join(SYNC_MODES)}", where)
    result: dict[str, list[Step]] = {}
    for item, steps in items.items():
        if not isinstance(steps, list):
            raise SplitError("SPLIT-E030", f"steps of {item} are not a list", where)
        try:
            result[str(item)] = [Step.from_json(step) for step in steps]
        except (KeyError, TypeError, ValueError, AttributeError) as error:
            raise SplitError("SPLIT-E030", f"a step of {item} is malformed: {error}", where) from None
    barriers = {item: [s.id for s in steps if s.kind == "barrier"] for item, steps in result.items()}
    if sync == "event" and any(barriers.values()):
        raise SplitError("SPLIT-E030", "barrier steps in an event schedule", where)
    if sync == "barrier" and len({tuple(b) for b in barriers.values()}) > 1:
        raise SplitError("SPLIT-E030", "items do not pass the same barriers", where)
    return Schedule(sync, result)

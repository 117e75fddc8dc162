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
so a consumer never works from a half-understood file: the schemas are
pipeline/schemas/plan-1.schema.json and schedule-1.schema.json (the Petri step reads the same
files against the same schemas), the cross-references are checked here.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

from pipeline.split.allocation import computing
from pipeline.diagnostics import Location
from pipeline.files.schema import require
from pipeline.split.errors import SplitError
from pipeline.split.schedule import item_schedules
from pipeline.split.splitter import Split, Step

from pipeline.split.outputs import PLAN_FILE, REWRITTEN_FILE, SCHEDULE_FILE, TRACE_FILE  # noqa: F401 (re-exported)

SCHEMA_VERSION = 1


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


def _read(path: str | os.PathLike[str], schema: str) -> dict[str, Any]:
    """The document at `path` when it follows `schema` (pipeline/schemas/), else SPLIT-E030."""
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError) as error:
        raise SplitError("SPLIT-E030", f"cannot read: {error}", Location.in_file(path)) from None
    return require(data, schema, "SPLIT-E030", path, SplitError)


def load_plan(path: str | os.PathLike[str]) -> dict[str, Any]:
    """plan.json, checked against plan-1.schema.json and for its cross-references."""
    data = _read(path, "plan-1")
    items = {entry["name"] for entry in data["items"]}
    for index, entry in enumerate(data["sync_variables"]):
        if entry["writer"] not in items or not set(entry["readers"]) <= items:
            raise SplitError("SPLIT-E030", f"sync variable {entry['name']}: writer or readers not among the items",
                             Location.in_file(path, key_path=f"sync_variables[{index}]"))
    for key in ("allocation", "outputs"):
        for name, item in data[key].items():
            if item not in items:
                raise SplitError("SPLIT-E030", f"{key} names item {item!r}, which is not in 'items'",
                                 Location.in_file(path, key_path=f"{key}.{name}"))
    return data


def load_schedule(path: str | os.PathLike[str]) -> Schedule:
    """schedule.json as a Schedule, checked against schedule-1.schema.json and for its barriers."""
    where = Location.in_file(path)
    data = _read(path, "schedule-1")
    sync = data["sync"]
    result = {str(item): [Step.from_json(step) for step in steps] for item, steps in data["items"].items()}
    barriers = {item: [s.id for s in steps if s.kind == "barrier"] for item, steps in result.items()}
    if sync == "event" and any(barriers.values()):
        raise SplitError("SPLIT-E030", "barrier steps in an event schedule", where)
    if sync == "barrier" and len({tuple(b) for b in barriers.values()}) > 1:
        raise SplitError("SPLIT-E030", "items do not pass the same barriers", where)
    return Schedule(sync, result)

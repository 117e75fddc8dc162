"""plan.json, the splitter's account of a split (read, never trusted beyond its schema).

    {"schema_version": 1, "model": "lenet5", "deployment": "split2", "sync": "event",
     "pipeline_depth": 1, "items": [{"name": "CPU0", "target": "cpu", "file": "CPU0.nnef"}],
     "sync_variables": [...], "allocation": {...},
     "original": "../../export/graph.nnef"}          # optional, relative to plan.json

The Petri step takes from it the item files, the sync implementation and the pipeline
depth; `original` names the single-item description the items were split from when it is
not the exported graph (e.g. after a layer-parallel rewrite). Everything else about the
split is re-derived from the item descriptions themselves.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.petri.documents import Shape, read_json

SYNC_MODES = ("event", "barrier")


@dataclass(frozen=True)
class Plan:
    path: Path
    deployment: str
    sync: str
    pipeline_depth: int
    item_files: tuple[Path, ...]
    original: Path | None = None


def parse_plan(doc: Any, path: Path) -> Plan:
    shape = Shape("PETRI-E011", str(path))
    data = shape.mapping(doc, "")
    shape.version(data)
    sync = shape.choice(shape.key(data, "sync", ""), "sync", SYNC_MODES)
    depth = shape.integer(data.get("pipeline_depth", 1), "pipeline_depth", 1)
    files: list[Path] = []
    items = shape.array(shape.key(data, "items", ""), "items")
    if not items:
        raise shape.fail("items", "a plan has at least one item")
    for index, raw in enumerate(items):
        item = shape.mapping(raw, f"items[{index}]")
        shape.string(shape.key(item, "name", f"items[{index}]"), f"items[{index}].name")
        name = shape.string(shape.key(item, "file", f"items[{index}]"), f"items[{index}].file")
        if Path(name).is_absolute() or ".." in Path(name).parts:
            raise shape.fail(f"items[{index}].file", f"an item file lies beside plan.json, found {name!r}")
        files.append(path.parent / name)
    original = data.get("original")
    original_path = path.parent / shape.string(original, "original") if original is not None else None
    return Plan(path, str(data.get("deployment", path.parent.name)), sync, depth, tuple(dict.fromkeys(files)),
                original_path)


def load_plan(path: str | os.PathLike[str]) -> Plan:
    """The plan at `path`; PipelineError PETRI-E011/E013 on a bad document."""
    return parse_plan(read_json(path), Path(path))

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

from pipeline.diagnostics import Location, PipelineError
from pipeline.petri.documents import read_json
from pipeline.files.schema import require


@dataclass(frozen=True)
class Plan:
    path: Path
    deployment: str
    sync: str
    pipeline_depth: int
    item_files: tuple[Path, ...]
    original: Path | None = None


def parse_plan(doc: Any, path: Path) -> Plan:
    """The plan of a plan.json document; PETRI-E011 with the JSON path on any schema problem."""
    data = require(doc, "plan-1", "PETRI-E011", path)
    files: list[Path] = []
    for index, item in enumerate(data["items"]):
        name = item["file"]
        if Path(name).is_absolute() or ".." in Path(name).parts:
            raise PipelineError("PETRI-E011", f"an item file lies beside plan.json, found {name!r}",
                                Location.in_file(path, key_path=f"items[{index}].file"))
        files.append(path.parent / name)
    original = data.get("original")
    original_path = path.parent / original if original is not None else None
    return Plan(path, data["deployment"], data["sync"], data["pipeline_depth"], tuple(dict.fromkeys(files)),
                original_path)


def load_plan(path: str | os.PathLike[str]) -> Plan:
    """The plan at `path`; PipelineError PETRI-E011/E013 on a bad document."""
    return parse_plan(read_json(path), Path(path))

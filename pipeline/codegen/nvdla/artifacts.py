"""A loadable and its debug table on disk: <name>.nvdla and <name>.debug.json beside it.

The debug table maps every task and operation of the loadable to its unit, the NNEF
instruction and line it implements and the legalization rules applied; it also lists the
legalization rewrites (rule, before, after, line). Deterministic: sorted keys, no paths.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pipeline.files.atomic import write_bytes, write_json

DEBUG_SCHEMA_VERSION = 1


def debug_document(debug: list[dict[str, Any]], rewrites: list[Any], config: str) -> dict[str, Any]:
    return {"schema_version": DEBUG_SCHEMA_VERSION, "configuration": config, "precision": "fp16",
            "firmware_interface": "0.12.0", "loadable_version": "0.7.0", "operations": debug,
            "rewrites": [{"rule": r.rule, "before": r.before, "after": r.after, "nnef_line": r.line}
                         for r in rewrites]}


def write_loadable_files(directory: Path, name: str, data: bytes, debug: list[dict[str, Any]], rewrites: list[Any],
                         config: str) -> list[Path]:
    return [write_bytes(directory / f"{name}.nvdla", data),
            write_json(directory / f"{name}.debug.json", debug_document(debug, rewrites, config))]

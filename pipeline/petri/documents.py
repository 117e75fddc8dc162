"""Reading the JSON documents the Petri step consumes (plan, schedule, trace).

`read_json` parses (PETRI-E013); each reader then validates the document against its schema
(pipeline/schemas/{plan,schedule,trace}-1.schema.json, through `pipeline.files.schema.require`)
and raises `PipelineError` with its PETRI code and the JSON path of the first problem
(`schedule.json: items.ITEM2[3].kind`), so bad input is told apart from a failed check.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from pipeline.diagnostics import Location, PipelineError


def read_json(path: str | os.PathLike[str]) -> Any:
    """The parsed document, or PETRI-E013 naming the file and the JSON error's line."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PipelineError("PETRI-E013", f"cannot read the file: {exc}", Location.in_file(path)) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise PipelineError("PETRI-E013", f"not JSON: {exc.msg}",
                            Location(str(path), exc.lineno, exc.colno)) from None

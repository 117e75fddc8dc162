"""Reading the JSON documents the Petri step consumes (plan, schedule, trace).

Each reader validates the document's structure and raises `PipelineError` with a PETRI
code and the JSON path of the first problem (`schedule.json: items.ITEM2[3].kind`), so
bad input is told apart from a failed check.
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


class Shape:
    """Assertions on a JSON value with its path, raising one code."""

    def __init__(self, code: str, file: str) -> None:
        self.code = code
        self.file = file

    def fail(self, path: str, message: str) -> PipelineError:
        return PipelineError(self.code, message, Location.in_file(self.file, key_path=path))

    def mapping(self, value: Any, path: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(path, f"expected an object, found {type(value).__name__}")
        return value

    def array(self, value: Any, path: str) -> list[Any]:
        if not isinstance(value, list):
            raise self.fail(path, f"expected an array, found {type(value).__name__}")
        return value

    def string(self, value: Any, path: str) -> str:
        if not isinstance(value, str) or not value:
            raise self.fail(path, f"expected a non-empty string, found {value!r}")
        return value

    def integer(self, value: Any, path: str, minimum: int | None = None) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(path, f"expected an integer, found {value!r}")
        if minimum is not None and value < minimum:
            raise self.fail(path, f"expected an integer >= {minimum}, found {value}")
        return value

    def key(self, data: dict[str, Any], key: str, path: str) -> Any:
        if key not in data:
            raise self.fail(f"{path}.{key}" if path else key, "required key missing")
        return data[key]

    def choice(self, value: Any, path: str, allowed: tuple[str, ...]) -> str:
        if value not in allowed:
            raise self.fail(path, f"expected one of {', '.join(allowed)}, found {value!r}")
        return str(value)

    def version(self, data: dict[str, Any]) -> None:
        if data.get("schema_version") != 1:
            raise self.fail("schema_version", f"expected 1, found {data.get('schema_version')!r}")

"""The one way to validate a YAML/JSON document we read: a JSON Schema file and jsonschema.

Each document kind has a Draft 2020-12 schema under pipeline/schemas/ (`deploy-1`,
`plan-1`, `schedule-1`, `trace-1`, `met-baseline-1`, ...). `validate(document, schema,
codes)` returns *every* problem as a `SchemaProblem` (stable code, dotted key path such as
`deployments.single.items[0].target`, a message, line and column), sorted by position then
path. `codes` maps jsonschema's failing keyword to the reader's stable code (or is one code
for all). `require(...)` raises the first problem instead, for documents read whole or not
at all.

Two rules differ from plain JSON Schema, both stricter: `integer` means a Python int that
is not a bool (JSON Schema also accepts 1.0), and the keyword `"finite": true` rejects
NaN and infinities (YAML reads `.nan`/`.inf`). jsonschema is imported on first
validation only, so importing a reader stays cheap.

A named schema is first compiled into an acceptance test (pipeline/files/schema_accept.py): a
document it accepts has no problem and jsonschema is not run; any other document is judged by
jsonschema, which finds and words every problem. The acceptance test is 10-30x faster on the
large documents (traces, schedules) and never the one that reports a problem.

What a schema cannot say stays a small explicit check in the reader, after this one:
duplicate keys (seen by the loader), cross-references between values, value-dependent
bounds (low < high).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Mapping

from pipeline.diagnostics import Location, PipelineError

SCHEMA_DIR = Path(__file__).resolve().parents[1] / "schemas"

# keywords whose problem hides the others at the same path (a wrong type says it all)
_TYPE_KEYWORDS = ("type", "minLength")


@dataclass(frozen=True)
class SchemaProblem:
    """One problem: stable code, dotted key path ('' = the document), message, line, column (0 = unknown)."""

    code: str
    path: str
    message: str
    line: int = 0
    column: int = 0


Positions = Mapping[str, tuple[int, int]]


def schema_path(name: str) -> Path:
    """The file of schema `name` (e.g. 'deploy-1')."""
    return SCHEMA_DIR / f"{name}.schema.json"


@lru_cache(maxsize=None)
def load_schema(name: str) -> dict[str, Any]:
    """The parsed schema `name`, read once per process."""
    return json.loads(schema_path(name).read_text(encoding="utf-8"))


@lru_cache(maxsize=None)
def _validator_class() -> Any:
    import jsonschema
    from jsonschema import validators

    def is_integer(_checker: Any, instance: Any) -> bool:
        return isinstance(instance, int) and not isinstance(instance, bool)

    def finite(_validator: Any, wanted: Any, instance: Any, _schema: Any) -> Any:
        if wanted and isinstance(instance, float) and (instance != instance or instance in (float("inf"), float("-inf"))):
            yield jsonschema.ValidationError(f"expected a finite number, got {instance}")

    base = jsonschema.Draft202012Validator
    checker = base.TYPE_CHECKER.redefine("integer", is_integer)
    return validators.extend(base, validators={"finite": finite}, type_checker=checker)


@lru_cache(maxsize=None)
def validator(name: str) -> Any:
    """A jsonschema validator for schema `name`, built once per process.

    The schema itself is not checked against the meta-schema here (25 ms a process on the
    no-op path); tests/test_schema.py checks every schema file.
    """
    return _validator_class()(load_schema(name))


@lru_cache(maxsize=None)
def acceptor(name: str) -> Callable[[Any], bool] | None:
    """The compiled acceptance test of schema `name` (pipeline/files/schema_accept.py), built once per process."""
    from pipeline.files.schema_accept import compile_acceptor

    return compile_acceptor(load_schema(name))


# ---------------------------------------------------------------------- paths and messages

def _quoted(text: str, limit: int = 200) -> str:
    """A string from the document in quotes, on one line (a newline or a control character written as
    its escape, `'gcc\\n'`), cut to `limit` characters."""
    shown = repr(text[:limit])[1:-1].replace("\\'", "'")
    return f"'{shown}'" + ("..." if len(text) > limit else "")


def describe(value: Any) -> str:
    """A value as a message names it: `string '1e-5'`, `number 3`, `a list`."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, str):
        return f"string {_quoted(value)}"
    if isinstance(value, (int, float)):
        return f"number {value}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


def join(path: str, key: Any) -> str:
    """`path` extended by a mapping key (dotted) or a list index (`[i]`)."""
    if isinstance(key, int) and not isinstance(key, bool):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else str(key)


def _dotted(document: Any, parts: Any) -> str:
    path, node = "", document
    for part in parts:
        if isinstance(node, list):
            path = f"{path}[{part}]"
        else:
            path = f"{path}.{part}" if path else str(part)
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            node = None
    return path


_TYPE_NAMES = {"object": "a mapping", "array": "a list", "string": "a non-empty string", "integer": "an integer",
               "number": "a number", "boolean": "a boolean", "null": "null"}
# what YAML 1.1 reads as a string but a reader means as a number: an exponent without a '.'
_YAML_11_STRING = re.compile(r"^[-+]?[0-9]+[eE][-+]?[0-9]+$")
_YAML_HINT = " (YAML 1.1 reads a number without a '.' before its exponent as a string: write e.g. 1.0e-5)"


def _number_word(schema: Mapping[str, Any]) -> str:
    return "an integer" if schema.get("type") == "integer" else "a number"


def _messages(error: Any, path: str) -> list[tuple[str, str]]:
    """(path, message) pairs for one jsonschema error, in our words."""
    keyword, value, schema = error.validator, error.instance, error.schema
    if "propertyNames" in error.schema_path:
        return [(path, f"keys here must be strings, got {describe(value)}")]
    if keyword == "type":
        wanted = error.validator_value if isinstance(error.validator_value, list) else [error.validator_value]
        text = " or ".join(_TYPE_NAMES.get(t, t) for t in wanted)
        hint = ""
        if isinstance(value, str) and ("number" in wanted or "integer" in wanted) and _YAML_11_STRING.match(value):
            hint = _YAML_HINT
        return [(path, f"expected {text}, got {describe(value)}{hint}")]
    if keyword == "required":
        missing = [k for k in error.validator_value if isinstance(value, dict) and k not in value]
        where = f" in {path}" if path else ""
        return [(path, f"required key '{k}' is missing{where}") for k in missing]
    if keyword == "additionalProperties" and isinstance(value, dict):
        allowed = sorted(schema.get("properties", {}))
        extra = [k for k in value if k not in schema.get("properties", {})]
        return [(join(path, k), f"unknown key '{k}'; allowed here: {', '.join(allowed) or '(none)'}") for k in extra]
    if keyword == "const":
        return [(path, f"expected {error.validator_value!r}, got {describe(value)}")]
    if keyword == "enum":
        allowed = error.validator_value
        shown = _quoted(value) if isinstance(value, str) else describe(value)
        return [(path, f"{shown} is not one of {', '.join(str(a) for a in allowed)}")]
    if keyword == "maximum":
        return [(path, f"expected {_number_word(schema)} <= {error.validator_value}, got {value}")]
    if keyword == "maxProperties":
        return [(path, f"expected at most {error.validator_value} keys, got {len(value)}")]
    if keyword == "maxLength":
        return [(path, f"expected at most {error.validator_value} characters, got {len(value)}")]
    if keyword == "minimum":
        return [(path, f"expected {_number_word(schema)} >= {error.validator_value}, got {value}")]
    if keyword == "exclusiveMinimum":
        return [(path, f"expected {_number_word(schema)} > {error.validator_value}, got {value}")]
    if keyword == "minItems":
        if error.validator_value == 1:
            return [(path, "expected a non-empty list")]
        return [(path, f"expected at least {error.validator_value} entries, got {len(value)}")]
    if keyword == "maxItems":
        return [(path, f"expected at most {error.validator_value} entries, got {len(value)}")]
    if keyword == "minProperties":
        return [(path, "expected a non-empty mapping" if error.validator_value == 1
                 else f"expected at least {error.validator_value} keys, got {len(value)}")]
    if keyword == "minLength":
        return [(path, f"expected a non-empty string, got {describe(value)}")]
    if keyword == "pattern":
        return [(path, f"{describe(value)} does not have the form {error.validator_value}")]
    return [(path, error.message)]


def position(positions: Positions | None, path: str) -> tuple[int, int]:
    """Line and column of `path`, else of its nearest ancestor with one; (0, 0) when unknown."""
    if not positions:
        return 0, 0
    while True:
        if path in positions:
            return positions[path]
        if not path:
            return 0, 0
        cut = max(path.rfind("."), path.rfind("["))
        path = path[:cut] if cut > 0 else ""


def validate(document: Any, schema: str | Mapping[str, Any], codes: str | Mapping[str, str],
             positions: Positions | None = None) -> list[SchemaProblem]:
    """Every problem of `document` against schema `schema`, sorted by (line, column, path, code).

    `schema`: a schema name, or a schema document (e.g. one with limits raised by the user).
    `codes`: one code for every problem, or jsonschema keyword -> code with a `"*"` default.
    `positions`: key path -> (line, column), e.g. from the YAML node marks; problems without
    one get their nearest ancestor's. A type problem at a path hides the other problems at the same path.
    """
    def code_of(error: Any) -> str:
        return codes if isinstance(codes, str) else codes.get(error.validator, codes["*"])

    accept = acceptor(schema) if isinstance(schema, str) else None
    if accept is not None and accept(document):
        return []

    found: list[tuple[str, str, str, bool]] = []
    checker = validator(schema) if isinstance(schema, str) else _validator_class()(schema)
    for error in checker.iter_errors(document):
        path = _dotted(document, error.absolute_path)
        is_type = error.validator in _TYPE_KEYWORDS or "propertyNames" in error.schema_path
        for where, message in _messages(error, path):
            found.append((code_of(error), where, message, is_type))
    typed = {where for _, where, _, is_type in found if is_type}
    problems = {SchemaProblem(code, where, message, *position(positions, where))
                for code, where, message, is_type in found if is_type or where not in typed}
    return sorted(problems, key=sort_key)


def sort_key(problem: SchemaProblem) -> tuple[int, int, str, str, str]:
    """The order problems are reported in: position, then path, code and message."""
    return (problem.line, problem.column, problem.path, problem.code, problem.message)


def first_problem(problems: list[SchemaProblem]) -> str:
    """The first problem's message, with how many more there are."""
    more = f" (and {len(problems) - 1} more problem(s))" if len(problems) > 1 else ""
    return problems[0].message + more


def require(document: Any, schema: str, code: str, file: Any,
            error: Callable[[str, str, Location], PipelineError] = PipelineError) -> Any:
    """`document` when it follows `schema`; else raise `error` (code, first problem and how many more, its key path).

    For documents a step reads whole or not at all (plan.json, schedule.json, traces):
    one code for every problem, the first one's key path in the location.
    """
    problems = validate(document, schema, code)
    if problems:
        first = problems[0]
        raise error(code, first_problem(problems), Location.in_file(file, key_path=first.path))
    return document

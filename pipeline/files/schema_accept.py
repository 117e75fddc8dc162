"""A compiled acceptance test for our JSON Schemas: says "valid" fast, or "ask jsonschema".

jsonschema interprets a schema for every node of a document, which costs about half a
second per trace file of a shipped model (10,000 events, 33 traces: 14.7 CPU seconds in one
`doit verify`) and a minute per 100,000-operation schedule. Almost every document we read is
valid, so `pipeline.files.schema.validate` first runs the schema compiled here into nested Python
closures; only a document it does not accept is handed to jsonschema, which finds and words
the problems as before. The closures are therefore only ever trusted to *accept*: wherever a
rule is awkward (a NaN against a bound, an unhashable item under uniqueItems) they reject and
let jsonschema decide. A schema using a keyword not handled here compiles to None and is always
judged by jsonschema. tests/test_schema.py compares both verdicts on thousands of generated
documents per schema (equal verdicts, never an acceptance jsonschema refuses).

Keywords: type, const, enum, minimum, maximum, exclusiveMinimum, minLength, maxLength,
pattern, minItems, maxItems, uniqueItems, items, properties, required, additionalProperties,
propertyNames, minProperties, maxProperties, allOf, if/then/else, $ref to "#/$defs/<name>",
and our `finite`; annotations ($schema, $id, title, description, $comment, default,
examples, $defs) are ignored. `integer` is a Python int that is not a bool, as in
pipeline/files/schema.py.
"""

from __future__ import annotations

import math
import re
from typing import Any, Callable, Mapping

Accept = Callable[[Any], bool]

_ANNOTATIONS = frozenset({"$schema", "$id", "title", "description", "$comment", "default", "examples", "$defs"})
_TYPES: dict[str, Callable[[Any], bool]] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


class Unsupported(Exception):
    """A schema construct this compiler does not handle (the schema is left to jsonschema)."""


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _equal(a: Any, b: Any) -> bool:
    """JSON equality: booleans are not numbers, 1 == 1.0, containers compared element-wise."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if _is_number(a) and _is_number(b):
        return a == b
    if isinstance(a, str) or isinstance(b, str):
        return isinstance(a, str) and isinstance(b, str) and a == b
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    return False


def _unique(items: list[Any]) -> bool:
    """True only when the items are scalars (not containers) that are pairwise different."""
    seen: set[tuple[str, Any]] = set()
    for item in items:
        if isinstance(item, (list, dict)) or (isinstance(item, float) and item != item):
            return False                        # leave it to jsonschema
        key = ("b", item) if isinstance(item, bool) else ("n", item) if _is_number(item) else (type(item).__name__, item)
        if key in seen:
            return False
        seen.add(key)
    return True


class _Compiler:
    def __init__(self, root: Mapping[str, Any]) -> None:
        self.root = root
        self.refs: dict[str, Accept] = {}

    def ref(self, target: str) -> Accept:
        if not target.startswith("#/$defs/") or "/" in target[len("#/$defs/"):]:
            raise Unsupported(f"$ref {target}")
        name = target[len("#/$defs/"):]
        defs = self.root.get("$defs", {})
        if name not in defs:
            raise Unsupported(f"$ref {target}")
        if name not in self.refs:
            slot: list[Accept] = []
            self.refs[name] = lambda value: slot[0](value)      # recursion-safe forward reference
            slot.append(self.compile(defs[name]))
        return self.refs[name]

    def compile(self, schema: Any) -> Accept:  # noqa: C901 (one branch per keyword)
        if schema is True or schema == {}:
            return lambda _value: True
        if schema is False:
            return lambda _value: False
        if not isinstance(schema, dict):
            raise Unsupported(f"schema {schema!r}")
        checks: list[Accept] = []
        for keyword in schema:
            if keyword not in _ANNOTATIONS and keyword not in _HANDLED:
                raise Unsupported(keyword)
        if "type" in schema:
            wanted = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
            if any(t not in _TYPES for t in wanted):
                raise Unsupported(f"type {wanted}")
            tests = [_TYPES[t] for t in wanted]
            checks.append(tests[0] if len(tests) == 1 else (lambda v, tests=tests: any(t(v) for t in tests)))
        if "$ref" in schema:
            checks.append(self.ref(schema["$ref"]))
        if "const" in schema:
            checks.append(lambda v, c=schema["const"]: _equal(v, c))
        if "enum" in schema:
            options = list(schema["enum"])
            if options and all(isinstance(o, str) for o in options):
                checks.append(lambda v, words=frozenset(options): isinstance(v, str) and v in words)
            else:
                checks.append(lambda v, options=options: any(_equal(v, o) for o in options))
        if "finite" in schema and schema["finite"]:
            checks.append(lambda v: not isinstance(v, float) or math.isfinite(v))
        for keyword, holds in (("minimum", lambda v, b: v >= b), ("maximum", lambda v, b: v <= b),
                               ("exclusiveMinimum", lambda v, b: v > b)):
            if keyword in schema:
                checks.append(lambda v, b=schema[keyword], holds=holds: not _is_number(v) or bool(holds(v, b)))
        if "minLength" in schema:
            checks.append(lambda v, n=schema["minLength"]: not isinstance(v, str) or len(v) >= n)
        if "maxLength" in schema:
            checks.append(lambda v, n=schema["maxLength"]: not isinstance(v, str) or len(v) <= n)
        if "pattern" in schema:
            checks.append(lambda v, p=re.compile(schema["pattern"]): not isinstance(v, str) or p.search(v) is not None)
        if "minItems" in schema:
            checks.append(lambda v, n=schema["minItems"]: not isinstance(v, list) or len(v) >= n)
        if "maxItems" in schema:
            checks.append(lambda v, n=schema["maxItems"]: not isinstance(v, list) or len(v) <= n)
        if schema.get("uniqueItems"):
            checks.append(lambda v: not isinstance(v, list) or _unique(v))
        if "items" in schema:
            item = self.compile(schema["items"])
            checks.append(lambda v, item=item: not isinstance(v, list) or all(map(item, v)))
        if "minProperties" in schema:
            checks.append(lambda v, n=schema["minProperties"]: not isinstance(v, dict) or len(v) >= n)
        if "maxProperties" in schema:
            checks.append(lambda v, n=schema["maxProperties"]: not isinstance(v, dict) or len(v) <= n)
        if "required" in schema:
            checks.append(lambda v, keys=tuple(schema["required"]): not isinstance(v, dict) or all(k in v for k in keys))
        if "propertyNames" in schema:
            name = self.compile(schema["propertyNames"])
            checks.append(lambda v, name=name: not isinstance(v, dict) or all(map(name, v)))
        properties = {k: self.compile(s) for k, s in schema.get("properties", {}).items()}
        if properties:
            def has_properties(v: Any, pairs: tuple[tuple[str, Accept], ...] = tuple(properties.items())) -> bool:
                if isinstance(v, dict):
                    for key, check in pairs:
                        if key in v and not check(v[key]):
                            return False
                return True
            checks.append(has_properties)
        if "additionalProperties" in schema:
            extra = self.compile(schema["additionalProperties"])
            known = frozenset(schema.get("properties", {}))

            def has_extra(v: Any, extra: Accept = extra, known: frozenset[str] = known) -> bool:
                return not isinstance(v, dict) or all(extra(item) for k, item in v.items() if k not in known)
            checks.append(has_extra)
        for part in schema.get("allOf", ()):
            checks.append(self.compile(part))
        if "if" in schema:
            condition = self.compile(schema["if"])
            then = self.compile(schema.get("then", True))
            otherwise = self.compile(schema.get("else", True))
            checks.append(lambda v, c=condition, t=then, o=otherwise: t(v) if c(v) else o(v))
        if not checks:
            return lambda _value: True
        if len(checks) == 1:
            return checks[0]

        def every(v: Any, checks: tuple[Accept, ...] = tuple(checks)) -> bool:
            for check in checks:
                if not check(v):
                    return False
            return True
        return every


_HANDLED = frozenset({"type", "$ref", "const", "enum", "finite", "minimum", "maximum", "exclusiveMinimum",
                      "minLength", "maxLength", "pattern", "minItems", "maxItems", "uniqueItems", "items",
                      "minProperties", "maxProperties", "required", "propertyNames", "properties",
                      "additionalProperties", "allOf", "if", "then", "else"})


def compile_acceptor(schema: Mapping[str, Any]) -> Accept | None:
    """The acceptance test of `schema` (True: valid; False: ask jsonschema), or None if not compilable."""
    try:
        return _Compiler(schema).compile(dict(schema))
    except Unsupported:
        return None

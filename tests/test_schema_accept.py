"""The compiled acceptance test (pipeline/files/schema_accept.py) against jsonschema, on generated documents.

Documents are generated from each schema file with deliberate mistakes (wrong types, missing
and unknown keys, values at and beyond bounds, booleans where numbers are expected, NaN);
jsonschema (through pipeline.files.schema's validator class, with our `integer` and `finite`) is the
judge. The acceptance test must never accept a document jsonschema refuses, and must accept
what jsonschema accepts (it may only decline the NaN-against-a-bound cases it leaves to
jsonschema on purpose).
"""

from __future__ import annotations

import math
import random
import string
from typing import Any

import pytest

from pipeline.files.schema import SCHEMA_DIR, _validator_class, acceptor, load_schema, validate
from pipeline.files.schema_accept import compile_acceptor

NAMES = sorted(p.name[: -len(".schema.json")] for p in SCHEMA_DIR.glob("*.schema.json"))
DOCUMENTS = 1500


class Generator:
    """Random documents shaped by a schema, right most of the time and wrong some of the time."""

    def __init__(self, root: dict[str, Any], rng: random.Random) -> None:
        self.root, self.rng = root, rng
        self.error = 0.0     # probability of each deliberate mistake; chosen per document

    def document(self) -> Any:
        self.error = self.rng.choice([0.0, 0.0, 0.005, 0.02, 0.08])
        return self.value(self.root)

    def slip(self) -> bool:
        return self.rng.random() < self.error

    def wrong(self) -> Any:
        return self.rng.choice([None, True, False, 0, -1, 1.5, float("nan"), "", "x", [], {}, [1], {"k": 1}])

    def resolve(self, schema: Any) -> dict[str, Any]:
        while isinstance(schema, dict) and "$ref" in schema and len(schema) == 1:
            schema = self.root["$defs"][schema["$ref"].rsplit("/", 1)[1]]
        return schema if isinstance(schema, dict) else {}

    def value(self, schema: Any, depth: int = 0) -> Any:
        rng = self.rng
        if self.slip() or depth > 12:
            return self.wrong()
        s = self.resolve(schema)
        if "$ref" in s:
            merged = dict(self.resolve({"$ref": s["$ref"]}))
            merged.update({k: v for k, v in s.items() if k != "$ref"})
            s = merged
        if "const" in s:
            return self.wrong() if self.slip() else s["const"]
        if "enum" in s:
            return rng.choice(["other", 3, None]) if self.slip() else rng.choice(s["enum"])
        kinds = s.get("type")
        kind = rng.choice(kinds) if isinstance(kinds, list) else kinds
        if kind is None:
            kind = "object" if ("properties" in s or "required" in s) else "array" if "items" in s else \
                rng.choice(["string", "integer", "number", "object"])
        if kind == "object":
            return self.mapping(s, depth)
        if kind == "array":
            low, high = s.get("minItems", 0), s.get("maxItems", 4)
            count = rng.randint(max(0, low - 1), min(high + 1, low + 4)) if self.slip() else \
                rng.randint(low, min(high, low + 4))
            items = [self.value(s.get("items", {}), depth + 1) for _ in range(count)]
            if s.get("uniqueItems") and items and self.slip():
                items.append(items[0])
            return items
        if kind == "string":
            if "pattern" in s and not self.slip():
                return "".join(rng.choice("0123456789abcdef") for _ in range(64)) if "64" in s["pattern"] \
                    else rng.choice(["sm_87", "sm_90", "sm_90a"])
            low = s.get("minLength", 0)
            length = rng.randint(max(0, low - 1), low + 6) if self.slip() else rng.randint(low, low + 6)
            return "".join(rng.choice(string.ascii_letters) for _ in range(min(length, s.get("maxLength", length))))
        if kind in ("integer", "number"):
            bounds = [s[k] for k in ("minimum", "maximum", "exclusiveMinimum") if k in s]
            base = rng.choice(bounds) if bounds and rng.random() < 0.6 else rng.randint(-3, 100)
            if self.slip():
                return rng.choice([True, float("nan"), float("inf"), 0.5, base - 1, base + 1])
            offset = rng.choice([0, 0, 1]) if "maximum" not in s else 0
            return base + offset if kind == "integer" and isinstance(base, int) else float(base + offset)
        if kind == "boolean":
            return rng.random() < 0.5
        if kind == "null":
            return None
        return self.wrong()

    def mapping(self, s: dict[str, Any], depth: int) -> dict[str, Any]:
        rng = self.rng
        out: dict[str, Any] = {}
        properties = s.get("properties", {})
        required = set(s.get("required", []))
        for key, sub in properties.items():
            if (key in required and not self.slip()) or rng.random() < 0.6:
                out[key] = self.value(sub, depth + 1)
        for key in required - set(out):
            if not self.slip() and key not in properties:
                out[key] = self.value({}, depth + 1)
        extra = s.get("additionalProperties", True)
        if extra is not False and not properties:
            for _ in range(rng.randint(0, 3)):
                out[f"k{rng.randint(0, 9)}"] = self.value(extra if isinstance(extra, dict) else {}, depth + 1)
        if self.slip():
            out["unexpected"] = 1
        return out


def _has_nan(value: Any) -> bool:
    if isinstance(value, float):
        return math.isnan(value)
    if isinstance(value, list):
        return any(_has_nan(v) for v in value)
    if isinstance(value, dict):
        return any(_has_nan(v) for v in value.values())
    return False


@pytest.mark.parametrize("name", NAMES)
def test_acceptance_agrees_with_jsonschema(name: str) -> None:
    schema = load_schema(name)
    accept = compile_acceptor(schema)
    assert accept is not None, f"{name} uses a keyword the acceptance test does not handle"
    judge = _validator_class()(schema)
    generator = Generator(schema, random.Random(f"schema-accept-{name}"))
    accepted = refused = 0
    for index in range(DOCUMENTS):
        document = generator.document()
        valid = judge.is_valid(document)
        fast = accept(document)
        assert valid or not fast, f"{name}: accepted a document jsonschema refuses (#{index}): {document!r:.600}"
        if not _has_nan(document):
            assert fast == valid, f"{name}: refused a valid document (#{index}): {document!r:.600}"
        accepted += fast
        refused += not valid
    # the generator must exercise both sides
    assert accepted >= 20 and refused >= 20, (name, accepted, refused)


def test_unknown_keyword_is_left_to_jsonschema() -> None:
    assert compile_acceptor({"type": "object", "patternProperties": {"^x": {"type": "integer"}}}) is None
    assert compile_acceptor({"$ref": "#/definitions/x"}) is None


def test_validate_still_words_problems() -> None:
    """A document the acceptance test declines gets jsonschema's problems, as before."""
    assert acceptor("schedule-1") is not None
    problems = validate({"schema_version": 1}, "schedule-1", "PETRI-E010")
    assert problems and all(p.code == "PETRI-E010" for p in problems)
    assert any("required key" in p.message for p in problems)

"""Deployment specifications: models/<m>/deploy.yaml, loaded and validated.

A deployment spec says how a model is fed and judged (its inputs and their value
distribution, the validation vectors and tolerance), how it may be distributed over
hardware/software items (deployments: items, default item, allocation of ONNX tensors to
items, synchronisation) and its execution-time budget (met). Schema version 1:

    schema_version: 1                      # required, integer 1
    model: lenet5                          # required, string (the folder name)
    description: ...                       # optional, string
    inputs:                                # required, non-empty mapping by ONNX input name
      input:
        shape: [1, 1, 32, 32]              # required, non-empty list of positive integers
        distribution: {kind: uniform, low: 0.0, high: 1.0}   # required; low < high
    validation:                            # required
      vectors: 100                         # optional, positive integer (default 100)
      seed: 1234                           # required, non-negative integer
      tolerance:                           # required
        max_abs_error: 1.0e-5              # required, non-negative number
        max_rel_error: null                # optional, non-negative number or null
    deployments:                           # required, non-empty mapping by deployment name
      single:
        items: [{name: CPU0, target: cpu}] # required, non-empty; names unique; target cpu|cuda|nvdla
        default_item: CPU0                 # required, one of the items
        allocation: {CPU1: [fc1, ...]}     # optional; keys are items, values lists of names,
                                           # a name allocated at most once
        sync: event                        # required: event | barrier
        pipeline_depth: 1                  # optional, integer >= 1 (read by the split step)
        rewrites: [...]                    # optional, list of mappings (read and checked by the split step)
    met:                                   # required
      runs: 1000                           # required, positive integer
      budget_us: 5000                      # required, positive number
      platform: orin-cpu3                  # optional: the timing platform (docs/compare.md)

This module checks structure and types only and reports *every* problem, each with a
stable code (DEPLOY-Ennn, docs/deploy.md) and its YAML key path and line. Semantic checks
against the exported NNEF (allocations naming real variables) belong to the split step;
`check_inputs_match` compares the inputs with the ONNX model's graph inputs.

YAML note: PyYAML reads YAML 1.1, where `1e-5` (no dot) is a *string*; write `1.0e-5`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import yaml

from pipeline.diagnostics import Location, PipelineError
from pipeline.vectors import DISTRIBUTION_KINDS, Distribution, InputSpec

SCHEMA_VERSION = 1
DEFAULT_VECTORS = 100
TARGETS = ("cpu", "cuda", "nvdla")

# libyaml's loader when PyYAML has it (same results, node marks included), else the Python one.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
SYNC_MODES = ("event", "barrier")

CODES: dict[str, str] = {
    "DEPLOY-E001": "file cannot be read or is not valid YAML",
    "DEPLOY-E002": "required key missing",
    "DEPLOY-E003": "value of the wrong type",
    "DEPLOY-E004": "value out of range or not one of the allowed values",
    "DEPLOY-E005": "unknown key (misspelt or not part of schema version 1)",
    "DEPLOY-E006": "key written twice in the same mapping",
    "DEPLOY-E007": "item referenced but not declared, item declared twice, or a name allocated twice",
    "DEPLOY-E008": "unsupported schema_version",
    "DEPLOY-E009": "inputs do not match the model's graph inputs (names or shapes)",
}


@dataclass(frozen=True)
class DeployProblem:
    """One problem found in a spec: code, key path (e.g. `validation.seed`), message, line."""

    code: str
    path: str
    message: str
    line: int = 0
    column: int = 0



class DeployError(PipelineError):
    """A deployment spec that does not validate; `problems` holds every problem found."""

    def __init__(self, file: str, problems: Sequence[DeployProblem]) -> None:
        self.file = file
        self.problems = list(problems)
        first = self.problems[0]
        more = f" (and {len(self.problems) - 1} more problem(s))" if len(self.problems) > 1 else ""
        location = Location(file=file, line=first.line, column=first.column, key_path=first.path)
        super().__init__(first.code, first.message + more, location)

    def all_problems(self) -> list[PipelineError]:
        return [PipelineError(p.code, p.message, Location(self.file, p.line, p.column, key_path=p.path))
                for p in self.problems]


@dataclass(frozen=True)
class Tolerance:
    max_abs_error: float
    max_rel_error: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {"max_abs_error": self.max_abs_error, "max_rel_error": self.max_rel_error}


@dataclass(frozen=True)
class ValidationSpec:
    vectors: int
    seed: int
    tolerance: Tolerance


@dataclass(frozen=True)
class Item:
    name: str
    target: str


@dataclass(frozen=True)
class Deployment:
    name: str
    items: tuple[Item, ...]
    default_item: str
    allocation: dict[str, tuple[str, ...]]
    sync: str
    pipeline_depth: int = 1
    rewrites: tuple[dict[str, Any], ...] = ()  # their contents are checked by the split step

    def item_of(self, name: str) -> str:
        """The item a tensor (ONNX name) is allocated to: its allocation, else the default item."""
        for item, names in self.allocation.items():
            if name in names:
                return item
        return self.default_item


@dataclass(frozen=True)
class MetSpec:
    runs: int
    budget_us: float
    platform: str | None = None   # the timing platform: MET verdicts are target verdicts only there


@dataclass(frozen=True)
class DeploySpec:
    """A validated deployment spec; `raw` is the parsed YAML document as written."""

    path: str
    model: str
    description: str
    inputs: dict[str, InputSpec]
    validation: ValidationSpec
    deployments: dict[str, Deployment]
    met: MetSpec
    raw: dict[str, Any] = field(repr=False, default_factory=dict)


# ---------------------------------------------------------------------- YAML with positions

def _key_text(node: yaml.Node) -> str:
    return str(node.value) if isinstance(node, yaml.ScalarNode) else "<complex key>"


def _positions(node: yaml.Node, path: str, out: dict[str, tuple[int, int]],
               duplicates: list[DeployProblem]) -> None:
    """Key path -> (line, column) of every node; duplicate keys reported on the way."""
    out[path] = (node.start_mark.line + 1, node.start_mark.column + 1)
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key, value in node.value:
            name = _key_text(key)
            child = f"{path}.{name}" if path else name
            if name in seen:
                duplicates.append(DeployProblem("DEPLOY-E006", child, f"key '{name}' is written twice",
                                                key.start_mark.line + 1, key.start_mark.column + 1))
            seen.add(name)
            _positions(value, child, out, duplicates)
    elif isinstance(node, yaml.SequenceNode):
        for index, value in enumerate(node.value):
            _positions(value, f"{path}[{index}]", out, duplicates)


# ---------------------------------------------------------------------- structural validation

def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, str):
        return f"string '{value}'"
    if isinstance(value, (int, float)):
        return f"number {value}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


class _Validator:
    """Walks the parsed document, collecting problems; builds the typed spec when clean."""

    def __init__(self, positions: Mapping[str, tuple[int, int]], file: str) -> None:
        self.positions = positions
        self.file = file
        self.problems: list[DeployProblem] = []

    def report(self, code: str, path: str, message: str) -> None:
        line, column = self.positions.get(path, (0, 0))
        if not line:
            parent = path.rsplit(".", 1)[0] if "." in path else ""
            line, column = self.positions.get(parent, (0, 0))
        self.problems.append(DeployProblem(code, path, message, line, column))

    # -- typed accessors: each returns None after reporting a problem
    def mapping(self, value: Any, path: str) -> dict[str, Any] | None:
        if not isinstance(value, dict):
            self.report("DEPLOY-E003", path, f"expected a mapping, got {_describe(value)}")
            return None
        return value

    def keys(self, value: dict[str, Any], path: str, required: Iterable[str], optional: Iterable[str]) -> None:
        required = list(required)
        allowed = set(required) | set(optional)
        for key in required:
            if key not in value:
                self.report("DEPLOY-E002", path, f"required key '{key}' is missing"
                            + (f" in {path}" if path else ""))
        for key in value:
            if key not in allowed:
                self.report("DEPLOY-E005", self.join(path, str(key)),
                            f"unknown key '{key}'; allowed here: {', '.join(sorted(allowed))}")

    @staticmethod
    def join(path: str, key: str) -> str:
        return f"{path}.{key}" if path else key

    def string(self, value: Any, path: str) -> str | None:
        if not isinstance(value, str) or not value:
            self.report("DEPLOY-E003", path, f"expected a non-empty string, got {_describe(value)}")
            return None
        return value

    def integer(self, value: Any, path: str, minimum: int | None = None) -> int | None:
        if isinstance(value, bool) or not isinstance(value, int):
            self.report("DEPLOY-E003", path, f"expected an integer, got {_describe(value)}")
            return None
        if minimum is not None and value < minimum:
            self.report("DEPLOY-E004", path, f"expected an integer >= {minimum}, got {value}")
            return None
        return value

    def number(self, value: Any, path: str, minimum: float | None = None, strict: bool = False) -> float | None:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            hint = ""
            if isinstance(value, str):
                try:
                    float(value)
                    hint = " (YAML 1.1 reads a number without a '.' before its exponent as a string: write e.g. 1.0e-5)"
                except ValueError:
                    pass
            self.report("DEPLOY-E003", path, f"expected a number, got {_describe(value)}{hint}")
            return None
        number = float(value)
        if number != number or number in (float("inf"), float("-inf")):
            self.report("DEPLOY-E004", path, f"expected a finite number, got {value}")
            return None
        if minimum is not None and (number < minimum or (strict and number == minimum)):
            bound = ">" if strict else ">="
            self.report("DEPLOY-E004", path, f"expected a number {bound} {minimum}, got {value}")
            return None
        return number

    def choice(self, value: Any, path: str, allowed: Sequence[str]) -> str | None:
        text = self.string(value, path)
        if text is not None and text not in allowed:
            self.report("DEPLOY-E004", path, f"'{text}' is not one of {', '.join(allowed)}")
            return None
        return text

    def listing(self, value: Any, path: str, non_empty: bool = True) -> list[Any] | None:
        if not isinstance(value, list):
            self.report("DEPLOY-E003", path, f"expected a list, got {_describe(value)}")
            return None
        if non_empty and not value:
            self.report("DEPLOY-E004", path, "expected a non-empty list")
            return None
        return value

    # -- sections
    def document(self, data: Any) -> DeploySpec | None:
        top = self.mapping(data, "")
        if top is None:
            return None
        self.keys(top, "", ["schema_version", "model", "inputs", "validation", "deployments", "met"], ["description"])
        version = self.integer(top.get("schema_version"), "schema_version") if "schema_version" in top else None
        if version is not None and version != SCHEMA_VERSION:
            self.report("DEPLOY-E008", "schema_version",
                        f"schema_version {version} is not supported; this pipeline reads version {SCHEMA_VERSION}")
        model = self.string(top.get("model"), "model") if "model" in top else None
        description = ""
        if "description" in top:
            description = self.string(top["description"], "description") or ""
        inputs = self.inputs(top["inputs"]) if "inputs" in top else None
        validation = self.validation(top["validation"]) if "validation" in top else None
        deployments = self.deployments(top["deployments"]) if "deployments" in top else None
        met = self.met(top["met"]) if "met" in top else None
        if self.problems or None in (model, inputs, validation, deployments, met):
            return None
        return DeploySpec(self.file, model, description, inputs, validation, deployments, met, top)  # type: ignore[arg-type]

    def inputs(self, value: Any) -> dict[str, InputSpec] | None:
        section = self.mapping(value, "inputs")
        if section is None:
            return None
        if not section:
            self.report("DEPLOY-E004", "inputs", "expected at least one input")
            return None
        result: dict[str, InputSpec] = {}
        for name, spec in section.items():
            path = f"inputs.{name}"
            if not isinstance(name, str):
                self.report("DEPLOY-E003", path, f"input names must be strings, got {_describe(name)}")
                continue
            body = self.mapping(spec, path)
            if body is None:
                continue
            self.keys(body, path, ["shape", "distribution"], [])
            shape = self.shape(body.get("shape"), f"{path}.shape") if "shape" in body else None
            dist = self.distribution(body.get("distribution"), f"{path}.distribution") if "distribution" in body else None
            if shape is not None and dist is not None:
                result[name] = InputSpec(name, shape, dist)
        return result

    def shape(self, value: Any, path: str) -> tuple[int, ...] | None:
        items = self.listing(value, path)
        if items is None:
            return None
        extents = [self.integer(v, f"{path}[{i}]", minimum=1) for i, v in enumerate(items)]
        return None if None in extents else tuple(extents)  # type: ignore[arg-type]

    def distribution(self, value: Any, path: str) -> Distribution | None:
        body = self.mapping(value, path)
        if body is None:
            return None
        self.keys(body, path, ["kind", "low", "high"], [])
        kind = self.choice(body.get("kind"), f"{path}.kind", DISTRIBUTION_KINDS) if "kind" in body else None
        low = self.number(body.get("low"), f"{path}.low") if "low" in body else None
        high = self.number(body.get("high"), f"{path}.high") if "high" in body else None
        if low is not None and high is not None and not low < high:
            self.report("DEPLOY-E004", f"{path}.high", f"expected high > low, got low {low} and high {high}")
            return None
        if None in (kind, low, high):
            return None
        return Distribution(kind, low, high)  # type: ignore[arg-type]

    def validation(self, value: Any) -> ValidationSpec | None:
        body = self.mapping(value, "validation")
        if body is None:
            return None
        self.keys(body, "validation", ["seed", "tolerance"], ["vectors"])
        vectors = DEFAULT_VECTORS
        if "vectors" in body:
            vectors = self.integer(body["vectors"], "validation.vectors", minimum=1)  # type: ignore[assignment]
        seed = self.integer(body.get("seed"), "validation.seed", minimum=0) if "seed" in body else None
        tolerance = self.tolerance(body["tolerance"]) if "tolerance" in body else None
        if None in (vectors, seed, tolerance):
            return None
        return ValidationSpec(vectors, seed, tolerance)  # type: ignore[arg-type]

    def tolerance(self, value: Any) -> Tolerance | None:
        path = "validation.tolerance"
        body = self.mapping(value, path)
        if body is None:
            return None
        self.keys(body, path, ["max_abs_error"], ["max_rel_error"])
        max_abs = self.number(body.get("max_abs_error"), f"{path}.max_abs_error", 0.0) if "max_abs_error" in body else None
        max_rel = None
        if body.get("max_rel_error") is not None:
            max_rel = self.number(body["max_rel_error"], f"{path}.max_rel_error", 0.0)
            if max_rel is None:
                return None
        if max_abs is None:
            return None
        return Tolerance(max_abs, max_rel)

    def deployments(self, value: Any) -> dict[str, Deployment] | None:
        section = self.mapping(value, "deployments")
        if section is None:
            return None
        if not section:
            self.report("DEPLOY-E004", "deployments", "expected at least one deployment")
            return None
        result = {}
        for name, body in section.items():
            deployment = self.deployment(str(name), body, f"deployments.{name}")
            if deployment is not None:
                result[str(name)] = deployment
        return result

    def deployment(self, name: str, value: Any, path: str) -> Deployment | None:
        body = self.mapping(value, path)
        if body is None:
            return None
        self.keys(body, path, ["items", "default_item", "sync"], ["allocation", "pipeline_depth", "rewrites"])
        depth: int | None = 1
        if "pipeline_depth" in body:
            depth = self.integer(body["pipeline_depth"], f"{path}.pipeline_depth", minimum=1)
        rewrites: list[dict[str, Any]] = []
        if "rewrites" in body:
            entries = self.listing(body["rewrites"], f"{path}.rewrites", non_empty=False)
            for index, rewrite in enumerate(entries or []):
                mapping = self.mapping(rewrite, f"{path}.rewrites[{index}]")
                if mapping is not None:
                    rewrites.append(dict(mapping))
        items = self.items(body["items"], f"{path}.items") if "items" in body else None
        names = {item.name for item in items or ()}
        default = self.string(body.get("default_item"), f"{path}.default_item") if "default_item" in body else None
        if default is not None and items is not None and default not in names:
            self.report("DEPLOY-E007", f"{path}.default_item",
                        f"default_item '{default}' is not one of the items ({', '.join(sorted(names))})")
            default = None
        sync = self.choice(body.get("sync"), f"{path}.sync", SYNC_MODES) if "sync" in body else None
        allocation: dict[str, tuple[str, ...]] | None = {}
        if "allocation" in body:
            allocation = self.allocation(body["allocation"], f"{path}.allocation", names if items is not None else None)
        if None in (items, default, sync, allocation, depth):
            return None
        return Deployment(name, tuple(items), default, allocation, sync,  # type: ignore[arg-type]
                          depth, tuple(rewrites))  # type: ignore[arg-type]

    def items(self, value: Any, path: str) -> list[Item] | None:
        entries = self.listing(value, path)
        if entries is None:
            return None
        items: list[Item] = []
        ok = True
        for index, entry in enumerate(entries):
            where = f"{path}[{index}]"
            body = self.mapping(entry, where)
            if body is None:
                ok = False
                continue
            self.keys(body, where, ["name", "target"], [])
            item_name = self.string(body.get("name"), f"{where}.name") if "name" in body else None
            target = self.choice(body.get("target"), f"{where}.target", TARGETS) if "target" in body else None
            if item_name is None or target is None:
                ok = False
                continue
            if any(i.name == item_name for i in items):
                self.report("DEPLOY-E007", f"{where}.name", f"item '{item_name}' is declared twice")
                ok = False
                continue
            items.append(Item(item_name, target))
        return items if ok else None

    def allocation(self, value: Any, path: str, items: set[str] | None) -> dict[str, tuple[str, ...]] | None:
        body = self.mapping(value, path)
        if body is None:
            return None
        result: dict[str, tuple[str, ...]] = {}
        owner: dict[str, str] = {}
        ok = True
        for item, names in body.items():
            where = f"{path}.{item}"
            if items is not None and item not in items:
                self.report("DEPLOY-E007", where, f"allocation names item '{item}', which is not declared in items "
                            f"({', '.join(sorted(items))})")
                ok = False
            listed = self.listing(names, where)
            if listed is None:
                ok = False
                continue
            values = []
            for index, tensor in enumerate(listed):
                text = self.string(tensor, f"{where}[{index}]")
                if text is None:
                    ok = False
                    continue
                if text in owner:
                    self.report("DEPLOY-E007", f"{where}[{index}]",
                                f"'{text}' is allocated twice (already to {owner[text]})")
                    ok = False
                    continue
                owner[text] = str(item)
                values.append(text)
            result[str(item)] = tuple(values)
        return result if ok else None

    def met(self, value: Any) -> MetSpec | None:
        body = self.mapping(value, "met")
        if body is None:
            return None
        self.keys(body, "met", ["runs", "budget_us"], ["platform"])
        runs = self.integer(body.get("runs"), "met.runs", minimum=1) if "runs" in body else None
        budget = self.number(body.get("budget_us"), "met.budget_us", 0.0, strict=True) if "budget_us" in body else None
        platform = self.string(body.get("platform"), "met.platform") if "platform" in body else None
        if runs is None or budget is None or ("platform" in body and platform is None):
            return None
        return MetSpec(runs, budget, platform)


# ---------------------------------------------------------------------- entry points

def _display(path: str | os.PathLike[str]) -> str:
    """The path as given when relative, else relative to the working directory if inside it."""
    p = Path(path)
    if p.is_absolute():
        try:
            return p.relative_to(Path.cwd()).as_posix()
        except ValueError:
            return p.as_posix()
    return p.as_posix()


def parse_deploy_text(text: str, file: str = "<string>") -> DeploySpec:
    """Validate a deployment spec given as YAML text; DeployError lists every problem."""
    try:
        root = yaml.compose(text, Loader=_LOADER)
        data = yaml.load(text, Loader=_LOADER)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line, column = (mark.line + 1, mark.column + 1) if mark is not None else (0, 0)
        problem = getattr(exc, "problem", None) or str(exc)
        raise DeployError(file, [DeployProblem("DEPLOY-E001", "", f"not valid YAML: {problem}", line, column)]) from None
    positions: dict[str, tuple[int, int]] = {}
    duplicates: list[DeployProblem] = []
    if root is not None:
        _positions(root, "", positions, duplicates)
    validator = _Validator(positions, file)
    validator.problems += duplicates
    spec = validator.document(data)
    if validator.problems or spec is None:
        problems = validator.problems or [DeployProblem("DEPLOY-E003", "", "the document is empty")]
        raise DeployError(file, sorted(problems, key=lambda p: (p.line, p.column, p.path, p.code)))
    return spec


def load_deploy(path: str | os.PathLike[str]) -> DeploySpec:
    """Load and validate `path` (e.g. models/lenet5/deploy.yaml); DeployError lists every problem.

    Results are cached per file and modification: doit's task generators of every step read
    every spec each time `doit` starts, and a no-op `doit verify` must stay fast.
    """
    file = _display(path)
    try:
        stat = Path(path).stat()
    except OSError as exc:
        raise DeployError(file, [DeployProblem("DEPLOY-E001", "", f"cannot read the file: {exc}")]) from None
    return _load_cached(str(Path(path).resolve()), stat.st_mtime_ns, stat.st_size, file)


@lru_cache(maxsize=64)
def _load_cached(path: str, mtime_ns: int, size: int, file: str) -> DeploySpec:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DeployError(file, [DeployProblem("DEPLOY-E001", "", f"cannot read the file: {exc}")]) from None
    return parse_deploy_text(text, file)


def check_inputs_match(inputs: Mapping[str, InputSpec], graph_inputs: Mapping[str, Sequence[int]],
                       file: str = "<spec>") -> None:
    """DEPLOY-E009 unless `inputs` (a spec's) are exactly the model's graph inputs (name -> static shape)."""
    problems = []
    for name in sorted(set(graph_inputs) - set(inputs)):
        problems.append(DeployProblem("DEPLOY-E009", "inputs", f"the model has input '{name}' "
                                      f"{list(graph_inputs[name])}, which the spec does not describe"))
    for name in sorted(set(inputs) - set(graph_inputs)):
        problems.append(DeployProblem("DEPLOY-E009", f"inputs.{name}", f"the model has no input '{name}' "
                                      f"(its inputs: {', '.join(sorted(graph_inputs))})"))
    for name in sorted(set(inputs) & set(graph_inputs)):
        if list(inputs[name].shape) != list(graph_inputs[name]):
            problems.append(DeployProblem("DEPLOY-E009", f"inputs.{name}.shape", f"shape {list(inputs[name].shape)} "
                                          f"differs from the model's {list(graph_inputs[name])}"))
    if problems:
        raise DeployError(file, problems)

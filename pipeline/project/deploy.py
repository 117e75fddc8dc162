"""Deployment specifications: models/<m>/deploy.yaml, loaded and validated.

A deployment spec says how a model is fed and judged (its inputs and their value
distribution, the validation vectors and tolerance), how it may be distributed over
hardware/software items (deployments: items, default item, allocation of ONNX tensors to
items, synchronisation) and its execution-time budget (met). Schema version 1:

    schema_version: 1                      # required, integer 1
    model: lenet5                          # required, string (the folder name)
    description: ...                       # optional, string
    excluded: "needs 16 GiB; not in the nightly matrix"   # optional: the reason a run without this
                                           # model passes (docs/evidence.md, "Runs that cannot pass on nothing")
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
        architectures: [sm_87, sm_90]      # optional: GPU architectures the cuda items are built for
                                           # (default sm_87 and sm_90; nvcc 13 cannot target sm_72)
        platform: aarch64_qemu             # optional: where its cpu items' code is built for and runs
                                           # (default host; an item may name it too: docs/execute.md)
        rewrites: [...]                    # optional, list of mappings (read and checked by the split step)
        fp16:                              # optional, deployments with an nvdla item: the FP16 requirement
          max_abs_error: 1.0e-2            #   each optional, number or null; judged against the float64 value
          max_rel_error: null              #   and justified by an independent FP16 evaluation
          top1_agreement: 1.0              #   (pipeline/compare/nvdla_fp16.py); top1_agreement in [0, 1]
    platforms:                             # optional: the user's own platforms by name (docs/deploy.md
      orin: {architecture: aarch64, ...}   # "Platforms"; built in: host, aarch64_qemu)
    met:                                   # required
      runs: 1000                           # required, positive integer
      budget_us: 5000                      # required, positive number
      platform: orin-cpu3                  # optional: the timing platform (docs/compare.md)
    trained_reference:                     # optional: the training framework's own inputs and outputs
      framework: torch                     # required, with its version (docs/trained-reference.md)
      framework_version: 2.13.0
      file: trained.npz                    # either one .npz beside deploy.yaml (inputs/<name>, outputs/<name>)
      inputs: {x: trained_x.npy}           # or one .npy per ONNX input and per ONNX output, [N, *shape] each
      outputs: {y: trained_y.npy}
      tolerance: {max_abs_error: 1.0e-5, max_rel_error: null}   # required

The schema is pipeline/schemas/deploy-1.schema.json (JSON Schema 2020-12), applied by
pipeline/files/schema.py; this module adds what a schema cannot say (duplicate keys, item
cross-references, low < high, the schema_version value) and reports *every* problem, each
with a stable code (DEPLOY-Ennn, docs/deploy.md) and its YAML key path and line. An optional
key is added in two places: the schema file and the dataclass below (and `_build`). Semantic checks
against the exported NNEF (allocations naming real variables) belong to the split step;
`check_inputs_match` compares the inputs with the ONNX model's graph inputs.

Hostile input (docs/deploy.md, "Names" and "Limits"): only a regular file within the size
limit is read (DEPLOY-E012); the YAML event stream is screened before anything is built
(anchors, aliases, deep nesting, huge numbers: DEPLOY-E011); names that become paths or
identifiers follow pipeline/files/names.py (DEPLOY-E010); every count and size has an upper bound
(schema maxima and `sizes` below; vectors, runs and element counts configurable).

YAML note: PyYAML reads YAML 1.1, where `1e-5` (no dot) is a *string*; write `1.0e-5`.
"""

from __future__ import annotations

import copy
import os
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from stat import S_ISREG
from typing import Any, Mapping, Sequence

import yaml

from pipeline.files import schema as _schema
from pipeline.diagnostics import Location, PipelineError
from pipeline.files.names import name_problem
from pipeline.toolchain import platforms as _platforms
from pipeline.numerics.vectors import Distribution, InputSpec
from pipeline.files.yamlguard import limit_from_env, read_bounded, screen

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
    "DEPLOY-E007": "item referenced but not declared, item declared twice, two items or two deployments whose names "
                   "differ only by letter case, or a name allocated twice",
    "DEPLOY-E008": "unsupported schema_version",
    "DEPLOY-E009": "inputs do not match the model's graph inputs (names or shapes)",
    "DEPLOY-E010": "a model, deployment or item name outside the name grammar (docs/deploy.md, \"Names\")",
    "DEPLOY-E011": "YAML anchor or alias, nesting deeper than the limit or a number too long (refused before the "
                   "document is built)",
    "DEPLOY-E012": "not a regular file, or larger than the size limit",
    "DEPLOY-E013": "unknown platform, a built-in platform redefined, a platform on a non-cpu item, the cpu items of one "
                   "deployment on different platforms, or a platform other than host for a deployment with cuda or "
                   "nvdla items",
    "DEPLOY-E014": "a platform flag that is forbidden or would override a qualified flag (docs/codegen.md \"Flags\")",
}

# Limits (docs/deploy.md, "Limits"). Those a user could need more of are read from the
# environment variable named beside them; the schema file holds the defaults.
MAX_SPEC_BYTES = 1 << 20            # PIPELINE_MAX_SPEC_BYTES: a shipped spec is ~2 KiB
MAX_VECTORS = 10_000                # PIPELINE_MAX_VECTORS: split holds every vector and its reference outputs
MAX_RUNS = 100_000                  # PIPELINE_MAX_RUNS: timed executions of every deployment
MAX_INPUT_ELEMENTS = 1 << 24        # PIPELINE_MAX_INPUT_ELEMENTS: elements of one input (64 MiB of float32)
MAX_VECTOR_ELEMENTS = 1 << 28       # PIPELINE_MAX_VECTOR_ELEMENTS: vectors x elements of all inputs (1 GiB)
MAX_RANK, MAX_EXTENT = 8, 1 << 24   # as in the schema file (shape maxItems, extent maximum)
LIMIT_VARIABLES = {"bytes": "PIPELINE_MAX_SPEC_BYTES", "vectors": "PIPELINE_MAX_VECTORS", "runs": "PIPELINE_MAX_RUNS",
                   "input_elements": "PIPELINE_MAX_INPUT_ELEMENTS", "vector_elements": "PIPELINE_MAX_VECTOR_ELEMENTS"}


def limits() -> dict[str, int]:
    """The limits in force: the defaults above, or their environment variables."""
    defaults = {"bytes": MAX_SPEC_BYTES, "vectors": MAX_VECTORS, "runs": MAX_RUNS,
                "input_elements": MAX_INPUT_ELEMENTS, "vector_elements": MAX_VECTOR_ELEMENTS}
    return {key: limit_from_env(LIMIT_VARIABLES[key], value) for key, value in defaults.items()}


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
    platform: str | None = None               # a cpu item's platform, when it names one


@dataclass(frozen=True)
class Deployment:
    name: str
    items: tuple[Item, ...]
    default_item: str
    allocation: dict[str, tuple[str, ...]]
    sync: str
    pipeline_depth: int = 1
    rewrites: tuple[dict[str, Any], ...] = ()  # their contents are checked by the split step
    architectures: tuple[str, ...] = ()        # GPU architectures of cuda items (empty: sm_87 and sm_90)
    fp16: dict[str, float | None] | None = None  # the stated FP16 requirement of nvdla items (compare/nvdla_fp16.py)
    platform: str = _platforms.HOST            # where its cpu items' code is built for and runs

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
class TrainedReference:
    """The trained model's own inputs and outputs, written by its framework (pipeline/export/trained.py)."""

    framework: str
    framework_version: str
    file: str | None
    inputs: dict[str, str]
    outputs: dict[str, str]
    max_abs_error: float
    max_rel_error: float | None


# A reference file: one plain file name beside deploy.yaml (no folder, no link out of it: readguard).
REFERENCE_FILE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,250}\.(npy|npz)")


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
    positions: dict[str, tuple[int, int]] = field(repr=False, default_factory=dict)  # key path -> (line, column)
    platforms: dict[str, _platforms.Platform] = field(default_factory=dict)  # the spec's own (`platforms:`)
    trained: TrainedReference | None = None  # `trained_reference:` (docs/trained-reference.md)
    key_positions: dict[str, tuple[int, int]] = field(repr=False, default_factory=dict)  # key path -> its key's place

    def platform_of(self, deployment: str) -> _platforms.Platform:
        """The platform deployment `deployment`'s cpu items are built for and run on (built-in or declared)."""
        return _platforms.resolve(self.deployments[deployment].platform, self.platforms)

    def location(self, key_path: str) -> Location:
        """Where `key_path` (or its nearest written ancestor) is in the spec file."""
        line, column = _schema.position(self.positions, key_path)
        return Location(self.path, line, column, key_path=key_path)

    @property
    def excluded(self) -> str | None:
        """Why a run may leave this model out (`excluded:`, pipeline/evidence/completeness.py); None: it may not."""
        value = self.raw.get("excluded")
        return value if isinstance(value, str) else None


# ---------------------------------------------------------------------- YAML with positions

def _key_text(node: yaml.Node) -> str:
    return str(node.value) if isinstance(node, yaml.ScalarNode) else "<complex key>"


def _positions(node: yaml.Node, path: str, out: dict[str, tuple[int, int]],
               duplicates: list[DeployProblem], keys: dict[str, tuple[int, int]] | None = None) -> None:
    """Key path -> (line, column) of every node (and, in `keys`, of every mapping key: a finding about a
    mapping points at its key's line, not at its first entry's); duplicate keys reported on the way."""
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
            if keys is not None:
                keys[child] = (key.start_mark.line + 1, key.start_mark.column + 1)
            _positions(value, child, out, duplicates, keys)
    elif isinstance(node, yaml.SequenceNode):
        for index, value in enumerate(node.value):
            _positions(value, f"{path}[{index}]", out, duplicates, keys)


# ---------------------------------------------------------------------- validation

# jsonschema keyword -> code (pipeline/schemas/deploy-1.schema.json); anything else is a range problem
_CODES = {"required": "DEPLOY-E002", "type": "DEPLOY-E003", "propertyNames": "DEPLOY-E003",
          "minLength": "DEPLOY-E003", "additionalProperties": "DEPLOY-E005", "*": "DEPLOY-E004"}
SCHEMA = "deploy-1"


class _Checks:
    """The checks a schema cannot express, run after it on whatever is well-formed enough."""

    def __init__(self, positions: Mapping[str, tuple[int, int]]) -> None:
        self.positions = positions
        self.problems: list[DeployProblem] = []

    def report(self, code: str, path: str, message: str) -> None:
        line, column = _schema.position(self.positions, path)
        self.problems.append(DeployProblem(code, path, message, line, column))

    def name(self, value: Any, kind: str, path: str) -> None:
        """DEPLOY-E010 unless `value` (a string; other types are the schema's) is in the name grammar."""
        if isinstance(value, str) and value:
            problem = name_problem(value, kind)
            if problem is not None:
                self.report("DEPLOY-E010", path, problem)

    def same_but_case(self, name: str, seen: dict[str, str], kind: str, path: str) -> None:
        """DEPLOY-E007 when `name` differs from an earlier one only by letter case.

        Names become file and folder names; on a case-insensitive file system (macOS, Windows
        checkouts) `CPU0` and `cpu0` are one file, and the second item would overwrite the first.
        """
        key = name.casefold()
        if key in seen and seen[key] != name:
            self.report("DEPLOY-E007", path, f"{kind} '{name}' differs from {kind} '{seen[key]}' only by letter case; "
                        "both become file names, which collide on a case-insensitive file system")
        seen.setdefault(key, name)

    def sizes(self, top: dict[Any, Any], bounds: Mapping[str, int]) -> None:
        """Element counts the schema cannot multiply: per input, and vectors x all inputs."""
        inputs = top.get("inputs")
        total = 0
        for name, spec in (inputs.items() if isinstance(inputs, dict) else ()):
            shape = spec.get("shape") if isinstance(spec, dict) else None
            if not (isinstance(shape, list) and 0 < len(shape) <= MAX_RANK
                    and all(_is_int(e) and 1 <= e <= MAX_EXTENT for e in shape)):
                continue   # the schema reports it (and a product of many huge extents is not computed)
            count = 1
            for extent in shape:
                count *= extent
            total += count
            if count > bounds["input_elements"]:
                self.report("DEPLOY-E004", f"inputs.{name}.shape",
                            f"input '{name}' has {count} elements, more than the limit of {bounds['input_elements']} "
                            f"(raise it with {LIMIT_VARIABLES['input_elements']})")
        validation = top.get("validation")
        vectors = validation.get("vectors", DEFAULT_VECTORS) if isinstance(validation, dict) else DEFAULT_VECTORS
        if _is_int(vectors) and 1 <= vectors and total and vectors * total > bounds["vector_elements"]:
            self.report("DEPLOY-E004", "validation.vectors" if isinstance(validation, dict) and "vectors" in validation
                        else "inputs", f"{vectors} vectors of {total} input elements make {vectors * total} values, "
                        f"more than the limit of {bounds['vector_elements']} "
                        f"(raise it with {LIMIT_VARIABLES['vector_elements']})")

    def document(self, top: dict[Any, Any]) -> None:
        self.name(top.get("model"), "model name", "model")
        version = top.get("schema_version")
        if _is_int(version) and version != SCHEMA_VERSION:
            self.report("DEPLOY-E008", "schema_version",
                        f"schema_version {version} is not supported; this pipeline reads version {SCHEMA_VERSION}")
        inputs = top.get("inputs")
        for name, spec in (inputs.items() if isinstance(inputs, dict) else ()):
            dist = spec.get("distribution") if isinstance(spec, dict) else None
            if isinstance(dist, dict) and _is_number(dist.get("low")) and _is_number(dist.get("high")) \
                    and not dist["low"] < dist["high"]:
                self.report("DEPLOY-E004", f"inputs.{name}.distribution.high",
                            f"expected high > low, got low {float(dist['low'])} and high {float(dist['high'])}")
        self.platforms(top)
        self.trained(top.get("trained_reference"))
        deployments = top.get("deployments")
        folded: dict[str, str] = {}
        for name, body in (deployments.items() if isinstance(deployments, dict) else ()):
            if isinstance(name, str) and name:
                self.same_but_case(name, folded, "deployment", f"deployments.{name}")
            if isinstance(name, str) and not name:   # the schema's minLength does not reach mapping keys
                self.report("DEPLOY-E010", "deployments", "a deployment name is empty")
            elif isinstance(name, str):
                self.name(name, "deployment name", f"deployments.{name}")
            else:
                self.report("DEPLOY-E003", f"deployments.{name}", f"a deployment name must be a string, got {name!r}")
            if isinstance(body, dict):
                self.deployment(body, f"deployments.{name}")

    def trained(self, section: Any) -> None:
        """`trained_reference`: one `file` (.npz) or both `inputs` and `outputs` (.npy per name), each a plain file
        name beside deploy.yaml (DEPLOY-E010 otherwise: no folder, nothing read outside the model's folder)."""
        if not isinstance(section, dict):
            return
        has_file, has_maps = "file" in section, "inputs" in section or "outputs" in section
        if has_file == has_maps or (has_maps and not ("inputs" in section and "outputs" in section)):
            self.report("DEPLOY-E004", "trained_reference", "name either `file` (one .npz) or both `inputs` and "
                        "`outputs` (one .npy per name)")
        named = [("trained_reference.file", section.get("file"), ".npz")] + [
            (f"trained_reference.{part}.{name}", value, ".npy") for part in ("inputs", "outputs")
            for name, value in (section.get(part) or {}).items() if isinstance(section.get(part), dict)]
        for path, value, suffix in named:
            if isinstance(value, str) and not (REFERENCE_FILE.fullmatch(value) and value.endswith(suffix)):
                self.report("DEPLOY-E010", path, f"{value!r} is not a plain {suffix} file name beside deploy.yaml "
                            "(letters, digits, '_', '.', '-'; no folder)")

    def platforms(self, top: dict[Any, Any]) -> None:
        """The platform part (pipeline/toolchain/platforms.py): declared platforms, and the platform every
        deployment and item names (DEPLOY-E013)."""
        declared = top.get("platforms")
        for code, path, message in _platforms.declared_problems(declared):
            self.report(code, path, message)
        known = set(_platforms.BUILTIN_NAMES) | set(declared if isinstance(declared, dict) else ())
        deployments = top.get("deployments")
        for name, body in (deployments.items() if isinstance(deployments, dict) else ()):
            if not isinstance(body, dict) or not isinstance(body.get("items"), list):
                continue
            path = f"deployments.{name}"
            named = {f"{path}.platform": body["platform"]} if isinstance(body.get("platform"), str) else {}
            targets = set()
            for index, entry in enumerate(body["items"]):
                if not isinstance(entry, dict):
                    continue
                if isinstance(entry.get("target"), str):
                    targets.add(entry["target"])
                if isinstance(entry.get("platform"), str):
                    if entry.get("target") != "cpu":
                        self.report("DEPLOY-E013", f"{path}.items[{index}].platform", "only a cpu item names a platform "
                                    f"(item '{entry.get('name')}' has target {entry.get('target')})")
                    else:
                        named[f"{path}.items[{index}].platform"] = entry["platform"]
            for where, platform in named.items():
                if platform not in known:
                    self.report("DEPLOY-E013", where, f"unknown platform '{platform}' (known: {', '.join(sorted(known))})")
            chosen = set(named.values())
            if len(chosen) > 1:
                self.report("DEPLOY-E013", path, f"the cpu items of one deployment are one program and run on one "
                            f"platform; this deployment names {', '.join(sorted(chosen))}")
            elif chosen - {_platforms.HOST} and targets - {"cpu"}:
                self.report("DEPLOY-E013", next(iter(named)), f"platform {next(iter(chosen))}: a deployment with "
                            f"{' and '.join(sorted(str(t) for t in targets - {'cpu'}))} items runs on the host platform "
                            "(its cuda items on the GPU or its emulation, its nvdla items on the emulator)")

    def deployment(self, body: dict[Any, Any], path: str) -> None:
        entries = body.get("items")
        names: set[str] | None = None
        if isinstance(entries, list) and all(isinstance(e, dict) and isinstance(e.get("name"), str) for e in entries):
            names = set()
            folded: dict[str, str] = {}
            for index, entry in enumerate(entries):
                self.name(entry["name"], "item name", f"{path}.items[{index}].name")
                if entry["name"] in names:
                    self.report("DEPLOY-E007", f"{path}.items[{index}].name", f"item '{entry['name']}' is declared twice")
                else:
                    self.same_but_case(entry["name"], folded, "item", f"{path}.items[{index}].name")
                names.add(entry["name"])
        if "fp16" in body and isinstance(entries, list) and not any(
                isinstance(e, dict) and e.get("target") == "nvdla" for e in entries):
            self.report("DEPLOY-E004", f"{path}.fp16", "an FP16 requirement on a deployment without an nvdla item "
                        "(it applies to the FP16 outputs of NVDLA items)")
        default = body.get("default_item")
        if names is not None and isinstance(default, str) and default and default not in names:
            self.report("DEPLOY-E007", f"{path}.default_item",
                        f"default_item '{default}' is not one of the items ({', '.join(sorted(names))})")
        allocation = body.get("allocation")
        owner: dict[str, str] = {}
        for item, listed in (allocation.items() if isinstance(allocation, dict) else ()):
            where = f"{path}.allocation.{item}"
            if names is not None and item not in names:
                self.report("DEPLOY-E007", where, f"allocation names item '{item}', which is not declared in items "
                            f"({', '.join(sorted(names))})")
            for index, tensor in enumerate(listed if isinstance(listed, list) else ()):
                if not isinstance(tensor, str):
                    continue
                if tensor in owner:
                    self.report("DEPLOY-E007", f"{where}[{index}]",
                                f"'{tensor}' is allocated twice (already to {owner[tensor]})")
                else:
                    owner[tensor] = str(item)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _build(top: dict[str, Any], file: str, positions: dict[str, tuple[int, int]],
           keys: dict[str, tuple[int, int]] | None = None) -> DeploySpec:
    """The typed spec of a document that passed the schema and the checks."""
    inputs = {name: InputSpec(name, tuple(spec["shape"]), Distribution(spec["distribution"]["kind"],
                                                                       float(spec["distribution"]["low"]),
                                                                       float(spec["distribution"]["high"])))
              for name, spec in top["inputs"].items()}
    validation = top["validation"]
    tolerance = validation["tolerance"]
    max_rel = tolerance.get("max_rel_error")
    deployments = {}
    for name, body in top["deployments"].items():
        items = tuple(Item(i["name"], i["target"], i.get("platform")) for i in body["items"])
        named = body.get("platform") or next((i.platform for i in items if i.platform), None)
        deployments[str(name)] = Deployment(
            str(name), items, body["default_item"],
            {str(item): tuple(names) for item, names in body.get("allocation", {}).items()}, body["sync"],
            body.get("pipeline_depth", 1), tuple(dict(r) for r in body.get("rewrites", ())),
            tuple(str(a) for a in body.get("architectures", ())),
            {k: None if v is None else float(v) for k, v in body["fp16"].items()} if "fp16" in body else None,
            named or _platforms.HOST)
    base = Path(file).resolve().parent
    declared = {str(n): _platforms.declared_platform(str(n), b, base) for n, b in top.get("platforms", {}).items()}
    return DeploySpec(
        file, top["model"], top.get("description", ""), inputs,
        ValidationSpec(validation.get("vectors", DEFAULT_VECTORS), validation["seed"],
                       Tolerance(float(tolerance["max_abs_error"]), None if max_rel is None else float(max_rel))),
        deployments, MetSpec(top["met"]["runs"], float(top["met"]["budget_us"]), top["met"].get("platform")), top,
        positions, declared, _trained(top.get("trained_reference")), dict(keys or {}))


def _trained(section: dict[str, Any] | None) -> TrainedReference | None:
    if section is None:
        return None
    tolerance = section["tolerance"]
    rel = tolerance.get("max_rel_error")
    return TrainedReference(str(section["framework"]), str(section["framework_version"]), section.get("file"),
                            {str(k): str(v) for k, v in (section.get("inputs") or {}).items()},
                            {str(k): str(v) for k, v in (section.get("outputs") or {}).items()},
                            float(tolerance["max_abs_error"]), None if rel is None else float(rel))


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


def _schema_with(bounds: Mapping[str, int]) -> str | dict[str, Any]:
    """The deploy schema with the configurable maxima in force (its name when they are the defaults)."""
    if bounds["vectors"] == MAX_VECTORS and bounds["runs"] == MAX_RUNS:
        return SCHEMA
    document = copy.deepcopy(_schema.load_schema(SCHEMA))
    document["properties"]["validation"]["properties"]["vectors"]["maximum"] = bounds["vectors"]
    document["properties"]["met"]["properties"]["runs"]["maximum"] = bounds["runs"]
    return document


def parse_deploy_text(text: str, file: str = "<string>") -> DeploySpec:
    """Validate a deployment spec given as YAML text; DeployError lists every problem.

    The text is screened first (anchors, aliases, nesting: DEPLOY-E011), from the parser's
    event stream, so that nothing a hostile document says is built before it is judged.
    """
    bounds = limits()
    if len(text) > bounds["bytes"]:
        raise DeployError(file, [DeployProblem("DEPLOY-E012", "", f"the spec has {len(text)} characters, more than the "
                                               f"limit of {bounds['bytes']} (raise it with {LIMIT_VARIABLES['bytes']})")])
    refusal = screen(text, _LOADER)
    if refusal is not None:
        raise DeployError(file, [DeployProblem("DEPLOY-E011", "", refusal.message, refusal.line, refusal.column)])
    try:
        loader = _LOADER(text)
        try:
            root = loader.get_single_node()
            data = loader.construct_document(root) if root is not None else None
        finally:
            loader.dispose()
    except (ValueError, OverflowError) as exc:   # a value PyYAML parses but Python cannot hold
        raise DeployError(file, [DeployProblem("DEPLOY-E001", "", f"a value cannot be read: {exc}")]) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line, column = (mark.line + 1, mark.column + 1) if mark is not None else (0, 0)
        problem = getattr(exc, "problem", None) or str(exc)
        raise DeployError(file, [DeployProblem("DEPLOY-E001", "", f"not valid YAML: {problem}", line, column)]) from None
    positions: dict[str, tuple[int, int]] = {}
    keys: dict[str, tuple[int, int]] = {}
    duplicates: list[DeployProblem] = []
    if root is not None:
        _positions(root, "", positions, duplicates, keys)
    problems = duplicates + [DeployProblem(p.code, p.path, p.message, p.line, p.column)
                             for p in _schema.validate(data, _schema_with(bounds), _CODES, positions)]
    if isinstance(data, dict):
        checks = _Checks(positions)
        checks.document(data)
        checks.sizes(data, bounds)
        problems += checks.problems
    if problems:
        raise DeployError(file, sorted(problems, key=lambda p: (p.line, p.column, p.path, p.code, p.message)))
    return _build(data, file, positions, keys)


def load_deploy(path: str | os.PathLike[str]) -> DeploySpec:
    """Load and validate `path` (e.g. models/lenet5/deploy.yaml); DeployError lists every problem.

    Results are cached per file and modification: doit's task generators of every step read
    every spec each time `doit` starts, and a no-op `doit verify` must stay fast. Only a
    regular file of at most the size limit is read (DEPLOY-E012): a FIFO or /dev/zero named
    as a spec must not hang or fill memory.
    """
    file = _display(path)
    try:
        stat = Path(path).stat()
    except OSError as exc:
        raise DeployError(file, [DeployProblem("DEPLOY-E001", "", f"cannot read the file: {exc.strerror or exc}")]) from None
    if not S_ISREG(stat.st_mode):
        raise DeployError(file, [DeployProblem("DEPLOY-E012", "", "not a regular file (a FIFO, device or directory "
                                               "is refused)")])
    # ctime and inode too: an edit that keeps the size and restores the mtime still changes them
    return _load_cached(str(Path(path).resolve()), (stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino, stat.st_size), file,
                        tuple(limits().items()))


@lru_cache(maxsize=64)
def _load_cached(path: str, identity: tuple[int, int, int, int], file: str,
                 bounds: tuple[tuple[str, int], ...]) -> DeploySpec:
    max_bytes = dict(bounds)["bytes"]
    text, refusal = read_bounded(path, max_bytes, LIMIT_VARIABLES["bytes"])
    if text is None:
        assert refusal is not None
        raise DeployError(file, [DeployProblem("DEPLOY-E001" if refusal.unreadable else "DEPLOY-E012", "",
                                               refusal.message)])
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

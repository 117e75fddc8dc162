"""Deployment semantics: a validated deploy.yaml deployment applied to an exported graph.

pipeline.project.deploy checks the structure and types of models/<m>/deploy.yaml. This module
gives a deployment its meaning against the graph it distributes:

- rewrites (optional `rewrites: [{kind: layer_parallel, conv, chain, parts, items}]`)
  are applied first, in order (pipeline.split.layer_parallel);
- `allocation: {ITEM: [names]}` names NNEF *instruction results*; a name that is an
  input or parameter, unknown, or replaced by a rewrite is an error with its YAML key
  path; two results of one instruction must go to the same item;
- every instruction not allocated goes to the first that applies: the item of the
  instruction it `follows` (an exporter-invented intermediate follows the ONNX node's
  named result, see `followers`), the rewrite's `items[i]` for the instructions of
  part i, then `default_item`;
- `pipeline_depth` (optional integer >= 1, default 1) is carried to plan.json;
- every declared item must get at least one instruction (SPLIT-E008): an item left empty
  would silently have no file, no code and no run.

Every problem is reported at once as a DeployError (pipeline.project.deploy) whose problems carry
a SPLIT-Ennn code, the key path and the line in the YAML file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

from pipeline.project.deploy import DeployError, DeployProblem, DeploySpec, Item
from pipeline.nnef.graph import Graph, Operation
from pipeline.diagnostics import Location
from pipeline.split.errors import SplitError
from pipeline.split.emit import BINDINGS, COMMUNICATION, first_result
from pipeline.split.layer_parallel import LayerParallelSpec, Rewritten, rewrite_graph

REWRITE_KINDS = ("layer_parallel",)
_LISTED = 12  # names listed in a message before "..."


@dataclass
class Deployment:
    """A deployment applied to a graph: what the splitter needs, complete and checked."""

    model: str
    name: str
    items: tuple[Item, ...]
    default_item: str
    sync: str
    pipeline_depth: int
    graph: Graph  # the description to split (the export, or its rewritten form)
    text: str  # canonical text of `graph` (written as rewritten.nnef when there are rewrites)
    assignment: dict[str, str]  # first result of every instruction -> item
    rewrites: list[Rewritten] = field(default_factory=list)

    @property
    def item_names(self) -> list[str]:
        return [item.name for item in self.items]

    def item_of(self, op: Operation) -> str:
        return self.assignment[first_result(op)]


def computing(graph: Graph) -> list[Operation]:
    """The instructions that compute something: neither bindings nor communication."""
    return [op for op in graph.operations if op.name not in BINDINGS and op.name not in COMMUNICATION]


class _Problems:
    """The problems of one deployment, each at the position of its key in the spec's file.

    The positions come with the spec (`DeploySpec.positions`, recorded by the one loader,
    pipeline.project.deploy, from the text it judged): the file is never read again here.
    """

    def __init__(self, spec: DeploySpec) -> None:
        self.spec = spec
        self.items: list[DeployProblem] = []

    def add(self, code: str, path: str, message: str) -> None:
        location = self.spec.location(path)
        self.items.append(DeployProblem(code, path, message, location.line, location.column))

    def raise_if_any(self) -> None:
        if self.items:
            raise DeployError(self.spec.path, self.items)


def _listing(names: Sequence[str]) -> str:
    shown = ", ".join(names[:_LISTED])
    return shown + (f", ... ({len(names)} in all)" if len(names) > _LISTED else "")


# ---------------------------------------------------------------------- extras

def _rewrite_specs(spec: DeploySpec, name: str, problems: _Problems) -> list[LayerParallelSpec]:
    """The deployment's rewrites as specs; pipeline.project.deploy checked the list shape, the contents are ours."""
    raw = spec.deployments[name].rewrites
    base = f"deployments.{name}.rewrites"
    declared = {item.name for item in spec.deployments[name].items}
    result = []
    for index, entry in enumerate(raw):
        where = f"{base}[{index}]"
        if isinstance(entry, LayerParallelSpec):
            result.append(entry)
            continue
        if not isinstance(entry, Mapping):
            problems.add("SPLIT-E005", where, "expected a mapping {kind, conv, chain, parts, items}")
            continue
        unknown = sorted(set(entry) - {"kind", "conv", "chain", "parts", "items"})
        for key in unknown:
            problems.add("SPLIT-E005", f"{where}.{key}", f"unknown key '{key}'; allowed: kind, conv, chain, parts, items")
        kind = entry.get("kind")
        if kind not in REWRITE_KINDS:
            problems.add("SPLIT-E005", f"{where}.kind", f"expected one of {', '.join(REWRITE_KINDS)}, got {kind!r}")
            continue
        conv = entry.get("conv")
        if not isinstance(conv, str) or not conv:
            problems.add("SPLIT-E005", f"{where}.conv", f"expected the name of a conv result, got {conv!r}")
            continue
        chain = entry.get("chain", [])
        if not isinstance(chain, list) or not all(isinstance(c, str) and c for c in chain):
            problems.add("SPLIT-E005", f"{where}.chain", f"expected a list of result names, got {chain!r}")
            continue
        parts = entry.get("parts")
        if isinstance(parts, bool) or not isinstance(parts, int) or parts < 2:
            problems.add("SPLIT-E005", f"{where}.parts", f"expected an integer >= 2, got {parts!r}")
            continue
        items = entry.get("items")
        if items is not None:
            if not isinstance(items, list) or len(items) != parts:
                problems.add("SPLIT-E015", f"{where}.items", f"expected a list of {parts} items (one per part), "
                             f"got {items!r}")
                continue
            bad = [i for i in items if i not in declared]
            if bad:
                problems.add("SPLIT-E015", f"{where}.items", f"{', '.join(map(repr, bad))} not declared in items "
                             f"({', '.join(sorted(declared))})")
                continue
        result.append(LayerParallelSpec(conv, tuple(chain), parts, tuple(items) if items is not None else None, where))
    return result


# ---------------------------------------------------------------------- resolution

def resolve_deployment(spec: DeploySpec, name: str, graph: Graph, *,
                       followers: Mapping[str, str] | None = None,
                       rewrites: Sequence[LayerParallelSpec] | None = None,
                       pipeline_depth: int | None = None) -> Deployment:
    """Deployment `name` of `spec` applied to `graph` (the checked export).

    `followers`: result -> result whose item it takes when not allocated itself (the
    exporter's intermediates of one ONNX node). `rewrites` / `pipeline_depth` override
    the spec's (for callers building deployments programmatically). Raises SplitError
    SPLIT-E001 for an unknown deployment, DeployError with every other problem.
    """
    if name not in spec.deployments:
        raise SplitError("SPLIT-E001", f"no deployment '{name}'; the spec has {', '.join(spec.deployments)}",
                         Location.in_file(spec.path, key_path="deployments"))
    deployment = spec.deployments[name]
    problems = _Problems(spec)
    depth = pipeline_depth if pipeline_depth is not None else spec.deployments[name].pipeline_depth
    specs = list(rewrites) if rewrites is not None else _rewrite_specs(spec, name, problems)
    problems.raise_if_any()

    outcome = None
    try:
        outcome = rewrite_graph(graph, specs)
    except SplitError as error:
        path = error.location.key_path or f"deployments.{name}.rewrites"
        if error.code == "SPLIT-E050":
            raise
        problems.add(error.code, path, error.message)
    problems.raise_if_any()
    assert outcome is not None
    target = outcome.graph
    assignment = _assign(spec, name, deployment.allocation, deployment.default_item, graph, target,
                         outcome.rewrites, followers or {}, problems)
    problems.raise_if_any()   # an item emptied by a misspelt allocation is that problem, not another
    used = set(assignment.values())
    for index, item in enumerate(deployment.items):
        if item.name not in used:   # it would have no file, no code, no run: not what the spec declares
            problems.add("SPLIT-E008", f"deployments.{name}.items[{index}]",
                         f"item {item.name} gets no instruction (every instruction went to "
                         f"{', '.join(sorted(used)) or 'no item'}); allocate some to it or remove it")
    problems.raise_if_any()
    return Deployment(spec.model, name, tuple(deployment.items), deployment.default_item, deployment.sync, depth,
                      target, outcome.text, assignment, outcome.rewrites)


def _assign(spec: DeploySpec, name: str, allocation: Mapping[str, Sequence[str]], default: str,
            original: Graph, graph: Graph, rewrites: Sequence[Rewritten], followers: Mapping[str, str],
            problems: _Problems) -> dict[str, str]:
    """First result of every instruction of `graph` -> item; problems for bad allocations."""
    ops = computing(graph)
    owner_op: dict[str, Operation] = {}
    for op in ops:
        for ref in op.output_refs():
            owner_op[ref.name] = op
    declared = {first_result(op): op.name for op in graph.operations if op.name in BINDINGS}
    replaced = {name_: r for r in rewrites for name_ in r.replaced if name_ != r.result}
    results = [first_result(op) for op in ops]
    explicit: dict[str, str] = {}  # first result -> item
    where_of: dict[str, str] = {}
    base = f"deployments.{name}.allocation"
    for item, names in allocation.items():
        for index, result in enumerate(names):
            where = f"{base}.{item}[{index}]"
            op = owner_op.get(result)
            if op is None:
                if result in declared:
                    problems.add("SPLIT-E003", where, f"'{result}' is {'an input' if declared[result] == 'external' else 'a parameter'} "
                                 f"({declared[result]}) of the exported graph, not an instruction result; every item "
                                 "using it declares it")
                elif result in replaced:
                    rewrite = replaced[result]
                    problems.add("SPLIT-E006", where, f"'{result}' was replaced by the layer-parallel rewrite "
                                 f"{rewrite.spec.where}; allocate its parts "
                                 f"({_listing([r for part in rewrite.part_results for r in part])}) or give the rewrite "
                                 "`items`")
                else:
                    problems.add("SPLIT-E002", where, f"'{result}' is not an instruction result of the exported graph; "
                                 f"results are: {_listing(results)}")
                continue
            key = first_result(op)
            if key in explicit and explicit[key] != item:
                problems.add("SPLIT-E004", where, f"'{result}' and '{where_of[key]}' are results of the same "
                             f"'{op.name}' instruction but are allocated to {item} and {explicit[key]}")
                continue
            explicit[key] = item
            where_of[key] = result
    by_part: dict[str, str] = {}
    for rewrite in rewrites:
        if rewrite.spec.items is None:
            continue
        for part, item in zip(rewrite.part_results, rewrite.spec.items):
            for result in part:
                if result in explicit and explicit[result] != item:
                    problems.add("SPLIT-E007", f"{base}.{explicit[result]}", f"'{result}' is allocated to "
                                 f"{explicit[result]} but the rewrite {rewrite.spec.where} puts its part on {item}")
                by_part[result] = item
    assignment: dict[str, str] = {}
    for op in ops:
        key = first_result(op)
        item = explicit.get(key)
        if item is None:
            leader = followers.get(key)
            seen: set[str] = set()
            while item is None and leader is not None and leader not in seen:
                seen.add(leader)
                item = explicit.get(leader)
                leader = followers.get(leader)
        if item is None:
            item = by_part.get(key, default)
        assignment[key] = item
    return assignment

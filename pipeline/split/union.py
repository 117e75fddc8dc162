"""The union check (HLR-SPL-001): the items' instructions are the original's plus communication.

A validator of the splitter that reads only what the checker built from the *files*:
the original description's flat graph and the item graphs re-read from the item files.
It does not look at the splitter's data structures.

- The multiset of computing instructions over all items (everything except `external`,
  `variable`, `variablesync`, `send_var`, `get_var`) equals the original's, instruction
  by instruction: operation, every argument, results, element type.
- Every input and parameter declared in an item is declared identically in the original,
  and every one of the original's is declared in some item.
- The items' outputs, without sync variables, are the original's outputs, each held by
  exactly one item; their externals are the original's inputs.
- Communication only: every `get_var` result names a value computed by exactly one other
  item (so a received value is the original value of that name).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Sequence

from pipeline.nnef.graph import Graph, Operation, Ref
from pipeline.split.emit import BINDINGS, COMMUNICATION


def _plain(value: Any) -> Any:
    if isinstance(value, Ref):
        return ("ref", value.name)
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(_plain(v) for v in value))
    if isinstance(value, dict):
        return tuple((k, _plain(v)) for k, v in value.items())
    return (type(value).__name__, value)


def instruction_key(op: Operation) -> tuple[Any, ...]:
    """What makes two instructions the same: operation, arguments, results, element type."""
    return (op.name, _plain(op.inputs), _plain(op.attribs), _plain(op.outputs), op.dtype)


def describe(op: Operation) -> str:
    results = ", ".join(r.name for r in op.output_refs())
    where = f" ({op.span})" if op.span else ""
    return f"{results} = {op.name}(...){where}"


@dataclass
class UnionResult:
    """Outcome of the union check: problems (empty when it holds) and counts."""

    problems: list[str] = field(default_factory=list)
    measured: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.problems


def check_union(original: Graph, items: Sequence[Graph]) -> UnionResult:
    """Compare the original graph with the item graphs (see the module docstring)."""
    result = UnionResult()
    original_ops = [op for op in original.operations if op.name not in BINDINGS and op.name not in COMMUNICATION]
    item_ops = [(g.item or g.name, op) for g in items for op in g.operations
                if op.name not in BINDINGS and op.name not in COMMUNICATION]
    want = Counter(instruction_key(op) for op in original_ops)
    have = Counter(instruction_key(op) for _, op in item_ops)
    by_key = {instruction_key(op): op for op in original_ops}
    for key, count in (want - have).items():
        result.problems.append(f"instruction {describe(by_key[key])} of the original is "
                               f"{'missing from' if count == want[key] else 'short by ' + str(count) + ' in'} the items")
    for key, count in (have - want).items():
        item, op = next((i, o) for i, o in item_ops if instruction_key(o) == key)
        result.problems.append(f"item {item}: instruction {describe(op)} is not an instruction of the original"
                               + (f" (or appears {count} more time(s) than there)" if key in want else ""))

    original_bindings = {op.output_refs()[0].name: instruction_key(op) for op in original.operations
                         if op.name in BINDINGS}
    declared: set[str] = set()
    for graph in items:
        for op in graph.operations:
            if op.name not in BINDINGS:
                continue
            name = op.output_refs()[0].name
            declared.add(name)
            if original_bindings.get(name) != instruction_key(op):
                result.problems.append(f"item {graph.item}: declaration of '{name}' ({op.span}) differs from the "
                                       "original's or is not in the original")
    for name in original_bindings:
        if name not in declared:
            result.problems.append(f"'{name}' is declared by no item")

    syncs = {op.output_refs()[0].name for g in items for op in g.operations if op.name == "variablesync"}
    held = Counter(name for g in items for name in g.outputs if name not in syncs)
    for name in original.outputs:
        if held[name] != 1:
            result.problems.append(f"graph output '{name}' is an output of {held[name]} items (expected exactly 1)")
    for name in held:
        if name not in original.outputs:
            result.problems.append(f"'{name}' is an item output but not an output of the original")
    inputs = {name for g in items for name in g.inputs if name not in syncs}
    if inputs != set(original.inputs):
        result.problems.append(f"the items' inputs {sorted(inputs)} are not the original's {sorted(original.inputs)}")

    computed_by: dict[str, list[str]] = {}
    for graph in items:
        for op in graph.operations:
            if op.name not in BINDINGS and op.name not in COMMUNICATION:
                for ref in op.output_refs():
                    computed_by.setdefault(ref.name, []).append(str(graph.item))
    gets = 0
    sends = 0
    for graph in items:
        for op in graph.operations:
            if op.name == "send_var":
                sends += 1
            if op.name != "get_var":
                continue
            gets += 1
            name = op.output_refs()[0].name
            writers = computed_by.get(name, [])
            if writers != [str(op.attribs.get("source"))]:
                result.problems.append(f"item {graph.item}: '{name}' is received from {op.attribs.get('source')} "
                                       f"({op.span}) but computed by {', '.join(writers) or 'no item'}")
    result.measured = {"instructions_original": len(original_ops), "instructions_items": len(item_ops),
                       "send_var": sends, "get_var": gets, "items": len(items)}
    return result

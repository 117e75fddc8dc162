"""The flat graph: what a checked NNEF description means operationally.

The checker turns an AST into a `Graph`: an ordered list of operations of the catalogue
(standard fragments and the multi-item extension), every parameter bound (defaults
filled in), every tensor typed and shaped. Everything downstream (interpreter, splitter,
Petri nets, code generators) reads this structure, never the AST. It mirrors the shape
of the Khronos parser's graph (`nnef.Graph`) so the two can be compared directly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator, Union

from pipeline.diagnostics import Span


class Ref:
    """A reference to a tensor by its variable name (distinct from a string literal).

    A small slotted class (not a dataclass, not a tuple): graphs hold one per operand,
    and `isinstance(v, tuple)` must stay false for it.
    """

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Ref) and other.name == self.name

    def __hash__(self) -> int:
        return hash(("Ref", self.name))

    def __repr__(self) -> str:
        return f"Ref({self.name!r})"

    def __str__(self) -> str:
        return self.name


# An argument value: a tensor reference, a literal, or an array/tuple of values.
Value = Union[Ref, bool, int, float, str, list, tuple]


def refs_in(value: Any) -> Iterator[Ref]:
    """All tensor references inside a (possibly nested) argument value, in order."""
    if isinstance(value, Ref):
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from refs_in(item)


@dataclass
class TensorInfo:
    """A tensor variable: element type (`scalar`, `integer`, `logical`) and shape."""

    name: str
    dtype: str
    shape: list[int] | None = None


@dataclass
class Operation:
    """One instruction of the flat graph.

    `inputs` holds the tensor-typed parameters, `attribs` the others, both in the
    fragment's declaration order with defaults filled in; `explicit` names the
    parameters written in the source. `outputs` maps result names to `Ref`s (or lists
    of `Ref`s for array results).
    """

    name: str
    inputs: dict[str, Value]
    attribs: dict[str, Value]
    outputs: dict[str, Value]
    dtype: str | None = None
    span: Span | None = None
    explicit: frozenset[str] = field(default_factory=frozenset)

    def input_refs(self) -> list[Ref]:
        return [r for v in self.inputs.values() for r in refs_in(v)]

    def output_refs(self) -> list[Ref]:
        return [r for v in self.outputs.values() for r in refs_in(v)]


@dataclass
class Graph:
    """A flat graph: one `graph` definition, or one `graphitem` of a multi-item description."""

    name: str
    inputs: list[str]
    outputs: list[str]
    operations: list[Operation] = field(default_factory=list)
    tensors: dict[str, TensorInfo] = field(default_factory=dict)
    item: str | None = None
    source: str = ""
    span: Span | None = None  # the graph's name (the item id for a graphitem) in its header
    failed: set[str] = field(default_factory=set)  # names whose assignment had an error

    def producers(self) -> dict[str, Operation]:
        """Tensor name -> the operation that defines it (the last one for a sync variable)."""
        result: dict[str, Operation] = {}
        for op in self.operations:
            for ref in op.output_refs():
                result[ref.name] = op
        return result

    def consumers(self) -> dict[str, list[Operation]]:
        """Tensor name -> operations reading it, in program order (one entry per read)."""
        result: dict[str, list[Operation]] = {}
        for op in self.operations:
            for ref in op.input_refs():
                result.setdefault(ref.name, []).append(op)
        return result

"""The splitter: one deployment of a checked description -> one graphitem per item.

Given a Deployment (pipeline.split.allocation: every instruction assigned an item), it
builds for each item, in the style of the paper's Listing 3 (examples/nnef/branch3_items.nnef):

- declarations: the `external`s and `variable`s the item's instructions read (same name,
  shape and label in every item, so the tensor files are shared), then one
  `variablesync` per shared variable the item writes or reads;
- the body, in the original instruction order (a topological order): before an
  instruction, `v = get_var(W, s)` for each operand computed on another item W and not
  yet received; after it, `s = send_var([R1, R2], v)` for each result read on other items,
  listing every reader item;
- the header: the externals and sync variables read -> the sync variables written and
  the graph outputs the item computes.

Decisions (docs/split.md): a received value keeps its original name, so every original
instruction reads exactly as before; shared variables are named s1, s2, ... in the order
of their send_var in the original instruction order (another prefix when the graph
already uses such names); a graph output is an output of the item that computes it and
is not sent anywhere just to be output (plan.json `outputs` says which item holds it);
an input or parameter nobody reads is declared on the default item.

Property (HLR-SPL-001/002): the union of the items' instructions is the original's plus
communication, and items share only declared sync variables. Validated independently
of this module by pipeline.split.union (on the item files re-read by the checker), the
checker's multi-item rules (nnef.multiitem), the executable semantics
(pipeline.split.workers) and the Petri-net equivalence (pipeline.petri).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from pipeline.nnef import build
from pipeline.nnef.graph import Operation, Ref
from pipeline.nnef.printer import print_document
from pipeline.split.allocation import Deployment, computing
from pipeline.split.emit import BINDINGS, first_result, graph_def

ITEM_SIZES = {"scalar": 4, "integer": 8, "logical": 1}  # bytes per element, as the reference semantics stores them
SYNC_PREFIXES = ("s", "sync", "sync_", "vsync", "vsync_")


@dataclass(frozen=True)
class SyncVariable:
    """A shared variable: one writer, its readers (in item order), the value it carries."""

    name: str
    writer: str
    readers: tuple[str, ...]
    value: str
    shape: tuple[int, ...]
    dtype: str

    @property
    def bytes(self) -> int:
        return math.prod(self.shape) * ITEM_SIZES.get(self.dtype, 4)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "writer": self.writer, "readers": list(self.readers), "value": self.value,
                "shape": list(self.shape), "dtype": self.dtype, "bytes": self.bytes}


@dataclass(frozen=True)
class Step:
    """One step of an item's static schedule (schedule.json)."""

    kind: str  # compute | send | get | barrier
    result: str = ""  # compute: first result; get: the local variable
    op: str = ""  # compute: operation name
    var: str = ""  # send/get: the sync variable
    value: str = ""  # send: the variable sent
    to: tuple[str, ...] = ()  # send: reader items
    source: str = ""  # get: the writer item
    id: int = 0  # barrier id

    def to_json(self) -> dict[str, Any]:
        if self.kind == "compute":
            return {"kind": "compute", "result": self.result, "op": self.op}
        if self.kind == "send":
            return {"kind": "send", "var": self.var, "value": self.value, "to": list(self.to)}
        if self.kind == "get":
            return {"kind": "get", "var": self.var, "result": self.result, "from": self.source}
        return {"kind": "barrier", "id": self.id}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Step":
        kind = data["kind"]
        if kind == "compute":
            return cls("compute", result=str(data["result"]), op=str(data["op"]))
        if kind == "send":
            return cls("send", var=str(data["var"]), value=str(data["value"]), to=tuple(str(t) for t in data["to"]))
        if kind == "get":
            return cls("get", var=str(data["var"]), result=str(data["result"]), source=str(data["from"]))
        if kind == "barrier":
            return cls("barrier", id=int(data["id"]))
        raise ValueError(f"unknown step kind {kind!r}")


@dataclass
class ItemDescription:
    """One item of a split: its graphitem (declarations, body, header) and its steps."""

    name: str
    target: str
    graph_name: str
    declarations: list[Operation] = field(default_factory=list)
    body: list[Operation] = field(default_factory=list)  # compute, send_var and get_var, in order
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)

    @property
    def file(self) -> str:
        return f"{self.name}.nnef"

    def steps(self) -> list[Step]:
        """The item's schedule without barriers: its body in order."""
        result = []
        for op in self.body:
            if op.name == "send_var":
                result.append(Step("send", var=first_result(op), value=op.inputs["data"].name,
                                   to=tuple(str(d) for d in op.attribs["dest"])))
            elif op.name == "get_var":
                result.append(Step("get", var=op.inputs["data"].name, result=first_result(op),
                                   source=str(op.attribs["source"])))
            else:
                result.append(Step("compute", result=first_result(op), op=op.name))
        return result

    def text(self) -> str:
        """The item file: one graphitem, printed canonically."""
        definition = graph_def(self.graph_name, self.inputs, self.outputs, self.declarations + self.body, self.name)
        return print_document(build.document([definition]))


@dataclass
class Split:
    """A deployment split into items."""

    deployment: Deployment
    items: list[ItemDescription]
    sync_variables: list[SyncVariable]
    outputs: dict[str, str]  # graph output -> item holding it
    unused_items: list[str] = field(default_factory=list)

    def item(self, name: str) -> ItemDescription:
        for item in self.items:
            if item.name == name:
                return item
        raise KeyError(name)

    def texts(self) -> dict[str, str]:
        """Item name -> the text of its file."""
        return {item.name: item.text() for item in self.items}


def _sync_prefix(taken: set[str], count: int) -> str:
    for prefix in SYNC_PREFIXES:
        if not any(f"{prefix}{n}" in taken for n in range(1, count + 1)):
            return prefix
    suffix = 0
    while any(f"sync{suffix}_{n}" in taken for n in range(1, count + 1)):
        suffix += 1
    return f"sync{suffix}_"


def split_deployment(deployment: Deployment) -> Split:
    """Split `deployment.graph` over its items (see the module docstring for the rules)."""
    graph = deployment.graph
    ops = computing(graph)
    item_of = {id(op): deployment.item_of(op) for op in ops}
    producer_item: dict[str, str] = {}
    for op in ops:
        for ref in op.output_refs():
            producer_item[ref.name] = item_of[id(op)]
    bindings = {first_result(op): op for op in graph.operations if op.name in BINDINGS}

    # who reads what: value -> reader items (remote only), in item declaration order
    order = {item.name: index for index, item in enumerate(deployment.items)}
    remote: dict[str, set[str]] = {}
    uses: dict[str, set[str]] = {}  # binding -> items declaring it
    for op in ops:
        reader = item_of[id(op)]
        for ref in op.input_refs():
            if ref.name in bindings:
                uses.setdefault(ref.name, set()).add(reader)
            elif producer_item.get(ref.name, reader) != reader:
                remote.setdefault(ref.name, set()).add(reader)
    outputs: dict[str, str] = {}
    for name in graph.outputs:
        outputs[name] = producer_item.get(name, deployment.default_item)
        if name in bindings:
            uses.setdefault(name, set()).add(deployment.default_item)
    for name in bindings:
        uses.setdefault(name, {deployment.default_item})

    # shared variables, in the order of their send in the original instruction order
    sent = [ref.name for op in ops for ref in op.output_refs() if ref.name in remote]
    taken = set(graph.tensors) | set(order) | {graph.name}
    prefix = _sync_prefix(taken, len(sent))
    syncs: dict[str, SyncVariable] = {}
    for index, value in enumerate(sent, start=1):
        info = graph.tensors[value]
        readers = tuple(sorted(remote[value], key=order.__getitem__))
        syncs[value] = SyncVariable(f"{prefix}{index}", producer_item[value], readers, value,
                                    tuple(int(d) for d in info.shape or ()), info.dtype)

    items = {item.name: ItemDescription(item.name, item.target, f"{graph.name}_{item.name}")
             for item in deployment.items}
    received: dict[str, set[str]] = {name: set() for name in items}
    for op in ops:
        item = items[item_of[id(op)]]
        for ref in op.input_refs():
            sync = syncs.get(ref.name)
            if sync is not None and item.name in sync.readers and ref.name not in received[item.name]:
                received[item.name].add(ref.name)
                item.body.append(Operation("get_var", {"data": Ref(sync.name)}, {"source": sync.writer},
                                           {"output": Ref(sync.value)}, sync.dtype))
        item.body.append(op)
        for ref in op.output_refs():
            sync = syncs.get(ref.name)
            if sync is not None:
                item.body.append(Operation("send_var", {"data": Ref(sync.value)}, {"dest": list(sync.readers)},
                                           {"output": Ref(sync.name)}, sync.dtype))

    ordered_syncs = list(syncs.values())
    for item in items.values():
        item.declarations = [op for op in graph.operations
                             if op.name in BINDINGS and item.name in uses.get(first_result(op), set())]
        mine = [s for s in ordered_syncs if s.writer == item.name or item.name in s.readers]
        item.declarations += [Operation("variablesync", {}, {"shape": list(s.shape)}, {"output": Ref(s.name)}, s.dtype)
                              for s in mine]
        declared = {first_result(op) for op in item.declarations}
        item.inputs = [name for name in graph.inputs if name in declared and bindings[name].name == "external"]
        item.inputs += [s.name for s in mine if item.name in s.readers]
        item.outputs = [s.name for s in mine if s.writer == item.name]
        item.outputs += [name for name in graph.outputs if outputs[name] == item.name]
    used = [item for item in items.values() if item.body or item.outputs or item.declarations]
    unused = [item.name for item in items.values() if not (item.body or item.outputs or item.declarations)]
    return Split(deployment, used, ordered_syncs, outputs, unused)

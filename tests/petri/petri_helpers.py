"""Test fixtures of the Petri step: generated networks, their splits, schedules and traces.

`random_network` writes a small flat NNEF graph (elementwise operations on [1, 4]
tensors); `split_network` distributes it over items the way the paper's Listing 3 does
(a send_var right after the producing instruction, naming every reader; a get_var right
before the reader's first use), with each item's program order taken from one global
topological order, so that program order is a deadlock-free schedule. The benchmark uses
the same generators at scale.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline.nnef.checker import check_text
from pipeline.nnef.graph import Graph
from pipeline.petri.load import CROSS_ITEM_CODES

ROOT = Path(__file__).parents[2]
DATA = Path(__file__).parent / "data"
LENET = DATA / "lenet5.nnef"
BRANCH3 = DATA / "branch3.nnef"
BRANCH3_ITEMS = ROOT / "examples" / "nnef" / "branch3_items.nnef"

UNARY = ("relu", "sigmoid", "tanh", "abs")
BINARY = ("add", "mul", "sub", "max")
SHAPE = "[1, 4]"


@dataclass
class Network:
    """A flat network: inputs, parameters, instructions (result, op, arguments), outputs."""

    inputs: list[str]
    parameters: list[str]
    ops: list[tuple[str, str, list[str]]]
    outputs: list[str]
    items: dict[str, str] = field(default_factory=dict)   # result -> item (after split_network)


def random_network(rng: random.Random, n_ops: int, n_inputs: int = 1, n_params: int = 2, unused: bool = False,
                   fan: int = 4) -> Network:
    """A random DAG; every value without a consumer is an output (unless `unused`: the last op's result is dropped)."""
    inputs = [f"e{i}" for i in range(n_inputs)]
    params = [f"w{i}" for i in range(n_params)]
    values = list(inputs) + list(params)
    ops: list[tuple[str, str, list[str]]] = []
    consumed: set[str] = set()
    for i in range(n_ops):
        result = f"t{i}"
        window = values[-fan:] if rng.random() < 0.7 else values
        if rng.random() < 0.5:
            args = [rng.choice(window)]
            op = rng.choice(UNARY)
        else:
            args = [rng.choice(window), rng.choice(values)]
            op = rng.choice(BINARY)
        ops.append((result, op, args))
        consumed.update(args)
        values.append(result)
    outputs = [r for r, _, _ in ops if r not in consumed]
    if unused and len(outputs) > 1:
        outputs = outputs[:-1]
    if not outputs:
        outputs = [ops[-1][0]]
    used = consumed | set(outputs)
    return Network([x for x in inputs if x in used] or inputs[:1], [w for w in params if w in used], ops, outputs)


def network_text(net: Network, name: str = "net") -> str:
    lines = ["version 1.0;", "", f"graph {name}( {', '.join(net.inputs)} ) -> ( {', '.join(net.outputs)} )", "{"]
    for x in net.inputs:
        lines.append(f"    {x} = external<scalar>(shape = {SHAPE});")
    for w in net.parameters:
        lines.append(f"    {w} = variable<scalar>(shape = {SHAPE}, label = '{w}');")
    for result, op, args in net.ops:
        lines.append(f"    {result} = {op}({', '.join(args)});")
    lines.append("}")
    return "\n".join(lines) + "\n"


def split_network(net: Network, items: list[str], rng: random.Random,
                  allocation: dict[str, str] | None = None) -> dict[str, str]:
    """Allocate each instruction to an item (at random, or by `allocation`); item -> graphitem text (Listing 3 style)."""
    item_of = dict(allocation) if allocation else {result: rng.choice(items) for result, _, _ in net.ops}
    net.items = dict(item_of)
    declared = set(net.inputs) | set(net.parameters)
    readers: dict[str, list[str]] = {}
    for result, _, args in net.ops:
        for a in args:
            if a not in declared and item_of[a] != item_of[result]:
                readers.setdefault(a, [])
                if item_of[result] not in readers[a]:
                    readers[a].append(item_of[result])
    sync_of = {value: f"s_{value}" for value in readers}
    bodies: dict[str, list[str]] = {item: [] for item in items}
    uses: dict[str, set[str]] = {item: set() for item in items}
    got: dict[str, set[str]] = {item: set() for item in items}
    for result, op, args in net.ops:
        item = item_of[result]
        for a in dict.fromkeys(args):
            if a in declared:
                uses[item].add(a)
            elif item_of[a] != item and a not in got[item]:
                got[item].add(a)
                bodies[item].append(f"    {a} = get_var({item_of[a]}, {sync_of[a]});")
        bodies[item].append(f"    {result} = {op}({', '.join(args)});")
        if result in readers:
            bodies[item].append(f"    {sync_of[result]} = send_var([{', '.join(readers[result])}], {result});")
    texts = {}
    for item in items:
        writes = [sync_of[r] for r, _, _ in net.ops if item_of[r] == item and r in readers]
        reads = [sync_of[v] for v in readers if item in readers[v]]
        ins = [x for x in net.inputs if x in uses[item]] + reads
        outs = writes + [o for o in net.outputs if item_of.get(o) == item]
        lines = [f"graphitem {item} g_{item.lower()}( {', '.join(ins)} ) -> ( {', '.join(outs)} )", "{"]
        for x in net.inputs:
            if x in uses[item]:
                lines.append(f"    {x} = external<scalar>(shape = {SHAPE});")
        for w in net.parameters:
            if w in uses[item]:
                lines.append(f"    {w} = variable<scalar>(shape = {SHAPE}, label = '{w}');")
        for s in writes + reads:
            lines.append(f"    {s} = variablesync<scalar>(shape = {SHAPE});")
        lines += bodies[item]
        lines.append("}")
        texts[item] = "\n".join(lines) + "\n"
    return texts


def graphs_of(text: str, file: str = "<test>") -> list[Graph]:
    report = check_text(text, file, profile="standard")
    errors = [f for f in report.findings if f.is_error and f.code not in CROSS_ITEM_CODES]
    assert not errors, [f"{f.code} {f.message} {f.span}" for f in errors]
    return report.graphs


def items_text(texts: dict[str, str]) -> str:
    return "version 1.0;\n\n" + "\n".join(texts.values())


def paper_barrier_schedule() -> dict[str, Any]:
    """The paper's barrier scheme for the three-item example (barrier 1, head, 2, branches, 3, tail)."""
    conv = "conv"
    return {"schema_version": 1, "sync": "barrier", "items": {
        "ITEM1": [{"kind": "barrier", "id": 1},
                  {"kind": "compute", "result": "o1", "op": conv},
                  {"kind": "send", "var": "s1", "value": "o1", "to": ["ITEM2", "ITEM3"]},
                  {"kind": "barrier", "id": 2}, {"kind": "barrier", "id": 3},
                  {"kind": "get", "var": "s2", "result": "o3", "from": "ITEM2"},
                  {"kind": "get", "var": "s3", "result": "o5", "from": "ITEM3"},
                  {"kind": "compute", "result": "o6", "op": "concat"},
                  {"kind": "compute", "result": "o7", "op": "reshape"},
                  {"kind": "compute", "result": "out", "op": "linear"}],
        "ITEM2": [{"kind": "barrier", "id": 1}, {"kind": "barrier", "id": 2},
                  {"kind": "get", "var": "s1", "result": "o1", "from": "ITEM1"},
                  {"kind": "compute", "result": "o2", "op": conv},
                  {"kind": "compute", "result": "o3", "op": conv},
                  {"kind": "send", "var": "s2", "value": "o3", "to": ["ITEM1"]},
                  {"kind": "barrier", "id": 3}],
        "ITEM3": [{"kind": "barrier", "id": 1}, {"kind": "barrier", "id": 2},
                  {"kind": "get", "var": "s1", "result": "o1", "from": "ITEM1"},
                  {"kind": "compute", "result": "o4", "op": conv},
                  {"kind": "compute", "result": "o5", "op": conv},
                  {"kind": "send", "var": "s3", "value": "o5", "to": ["ITEM1"]},
                  {"kind": "barrier", "id": 3}],
    }}

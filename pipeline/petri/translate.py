"""Translations 1 and 2: NNEF flat graphs -> Petri nets (docs/design.md, "The execution model"; docs/petri.md).

Translation 1 (one description): transitions are the instructions that compute something
(declarations of inputs, parameters and constants create none; their places hold the
initial tokens); places are the variables. Translation 2 (several graphitems): each item
is translated with its own colour; `variablesync` creates no place, `get_var` no transition
(the reader's consumers read the writer's value), `send_var` a `sync` transition fed by the
sent value with one output per reader in the reader's colour; inputs and parameters of the
same name in several items are one value.

Two encodings of "the variables":

* ``ours`` (default): one place per (value, consumer) arc. Every place has at most one
  producer and one consumer and holds at most one token, so the net is an acyclic,
  conflict-free, 1-safe marked graph and the structural analyses of
  pipeline.petri.analysis are exact. A computed value nobody consumes gets an ``unused``
  place (a token left over: dead code, or a send nobody reads); a value with no producer a
  ``missing`` place (its consumer can never fire).
* ``paper``: one place per variable (per colour) holding one token per consumer, as the
  paper defines it. Kept to report the paper's counts and to exhibit its flaw: with
  ``a = relu(x); b = sigmoid(x)`` relu can take both tokens of x (pipeline.petri.analysis
  decides when that happens).

What the translation preserves is checked by pipeline.petri.analysis (each description's
net) and pipeline.petri.equivalence (a split against its original).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence, Union

from pipeline.diagnostics import Location, PipelineError
from pipeline.nnef.graph import Graph, Operation, Ref, refs_in
from pipeline.petri.net import GetInfo, Net, Place, PlaceKind, Transition, TransitionKind, fresh_id

ENCODINGS = ("ours", "paper")
DECLARATIONS = {"external": PlaceKind.INPUT, "variable": PlaceKind.PARAMETER, "constant": PlaceKind.CONSTANT}
SYNC_OPS = ("variablesync", "send_var", "get_var")


def _literal_shape(value: Any) -> Any:
    """An argument with tensor references replaced by '$' (their identity is compared elsewhere)."""
    if isinstance(value, Ref):
        return "$"
    if isinstance(value, list):
        return [_literal_shape(v) for v in value]
    if isinstance(value, tuple):
        return {"tuple": [_literal_shape(v) for v in value]}
    return value


def signature(op: Operation) -> str:
    """Canonical text of what an instruction computes, apart from where its tensors come from.

    The repr of plain values (str, int, float, bool, lists, tuples, dicts in declaration
    order) is deterministic; it is six times cheaper than JSON on large graphs.
    """
    return repr((op.name, op.dtype, [(k, _literal_shape(v)) for k, v in op.attribs.items()],
                 [(k, _literal_shape(v)) for k, v in op.inputs.items()]))


@dataclass
class _Item:
    """What one graph (one colour) declares and computes: all the places need, without the graph."""

    colour: str
    outputs: list[str]
    declared: dict[str, PlaceKind] = field(default_factory=dict)
    syncvars: set[str] = field(default_factory=set)
    aliases: dict[str, tuple[str, str]] = field(default_factory=dict)   # get result -> (writer, sync var)
    producer: dict[str, int] = field(default_factory=dict)              # variable -> transition
    transitions: list[int] = field(default_factory=list)                # in program order


def _check_encoding(encoding: str) -> None:
    if encoding not in ENCODINGS:
        raise PipelineError("PETRI-E003", f"unknown encoding {encoding!r}; encodings are {', '.join(ENCODINGS)}")


def _check_graphs(graphs: Sequence[Graph], encoding: str) -> None:
    _check_encoding(encoding)
    if not graphs:
        raise PipelineError("PETRI-E002", "no graph to translate")
    kinds = {g.item is not None for g in graphs}
    if len(kinds) > 1:
        where = Location.of_span(next((g.span for g in graphs if g.item is None and g.span), None))
        raise PipelineError("PETRI-E002", "plain graphs and graphitems given together; translate the original "
                            "and the items separately", where)
    if kinds == {False} and len(graphs) > 1:
        raise PipelineError("PETRI-E002", f"{len(graphs)} plain graphs given; a description has one graph "
                            "(or several graphitems)", Location.of_span(graphs[1].span))


def _names(values: Iterable[Any]) -> list[str]:
    """The names of the tensor references in `values`, in order: Operation.input_refs/output_refs without
    a generator per plain reference (about a tenth of the translation's profile at 100,000 operations)."""
    names: list[str] = []
    for value in values:
        if type(value) is Ref:
            names.append(value.name)
        else:
            names.extend(r.name for r in refs_in(value))
    return names


def _collect(net: Net, graphs: Sequence[Graph], prefix: bool) -> tuple[list[_Item], dict[tuple[str, str], int]]:
    """Create the transitions (instructions and syncs) of every item; remember declarations and gets.

    The transitions are appended here rather than through `Net.add_transition` (the same
    ids, objects and arc lists), an instruction's names read inline (`_names`), and the
    signature of an instruction without attributes whose arguments are all tensors taken
    from the operation, its dtype and its parameter names (`signature` of such an
    instruction depends on nothing else): per instruction, no call at 100,000 operations."""
    items: list[_Item] = []
    syncs: dict[tuple[str, str], int] = {}
    shared: dict[str, str] = {}   # one string per distinct signature (a few thousand for 100,000 instructions)
    plain: dict[tuple[Any, ...], str] = {}   # (op, dtype, parameter names) -> signature, tensor arguments only
    transitions = net.transitions
    ids = net._ids
    assert ids is not None   # a fresh net
    compute = TransitionKind.COMPUTE

    def new(base: str, *fields: Any) -> int:
        if base in ids:
            base = fresh_id(ids, base)
        else:
            ids.add(base)
        transitions.append(Transition(base, *fields))
        return len(transitions) - 1

    for graph in graphs:
        colour = graph.item or graph.name
        item = _Item(colour, list(graph.outputs))
        items.append(item)
        net.colours.append(colour)
        program = net.program.setdefault(colour, [])
        steps, producer, declared = item.transitions, item.producer, item.declared
        head = f"{colour}." if prefix else ""
        for op in graph.operations:
            outs: list[str] = []
            for value in op.outputs.values():
                if type(value) is Ref:
                    outs.append(value.name)
                else:
                    outs.extend(r.name for r in refs_in(value))
            kind = op.name
            if kind in DECLARATIONS:
                declared[outs[0]] = DECLARATIONS[kind]
            elif kind == "variablesync":
                item.syncvars.add(outs[0])
            elif kind == "get_var":
                source = str(op.attribs.get("source", ""))
                var = _names(op.inputs.values())[0]
                item.aliases[outs[0]] = (source, var)
                program.append(("g", len(net.gets)))
                net.gets.append(GetInfo(colour, outs[0], var, source, op.span))
            elif kind == "send_var":
                var, value = outs[0], _names(op.inputs.values())[0]
                dest = tuple(str(d) for d in op.attribs.get("dest", []))
                t = new(f"sync.{head}{var}", var, "sync", colour, TransitionKind.SYNC, (value,), (var,),
                        repr(("sync", dest)), op.span, dest)
                syncs.setdefault((colour, var), t)
                steps.append(t)
                program.append(("t", t))
            else:
                arguments = op.inputs
                inputs: list[str] = []
                tensors = True
                for value in arguments.values():
                    if type(value) is Ref:
                        inputs.append(value.name)
                    else:
                        tensors = False
                        inputs.extend(r.name for r in refs_in(value))
                if tensors and not op.attribs:
                    key = (kind, op.dtype, *arguments)
                    text = plain.get(key)
                    if text is None:
                        text = plain[key] = shared.setdefault(text := signature(op), text)
                else:
                    text = shared.setdefault(text := signature(op), text)
                name = outs[0]
                base = f"t.{head}{name}"
                if base in ids:
                    base = fresh_id(ids, base)
                else:
                    ids.add(base)
                t = len(transitions)
                transitions.append(Transition(base, name, kind, colour, compute, tuple(inputs), tuple(outs), text,
                                              op.span))
                for name in outs:
                    producer[name] = t
                steps.append(t)
                program.append(("t", t))
    missing = len(transitions) - len(net.pre)
    net.pre.extend([[] for _ in range(missing)])
    net.post.extend([[] for _ in range(missing)])
    return items, syncs


def translate(graphs: Sequence[Graph], encoding: str = "ours", name: str = "") -> Net:
    """The net of one description (one plain graph) or of a multi-item description (graphitems).

    A single graphitem is translated as an item: its gets have no writer among the graphs
    given and become `missing` places. Raises PipelineError (PETRI-E002/E003) on bad input.
    """
    return translate_each(graphs, (encoding,), name).nets[0]


GraphSource = Union[Sequence[Graph], Callable[[], Sequence[Graph]]]


@dataclass
class Translation:
    """The nets of one description, one per encoding asked for, the counts (`Net.counts`) of the
    encodings asked for by counts only, and whether the description was given as graphitems."""

    nets: list[Net]
    graphitems: bool
    counts: dict[str, dict[str, int]] = field(default_factory=dict)


def translate_each(source: GraphSource, encodings: Sequence[str], name: str = "", counts_only: Sequence[str] = ()
                   ) -> Translation:
    """`translate` in each encoding, reading the graphs once: the instructions are collected once.

    `source` is the graphs or a callable returning them (a loader): then the graphs are
    released as soon as their instructions are collected, before any place is built, so
    that at most the graphs or the nets are held, not both (100,000 operations: the graphs
    of a split are about 600 MB). Each net is the one `translate(graphs, encoding, name)`
    gives, with its own places and arc lists; the transitions (never changed once built)
    are shared. For an encoding in `counts_only`, only the counts of its net are computed
    (the paper encoding's by `_paper_counts`, without its places; ours by building the net).
    """
    for encoding in [*encodings, *counts_only]:
        _check_encoding(encoding)
    collected = collect(source, encodings[0] if encodings else "ours", name)
    net, items, syncs, prefix = collected.net, collected.items, collected.syncs, collected.prefix
    nets = [net] + [_sharing_transitions(net, encoding) for encoding in encodings[1:]]
    reads: list[tuple[list[str], int]] = []   # for the paper counts, from our encoding's places
    for each in nets:
        if each.encoding == "ours":
            _places_ours(each, items, syncs, prefix, reads if each is net else None)
        else:
            _places_paper(each, items, syncs, prefix)
        each._ids = None   # the ids are unique; the set (as large as the net's index) is rebuilt if one is added
    counts = {}
    for encoding in counts_only:
        if encoding == "paper":
            counts[encoding] = _paper_counts(net, items, syncs, reads if reads else None)
        else:
            counted = _sharing_transitions(net, encoding)
            _places_ours(counted, items, syncs, prefix)
            counts[encoding] = counted.counts()
    return Translation(nets, collected.graphitems, counts)


@dataclass
class Collected:
    """A description's transitions (in `net`, which has no place yet) and what its places need:
    per item its declarations, gets and producers (`_Item`), the sync transitions by (writer,
    variable), and whether the ids carry the item's name (`prefix`)."""

    net: Net
    items: list[_Item]
    syncs: dict[tuple[str, str], int]
    prefix: bool
    graphitems: bool


def collect(source: GraphSource, encoding: str = "ours", name: str = "") -> Collected:
    """The first half of `translate_each`: the graphs read (a loader called, its graphs dropped once
    collected) and checked, the transitions built; `places_ours` completes the net.

    pipeline.petri.equivalence reads an original's instructions from here without building
    its places (`original_of`)."""
    graphs = source() if callable(source) else source
    _check_graphs(graphs, encoding)
    net = Net(name or (graphs[0].name if len(graphs) == 1 else "+".join(g.item or g.name for g in graphs)), encoding)
    prefix = len(graphs) > 1
    graphitems = any(g.item is not None for g in graphs)
    items, syncs = _collect(net, graphs, prefix)
    del graphs   # the caller's loader kept no reference: the graphs are freed here
    return Collected(net, items, syncs, prefix, graphitems)


def places_ours(collected: Collected) -> Net:
    """`collected`'s net completed in our encoding (as `translate_each(..., ["ours"])` gives it)."""
    net = collected.net
    _places_ours(net, collected.items, collected.syncs, collected.prefix)
    net._ids = None
    return net


def _sharing_transitions(net: Net, encoding: str) -> Net:
    """A net with `net`'s transitions (shared), colours, gets and programs, and no place yet."""
    other = Net(net.name, encoding, transitions=list(net.transitions), colours=list(net.colours), gets=list(net.gets),
                program={colour: list(steps) for colour, steps in net.program.items()},
                _ids=set(net._ids) if net._ids is not None else None)
    other.pre = [[] for _ in net.transitions]
    other.post = [[] for _ in net.transitions]
    return other


# ---------------------------------------------------------------------- our encoding
def _suffix(net: Net, t: int) -> str:
    tid = net.transitions[t].id
    return tid[2:] if tid.startswith("t.") else tid


def _places_ours(net: Net, items: list[_Item], syncs: dict[tuple[str, str], int], prefix: bool,
                 reads: list[tuple[list[str], int]] | None = None) -> None:
    """One place per (value, consumer) arc, and the once, output, unused and missing places (module doc).

    Places and arcs are appended here rather than through `Net.add_place`/`arc_in`/`arc_out`
    (the same ids, objects and lists in the same order): about 400,000 places at 100,000
    operations, where the calls were a third of the translation. The arc tuples are shared where
    equal: one (t, 1) per transition for its places' producer/consumer lists, one (p, 1) for a
    place's arcs in its producer's post-set and its consumer's pre-set (tuples: nothing can tell).
    `reads` (when given) receives per item what `_paper_counts` reads of its instructions: their
    distinct inputs in order, and how many have none (walked here already)."""
    consumed = bytearray(len(net.transitions))     # producing transitions with at least one reader
    delivered: set[tuple[int, str]] = set()        # (sync, reader colour) that something reads
    places, producers, consumers, pre, post = net.places, net.producers, net.consumers, net.pre, net.post
    transitions = net.transitions
    ids = net._ids
    if ids is None:
        ids = net._ids = {p.id for p in places} | {t.id for t in transitions}
    value_kind, missing_kind = PlaceKind.VALUE, PlaceKind.MISSING

    def place(base: str, var: str, colour: str, kind: PlaceKind, initial: int = 0) -> int:
        """`Net.add_place`."""
        if base in ids:
            base = fresh_id(ids, base)
        else:
            ids.add(base)
        places.append(Place(base, var, colour, kind, initial))
        producers.append([])
        consumers.append([])
        return len(places) - 1

    def feed(item: _Item, var: str, place_base: str, kind: PlaceKind) -> int:
        """A place carrying `var` (as item names it) from its producer; returns the place."""
        t = item.producer.get(var)
        if t is not None:
            p = place(place_base, var, item.colour, kind)
            post[t].append((p, 1))
            producers[p].append((t, 1))
            consumed[t] = 1
            return p
        if var in item.declared:
            initial_kind = item.declared[var]
            return place(place_base, var, item.colour, initial_kind if kind is value_kind else kind, 1)
        if var in item.aliases:
            writer, syncvar = item.aliases[var]
            s = syncs.get((writer, syncvar))
            if s is not None and item.colour in transitions[s].dest:
                p = place(place_base, var, item.colour, kind)
                post[s].append((p, 1))
                producers[p].append((s, 1))
                delivered.add((s, item.colour))
                return p
        return place(place_base, var, item.colour, missing_kind)

    one = [(t, 1) for t in range(len(transitions))]
    for item in items:
        head = f"{item.colour}." if prefix else ""
        colour = item.colour
        producer_of, declared_kind = item.producer.get, item.declared.get
        received: dict[str, int] = {}   # a got variable -> the sync that delivers it here (`feed`'s third case)
        for var, key in item.aliases.items():
            s = syncs.get(key)
            if s is not None and colour in transitions[s].dest:
                received[var] = s
        received_from = received.get
        read: list[str] = []
        read_extend = read.extend
        once = 0
        for t in item.transitions:
            tr = transitions[t]
            tid = tr.id
            suffix = tid[2:] if tid.startswith("t.") else tid
            inputs = tr.inputs
            arcs_in = pre[t]
            if inputs:
                consumer = one[t]
                distinct = inputs if len(inputs) == 1 else dict.fromkeys(inputs)
                read_extend(distinct)
                for var in distinct:
                    base = f"p.{var}.{suffix}"
                    made = producer_of(var)
                    if made is not None:   # the common case, inline: a value computed in the item (`feed`'s first)
                        if base in ids:
                            base = fresh_id(ids, base)
                        else:
                            ids.add(base)
                        p = len(places)
                        places.append(Place(base, var, colour, value_kind, 0, t))
                        producers.append([one[made]])
                        consumers.append([consumer])
                        arc = (p, 1)
                        post[made].append(arc)
                        consumed[made] = 1
                        arcs_in.append(arc)
                        continue
                    initial_kind = declared_kind(var)
                    s = received_from(var) if initial_kind is None else None
                    if s is not None:   # inline too: a value delivered by a sync (`feed`'s third case)
                        if base in ids:
                            base = fresh_id(ids, base)
                        else:
                            ids.add(base)
                        p = len(places)
                        places.append(Place(base, var, colour, value_kind, 0, t))
                        producers.append([one[s]])
                        consumers.append([consumer])
                        arc = (p, 1)
                        post[s].append(arc)
                        delivered.add((s, colour))
                        arcs_in.append(arc)
                        continue
                    if initial_kind is not None:   # inline too: a declared variable (`feed`'s second case)
                        if base in ids:
                            base = fresh_id(ids, base)
                        else:
                            ids.add(base)
                        p = len(places)
                        places.append(Place(base, var, colour, initial_kind, 1, t))
                        producers.append([])
                        consumers.append([consumer])
                    else:
                        p = feed(item, var, base, value_kind)
                        places[p].consumer = t
                        consumers[p].append(consumer)
                    arcs_in.append((p, 1))
            else:
                once += 1
                p = place(f"p.once.{suffix}", tr.name, colour, PlaceKind.ONCE, 1)
                places[p].consumer = t
                arcs_in.append((p, 1))
                consumers[p].append((t, 1))
        if reads is not None:
            reads.append((read, once))
        for var in item.outputs:
            if var in item.syncvars:
                continue
            p = feed(item, var, f"p.{head}{var}.output", PlaceKind.OUTPUT)
            if places[p].kind is not missing_kind:
                places[p].kind = PlaceKind.OUTPUT
                net.final[p] = 1
    compute, sync = TransitionKind.COMPUTE, TransitionKind.SYNC
    for item in items:
        head = f"{item.colour}." if prefix else ""
        for t in item.transitions:
            tr = transitions[t]
            if tr.kind is compute and not consumed[t]:
                p = place(f"p.{head}{tr.name}.unused", tr.name, item.colour, PlaceKind.UNUSED)
                post[t].append((p, 1))
                producers[p].append((t, 1))
            elif tr.kind is sync:
                for reader in tr.dest:
                    if (t, reader) not in delivered:
                        p = place(f"p.{reader}.{tr.name}.unused", tr.inputs[0], reader, PlaceKind.UNUSED)
                        post[t].append((p, 1))
                        producers[p].append((t, 1))


# ---------------------------------------------------------------------- the paper's encoding
def _places_paper(net: Net, items: list[_Item], syncs: dict[tuple[str, str], int], prefix: bool) -> None:
    """One place per variable and colour; one token per consuming instruction (+1 for an output)."""
    alias_places: dict[tuple[str, str, str], int] = {}   # (reader, writer, sync var) -> place
    for item in items:
        head = f"{item.colour}." if prefix else ""
        readers: dict[str, list[int]] = {}
        for t in item.transitions:
            for var in dict.fromkeys(net.transitions[t].inputs):
                readers.setdefault(var, []).append(t)
        outputs = [v for v in item.outputs if v not in item.syncvars]
        demand = {var: len(ts) for var, ts in readers.items()}
        for var in outputs:
            demand[var] = demand.get(var, 0) + 1
        place_of: dict[str, int] = {}
        # variables in declaration/definition order: declared, computed, then received
        for var, kind in item.declared.items():
            place_of[var] = net.add_place(f"p.{head}{var}", var, item.colour, kind, demand.get(var, 0))
        for t in item.transitions:
            tr = net.transitions[t]
            if tr.kind is TransitionKind.COMPUTE:
                for var in tr.outputs:
                    p = net.add_place(f"p.{head}{var}", var, item.colour, PlaceKind.VALUE)
                    place_of[var] = p
                    if demand.get(var, 0):
                        net.arc_out(t, p, demand[var])
        for var, (writer, syncvar) in item.aliases.items():
            s = syncs.get((writer, syncvar))
            sent = net.transitions[s].inputs[0] if s is not None else var
            p = net.add_place(f"p.{head}{sent}", sent, item.colour, PlaceKind.VALUE)
            alias_places[(item.colour, writer, syncvar)] = p
            place_of[var] = p
            if s is None or item.colour not in net.transitions[s].dest:
                net.places[p].kind = PlaceKind.MISSING
        for var in readers:
            if var not in place_of:
                place_of[var] = net.add_place(f"p.{head}{var}", var, item.colour, PlaceKind.MISSING)
        for var, ts in readers.items():
            for t in ts:
                net.arc_in(place_of[var], t)
        for t in item.transitions:
            if not net.transitions[t].inputs:
                p = net.add_place(f"p.once.{_suffix(net, t)}", net.transitions[t].name, item.colour, PlaceKind.ONCE, 1)
                net.arc_in(p, t)
        for var in outputs:
            if var in place_of:
                net.final[place_of[var]] = 1
                if net.places[place_of[var]].kind is PlaceKind.VALUE:
                    net.places[place_of[var]].kind = PlaceKind.OUTPUT
        _demand_of_alias = {var: demand.get(var, 0) for var in item.aliases}
        for var, (writer, syncvar) in item.aliases.items():
            s = syncs.get((writer, syncvar))
            if s is not None and item.colour in net.transitions[s].dest and _demand_of_alias[var]:
                net.arc_out(s, alias_places[(item.colour, writer, syncvar)], _demand_of_alias[var])


def _paper_counts(net: Net, items: list[_Item], syncs: dict[tuple[str, str], int],
                  reads: list[tuple[list[str], int]] | None = None) -> dict[str, int]:
    """`Net.counts` of the net `_places_paper` would build on `net`'s transitions, counted, not built:
    the paper encoding's counts are reported for every description, its net is not needed.
    `reads`: each item's distinct inputs per instruction and instructions without input, as
    `_places_ours` collected them (else read here).

    Follows `_places_paper` step by step (tests/petri/test_petri_loader.py compares the two):
    a place per declared variable, per computed result, per received value, per variable read
    and defined nowhere, per instruction without inputs; its initial tokens are the declared
    variables' demands and the once places' token; the final marking one token on the place
    of each distinct output that has one."""
    transitions = net.transitions
    places = arcs = initial = final = 0
    compute = TransitionKind.COMPUTE
    for index, item in enumerate(items):
        if reads is not None:
            read, once = reads[index]
        else:
            read, once = [], 0   # each instruction's distinct inputs, counted in C by Counter
            for t in item.transitions:
                inputs = transitions[t].inputs
                if len(inputs) == 1:
                    read.append(inputs[0])
                elif inputs:
                    read.extend(dict.fromkeys(inputs))
                else:
                    once += 1
        readers = Counter(read)
        demand = dict(readers)
        outputs = [v for v in item.outputs if v not in item.syncvars]
        for var in outputs:
            demand[var] = demand.get(var, 0) + 1
        defined: set[str] = set(item.declared)
        places += len(item.declared) + len(item.aliases) + once
        initial += sum(demand.get(var, 0) for var in item.declared) + once
        arcs += sum(readers.values()) + once
        for t in item.transitions:
            tr = transitions[t]
            if tr.kind is compute:
                results = tr.outputs
                places += len(results)
                if len(results) == 1:
                    var = results[0]
                    defined.add(var)
                    if demand.get(var, 0):
                        arcs += 1
                else:
                    defined.update(results)
                    arcs += sum(1 for var in results if demand.get(var, 0))
        defined.update(item.aliases)
        places += sum(1 for var in readers if var not in defined)
        defined.update(readers)
        final += len(set(outputs) & defined)
        for var, (writer, syncvar) in item.aliases.items():
            s = syncs.get((writer, syncvar))
            if s is not None and item.colour in transitions[s].dest and demand.get(var, 0):
                arcs += 1
    return {
        "places": places,
        "transitions": len(transitions),
        "arcs": arcs,
        "initial_tokens": initial,
        "final_tokens": final,
        "colours": len(net.colours),
        "sync_transitions": sum(1 for t in transitions if t.kind is TransitionKind.SYNC),
    }

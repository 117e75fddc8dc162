"""A small place/transition net model with colours, as the translations build it.

A `Net` is a P/T net (places, transitions, weighted arcs, an initial and a final marking)
whose places and transitions carry a *colour*: the item they belong to. The coloured net
of Translation 2 is kept in this unfolded form (one P/T place per value and colour, or per
value and consumer in our encoding), because every analysis and every output (PNML, DOT)
works on P/T nets; `Place.variable` and `Place.colour` say which coloured place and which
token colour each P/T place stands for.

Indices, not objects, link the parts (`pre[t]`, `post[t]`, `producers[p]`, `consumers[p]`)
so that a 10,000-instruction net is a few flat lists and every analysis stays linear.
Identifiers are deterministic and unique XML NCNames (PNML needs `xsd:ID`): NNEF
identifiers cannot contain '.', so '.'-joined names never collide with a variable name.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Iterator

from pipeline.diagnostics import Span


class PlaceKind(str, enum.Enum):
    """What a place stands for; decides its initial and final tokens."""

    INPUT = "input"            # an `external` declaration: initially marked
    PARAMETER = "parameter"    # a `variable` declaration: initially marked
    CONSTANT = "constant"      # a `constant` declaration: initially marked
    ONCE = "once"              # marks an instruction without tensor inputs so that it fires once
    VALUE = "value"            # a computed value on its way to one consumer (or, paper encoding, to all)
    OUTPUT = "output"          # a graph output: one token in the final marking
    UNUSED = "unused"          # a value nobody consumes (a token left over: dead code, unread send)
    MISSING = "missing"        # a value that has no producer (its consumer can never fire)
    CONTROL = "control"        # added by the periodic (pipelining) and schedule nets


INITIAL_KINDS = frozenset({PlaceKind.INPUT, PlaceKind.PARAMETER, PlaceKind.CONSTANT, PlaceKind.ONCE})


class TransitionKind(str, enum.Enum):
    COMPUTE = "compute"   # an NNEF instruction computing something
    SYNC = "sync"         # a send_var (Translation 2), hidden for equivalence
    CONTROL = "control"   # start/end of an inference, a barrier, a schedule step


@dataclass(slots=True)
class Place:
    """A P/T place. `consumer` is the transition index it feeds in our encoding (None: any)."""

    id: str
    variable: str
    colour: str
    kind: PlaceKind
    initial: int = 0
    consumer: int | None = None


@dataclass(slots=True)
class Transition:
    """A P/T transition standing for an instruction (or a sync, or a control event).

    `name` is the instruction's first result (the sync variable for a sync); `inputs` the
    tensor variables it reads in argument order (local names); `signature` a canonical
    rendering of its operation, attributes and literal arguments, compared by equivalence.
    """

    id: str
    name: str
    op: str
    colour: str
    kind: TransitionKind
    inputs: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()
    signature: str = ""
    span: Span | None = None
    dest: tuple[str, ...] = ()  # sync: the reader items


@dataclass(frozen=True, slots=True)
class GetInfo:
    """A `y = get_var(W, v)` of item `item`: no transition, but schedules and traces name it."""

    item: str
    result: str
    var: str
    source: str
    span: Span | None = None


def fresh_id(ids: set[str], base: str) -> str:
    """`base`, or `base.2`, `base.3`... : the first not in `ids`, which it joins."""
    if base not in ids:
        ids.add(base)
        return base
    candidate, n = base, 1
    while candidate in ids:
        n += 1
        candidate = f"{base}.{n}"
    ids.add(candidate)
    return candidate


@dataclass
class Net:
    """A P/T net with colours, an initial marking (in the places) and a final marking."""

    name: str
    encoding: str
    places: list[Place] = field(default_factory=list)
    transitions: list[Transition] = field(default_factory=list)
    pre: list[list[tuple[int, int]]] = field(default_factory=list)        # per transition: (place, weight)
    post: list[list[tuple[int, int]]] = field(default_factory=list)       # per transition: (place, weight)
    producers: list[list[tuple[int, int]]] = field(default_factory=list)  # per place: (transition, weight)
    consumers: list[list[tuple[int, int]]] = field(default_factory=list)  # per place: (transition, weight)
    final: dict[int, int] = field(default_factory=dict)
    colours: list[str] = field(default_factory=list)
    gets: list[GetInfo] = field(default_factory=list)
    # per item, its instructions in program order: ("t", transition) or ("g", index into gets)
    program: dict[str, list[tuple[str, int]]] = field(default_factory=dict)
    # ids given so far; None for a net built in bulk from unique ids (rebuilt on the next unique_id)
    _ids: set[str] | None = field(default_factory=set, repr=False)
    # what an analysis derived from the net and kept for the next one (pipeline.petri.schedule.placed)
    memo: dict[Any, Any] = field(default_factory=dict, repr=False, compare=False)

    # ------------------------------------------------------------------ building
    def unique_id(self, base: str) -> str:
        """`base`, or `base.2`, `base.3`... : deterministic given the order of creation."""
        ids = self._ids
        if ids is None:
            ids = self._ids = {p.id for p in self.places} | {t.id for t in self.transitions}
        return fresh_id(ids, base)

    def add_place(self, base_id: str, variable: str, colour: str, kind: PlaceKind, initial: int = 0) -> int:
        places = self.places
        places.append(Place(self.unique_id(base_id), variable, colour, kind, initial))
        self.producers.append([])
        self.consumers.append([])
        return len(places) - 1

    def add_transition(self, base_id: str, name: str, op: str, colour: str, kind: TransitionKind,
                       inputs: tuple[str, ...] = (), outputs: tuple[str, ...] = (), signature: str = "",
                       span: Span | None = None, dest: tuple[str, ...] = ()) -> int:
        transitions = self.transitions
        transitions.append(Transition(self.unique_id(base_id), name, op, colour, kind, inputs, outputs, signature, span,
                                      dest))
        self.pre.append([])
        self.post.append([])
        return len(transitions) - 1

    def arc_in(self, place: int, transition: int, weight: int = 1) -> None:
        """An arc place -> transition (the transition consumes `weight` tokens)."""
        self.pre[transition].append((place, weight))
        self.consumers[place].append((transition, weight))

    def arc_out(self, transition: int, place: int, weight: int = 1) -> None:
        """An arc transition -> place (the transition produces `weight` tokens)."""
        self.post[transition].append((place, weight))
        self.producers[place].append((transition, weight))

    # ------------------------------------------------------------------ reading
    def initial_marking(self) -> dict[int, int]:
        return {i: p.initial for i, p in enumerate(self.places) if p.initial}

    def arcs(self) -> Iterator[tuple[str, str, int]]:
        """Every arc as (source id, target id, weight), in a deterministic order."""
        for t, transition in enumerate(self.transitions):
            for p, w in self.pre[t]:
                yield self.places[p].id, transition.id, w
            for p, w in self.post[t]:
                yield transition.id, self.places[p].id, w

    def counts(self) -> dict[str, int]:
        """The sizes the paper reports, plus arcs, colours and sync transitions."""
        sync = TransitionKind.SYNC   # (an enum member read as a class attribute is a lookup each time)
        return {
            "places": len(self.places),
            "transitions": len(self.transitions),
            "arcs": sum(len(a) for a in self.pre) + sum(len(a) for a in self.post),
            "initial_tokens": sum(p.initial for p in self.places),
            "final_tokens": sum(self.final.values()),
            "colours": len(self.colours),
            "sync_transitions": sum(1 for t in self.transitions if t.kind is sync),
        }

    def describe_transition(self, t: int) -> str:
        """`conv o2 (ITEM2, file:line:col)` for counterexamples."""
        tr = self.transitions[t]
        where = f", {tr.span}" if tr.span else ""
        colour = f"{tr.colour}" if len(self.colours) > 1 else ""
        sep = ", " if colour and where else ""
        inside = f"{colour}{sep}{where.lstrip(', ')}" if (colour or where) else ""
        if tr.kind is TransitionKind.SYNC:
            label = f"sync {tr.name} -> {', '.join(tr.dest)}"
        elif tr.kind is TransitionKind.CONTROL:
            label = tr.name
        else:
            label = f"{tr.op} {tr.name}"
        return f"{label} ({inside})" if inside else label

    def describe_place(self, p: int) -> str:
        place = self.places[p]
        colour = f" [{place.colour}]" if len(self.colours) > 1 else ""
        return f"{place.variable}{colour} ({place.id})"

    def marking_json(self, marking: dict[int, int]) -> dict[str, int]:
        """A marking keyed by place id (the PNML ids), for reports."""
        return {self.places[p].id: n for p, n in sorted(marking.items()) if n}

    def index_of_transition(self) -> dict[str, int]:
        return {t.id: i for i, t in enumerate(self.transitions)}

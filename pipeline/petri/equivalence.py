"""Equivalence of a split (coloured) net with its original net, decided structurally.

Claim (HLR-EXE-002): with the sync transitions hidden, the multi-item net has exactly the
valid paths of the original and computes the same final values.

Both nets are conflict-free marked graphs in our encoding, so their behaviours are the
linear extensions of their dependency orders (pipeline.petri.analysis). A sync transition
has exactly one input place; hiding it (contracting producer -> sync -> consumers into
producer -> consumers) is a projection that keeps the order between the other transitions
(a linear extension of the restricted order extends to one of the full order by placing
each sync right after its producer). So the valid paths are equal when, after
contraction, the two labelled dependency graphs are equal. We check, in one linear pass:

1. a bijection between the non-sync transitions, by instruction name (first result);
2. for each pair, the same operation, attributes and literal arguments;
3. for each argument, the same origin: the same producing instruction and result (through
   any chain of syncs), or the same declared input/parameter;
4. the same graph outputs (origins), and no value delivered to an item that never reads it.

(3) for every argument gives the same pre-sets, hence the same edges and order; with (2)
it also gives the same values, argument by argument. A failure names the first
difference: the instruction, its item and location, and both origins.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable

from pipeline.petri.net import INITIAL_KINDS, Net, PlaceKind, TransitionKind
from pipeline.petri.outcome import Outcome, failed, listed, passed
from pipeline.petri.translate import GraphSource, collect, places_ours

ANALYSIS = "equivalence"
Origin = tuple[str, ...]
# (an enum member read as a class attribute is a lookup each time: bound once for the per-object loops)
_SYNC, _COMPUTE, _ONCE, _OUTPUT, _UNUSED = (TransitionKind.SYNC, TransitionKind.COMPUTE, PlaceKind.ONCE, PlaceKind.OUTPUT,
                                            PlaceKind.UNUSED)


class _Origins:
    """Where the value in a place comes from, looking through sync transitions (memoised).

    The syncs passed (`of_place`'s second part, for counterexamples only) are not written
    while walking: each place on a chain of syncs remembers the next place of the chain, and
    the names are written when a counterexample asks for them."""

    def __init__(self, net: Net) -> None:
        self.net = net
        # place -> (origin, whether a sync produces it, the next place on its chain of syncs)
        self.memo: dict[int, tuple[Origin, bool, int | None]] = {}
        self.cycles: list[str] = []

    def of_place(self, p: int) -> tuple[Origin, tuple[str, ...]]:
        """(origin, syncs passed through) of the value in place p."""
        origin = self.origin(p)
        net, memo = self.net, self.memo
        via: list[str] = []
        q: int | None = p
        while q is not None:
            entry = memo.get(q)
            if entry is None or not entry[1]:
                break
            sync = net.transitions[net.producers[q][0][0]]
            via.append(f"{sync.name} ({sync.colour} -> {net.places[q].colour})")
            q = entry[2]
        return origin, tuple(via)

    def origin(self, p: int) -> Origin:
        """The origin of the value in place p."""
        net = self.net
        made = net.producers[p]
        if made:   # the common case first: a value computed by an instruction, no sync on the way (not memoised:
            tr = net.transitions[made[0][0]]   # each such place is asked once, by its one consumer)
            if tr.kind is not _SYNC:
                place = net.places[p]
                if place.kind not in INITIAL_KINDS:
                    outputs = tr.outputs
                    return ("value", tr.name, outputs[0] if len(outputs) == 1 or place.variable not in outputs
                            else place.variable)
        memo = self.memo
        known = memo.get(p)
        if known is not None:
            return known[0]
        trail: list[int] = []
        seen: set[int] = set()
        current = p
        end: int | None = None   # where the last place of the trail continues (a place already known)
        while True:
            if current in memo:
                origin, end = memo[current][0], current
                break
            place = net.places[current]
            if place.kind in INITIAL_KINDS:
                origin = ("declared", place.variable) if place.kind is not _ONCE else ("once",)
                break
            if not net.producers[current]:
                origin = ("missing", place.colour, place.variable)
                break
            u = net.producers[current][0][0]
            tr = net.transitions[u]
            if tr.kind is not _SYNC:
                origin = ("value", tr.name, place.variable if place.variable in tr.outputs else tr.outputs[0])
                break
            if current in seen:
                self.cycles.append(" -> ".join(net.transitions[net.producers[q][0][0]].id for q in trail))
                origin = ("cycle", tr.id)
                break
            seen.add(current)
            trail.append(current)
            if not net.pre[u]:
                origin = ("missing", tr.colour, tr.inputs[0] if tr.inputs else tr.name)
                break
            current = net.pre[u][0][0]
        # each place on the trail gets the origin, and the next place of its chain
        for q, after in zip(trail, trail[1:] + [end]):
            memo[q] = (origin, True, after)
        if p not in memo:
            memo[p] = (origin, False, None)
        return origin


def _argument_origins(net: Net, t: int, origins: _Origins) -> list[Origin]:
    """The origins `_arguments` gives (without the syncs passed), read inline for an instruction
    whose pre-set is one place per argument in argument order (one argument, or two distinct:
    nearly all), and from a value computed without a sync (`_Origins.of_place`'s first case)."""
    inputs, pre = net.transitions[t].inputs, net.pre[t]
    n = len(inputs)
    if n != len(pre) or not (n == 1 or (n == 2 and inputs[0] != inputs[1])):
        return [origin for origin, _ in _arguments(net, t, origins)]
    places, producers, transitions = net.places, net.producers, net.transitions
    found: list[Origin] = []
    for (p, _), var in zip(pre, inputs):
        place = places[p]
        if place.variable != var:
            return [origin for origin, _ in _arguments(net, t, origins)]
        made = producers[p]
        if made:
            tr = transitions[made[0][0]]
            if tr.kind is not _SYNC and place.kind not in INITIAL_KINDS:
                outputs = tr.outputs
                found.append(("value", tr.name, outputs[0] if len(outputs) == 1 or var not in outputs else var))
                continue
        found.append(origins.origin(p))
    return found


def _describe_origin(origin: Origin, via: tuple[str, ...], original: bool = False) -> str:
    if origin[0] == "declared":
        text = f"the declared tensor '{origin[1]}'"
    elif origin[0] == "value":
        text = f"'{origin[2]}' computed by instruction {origin[1]}"
    elif origin[0] == "missing":
        text = f"'{origin[2]}', which nothing produces in {origin[1]}"
    elif origin[0] == "once":
        text = "no tensor"
    else:
        text = f"a cycle of syncs through {origin[1]}"
    if via and not original:
        text += " delivered through sync " + ", ".join(via)
    return text


def _arguments(net: Net, t: int, origins: _Origins) -> list[tuple[Origin, tuple[str, ...]]]:
    pre, inputs = net.pre[t], net.transitions[t].inputs
    if len(pre) == 1 == len(inputs) and net.places[pre[0][0]].variable == inputs[0]:   # most instructions: no dict
        return [origins.of_place(pre[0][0])]
    place_of = {net.places[p].variable: p for p, _ in pre}
    return [origins.of_place(place_of[var]) for var in inputs if var in place_of]


def _visible(net: Net) -> dict[str, list[int]]:
    """The compute transitions by instruction name (in the order of their first transition)."""
    names: dict[str, list[int]] = {}
    for t, tr in enumerate(net.transitions):
        if tr.kind is _COMPUTE:
            known = names.get(tr.name)
            if known is None:
                names[tr.name] = [t]
            else:
                known.append(t)
    return names


@dataclass
class Original:
    """What the comparison reads of the original: its transitions (`net`, for their names,
    signatures and descriptions), the origins of each instruction's arguments, and the origins
    of its outputs in the order of its output places."""

    net: Net
    arguments: Callable[[int], list[Origin]]
    outputs: Callable[[], list[Origin]]   # asked after every argument (the memo's order, as before)

    @classmethod
    def of_net(cls, net: Net) -> "Original":
        """From the original's net in our encoding (its places' producers, through syncs)."""
        origins = _Origins(net)
        return cls(net, lambda u: _argument_origins(net, u, origins),
                   lambda: [origins.origin(p) for p, place in enumerate(net.places) if place.kind is _OUTPUT])


def original_of(source: GraphSource, name: str = "original") -> Original:
    """The original's side read from its graphs: without places when it is one graph without
    sync transitions (the common case: an exported description), else from its net.

    Without syncs, `_places_ours` gives each argument a place whose origin `_Origins` reads
    as: the value of the variable's (last) producing instruction; else its declaration; else
    nothing (a get without writer, an undefined name): missing. An output place: the value of
    its producer; a declared output has no producer (missing); one with neither is a
    `missing` place, not an output. The same origins are derived here from the instructions,
    without the places (tests/petri/test_petri_loader.py compares the two)."""
    collected = collect(source, "ours", name)
    if collected.syncs or len(collected.items) != 1:
        return Original.of_net(places_ours(collected))
    net, item = collected.net, collected.items[0]
    transitions, colour = net.transitions, item.colour
    known: dict[str, Origin] = {var: ("declared", var) for var in item.declared}
    for var, t in item.producer.items():
        known[var] = ("value", transitions[t].name, var)

    def arguments(u: int) -> list[Origin]:
        return [known.get(var) or ("missing", colour, var) for var in transitions[u].inputs]

    outputs = [known[var] if var in item.producer else ("missing", colour, var)
               for var in item.outputs if var not in item.syncvars and (var in item.producer or var in item.declared)]
    net._ids = None
    return Original(net, arguments, lambda: outputs)


def check_equivalence(split: Net, original: Net | Original) -> Outcome:
    """Pass when the split net, syncs hidden, has the original's labelled dependency graph (module doc).

    `original` is the original's net in our encoding, or what `original_of` read of it."""
    reference = original if isinstance(original, Original) else Original.of_net(original)
    original = reference.net
    differences: list[dict[str, Any]] = []

    def differ(code: str, message: str, **where: Any) -> None:
        differences.append({"code": code, "message": message, **where})

    ours, theirs = _visible(split), _visible(original)
    # a dict of `visible` lists names in the order of their first transition: no sort needed
    for name in [n for n in theirs if n not in ours]:
        differ("PETRI-E110", f"instruction {original.describe_transition(theirs[name][0])} of the original is in no item",
               instruction=name)
    for name in [n for n in ours if n not in theirs]:
        differ("PETRI-E110", f"instruction {split.describe_transition(ours[name][0])} of the split is not in the original",
               instruction=name)
    for name, ts in ours.items():
        if len(ts) > 1:
            differ("PETRI-E110", f"instruction {name} is computed {len(ts)} times in the split: "
                   + "; ".join(split.describe_transition(t) for t in ts), instruction=name)
    split_origins, original_arguments = _Origins(split), reference.arguments
    compared = edges = 0
    for name, us in theirs.items():
        mine_ts = ours.get(name)
        if mine_ts is None:
            continue
        t, u = mine_ts[0], us[0]
        compared += 1
        mine, ref = split.transitions[t], original.transitions[u]
        if mine.signature != ref.signature:
            differ("PETRI-E111", f"{split.describe_transition(t)} differs from the original's "
                   f"{original.describe_transition(u)}: {mine.signature} vs {ref.signature}", instruction=name)
            continue
        ref_args = original_arguments(u)
        edges += len(ref_args)
        if _argument_origins(split, t, split_origins) == ref_args:
            continue
        for index, ((origin, via), ref_origin) in enumerate(zip(_arguments(split, t, split_origins), ref_args)):
            if origin != ref_origin:
                differ("PETRI-E112", f"argument {index + 1} of {split.describe_transition(t)} is "
                       f"{_describe_origin(origin, via)}; in the original it is {_describe_origin(ref_origin, (), True)}",
                       instruction=name, argument=index + 1)
                break
    if split_origins.cycles:
        differ("PETRI-E114", f"sync transitions forward each other in a cycle: {split_origins.cycles[0]}")

    out_split = Counter(split_origins.origin(p) for p, place in enumerate(split.places)
                        if place.kind is _OUTPUT)
    out_orig = Counter(reference.outputs())
    if out_split != out_orig:
        extra, lacking = out_split - out_orig, out_orig - out_split
        parts = [f"the split also outputs {_describe_origin(o, ())}" for o in extra] + \
                [f"the split does not output {_describe_origin(o, (), True)}" for o in lacking]
        differ("PETRI-E113", "outputs differ: " + "; ".join(parts))
    unread = [p for p, place in enumerate(split.places) if place.kind is _UNUSED
              and split.producers[p] and split.transitions[split.producers[p][0][0]].kind is _SYNC]
    for p in unread:
        place = split.places[p]
        sync = split.transitions[split.producers[p][0][0]]
        differ("PETRI-E113", f"{sync.colour} sends '{place.variable}' as {sync.name} to {place.colour}, "
               "which never reads it (a value the original does not deliver)")
    syncs = sum(1 for t in split.transitions if t.kind is _SYNC)
    measured = {"instructions_original": sum(len(v) for v in theirs.values()),
                "instructions_split": sum(len(v) for v in ours.values()),
                "instructions_compared": compared, "arguments_compared": edges, "sync_transitions_hidden": syncs}
    if differences:
        first = differences[0]
        more = f" (and {len(differences) - 1} more)" if len(differences) > 1 else ""
        return failed(ANALYSIS, first["code"], first["message"] + more,
                      {"differences": listed(differences), "difference_count": len(differences)}, **measured)
    return passed(ANALYSIS, **measured)


def equivalence_not_applicable(reason: str) -> Outcome:
    """`not run` with the reason (e.g. no original description given)."""
    return Outcome(ANALYSIS, "not run", reason)

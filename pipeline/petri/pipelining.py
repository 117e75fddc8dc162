"""Periodic inference with a pipeline depth: the paper's remark, as a bounded live marked graph.

A deployment may run up to d inferences at once (plan.json "pipeline_depth"; 1 = none).
The one-shot net then recycles its tokens: a `start` transition re-marks the inputs and
parameters of a new inference, an `end` transition takes the outputs, and a place
`inflight` (end -> start) holding d tokens lets at most d inferences be in flight. A slot
place per transition (t -> t, one token) keeps instruction k of inference i + 1 from
overtaking instruction k of inference i: each instruction's code runs one inference at a
time, and, every place having one producer and one consumer (FIFO), the k-th firing of a
consumer takes the k-th value of each producer, so inferences never mix.

The result is a marked graph, so pipeline.petri.markedgraph decides it: live (no deadlock
for depth d) iff every cycle carries a token, and each place's bound is the minimum token
count of the cycles through it. For a well-formed description every value place is
bounded by d (the start -> ... -> end -> inflight cycle), every slot by 1.

When the items' schedules are known, a second periodic net models the code itself: each
item loops over its steps (a program-counter cycle with one token), a get waits for its
send (a buffer place), and a credit place with d tokens (get -> send) stops a writer from
running more than d inferences ahead of a reader. Its liveness is the one-shot schedule's
deadlock-freedom; its bounds are the buffers each sync variable needs at depth d.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain
from operator import attrgetter
from typing import Any, Iterator

import numpy as np

from pipeline.petri.analysis import FIRING_ORDER
from pipeline.petri.markedgraph import INFINITE, MarkedArcs, MarkedGraphResult, analyse_arcs
from pipeline.petri.net import INITIAL_KINDS, Net, fresh_id, Place, PlaceKind, Transition, TransitionKind
from pipeline.petri.outcome import Outcome, failed, listed, passed
from pipeline.petri.schedule import STEP_ORDER, Schedule

ANALYSIS = "pipeline"


def periodic_net(net: Net, depth: int) -> Net:
    """The one-shot net with start/end of inference, `inflight` (depth tokens) and slot places.

    Built as flat lists, not through `Net.add_*`: at 100,000 operations this net has a
    million places, and per-element method calls and id checks were a third of the
    pipeline check. The ids are those of `net` (unique) plus `ctl.*` and `slot.<id>`,
    which no translation id starts with; the transitions are shared, not copied.
    """
    n_t = len(net.transitions)
    start, end = n_t, n_t + 1
    transitions = list(net.transitions)
    transitions.append(Transition("ctl.start", "start", "start", "control", TransitionKind.CONTROL))
    transitions.append(Transition("ctl.end", "end", "end", "control", TransitionKind.CONTROL))
    places = [Place(place.id, place.variable, place.colour, place.kind, 0, place.consumer) for place in net.places]
    producers: list[list[tuple[int, int]]] = [[] for _ in places]
    consumers: list[list[tuple[int, int]]] = [[] for _ in places]
    start_post: list[tuple[int, int]] = []
    end_pre: list[tuple[int, int]] = []
    output = PlaceKind.OUTPUT
    for q, place in enumerate(places):
        if place.kind in INITIAL_KINDS:
            start_post.append((q, 1))
            producers[q].append((start, 1))
        if place.kind is output:
            end_pre.append((q, 1))
            consumers[q].append((end, 1))
    pre = [list(arcs) for arcs in net.pre]
    post = [list(arcs) for arcs in net.post]
    control = PlaceKind.CONTROL
    slot = len(places)
    for t, tr in enumerate(net.transitions):
        for p, w in pre[t]:
            consumers[p].append((t, w))
        for p, w in post[t]:
            producers[p].append((t, w))
        places.append(Place(f"slot.{tr.id}", tr.name, tr.colour, control, 1))
        arc = [(t, 1)]
        producers.append(arc)
        consumers.append(list(arc))
        post[t].append((slot, 1))
        pre[t].append((slot, 1))
        slot += 1
    inflight = len(places)
    places.append(Place("ctl.inflight", "inflight", "control", control, depth))
    producers.append([(end, 1)])
    consumers.append([(start, 1)])
    pre += [[(inflight, 1)], end_pre]
    post += [start_post, [(inflight, 1)]]
    return Net(f"{net.name}.periodic", "periodic", places, transitions, pre, post, producers, consumers,
               colours=list(net.colours), _ids=None)


def schedule_net(schedule: Schedule, depth: int) -> Net:
    """The items' code as a marked graph: program-counter loops, buffers (send -> get), credits (get -> send).

    Built as flat lists (as `periodic_net`), with the ids `Net.unique_id` gives.
    """
    out = Net("schedule.periodic", "periodic", colours=list(schedule.items))
    uid = out.unique_id
    transitions, places = out.transitions, out.places
    pre, post, producers, consumers = out.pre, out.post, out.producers, out.consumers
    control, value, control_place = TransitionKind.CONTROL, PlaceKind.VALUE, PlaceKind.CONTROL
    node: dict[str, list[int]] = {}
    barriers: dict[int, int] = {}
    for item, steps in schedule.items.items():
        nodes = node[item] = []
        for k, step in enumerate(steps):
            if step.kind == "barrier":
                if step.barrier not in barriers:
                    barriers[step.barrier] = len(transitions)
                    transitions.append(Transition(uid(f"barrier.{step.barrier}"), f"barrier {step.barrier}", "barrier",
                                                  "control", control))
                    pre.append([])
                    post.append([])
                nodes.append(barriers[step.barrier])
            else:
                nodes.append(len(transitions))
                transitions.append(Transition(uid(f"s.{item}.{k}"), step.describe(), step.kind, item, control))
                pre.append([])
                post.append([])
    for item, nodes in node.items():
        # the place after step k: step k -> step k + 1 (the last one back to step 0, with the token)
        for k, (a, b) in enumerate(zip(nodes, nodes[1:] + nodes[:1])):
            p = len(places)
            places.append(Place(uid(f"pc.{item}.{k}"), f"{item} after step {k}", item, control_place,
                                1 if k == len(nodes) - 1 else 0))
            producers.append([(a, 1)])
            consumers.append([(b, 1)])
            post[a].append((p, 1))
            pre[b].append((p, 1))
    for item, step, send, get in _exchanges(schedule, node):
        p = len(places)
        places.append(Place(uid(f"buffer.{step.var}.{item}"), f"{step.var} for {item}", item, value))
        places.append(Place(uid(f"credit.{step.var}.{item}"), f"free {step.var} buffers for {item}", item,
                            control_place, depth))
        producers += [[(send, 1)], [(get, 1)]]
        consumers += [[(get, 1)], [(send, 1)]]
        post[send].append((p, 1))
        pre[get].append((p, 1))
        post[get].append((p + 1, 1))
        pre[send].append((p + 1, 1))
    return out


def _exchanges(schedule: Schedule, node: dict[str, list[int]]) -> Iterator[tuple[str, Any, int, int]]:
    """(item, get step, send's transition, get's transition) of each get whose send is scheduled, in
    schedule order: the buffers of `schedule_net` and `schedule_arcs`, which must list them alike."""
    sends = {item: {s.var: k for k, s in enumerate(steps) if s.kind == "send"} for item, steps in schedule.items.items()}
    for item, steps in schedule.items.items():
        mine = node[item]
        for k, step in enumerate(steps):
            if step.kind == "get":
                at = sends.get(step.source, {}).get(step.var)
                if at is not None:
                    yield item, step, node[step.source][at], mine[k]


def _first_arcs(per_transition: list[list[tuple[int, int]]], n_places: int, extra: np.ndarray, extra_t: int
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per place: first transition, count and unit weight of the arcs `per_transition` lists (in
    transition order), with a leading arc from `extra_t` where `extra` is set."""
    lengths = np.fromiter(map(len, per_transition), np.int64, len(per_transition))
    flat = np.fromiter(chain.from_iterable(chain.from_iterable(per_transition)), np.int64, 2 * int(lengths.sum()))
    place, weight = flat[0::2], flat[1::2]   # (place, weight) pairs, read without a Python loop
    transition = np.repeat(np.arange(len(per_transition), dtype=np.int64), lengths)
    first = np.full(n_places, -1, np.int64)
    first_weight = np.ones(n_places, np.int64)
    seen, at = np.unique(place, return_index=True)
    first[seen] = transition[at]
    first_weight[seen] = weight[at]
    first[extra] = extra_t
    first_weight[extra] = 1
    count = np.bincount(place, minlength=n_places)[:n_places] + extra
    return first, count, (count != 1) | (first_weight == 1)


_KIND_CODE = {kind: code for code, kind in enumerate(PlaceKind)}


def _kinds(net: Net) -> np.ndarray:
    """Each place's kind as a small integer (`_KIND_CODE`), read without a Python loop."""
    return np.fromiter(map(_KIND_CODE.__getitem__, map(attrgetter("kind"), net.places)), np.int8, len(net.places))


def periodic_arcs(net: Net, depth: int) -> MarkedArcs:
    """The arrays of `periodic_net(net, depth)` (same place and transition indices), without its places.

    The analysis needs no place object: at 100,000 operations building the periodic net
    and reading it back into arrays was half of the pipeline check. `periodic_net` itself
    is built only to describe a problem.
    """
    n_p, n_t = len(net.places), len(net.transitions)
    start, end = n_t, n_t + 1
    kinds = _kinds(net)
    initial = np.isin(kinds, [_KIND_CODE[kind] for kind in INITIAL_KINDS])
    output = kinds == _KIND_CODE[PlaceKind.OUTPUT]
    producer, producers, unit_in = _first_arcs(net.post, n_p, initial, start)
    consumer, consumers, unit_out = _first_arcs(net.pre, n_p, output, end)
    slots = np.arange(n_t, dtype=np.int64)
    ones = np.ones(n_t + 1, np.int64)
    fired = net.memo.get(FIRING_ORDER)
    order = np.concatenate([[start], np.asarray(fired, np.int64), [end]]) if fired is not None else None
    return MarkedArcs(n_t + 2, np.concatenate([producer, slots, [end]]), np.concatenate([consumer, slots, [start]]),
                      np.concatenate([producers, ones]), np.concatenate([consumers, ones]),
                      np.concatenate([unit_in & unit_out, np.ones(n_t + 1, bool)]),
                      np.concatenate([np.zeros(n_p, np.int64), ones[:-1], [depth]]), order)


@dataclass
class ScheduleArcs:
    """The arrays of `schedule_net(schedule, depth)`, with the indices and ids of its buffer places."""

    arcs: MarkedArcs
    buffers: list[int]
    buffer_ids: list[str]


def schedule_arcs(schedule: Schedule, depth: int, done: np.ndarray | None = None) -> ScheduleArcs:
    """`schedule_net` as arrays (same indices), without transition or place objects.

    `done`: the steps in an order they can complete (`schedule.simulate`'s), handed to the
    analysis as the order of the transitions (a hint, checked there).

    Ids are needed for the buffers only (the report lists each one's bound); `buffer.` and
    `credit.` ids can only collide among themselves, so a set of those gives what
    `Net.unique_id` gives in `schedule_net`.
    """
    node: dict[str, list[int]] = {}
    barriers: dict[int, int] = {}
    n_t = 0
    for item, steps in schedule.items.items():
        if not any(step.kind == "barrier" for step in steps):
            node[item] = list(range(n_t, n_t + len(steps)))
            n_t += len(steps)
            continue
        nodes = node[item] = []
        for step in steps:
            if step.kind == "barrier":
                t = barriers.get(step.barrier)
                if t is None:
                    t = barriers[step.barrier] = n_t
                    n_t += 1
                nodes.append(t)
            else:
                nodes.append(n_t)
                n_t += 1
    src: list[int] = []
    dst: list[int] = []
    tokens: list[int] = []
    cycles: list[tuple[int, int]] = []   # the program-counter loops, for the analysis (a checked hint)
    for nodes in node.values():
        if nodes:
            cycles.append((len(src), len(nodes)))
            src += nodes
            dst += nodes[1:] + nodes[:1]
            tokens += [0] * (len(nodes) - 1) + [1]
    buffers: list[int] = []
    bases: list[str] = []   # buffer and credit, alternately
    for item, step, send, get in _exchanges(schedule, node):
        buffers.append(len(src))
        bases += [f"buffer.{step.var}.{item}", f"credit.{step.var}.{item}"]
        src += [send, get]
        dst += [get, send]
        tokens += [0, depth]
    if len(set(bases)) == len(bases):
        buffer_ids = bases[0::2]   # no base repeats: each is its own id
    else:
        ids: set[str] = set()
        buffer_ids = [fresh_id(ids, base) for base in bases][0::2]
    n_p = len(src)
    ones = np.ones(n_p, np.int64)
    order = None
    steps = sum(map(len, node.values()))
    if done is not None and len(done) and done.min() >= 0 and done.max() < steps:
        order = np.fromiter(chain.from_iterable(node.values()), np.int64, steps)[done]
    return ScheduleArcs(MarkedArcs(n_t, np.asarray(src, np.int64), np.asarray(dst, np.int64), ones, ones.copy(),
                                   np.ones(n_p, bool), np.asarray(tokens, np.int64), order, cycles), buffers, buffer_ids)


def _suspect(arcs: MarkedArcs, result: MarkedGraphResult) -> bool:
    """Whether `_verdict` finds a problem (then the net is built to describe it)."""
    return bool(result.empty_cycle) or bool(np.isinf(result.values).any()) \
        or bool((arcs.producers[result.not_marked_graph] == 0).any())


def _verdict(net: Net, result: MarkedGraphResult, what: str) -> tuple[str, str, dict[str, Any]] | None:
    """(code, reason, counterexample) of the first problem, None when live and bounded."""
    missing = [p for p in result.not_marked_graph if not net.producers[p]]
    if missing:
        names = [net.describe_place(p) for p in missing]
        return ("PETRI-E140", f"{what}: {names[0]} is never marked, so its consumer never fires",
                {"never_marked": listed(names)})
    if result.empty_cycle:
        cycle = [net.describe_transition(t) for t in result.empty_cycle]
        return ("PETRI-E140", f"{what} is not live: the cycle {' -> '.join(cycle + cycle[:1])} carries no token",
                {"token_free_cycle": cycle})
    unbounded = [p for p, b in result.bounds.items() if b == INFINITE]
    unbounded += [p for p in result.not_marked_graph if net.producers[p] and not net.consumers[p] and p not in unbounded]
    if unbounded:
        names = [net.describe_place(p) for p in sorted(set(unbounded))]
        return ("PETRI-E141", f"{what} is unbounded: {names[0]} is on no cycle and gains a token every inference",
                {"unbounded": listed(names), "unbounded_count": len(names)})
    return None


def check_pipeline(net: Net, depth: int, schedule: Schedule | None = None) -> Outcome:
    """Pass when the periodic net (and the periodic schedule net) is live and bounded for `depth`."""
    arcs = periodic_arcs(net, depth)
    result = analyse_arcs(arcs)
    measured: dict[str, Any] = {"pipeline_depth": depth}
    what = f"the periodic net at depth {depth}"
    problem = _verdict(periodic_net(net, depth), result, what) if _suspect(arcs, result) else None
    value = np.zeros(len(arcs.tokens), bool)
    value[:len(net.places)] = _kinds(net) != _KIND_CODE[PlaceKind.CONTROL]
    value_bounds = result.values[value & ~np.isnan(result.values) & ~np.isinf(result.values)]
    measured["value_place_bound"] = int(value_bounds.max()) if len(value_bounds) else 0
    measured["places"] = len(arcs.tokens)
    del arcs, result   # the schedule net is as large: do not hold both
    if problem is None and schedule is not None:
        simulated = net.memo.get((STEP_ORDER, id(schedule)))
        loops = schedule_arcs(schedule, depth, simulated[1] if simulated and simulated[0] is schedule else None)
        code_result = analyse_arcs(loops.arcs, loops.buffers)
        if _suspect(loops.arcs, code_result):
            problem = _verdict(schedule_net(schedule, depth), code_result,
                               f"the items' schedules run periodically at depth {depth}")
        bounds = code_result.values
        buffers = {name: int(b) for b, name in zip(bounds[loops.buffers].tolist(), loops.buffer_ids) if b != INFINITE}
        measured["sync_buffers"] = dict(sorted(buffers.items()))
        measured["sync_buffer_bound"] = max(buffers.values()) if buffers else 0
    if problem is not None:
        code, reason, cex = problem
        return failed(ANALYSIS, code, reason, cex, **measured)
    return passed(ANALYSIS, **measured)

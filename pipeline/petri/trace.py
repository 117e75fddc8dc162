"""Trace replay: is an observed execution a valid path of the net, under the schedule?

A trace is what the items' code logs while it runs: per item, in the order the item
observed them, start and end events of its schedule steps. No shared clock is needed:

    {"schema_version": 1,
     "clock": "per-item",                       # or "shared": every "t" on one time base
     "items": {"ITEM1": [{"event": "start", "step": 0, "t": 1200},
                         {"event": "end",   "step": 0, "t": 9800}, ...], ...}}

`step` indexes the item's schedule (schedule.json, or its program order); `t` (optional,
integer nanoseconds of the item's monotonic clock) must not decrease along an item's
list; `inference` (optional, default 0) numbers the inference of a pipelined run.

`replay` decides, in time linear in the number of events:

1. per item (its list is a total order): every step of every inference starts once and
   ends once, after it started; steps start in schedule order, and step k of inference
   i + 1 only after step k of inference i ended (PETRI-E130);
2. per item: a step starts only after the local steps producing its inputs ended: a
   consumer never starts before its producer ended (PETRI-E131);
3. between items, the only causality is the communication: a get cannot end before the
   matching send started, and no item leaves barrier b before every item reached it.
   The per-item logs are a valid execution iff some global order extends every item's
   order and these constraints, i.e. iff the graph of events (item chains + those edges)
   is acyclic; with a shared clock the timestamps must order each edge. A failure names
   the violated constraint and the events on the cycle (PETRI-E132).

Together with the schedule check (each schedule is a valid path of the coloured net),
this makes the observed execution a valid path of the net.
"""

from __future__ import annotations

import os
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from pipeline.petri.documents import read_json
from pipeline.petri.net import Net
from pipeline.petri.outcome import Outcome, failed, listed, passed
from pipeline.petri.schedule import Schedule, Step, placed
from pipeline.files.schema import require

ANALYSIS = "trace"
CLOCKS = ("per-item", "shared")


@dataclass(frozen=True, slots=True)
class Event:
    event: str        # "start" | "end"
    step: int
    inference: int = 0
    t: int | None = None


@dataclass
class Trace:
    items: dict[str, list[Event]]
    clock: str = "per-item"
    source: str = ""

    def to_json(self) -> dict[str, Any]:
        def one(e: Event) -> dict[str, Any]:
            data: dict[str, Any] = {"event": e.event, "step": e.step}
            if e.inference:
                data["inference"] = e.inference
            if e.t is not None:
                data["t"] = e.t
            return data
        return {"schema_version": 1, "clock": self.clock,
                "items": {item: [one(e) for e in events] for item, events in self.items.items()}}


def parse_trace(doc: Any, file: str = "trace.json") -> Trace:
    """A trace from its JSON document; PETRI-E012 with the JSON path on any schema problem."""
    data = require(doc, "trace-1", "PETRI-E012", file)
    items = {item: [Event(e["event"], e["step"], e.get("inference", 0), e.get("t")) for e in events]
             for item, events in data["items"].items()}
    return Trace(items, data.get("clock", "per-item"), file)


def load_trace(path: str | os.PathLike[str]) -> Trace:
    return parse_trace(read_json(path), str(path))


@dataclass
class _Graph:
    """Events as nodes (per-item positions, plus one virtual node per barrier and inference)."""

    # a node's label, or what makes it: written out only for the few a failure names
    label: list[str | tuple[str, int, Event, Step]] = field(default_factory=list)
    succ: list[list[tuple[int, str]]] = field(default_factory=list)

    def add(self, label: str | tuple[str, int, Event, Step]) -> int:
        self.label.append(label)
        self.succ.append([])
        return len(self.label) - 1

    def edge(self, a: int, b: int, why: str) -> None:
        self.succ[a].append((b, why))

    def text(self, n: int) -> str:
        label = self.label[n]
        if isinstance(label, str):
            return label
        item, pos, e, step = label
        return f"{item} event {pos} ({e.event} {step.describe()}" + (f", inference {e.inference}" if e.inference else "") + ")"


@dataclass(frozen=True, slots=True)
class _EventLabel:
    """`ITEM1 event 3 (start step 1: conv y, inference 1)`, written out only when a problem names it."""

    item: str
    pos: int
    e: Event
    steps: list[Step]

    def __str__(self) -> str:
        e = self.e
        return (f"{self.item} event {self.pos} ({e.event} step {e.step}: {self.steps[e.step].describe()}"
                + (f", inference {e.inference}" if e.inference else "") + ")")


def _cycle(graph: _Graph, alive: list[bool]) -> list[tuple[int, str]]:
    """One cycle among the nodes Kahn could not remove: [(node, why the next edge holds)...]."""
    pred: list[list[tuple[int, str]]] = [[] for _ in graph.label]
    for a, edges in enumerate(graph.succ):
        if alive[a]:
            for b, why in edges:
                if alive[b]:
                    pred[b].append((a, why))
    start = next(i for i, a in enumerate(alive) if a)
    walk: list[tuple[int, str]] = []
    position: dict[int, int] = {}
    current = start
    while current not in position:
        position[current] = len(walk)
        previous, why = pred[current][0]
        walk.append((current, why))
        current = previous
    loop = walk[position[current]:]
    loop.reverse()
    # loop[i] = (node, why) where `why` justified the edge previous -> node; rotate to edges node -> next
    nodes = [n for n, _ in loop]
    whys = [w for _, w in loop]
    return [(nodes[i], whys[(i + 1) % len(nodes)]) for i in range(len(nodes))]


def _explained(trace: Trace, schedule: Schedule, marks: dict[tuple[str, int], tuple[list[int], list[int]]],
               ordered: list[int]) -> bool:
    """Per-item clocks: whether the item chains and the get-after-send edges are acyclic (some global
    order explains the logs), by Kahn's algorithm with the chains kept implicit: one program counter
    per item, a node waiting only for its cross-item edges. False also when the schedule has
    barriers (the full event graph of `replay` decides and describes those)."""
    offset: dict[str, int] = {}
    n = 0
    for item, item_events in trace.items.items():
        offset[item] = n
        n += len(item_events)
    sends = {(item, s.var): k for item, steps in schedule.items.items() for k, s in enumerate(steps) if s.kind == "send"}
    need = [0] * n
    succ: dict[int, list[int]] = {}
    for item, steps in schedule.items.items():
        base = offset[item]
        for k, step in enumerate(steps):
            kind = step.kind
            if kind == "barrier":
                return False
            if kind != "get":
                continue
            send = sends.get((step.source, step.var))
            if send is None:
                continue
            source = offset[step.source]
            for inference in ordered:
                src = source + marks[(step.source, inference)][0][send]
                dst = base + marks[(item, inference)][1][k]
                succ.setdefault(src, []).append(dst)
                need[dst] += 1
    end = {item: offset[item] + len(item_events) for item, item_events in trace.items.items()}
    pc = dict(offset)
    waiting: dict[int, str] = {}
    work = list(trace.items)
    while work:
        item = work.pop()
        node, stop = pc[item], end[item]
        while node < stop:
            if need[node]:
                waiting[node] = item
                break
            for b in succ.get(node, ()):
                need[b] -= 1
                if not need[b] and b in waiting:
                    work.append(waiting.pop(b))
            node += 1
        pc[item] = node
    return pc == end


Problem = dict[str, Any]
Marks = dict[tuple[str, int], tuple[list[int], list[int]]]   # (item, inference) -> per step: start, end event


def _problem(code: str, message: str, **where: Any) -> Problem:
    return {"code": code, "message": message, **where}


def _failed(problems: list[Problem], measured: dict[str, Any]) -> Outcome:
    return failed(ANALYSIS, problems[0]["code"], problems[0]["message"], {"problems": listed(problems)}, **measured)


def _missing_items(schedule: Schedule, trace: Trace) -> list[Problem]:
    """Items of the schedule without events, and events of items without a schedule."""
    return ([_problem("PETRI-E130", f"the trace has no events for item {item}", item=item)
             for item in schedule.items if item not in trace.items]
            + [_problem("PETRI-E130", f"the trace has events for item {item}, which has no schedule", item=item)
               for item in trace.items if item not in schedule.items])


def _marks_of(marks: Marks, steps: list[Step], item: str, inference: int) -> tuple[list[int], list[int]]:
    """The (start, end) positions of `item`'s steps in its list for `inference` (-1: not logged yet)."""
    found = marks.get((item, inference))
    if found is None:
        n = len(steps)
        found = marks[(item, inference)] = ([-1] * n, [-1] * n)
    return found


def _replay_item(item: str, item_events: list[Event], steps: list[Step], per_item: list[list[tuple[int, str]]],
                 marks: Marks, inferences: set[int]) -> Problem | None:
    """1-2 for one item (its list is a total order): the first problem, or None; fills `marks`. The schema
    makes steps >= 0 and events start or end."""
    next_start: dict[int, int] = {}
    last_t: int | None = None
    current: int | None = None   # the inference whose marks are at hand (events come in runs of one)
    for pos, e in enumerate(item_events):
        step = e.step
        if not 0 <= step < len(steps) or e.event not in ("start", "end"):
            what = f"{len(steps)} steps" if e.event in ("start", "end") else "steps that start and end"
            return _problem("PETRI-E130", f"{item} event {pos} ({e.event} step {e.step}): {item}'s schedule has "
                            f"{what}", item=item, event=pos)
        if e.t is not None:
            if last_t is not None and e.t < last_t:
                return _problem("PETRI-E130", f"{_EventLabel(item, pos, e, steps)}: its time {e.t} is before the "
                                f"previous event's {last_t}", item=item, event=pos)
            last_t = e.t
        if e.inference != current:
            current = e.inference
            started, ended = _marks_of(marks, steps, item, current)
        start = e.event == "start"
        first = (started if start else ended)[step]
        if first >= 0:
            return _problem("PETRI-E130", f"{_EventLabel(item, pos, e, steps)}: repeated (first at event {first})",
                            item=item, event=pos)
        if start:
            for producer, variable in per_item[step]:
                if ended[producer] < 0:
                    return _problem("PETRI-E131", f"{_EventLabel(item, pos, e, steps)} started before its producer "
                                    f"step {producer} ({steps[producer].describe()}, which produces {variable}) ended",
                                    item=item, event=pos, producer_step=producer)
            expected = next_start.get(e.inference, 0)
            if step != expected:
                return _problem("PETRI-E130", f"{_EventLabel(item, pos, e, steps)} started out of schedule order: the "
                                f"next step to start is {expected} "
                                f"({steps[expected].describe() if expected < len(steps) else 'none'})",
                                item=item, event=pos)
            if e.inference and _marks_of(marks, steps, item, e.inference - 1)[1][step] < 0:
                return _problem("PETRI-E130", f"{_EventLabel(item, pos, e, steps)} started before the same step of "
                                f"inference {e.inference - 1} ended", item=item, event=pos)
            next_start[e.inference] = expected + 1
            started[step] = pos
        else:
            if started[step] < 0:
                return _problem("PETRI-E130", f"{_EventLabel(item, pos, e, steps)} ended before it started",
                                item=item, event=pos)
            ended[step] = pos
    for inference in sorted(inferences):
        ended = _marks_of(marks, steps, item, inference)[1]
        if -1 in ended:
            step = ended.index(-1)
            return _problem("PETRI-E130", f"{item} step {step} ({steps[step].describe()}) of inference {inference} "
                            "never ended in the trace", item=item)
    return None


def _event_graph(trace: Trace, schedule: Schedule, marks: Marks, ordered: list[int]) -> tuple[_Graph, dict[str, int]]:
    """3: the events of every item as consecutive nodes (from offset[item]) chained in logged order, a
    get-after-send edge per get and inference, and a virtual node per barrier and inference."""
    graph = _Graph()
    offset: dict[str, int] = {}
    for item, item_events in trace.items.items():
        steps = schedule.items[item]
        base = offset[item] = len(graph.label)
        graph.label.extend((item, pos, e, steps[e.step]) for pos, e in enumerate(item_events))
        why = f"{item} logged them in this order"
        graph.succ.extend([[(node, why)] for node in range(base + 1, base + len(item_events))])
        if item_events:
            graph.succ.append([])
    sends = {(item, s.var): k for item, steps in schedule.items.items() for k, s in enumerate(steps) if s.kind == "send"}
    barrier_nodes: dict[tuple[int, int], int] = {}
    for item, steps in schedule.items.items():
        base = offset[item]
        for k, step in enumerate(steps):
            if step.kind == "get":
                send = sends.get((step.source, step.var))
                if send is None:
                    continue
                why = f"a get cannot end before its send started ({step.var})"
                for inference in ordered:
                    src = offset[step.source] + marks[(step.source, inference)][0][send]
                    graph.edge(src, base + marks[(item, inference)][1][k], why)
            elif step.kind == "barrier":
                for inference in ordered:
                    key = (step.barrier, inference)
                    if key not in barrier_nodes:
                        barrier_nodes[key] = graph.add(f"barrier {step.barrier}" + (f", inference {inference}" if inference else ""))
                    virtual = barrier_nodes[key]
                    started, ended = marks[(item, inference)]
                    graph.edge(base + started[k], virtual, f"barrier {step.barrier} opens only when every item reached it")
                    graph.edge(virtual, base + ended[k], f"no item leaves barrier {step.barrier} before it opens")
    return graph, offset


def _against_the_clock(graph: _Graph, trace: Trace, offset: dict[str, int]) -> list[Problem]:
    """A shared clock: every edge whose events the timestamps order the other way, and every barrier left
    before its last arrival, earliest first."""
    problems: list[Problem] = []
    times: dict[int, int] = {}
    for item, item_events in trace.items.items():
        for pos, e in enumerate(item_events):
            times[offset[item] + pos] = int(e.t or 0)
    arrivals: dict[int, list[int]] = {}
    for a, edges in enumerate(graph.succ):
        for b, why in edges:
            if a in times and b in times and times[b] < times[a]:
                problems.append(_problem("PETRI-E132", f"{graph.text(b)} at t={times[b]} comes before {graph.text(a)} "
                                         f"at t={times[a]}: {why}", t=times[b]))
            elif b not in times:
                arrivals.setdefault(b, []).append(a)
    for virtual, sources in arrivals.items():   # a barrier: every item arrives before any leaves
        last = max(sources, key=lambda n: times[n])
        first_out = min((b for b, _ in graph.succ[virtual]), key=lambda n: times[n], default=None)
        if first_out is not None and times[first_out] < times[last]:
            problems.append(_problem("PETRI-E132", f"{graph.text(first_out)} at t={times[first_out]} leaves "
                                     f"{graph.text(virtual)} before {graph.text(last)} reached it at t={times[last]}",
                                     t=times[first_out]))
    problems.sort(key=lambda p: (p["t"], p["message"]))
    return problems


def _no_global_order(graph: _Graph) -> list[Problem]:
    """Per-item clocks: Kahn's algorithm on the event graph; a cycle left over is the problem, described."""
    indegree = [0] * len(graph.label)
    for edges in graph.succ:
        for b, _ in edges:
            indegree[b] += 1
    ready = deque(i for i, d in enumerate(indegree) if d == 0)
    alive = [True] * len(graph.label)
    removed = 0
    while ready:
        a = ready.popleft()
        alive[a] = False
        removed += 1
        for b, _ in graph.succ[a]:
            indegree[b] -= 1
            if indegree[b] == 0:
                ready.append(b)
    if removed == len(graph.label):
        return []
    cycle = _cycle(graph, alive)
    steps_text = [f"{graph.text(n)} before {graph.text(cycle[(i + 1) % len(cycle)][0])} ({why})"
                  for i, (n, why) in enumerate(cycle)]
    crossing = next((s for s in steps_text if "logged them" not in s), steps_text[0])
    return [_problem("PETRI-E132", "no global order explains the per-item logs: they require " + crossing
                     + f", and the {len(cycle)} constraints form a cycle", cycle=steps_text)]


def replay(net: Net, schedule: Schedule, trace: Trace) -> Outcome:
    """Pass when the per-item logs are a valid execution of the net under the schedule (module doc): the
    items covered, each item alone (1-2), then between items (3)."""
    events = sum(len(v) for v in trace.items.values())
    inferences = {e.inference for v in trace.items.values() for e in v}
    measured: dict[str, Any] = {"events": events, "items": len(trace.items), "clock": trace.clock,
                                "inferences": len(inferences)}
    missing = _missing_items(schedule, trace)
    if missing:
        return _failed(missing, measured)
    placement, mismatch, producers = placed(net, schedule)
    if mismatch:
        return failed(ANALYSIS, "PETRI-E130", "the schedule does not match the net, so the trace cannot be replayed: "
                      + mismatch[0]["message"], {"problems": listed(mismatch)}, **measured)
    marks: Marks = {}
    for item, item_events in trace.items.items():
        found = _replay_item(item, item_events, schedule.items[item], producers[item], marks, inferences)
        if found is not None:
            return _failed([found], measured)
    if trace.clock != "shared" and _explained(trace, schedule, marks, sorted(inferences)):
        return passed(ANALYSIS, **measured)   # acyclic: the graph below is built only to describe a cycle
    graph, offset = _event_graph(trace, schedule, marks, sorted(inferences))
    problems = _against_the_clock(graph, trace, offset) if trace.clock == "shared" else _no_global_order(graph)
    if problems:
        return _failed(problems, measured)
    return passed(ANALYSIS, **measured)


def trace_of_run(schedule: Schedule, order: list[tuple[str, int]], inference: int = 0) -> Trace:
    """A trace in which each (item, step) of `order` starts and ends in turn (used by tests and benchmarks)."""
    items: dict[str, list[Event]] = {item: [] for item in schedule.items}
    clock = 0
    for item, step in order:
        items[item].append(Event("start", step, inference, clock))
        items[item].append(Event("end", step, inference, clock + 1))
        clock += 2
    return Trace(items, "shared")

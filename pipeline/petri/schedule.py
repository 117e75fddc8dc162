"""Static schedules: the order each item's code runs its steps, and whether they deadlock.

A schedule (the splitter's schedule.json, or an item's program order) lists per item its
steps: `compute` (an instruction, by its first result), `send` (a send_var), `get` (a
get_var) and, in barrier mode, `barrier` (all items meet). HLR-EXE-003 asks that the
schedules, run with their sync implementation, be a valid path of the coloured net and
never deadlock whatever the relative speed of the items. An acyclic dataflow does not
ensure it: a per-item order or a barrier placement can still make items wait for each
other. `check_schedule` decides it in linear time:

1. each item lists exactly its instructions, sends and gets, once (PETRI-E120);
2. each step comes after the local steps producing its inputs (PETRI-E121), so every run
   of the schedule respects the net's arcs;
3. the items run as sequential processes: a get waits for its writer's send (event and
   barrier mode alike), a barrier for every item. With no choice anywhere, all
   interleavings reach the same state, so one simulation with per-item program counters
   (each step handled once) decides deadlock; when stuck, it reports where each item
   waits and the wait cycle (PETRI-E122);
4. barrier mode (the paper's scheme: values exchanged through memory, published by the
   barriers): every item passes the same barrier ids in the same increasing order
   (PETRI-E123), and each get comes at least one barrier after its send (PETRI-E124); a get
   in the same barrier epoch as its send is a race for an implementation whose get does not
   wait.

schedule.json is read here with its own parser and data model, not the splitter's
(pipeline.split.plan): the Petri step is the splitter's independent validator (DESIGN,
"every transformation has an independent validator"), so it trusts only the file.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from pipeline.petri.documents import read_json
from pipeline.petri.net import Net, TransitionKind
from pipeline.petri.outcome import Outcome, failed, listed, passed
from pipeline.files.schema import require

ANALYSIS = "schedule"
SYNC_MODES = ("event", "barrier")
STEP_ORDER = "step order"   # net.memo key, with id(schedule): the order `simulate` completed the steps in
STEP_KINDS = ("compute", "send", "get", "barrier")


@dataclass(frozen=True)
class Step:
    """One step of an item's schedule (fields by kind, see the module doc)."""

    kind: str
    result: str = ""
    op: str = ""
    var: str = ""
    value: str = ""
    to: tuple[str, ...] = ()
    source: str = ""
    barrier: int = -1

    def describe(self) -> str:
        if self.kind == "compute":
            return f"compute {self.result} ({self.op})"
        if self.kind == "send":
            return f"send {self.var} = {self.value} to {', '.join(self.to)}"
        if self.kind == "get":
            return f"get {self.result} = {self.var} from {self.source}"
        return f"barrier {self.barrier}"

    def to_json(self) -> dict[str, Any]:
        if self.kind == "compute":
            return {"kind": "compute", "result": self.result, "op": self.op}
        if self.kind == "send":
            return {"kind": "send", "var": self.var, "value": self.value, "to": list(self.to)}
        if self.kind == "get":
            return {"kind": "get", "var": self.var, "result": self.result, "from": self.source}
        return {"kind": "barrier", "id": self.barrier}


@dataclass
class Schedule:
    sync: str
    items: dict[str, list[Step]]
    source: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"schema_version": 1, "sync": self.sync,
                "items": {item: [s.to_json() for s in steps] for item, steps in self.items.items()}}


def parse_schedule(doc: Any, file: str = "schedule.json") -> Schedule:
    """A schedule from its JSON document; PETRI-E010 with the JSON path on any schema problem."""
    data = require(doc, "schedule-1", "PETRI-E010", file)
    items: dict[str, list[Step]] = {}
    for item, steps in data["items"].items():
        parsed = []
        for step in steps:
            kind = step["kind"]
            if kind == "compute":
                parsed.append(Step("compute", result=step["result"], op=step["op"]))
            elif kind == "send":
                parsed.append(Step("send", var=step["var"], value=step["value"], to=tuple(step["to"])))
            elif kind == "get":
                parsed.append(Step("get", var=step["var"], result=step["result"], source=step["from"]))
            else:
                parsed.append(Step("barrier", barrier=step["id"]))
        items[item] = parsed
    return Schedule(data["sync"], items, file)


def load_schedule(path: str | os.PathLike[str]) -> Schedule:
    return parse_schedule(read_json(path), str(path))


def default_schedule(net: Net, sync: str = "event") -> Schedule:
    """Each item's program order: the order of its description (what a straight-line code generator runs)."""
    items: dict[str, list[Step]] = {}
    for colour, program in net.program.items():
        steps = []
        for kind, index in program:
            if kind == "g":
                get = net.gets[index]
                steps.append(Step("get", result=get.result, var=get.var, source=get.source))
            else:
                tr = net.transitions[index]
                if tr.kind is TransitionKind.SYNC:
                    steps.append(Step("send", var=tr.name, value=tr.inputs[0], to=tr.dest))
                else:
                    steps.append(Step("compute", result=tr.name, op=tr.op))
        items[colour] = steps
    return Schedule(sync, items, "program order")


# ---------------------------------------------------------------------- matching steps to the net
@dataclass
class Placement:
    """Where each net element sits in the schedule: (item, index)."""

    transition: dict[int, tuple[str, int]]
    get: dict[tuple[str, str], int]          # (item, result) -> index


def _where(item: str, index: int, step: Step) -> str:
    return f"{item} step {index} ({step.describe()})"


def place_steps(net: Net, schedule: Schedule) -> tuple[Placement, list[dict[str, Any]]]:
    """Match each step with its transition or get; problems are PETRI-E120 differences."""
    problems: list[dict[str, Any]] = []
    computes: dict[str, dict[str, int]] = {}   # per item: name -> transition
    sends: dict[str, dict[str, int]] = {}
    compute, sync = TransitionKind.COMPUTE, TransitionKind.SYNC
    per_item: dict[str, int] = {}   # compute and sync transitions per item (names may repeat in a bad net)
    for t, tr in enumerate(net.transitions):
        kind = tr.kind
        if kind is compute or kind is sync:
            per_item[tr.colour] = per_item.get(tr.colour, 0) + 1
        if kind is compute:
            mine = computes.get(tr.colour)
            if mine is None:
                mine = computes[tr.colour] = {}
            mine[tr.name] = t
        elif kind is sync:
            mine = sends.get(tr.colour)
            if mine is None:
                mine = sends[tr.colour] = {}
            mine[tr.name] = t
    gets = {(g.item, g.result): g for g in net.gets}
    placement = Placement({}, {})
    transition = placement.transition

    def problem(item: str, index: int | None, message: str) -> None:
        problems.append({"code": "PETRI-E120", "item": item, "step": index, "message": message})

    for item in net.colours:
        if item not in schedule.items:
            problem(item, None, f"item {item} has no schedule")
    for item, steps in schedule.items.items():
        if item not in net.colours:
            problem(item, None, f"the schedule has item {item}, which is not among the descriptions")
            continue
        item_computes, item_sends = computes.get(item, {}), sends.get(item, {})
        for index, step in enumerate(steps):
            kind = step.kind
            if kind == "compute":
                t = item_computes.get(step.result)
                if t is None:
                    problem(item, index, f"{_where(item, index, step)}: {item} has no instruction computing {step.result}")
                elif net.transitions[t].op != step.op:
                    problem(item, index, f"{_where(item, index, step)}: the instruction is {net.describe_transition(t)}")
                elif t in transition:
                    problem(item, index, f"{_where(item, index, step)}: already scheduled at step {placement.transition[t][1]}")
                else:
                    placement.transition[t] = (item, index)
            elif kind == "send":
                t = item_sends.get(step.var)
                if t is None:
                    problem(item, index, f"{_where(item, index, step)}: {item} has no send_var of {step.var}")
                elif net.transitions[t].inputs[0] != step.value or set(net.transitions[t].dest) != set(step.to):
                    tr = net.transitions[t]
                    problem(item, index, f"{_where(item, index, step)}: the description sends {tr.inputs[0]} to {', '.join(tr.dest)}")
                elif t in transition:
                    problem(item, index, f"{_where(item, index, step)}: already scheduled at step {placement.transition[t][1]}")
                else:
                    placement.transition[t] = (item, index)
            elif kind == "get":
                get = gets.get((item, step.result))
                if get is None:
                    problem(item, index, f"{_where(item, index, step)}: {item} has no get_var computing {step.result}")
                elif get.var != step.var or get.source != step.source:
                    problem(item, index, f"{_where(item, index, step)}: the description has {get.result} = get_var({get.source}, {get.var})")
                elif (item, step.result) in placement.get:
                    problem(item, index, f"{_where(item, index, step)}: already scheduled at step {placement.get[(item, step.result)]}")
                else:
                    placement.get[(item, step.result)] = index
    scheduled = schedule.items
    if len(transition) < sum(per_item.get(item, 0) for item in scheduled):
        for t, tr in enumerate(net.transitions):   # only when one is missing (each placed one is among them)
            if tr.kind in (TransitionKind.COMPUTE, TransitionKind.SYNC) and t not in placement.transition \
                    and tr.colour in scheduled:
                problem(tr.colour, None, f"{net.describe_transition(t)} is not in the schedule of {tr.colour}")
    for g in net.gets:
        if (g.item, g.result) not in placement.get and g.item in schedule.items:
            problem(g.item, None, f"get_var {g.result} = get_var({g.source}, {g.var}) is not in the schedule of {g.item}")
    return placement, problems


def local_producers(net: Net, schedule: Schedule, placement: Placement) -> dict[str, list[list[tuple[int, str]]]]:
    """Per item and step: the steps of the same item producing its inputs, with the variable read."""
    result = {item: [[] for _ in steps] for item, steps in schedule.items.items()}
    transitions, places, pre, producers = net.transitions, net.places, net.pre, net.producers
    where, gets, sync = placement.transition, placement.get, TransitionKind.SYNC
    for t, (item, index) in where.items():
        into = result[item][index]
        for p, _ in pre[t]:
            for u, _ in producers[p]:
                producer = transitions[u]
                if producer.colour == item:
                    found = where.get(u)
                    at = found[1] if found is not None else -1
                elif producer.kind is sync:
                    at = gets.get((item, places[p].variable))
                else:
                    continue
                if at is not None and at >= 0:
                    into.append((at, places[p].variable))
    return result


def placed(net: Net, schedule: Schedule) -> tuple[Placement, list[dict[str, Any]], dict[str, list[list[tuple[int, str]]]]]:
    """`place_steps` and `local_producers` of (net, schedule), computed once for the schedule and trace checks.

    Kept on the net, with a fingerprint of everything they read (the schedule's items and
    step objects, the net's sizes), so that a schedule changed in place is matched again.
    """
    steps = tuple(step for item_steps in schedule.items.values() for step in item_steps)
    fingerprint = (tuple(schedule.items), tuple(map(len, schedule.items.values())), steps,
                   len(net.transitions), len(net.places), len(net.gets))
    memo = net.memo.get(("placed", id(schedule)))
    if memo is not None and memo[0] is schedule and memo[1] == fingerprint:
        return memo[2]
    placement, problems = place_steps(net, schedule)
    result = (placement, problems, local_producers(net, schedule, placement) if not problems else {})
    net.memo[("placed", id(schedule))] = (schedule, fingerprint, result)
    return result


def local_order(net: Net, schedule: Schedule, placement: Placement,
                producers: dict[str, list[list[tuple[int, str]]]] | None = None) -> list[dict[str, Any]]:
    """Steps scheduled before the local step producing one of their inputs (PETRI-E121)."""
    problems = []
    if producers is None:
        producers = local_producers(net, schedule, placement)
    for item, per_step in producers.items():
        steps = schedule.items[item]
        for index, producers in enumerate(per_step):
            if not producers or max(producers)[0] <= index:
                continue   # the common case: every producer is scheduled earlier (no sort)
            for at, variable in sorted(producers):
                if at > index:
                    problems.append({"code": "PETRI-E121", "item": item, "step": index,
                                     "message": f"{item} step {index} ({steps[index].describe()}) reads {variable}, "
                                                f"which step {at} ({steps[at].describe()}) produces later"})
    return problems


# ---------------------------------------------------------------------- running the items
@dataclass
class Stuck:
    """Where each unfinished item waits when the simulation cannot go on."""

    positions: dict[str, int]
    waits: dict[str, str]
    cycle: list[str]


def simulate(schedule: Schedule, done: list[int] | None = None) -> Stuck | None:
    """Run the items as sequential processes (gets wait for sends, barriers for all); None: all finish.

    `done` receives the steps in the order they complete, each as its position in the items'
    steps laid end to end (a barrier once, as the step of the item arriving last): an order
    the periodic schedule net's token-free arcs follow (pipeline.petri.pipelining's hint).
    """
    items = list(schedule.items)
    base: dict[str, int] = {}
    total = 0
    for item in items:
        base[item] = total
        total += len(schedule.items[item])
    finished: list[int] = [] if done is None else done
    pc = {item: 0 for item in items}
    sent: set[tuple[str, str]] = set()
    waiting_send: dict[tuple[str, str], list[str]] = {}
    at_barrier: dict[int, set[str]] = {}
    work = list(items)
    record = finished.append
    while work:
        item = work.pop()
        steps = schedule.items[item]
        first, k, end = base[item], pc[item], len(steps)
        while k < end:   # the item's program counter in a local (a barrier moves the others' only)
            step = steps[k]
            kind = step.kind
            if kind == "get":
                if (step.source, step.var) not in sent:
                    waiting_send.setdefault((step.source, step.var), []).append(item)
                    break
            elif kind == "send":
                sent.add((item, step.var))
                waiting = waiting_send.pop((item, step.var), None)
                if waiting:
                    work.extend(waiting)
            elif kind == "barrier":
                arrived = at_barrier.setdefault(step.barrier, set())
                arrived.add(item)
                if len(arrived) < len(items):
                    break
                for other in items:
                    if other != item:
                        pc[other] += 1
                        work.append(other)
            record(first + k)
            k += 1
        pc[item] = k
    unfinished = [item for item in items if pc[item] < len(schedule.items[item])]
    if not unfinished:
        return None
    waits: dict[str, str] = {}
    waits_for: dict[str, str | None] = {}
    for item in unfinished:
        step = schedule.items[item][pc[item]]
        if step.kind == "get":
            writer_pc = pc.get(step.source)
            if writer_pc is None:
                waits[item] = f"waits at step {pc[item]} ({step.describe()}) for {step.source}, which has no schedule"
                waits_for[item] = None
            elif writer_pc >= len(schedule.items[step.source]):
                waits[item] = (f"waits at step {pc[item]} ({step.describe()}) for {step.source}, which finished "
                               f"without sending {step.var}")
                waits_for[item] = None
            else:
                waits[item] = (f"waits at step {pc[item]} ({step.describe()}) for {step.source} to send {step.var}; "
                               f"{step.source} is at step {writer_pc} ({schedule.items[step.source][writer_pc].describe()})")
                waits_for[item] = step.source
        else:
            absent = [o for o in items if o not in at_barrier.get(step.barrier, set())]
            waits[item] = f"waits at step {pc[item]} (barrier {step.barrier}) for {', '.join(absent)}"
            waits_for[item] = absent[0] if absent else None
    cycle: list[str] = []
    current: str | None = unfinished[0]
    seen: list[str] = []
    while current is not None and current not in seen and current in waits_for:
        seen.append(current)
        current = waits_for[current]
    if current is not None and current in seen:
        cycle = seen[seen.index(current):]
    return Stuck({item: pc[item] for item in unfinished}, waits, cycle)


def _barriers(steps: list[Step]) -> list[int]:
    return [s.barrier for s in steps if s.kind == "barrier"]


def barrier_problems(schedule: Schedule) -> list[dict[str, Any]]:
    problems = []
    items = list(schedule.items)
    if not items:
        return problems
    reference = _barriers(schedule.items[items[0]])
    for item in items:
        ids = _barriers(schedule.items[item])
        if any(b >= a for a, b in zip(ids[1:], ids)) or len(set(ids)) != len(ids):
            problems.append({"code": "PETRI-E123", "item": item,
                             "message": f"{item} passes barriers {ids}, not in increasing order"})
        elif ids != reference:
            problems.append({"code": "PETRI-E123", "item": item,
                             "message": f"{item} passes barriers {ids}, {items[0]} passes {reference}"})
    return problems


def race_problems(schedule: Schedule) -> list[dict[str, Any]]:
    """Barrier mode: gets in the same barrier epoch as their send (PETRI-E124)."""
    epochs: dict[tuple[str, str], tuple[int, int]] = {}
    for item, steps in schedule.items.items():
        epoch = 0
        for index, step in enumerate(steps):
            if step.kind == "barrier":
                epoch += 1
            elif step.kind == "send":
                epochs[(item, step.var)] = (epoch, index)
    problems = []
    for item, steps in schedule.items.items():
        epoch = 0
        for index, step in enumerate(steps):
            if step.kind == "barrier":
                epoch += 1
            elif step.kind == "get" and (step.source, step.var) in epochs:
                send_epoch, send_index = epochs[(step.source, step.var)]
                if send_epoch >= epoch:
                    problems.append({"code": "PETRI-E124", "item": item, "step": index,
                                     "message": f"{item} step {index} ({step.describe()}) and {step.source} step "
                                                f"{send_index} (send {step.var}) have no barrier between them (the get "
                                                f"comes after {epoch} barrier(s), the send after {send_epoch}): a get "
                                                "that does not wait can read the value before it is written"})
    return problems


def check_schedule(net: Net, schedule: Schedule) -> Outcome:
    """Pass when the schedules cover the items, respect local dependencies and cannot deadlock."""
    steps = sum(len(s) for s in schedule.items.values())
    measured: dict[str, Any] = {"sync": schedule.sync, "items": len(schedule.items), "steps": steps,
                                "barriers": len(_barriers(next(iter(schedule.items.values()), [])))}
    placement, problems, producers = placed(net, schedule)
    if not problems:
        problems = local_order(net, schedule, placement, producers)
    if not problems and schedule.sync == "barrier":
        problems = barrier_problems(schedule)
    stuck: Stuck | None = None
    if not problems:
        done: list[int] = []
        stuck = simulate(schedule, done)
        if stuck is None:
            net.memo[(STEP_ORDER, id(schedule))] = (schedule, np.asarray(done, np.int64))
        if stuck is not None:
            cycle = f"; wait cycle: {' -> '.join(stuck.cycle + stuck.cycle[:1])}" if stuck.cycle else ""
            first = next(iter(stuck.waits))
            return failed(ANALYSIS, "PETRI-E122",
                          f"the schedules deadlock ({schedule.sync} sync): {first} {stuck.waits[first]}{cycle}",
                          {"positions": stuck.positions, "waits": stuck.waits, "cycle": stuck.cycle}, **measured)
    if not problems and schedule.sync == "barrier":
        problems = race_problems(schedule)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        return failed(ANALYSIS, problems[0]["code"], problems[0]["message"] + more,
                      {"problems": listed(problems), "problem_count": len(problems)}, **measured)
    return passed(ANALYSIS, **measured)


def schedule_from_mapping(data: Mapping[str, Any]) -> Schedule:
    """Convenience for tests and generators: parse an in-memory schedule document."""
    return parse_schedule(dict(data), "<schedule>")

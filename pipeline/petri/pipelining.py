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

from typing import Any

from pipeline.petri.markedgraph import INFINITE, MarkedGraphResult, analyse_marked_graph
from pipeline.petri.net import INITIAL_KINDS, Net, PlaceKind, TransitionKind
from pipeline.petri.outcome import Outcome, failed, listed, passed
from pipeline.petri.schedule import Schedule

ANALYSIS = "pipeline"


def periodic_net(net: Net, depth: int) -> Net:
    """The one-shot net with start/end of inference, `inflight` (depth tokens) and slot places."""
    out = Net(f"{net.name}.periodic", "periodic", colours=list(net.colours))
    for t, tr in enumerate(net.transitions):
        out.add_transition(tr.id, tr.name, tr.op, tr.colour, tr.kind, inputs=tr.inputs, outputs=tr.outputs,
                           signature=tr.signature, span=tr.span, dest=tr.dest)
    start = out.add_transition("ctl.start", "start", "start", "control", TransitionKind.CONTROL)
    end = out.add_transition("ctl.end", "end", "end", "control", TransitionKind.CONTROL)
    for p, place in enumerate(net.places):
        q = out.add_place(place.id, place.variable, place.colour, place.kind)
        out.places[q].consumer = place.consumer
        if place.kind in INITIAL_KINDS:
            out.arc_out(start, q)
        if place.kind is PlaceKind.OUTPUT:
            out.arc_in(q, end)
    for t in range(len(net.transitions)):
        for p, w in net.pre[t]:
            out.arc_in(p, t, w)
        for p, w in net.post[t]:
            out.arc_out(t, p, w)
        slot = out.add_place(f"slot.{net.transitions[t].id}", net.transitions[t].name, net.transitions[t].colour,
                             PlaceKind.CONTROL, 1)
        out.arc_out(t, slot)
        out.arc_in(slot, t)
    inflight = out.add_place("ctl.inflight", "inflight", "control", PlaceKind.CONTROL, depth)
    out.arc_out(end, inflight)
    out.arc_in(inflight, start)
    return out


def schedule_net(schedule: Schedule, depth: int) -> Net:
    """The items' code as a marked graph: program-counter loops, buffers (send -> get), credits (get -> send)."""
    out = Net("schedule.periodic", "periodic", colours=list(schedule.items))
    node: dict[tuple[str, int], int] = {}
    barriers: dict[int, int] = {}
    for item, steps in schedule.items.items():
        for k, step in enumerate(steps):
            if step.kind == "barrier":
                if step.barrier not in barriers:
                    barriers[step.barrier] = out.add_transition(f"barrier.{step.barrier}", f"barrier {step.barrier}",
                                                                "barrier", "control", TransitionKind.CONTROL)
                node[(item, k)] = barriers[step.barrier]
            else:
                node[(item, k)] = out.add_transition(f"s.{item}.{k}", step.describe(), step.kind, item,
                                                     TransitionKind.CONTROL)
    for item, steps in schedule.items.items():
        for k in range(len(steps)):
            nxt = (k + 1) % len(steps)
            pc = out.add_place(f"pc.{item}.{k}", f"{item} after step {k}", item, PlaceKind.CONTROL,
                               1 if nxt == 0 else 0)
            out.arc_out(node[(item, k)], pc)
            out.arc_in(pc, node[(item, nxt)])
    sends = {(item, s.var): k for item, steps in schedule.items.items() for k, s in enumerate(steps) if s.kind == "send"}
    for item, steps in schedule.items.items():
        for k, step in enumerate(steps):
            if step.kind != "get" or (step.source, step.var) not in sends:
                continue
            send = node[(step.source, sends[(step.source, step.var)])]
            get = node[(item, k)]
            buffer = out.add_place(f"buffer.{step.var}.{item}", f"{step.var} for {item}", item, PlaceKind.VALUE)
            out.arc_out(send, buffer)
            out.arc_in(buffer, get)
            credit = out.add_place(f"credit.{step.var}.{item}", f"free {step.var} buffers for {item}", item,
                                   PlaceKind.CONTROL, depth)
            out.arc_out(get, credit)
            out.arc_in(credit, send)
    return out


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
    periodic = periodic_net(net, depth)
    result = analyse_marked_graph(periodic)
    measured: dict[str, Any] = {"pipeline_depth": depth}
    problem = _verdict(periodic, result, f"the periodic net at depth {depth}")
    value_bounds = [b for p, b in result.bounds.items() if periodic.places[p].kind is not PlaceKind.CONTROL and b != INFINITE]
    measured["value_place_bound"] = int(max(value_bounds)) if value_bounds else 0
    measured["places"] = len(periodic.places)
    del periodic, result   # the schedule net is as large: do not hold both
    if problem is None and schedule is not None:
        code_net = schedule_net(schedule, depth)
        buffers_at = [p for p, place in enumerate(code_net.places) if place.kind is PlaceKind.VALUE]
        code_result = analyse_marked_graph(code_net, buffers_at)
        problem = _verdict(code_net, code_result, f"the items' schedules run periodically at depth {depth}")
        buffers = {code_net.places[p].id: int(b) for p, b in code_result.bounds.items()
                   if code_net.places[p].kind is PlaceKind.VALUE and b != INFINITE}
        measured["sync_buffers"] = dict(sorted(buffers.items()))
        measured["sync_buffer_bound"] = max(buffers.values()) if buffers else 0
    if problem is not None:
        code, reason, cex = problem
        return failed(ANALYSIS, code, reason, cex, **measured)
    return passed(ANALYSIS, **measured)

"""Static schedules: the order each item's code runs its steps, with its sync implementation.

An item's steps are its body in order (compute, send, get; pipeline.split.splitter).
`event` sync needs nothing more: a reader blocks on its get until the writer's send.
`barrier` sync is the paper's scheme generalised: the items run in phases separated by
global barriers that every item passes, in increasing id order. A step's phase is the
longest path to it in the graph of "comes before in my item" (weight 0) and "send ->
matching get" (weight 1) edges:

    phase(step) = max(phase(previous step of the item), phase(send) + 1 if a get)

so every get runs in a later phase than its send, as early as that allows, and items
never wait at a barrier for a value they do not need in that phase. Barrier b (1 <= b <
number of phases) is placed before the first step of phase >= b; an item with no step
left still passes the remaining barriers at its end. For the paper's three items this
gives its own schedule: ITEM1's head, barrier 1, ITEM2 and ITEM3, barrier 2, ITEM1's tail.

The schedule is deadlock-free under both implementations because the edges above only
go forward in the original instruction order (sends follow their producer, gets precede
their first consumer); the Petri analysis (pipeline.petri) checks it independently.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from pipeline.split.errors import SplitError
from pipeline.split.splitter import Split, Step

SYNC_MODES = ("event", "barrier")


def phases(steps: Mapping[str, Sequence[Step]]) -> dict[str, list[int]]:
    """The phase of every step of every item (see the module docstring)."""
    sent_phase: dict[str, int] = {}
    result: dict[str, list[int]] = {item: [] for item in steps}
    position = {item: 0 for item in steps}
    current = {item: 0 for item in steps}
    remaining = sum(len(s) for s in steps.values())
    while remaining:
        progress = False
        for item, item_steps in steps.items():
            while position[item] < len(item_steps):
                step = item_steps[position[item]]
                phase = current[item]
                if step.kind == "get":
                    if step.var not in sent_phase:
                        break
                    phase = max(phase, sent_phase[step.var] + 1)
                if step.kind == "send":
                    sent_phase[step.var] = phase
                result[item].append(phase)
                current[item] = phase
                position[item] += 1
                remaining -= 1
                progress = True
        if not progress:
            blocked = {item: steps[item][position[item]].var for item in steps if position[item] < len(steps[item])}
            raise SplitError("SPLIT-E040", "the items' steps wait on each other: " +
                             ", ".join(f"{item} waits for {var}" for item, var in sorted(blocked.items())))
    return result


def item_schedules(split: Split, sync: str) -> dict[str, list[Step]]:
    """Every item's steps for sync mode `sync` (barrier steps inserted for `barrier`)."""
    if sync not in SYNC_MODES:
        raise ValueError(f"unknown sync mode {sync!r}; modes are {', '.join(SYNC_MODES)}")
    plain = {item.name: item.steps() for item in split.items}
    if sync == "event":
        return plain
    phase = phases(plain)
    count = max((max(p) for p in phase.values() if p), default=0) + 1
    result: dict[str, list[Step]] = {}
    for item, item_steps in plain.items():
        scheduled: list[Step] = []
        barrier = 1
        for step, step_phase in zip(item_steps, phase[item]):
            while barrier <= step_phase:
                scheduled.append(Step("barrier", id=barrier))
                barrier += 1
            scheduled.append(step)
        while barrier < count:
            scheduled.append(Step("barrier", id=barrier))
            barrier += 1
        result[item] = scheduled
    return result

"""Explicit-state exploration of small P/T nets: the test oracle of the structural analyses.

Never used by the product (pipeline.petri decides everything structurally, in linear
time). Here we enumerate reachable markings, either all interleavings (which also counts
the firing sequences from the initial to the final marking: the valid paths) or with
stubborn sets (Valmari), which keep every reachable dead marking while exploring far fewer
states. States carry each transition's firing count (capped at 2) so that "a transition
fires twice" is observable even where the marking cannot show it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from pipeline.petri.net import Net

Marking = frozenset  # of (place, tokens) pairs, tokens > 0
State = tuple[Marking, frozenset]  # marking, firing counts (transition, 1|2)


@dataclass
class Exploration:
    states: int = 0
    edges: int = 0
    gave_up: bool = False
    reason: str = ""
    final_reachable: bool = False
    dead: set[Marking] = field(default_factory=set)        # dead markings other than the final one
    double_firing: bool = False
    leftover: bool = False                                  # a dead marking with a token outside the final marking
    blocked: bool = False                                   # a dead state in which some transition never fired
    never_fired: set[int] = field(default_factory=set)      # transitions that fire in no run
    paths_to_final: int | None = None
    max_tokens: dict[int, int] = field(default_factory=dict)  # per place, over the states explored
    seconds: float = 0.0


def _enabled(net: Net, marking: dict[int, int]) -> list[int]:
    return [t for t in range(len(net.transitions)) if all(marking.get(p, 0) >= w for p, w in net.pre[t])]


def _fire(net: Net, marking: dict[int, int], t: int) -> dict[int, int]:
    new = dict(marking)
    for p, w in net.pre[t]:
        new[p] -= w
        if not new[p]:
            del new[p]
    for p, w in net.post[t]:
        new[p] = new.get(p, 0) + w
    return new


def stubborn(net: Net, marking: dict[int, int], enabled: list[int]) -> list[int]:
    """A deadlock-preserving stubborn set's enabled transitions (Valmari's closure rules for P/T nets)."""
    if not enabled:
        return []
    enabled_set = set(enabled)
    chosen = {enabled[0]}
    work = [enabled[0]]
    while work:
        t = work.pop()
        if t in enabled_set:
            # every transition competing for an input place of t
            more = {u for p, _ in net.pre[t] for u, _ in net.consumers[p]}
        else:
            # an input place lacking tokens: every transition that could fill it
            lacking = next(p for p, w in net.pre[t] if marking.get(p, 0) < w)
            more = {u for u, _ in net.producers[lacking]}
        for u in more - chosen:
            chosen.add(u)
            work.append(u)
    return sorted(chosen & enabled_set)


def explore(net: Net, reduce: bool = False, max_states: int = 200_000, time_limit: float = 60.0,
            counts: bool = True) -> Exploration:
    """Explore from the initial marking; with `reduce`, only stubborn-set successors.

    Without `counts`, states are markings only (for cyclic nets, where firing counts grow).
    """
    started = time.perf_counter()
    result = Exploration()
    final = frozenset((p, n) for p, n in net.final.items() if n)
    initial: State = (frozenset((i, p.initial) for i, p in enumerate(net.places) if p.initial), frozenset())
    fired_somewhere: set[int] = set()
    successors: dict[State, list[State]] = {}
    stack = [initial]
    seen = {initial}
    while stack:
        if len(seen) > max_states:
            result.gave_up, result.reason = True, f"more than {max_states} states"
            break
        if time.perf_counter() - started > time_limit:
            result.gave_up, result.reason = True, f"more than {time_limit:g} s"
            break
        state = stack.pop()
        marking = dict(state[0])
        fired = dict(state[1])
        for p, n in marking.items():
            if n > result.max_tokens.get(p, 0):
                result.max_tokens[p] = n
        enabled = _enabled(net, marking)
        chosen = stubborn(net, marking, enabled) if reduce else enabled
        nexts = []
        for t in chosen:
            fired_somewhere.add(t)
            new_counts = dict(fired)
            new_counts[t] = min(2, new_counts.get(t, 0) + 1)
            if new_counts[t] == 2:
                result.double_firing = True
            nxt: State = (frozenset(_fire(net, marking, t).items()), frozenset(new_counts.items()) if counts else frozenset())
            nexts.append(nxt)
            result.edges += 1
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
        successors[state] = nexts
        if not enabled:
            if counts and len(fired) < len(net.transitions):
                result.blocked = True
            if state[0] == final:
                result.final_reachable = True
            else:
                result.dead.add(state[0])
                if any(n > dict(final).get(p, 0) for p, n in state[0]):
                    result.leftover = True
    result.states = len(seen)
    result.never_fired = set(range(len(net.transitions))) - fired_somewhere
    if not reduce and not result.gave_up and counts:   # with counts the state graph is acyclic
        result.paths_to_final = _count_paths(initial, successors, final)
    result.seconds = time.perf_counter() - started
    return result


def _count_paths(initial: State, successors: dict[State, list[State]], final: Marking) -> int:
    """Firing sequences from the initial state to a dead final state (iterative post-order DP)."""
    memo: dict[State, int] = {}
    stack: list[tuple[State, bool]] = [(initial, False)]
    while stack:
        state, expanded = stack.pop()
        if state in memo:
            continue
        nexts = successors.get(state, [])
        if not expanded:
            stack.append((state, True))
            stack.extend((n, False) for n in nexts if n not in memo)
            continue
        if not nexts:
            memo[state] = 1 if state[0] == final else 0
        else:
            memo[state] = sum(memo.get(n, 0) for n in nexts)
    return memo[initial]

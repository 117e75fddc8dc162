"""Behavioural analyses of one net, by linear-time structural algorithms.

In our encoding (pipeline.petri.translate) every place has at most one producer and one
consumer, arcs have weight 1, and a place is either initially marked with one token and
has no producer, or unmarked with one producer (or none: a missing value). Such a net is
conflict-free (no transition can disable another) and 1-safe, so:

* a transition fires at most once (its input places receive at most one token each);
* the net is persistent, so every maximal firing sequence fires the same set of
  transitions and ends in the same dead marking (Landweber-Robertson / Keller: in a
  persistent net all maximal runs are permutations of each other);
* that set is the least fixpoint "a transition fires iff all its input places get their
  token", computed by Kahn's topological algorithm in O(places + transitions + arcs).

Hence, from one Kahn run: the final marking is reachable iff the unique dead marking is
the final marking; there is no deadlock iff every transition fires; no token is left over
iff the dead marking has no token outside the output places; every transition fires
exactly once iff all fire. No state space is enumerated. The explicit-state explorer of
tests/petri/ confirms these verdicts on small random nets.

The paper's encoding (one place per variable, one token per consumer) is not
conflict-free. The same Kahn run gives its intended behaviour; a transition t can
additionally fire twice, starving a sibling consumer, iff every input place p of t still
holds at least 2·w(p, t) tokens once t's ancestors have taken theirs:
``cap(p) - Σ{w(p, u) : u consumes p, u is an ancestor of t} >= 2·w(p, t)``, taken at the
first such t in topological order (its ancestors then fire once each). Ancestor sets are
bit sets, so this costs O(transitions²/64): a reporting mode, not the product's.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any

import numpy as np

from pipeline.petri.net import GetInfo, Net, PlaceKind, TransitionKind
from pipeline.petri.outcome import Outcome, failed, json_number, listed, not_run, passed
from pipeline.petri.paths import count_valid_paths

ANALYSES = ("reachability", "deadlock", "termination", "once", "valid_paths")
FIRING_ORDER = "firing order"   # net.memo key: the order `run` fired the transitions in


@dataclass
class Run:
    """One maximal run of the intended behaviour: what fired, in which order, where it stopped."""

    order: list[int]
    fired: list[bool]
    filled: list[bool]
    dead: dict[int, int]

    @property
    def blocked(self) -> list[int]:
        return [t for t, f in enumerate(self.fired) if not f]


def form_violations(net: Net) -> list[str]:
    """Why the net is not an acyclic-or-not, conflict-free, 1-safe net of our encoding (empty: it is)."""
    problems: list[str] = []
    for p, place in enumerate(net.places):
        taken, made = net.consumers[p], net.producers[p]
        if len(taken) <= 1 and len(made) <= 1 and (not taken or taken[0][1] == 1) and (not made or made[0][1] == 1) \
                and (place.initial == 0 or (place.initial == 1 and not made)):
            continue   # the common case, decided without building anything
        if len(taken) > 1:
            problems.append(f"place {place.id} has {len(taken)} consumers (a conflict)")
        if len(made) > 1:
            problems.append(f"place {place.id} has {len(made)} producers")
        if any(w != 1 for _, w in taken) or any(w != 1 for _, w in made):
            problems.append(f"place {place.id} has an arc of weight other than 1")
        if place.initial > 1 or (place.initial and made):
            problems.append(f"place {place.id} can hold more than one token")
    for t, transition in enumerate(net.transitions):
        if not net.pre[t]:
            problems.append(f"transition {transition.id} has no input place (it could fire forever)")
    return problems


def run(net: Net) -> Run:
    """Kahn's algorithm on 'a transition fires once all its input places have received tokens'."""
    places, transitions = net.places, net.transitions
    filled = [p.initial > 0 for p in places]
    need = [0] * len(transitions)
    for t, arcs in enumerate(net.pre):
        count = 0
        for p, _ in arcs:
            if not filled[p]:
                count += 1
        need[t] = count
    ready = deque(t for t in range(len(transitions)) if need[t] == 0)
    fired = [False] * len(transitions)
    order: list[int] = []
    while ready:
        t = ready.popleft()
        if fired[t]:
            continue
        fired[t] = True
        order.append(t)
        for p, _ in net.post[t]:
            if filled[p]:
                continue
            filled[p] = True
            for c, _ in net.consumers[p]:
                need[c] -= 1
                if need[c] == 0:
                    ready.append(c)
    dead: dict[int, int] = {}
    producers, consumers = net.producers, net.consumers
    for p, place in enumerate(places):
        tokens = place.initial
        for t, w in producers[p]:
            if fired[t]:
                tokens += w
        for t, w in consumers[p]:
            if fired[t]:
                tokens -= w
        if tokens:
            dead[p] = tokens
    return Run(order, fired, filled, dead)


# ---------------------------------------------------------------------- explanations
def _get_of(net: Net, colour: str, variable: str) -> GetInfo | None:
    return next((g for g in net.gets if g.item == colour and g.result == variable), None)


def missing_producer(net: Net, p: int) -> dict[str, Any]:
    """Why place p never receives its token: nothing produces its value."""
    place = net.places[p]
    readers = [net.describe_transition(t) for t, _ in net.consumers[p]]
    get = _get_of(net, place.colour, place.variable)
    if get is not None:
        writer = f"item {get.source}" if get.source in net.colours else f"item {get.source} (not among the items given)"
        why = (f"'{place.variable}' is received by get_var({get.source}, {get.var}) in {get.item}"
               f"{' at ' + str(get.span) if get.span else ''}, but {writer} has no send_var of {get.var} naming {get.item}")
    else:
        where = f" in {place.colour}" if len(net.colours) > 1 else ""
        why = f"no instruction{where} computes '{place.variable}' and it is not declared"
    return {"place": place.id, "variable": place.variable, "item": place.colour, "readers": readers, "why": why}


def explain_blocked(net: Net, result: Run) -> tuple[list[dict[str, Any]], list[list[str]]]:
    """Root causes of the blocked transitions: missing producers and wait cycles (each found once)."""
    root: dict[int, int] = {}
    missing: list[dict[str, Any]] = []
    seen_missing: set[int] = set()
    cycles: list[list[str]] = []
    cause = 0
    for start in result.blocked:
        path: list[int] = []
        on_path: dict[int, int] = {}
        current = start
        while current not in root:
            on_path[current] = len(path)
            path.append(current)
            empty = next((p for p, _ in net.pre[current] if not result.filled[p]), None)
            if empty is None:  # cannot happen for a blocked transition; be safe
                break
            producers = [u for u, _ in net.producers[empty] if not result.fired[u]]
            if not producers:
                if empty not in seen_missing:
                    seen_missing.add(empty)
                    missing.append(missing_producer(net, empty))
                break
            nxt = producers[0]
            if nxt in on_path:
                cycle = path[on_path[nxt]:]
                cycles.append([net.describe_transition(t) for t in cycle])
                break
            current = nxt
        cause += 1
        for t in path:
            root.setdefault(t, cause)
    return missing, cycles


def _leftovers(net: Net, result: Run) -> list[dict[str, Any]]:
    left = []
    for p, tokens in sorted(result.dead.items()):
        extra = tokens - net.final.get(p, 0)
        if extra <= 0:
            continue
        place = net.places[p]
        consumers = [t for t, _ in net.consumers[p]]
        if place.kind is PlaceKind.UNUSED:
            producer = net.producers[p][0][0] if net.producers[p] else None
            if producer is not None and net.transitions[producer].kind is TransitionKind.SYNC:
                why = f"'{place.variable}' is sent to {place.colour}, which never reads it"
            else:
                what = net.describe_transition(producer) if producer is not None else place.variable
                why = f"the value of {what} is never consumed nor a graph output"
        elif consumers:
            why = f"its consumer {net.describe_transition(consumers[0])} never fires"
        else:
            why = "no instruction consumes it"
        left.append({"place": place.id, "variable": place.variable, "item": place.colour, "tokens": extra, "why": why})
    return left


def _missing_in_final(net: Net, result: Run) -> list[str]:
    return [net.places[p].id for p, n in sorted(net.final.items()) if result.dead.get(p, 0) < n]


# ---------------------------------------------------------------------- the paper's flaw
def double_firing(net: Net, result: Run) -> dict[str, Any] | None:
    """The first transition that can fire twice in the paper's encoding, with a witness run (None: none)."""
    capacity = [p.initial + sum(w for _, w in net.producers[i]) for i, p in enumerate(net.places)]
    ancestors = [0] * len(net.transitions)
    for t in result.order:
        bits = 0
        for p, _ in net.pre[t]:
            for u, _ in net.producers[p]:
                bits |= ancestors[u] | (1 << u)
        ancestors[t] = bits
        if not net.pre[t]:
            continue
        twice = True
        for p, w in net.pre[t]:
            taken = sum(w2 for u, w2 in net.consumers[p] if u != t and (bits >> u) & 1)
            if capacity[p] - taken < 2 * w:
                twice = False
                break
        if twice:
            prefix = [u for u in result.order if (bits >> u) & 1]
            sequence = prefix + [t, t]
            starved = sorted({u for p, _ in net.pre[t] for u, _ in net.consumers[p] if u != t and not (bits >> u) & 1})
            marking = {i: p.initial for i, p in enumerate(net.places) if p.initial}
            for u in sequence:
                for p, w in net.pre[u]:
                    marking[p] = marking.get(p, 0) - w
                for p, w in net.post[u]:
                    marking[p] = marking.get(p, 0) + w
            return {
                "transition": net.describe_transition(t),
                "firing_sequence": [net.transitions[u].id for u in sequence],
                "starved": [net.describe_transition(u) for u in starved],
                "marking": net.marking_json({p: n for p, n in marking.items() if n}),
            }
    return None


# ---------------------------------------------------------------------- the analyses
def analyse(net: Net, hide_sync: bool = True) -> dict[str, Outcome]:
    """Reachability of the final marking, deadlock, leftover tokens, fire-once, valid paths.

    Our encoding must have the form of `form_violations` (else every verdict is `not run`);
    the paper's encoding is analysed with the double-firing criterion of the module doc.
    `hide_sync`: count valid paths with sync transitions hidden (as equivalence sees them).
    """
    if net.encoding == "ours":
        problems = form_violations(net)
        if problems:
            reason = (f"PETRI-E106: the net is not conflict-free and 1-safe, so the structural analyses do not apply: "
                      f"{problems[0]}" + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""))
            return {name: not_run(name, reason) for name in ANALYSES}
    result = run(net)
    net.memo[FIRING_ORDER] = np.asarray(result.order, np.int64)   # topological when all fire: pipelining's hint
    flaw = double_firing(net, result) if net.encoding == "paper" else None
    blocked = result.blocked
    missing, cycles = explain_blocked(net, result) if blocked else ([], [])
    leftovers = _leftovers(net, result)
    absent = _missing_in_final(net, result)
    n_t = len(net.transitions)
    fired = n_t - len(blocked)
    dead_json = net.marking_json(result.dead)
    blocked_json = listed([net.describe_transition(t) for t in blocked])
    outcomes: dict[str, Outcome] = {}

    if blocked:
        first = (f"{missing[0]['readers'][0] if missing[0]['readers'] else missing[0]['place']} waits for "
                 f"'{missing[0]['variable']}': {missing[0]['why']}") if missing else \
                f"instructions wait for each other in a cycle: {' -> '.join(cycles[0])} -> {cycles[0][0]}"
        block_reason = f"{len(blocked)} of {n_t} transition(s) never fire; {first}"
    else:
        block_reason = ""
    stuck = {"dead_marking": dead_json, "blocked": blocked_json, "blocked_count": len(blocked),
             "missing_producers": listed(missing), "cycles": listed(cycles)}

    # reachability of the final marking
    if not blocked and not leftovers and not absent:
        outcomes["reachability"] = passed("reachability", fired=fired, transitions=n_t)
    else:
        if block_reason:
            reason = block_reason
        elif leftovers:
            reason = (f"the run ends with {len(leftovers)} token(s) left over; first: {leftovers[0]['variable']} "
                      f"({leftovers[0]['why']})")
        else:
            reason = f"output place(s) {', '.join(absent)} never receive their token"
        outcomes["reachability"] = failed("reachability", "PETRI-E101", "the final marking is not reachable: " + reason,
                                          {**stuck, "final_marking": net.marking_json(net.final),
                                           "leftover": listed(leftovers), "outputs_without_token": absent},
                                          fired=fired, transitions=n_t)
    # deadlock
    if blocked:
        code = "PETRI-E102" if missing else "PETRI-E103"
        outcomes["deadlock"] = failed("deadlock", code, "deadlock: " + block_reason, stuck, fired=fired, transitions=n_t)
    elif flaw is not None:
        outcomes["deadlock"] = failed("deadlock", "PETRI-E105",
                                      f"paper encoding: {flaw['transition']} can fire twice and starve "
                                      f"{', '.join(flaw['starved']) or 'a sibling consumer'}: the run "
                                      f"{' '.join(flaw['firing_sequence'])} cannot reach the final marking", flaw,
                                      fired=fired, transitions=n_t)
    else:
        outcomes["deadlock"] = passed("deadlock", fired=fired, transitions=n_t)
    # tokens left over
    if leftovers or flaw is not None:
        if leftovers:
            reason = f"{len(leftovers)} place(s) keep a token at the end; first: {leftovers[0]['place']}: {leftovers[0]['why']}"
            cex: dict[str, Any] = {"dead_marking": dead_json, "leftover": listed(leftovers), "leftover_count": len(leftovers)}
        else:
            assert flaw is not None
            reason = f"paper encoding: after {' '.join(flaw['firing_sequence'])} tokens stay in places nobody can empty"
            cex = flaw
        outcomes["termination"] = failed("termination", "PETRI-E104", reason, cex, leftover_places=len(leftovers))
    else:
        outcomes["termination"] = passed("termination", leftover_places=0)
    # every transition fires exactly once
    if blocked or flaw is not None:
        if blocked:
            reason = f"{len(blocked)} transition(s) never fire; first: {blocked_json[0]}"
            cex = {"never_fired": blocked_json, "never_fired_count": len(blocked)}
        else:
            assert flaw is not None
            reason = f"paper encoding: {flaw['transition']} can fire twice"
            cex = flaw
        outcomes["once"] = failed("once", "PETRI-E105", reason, cex, fired=fired, transitions=n_t)
    else:
        outcomes["once"] = passed("once", fired=fired, transitions=n_t)
    # valid paths
    if outcomes["reachability"].ok:
        count = count_valid_paths(net, hide_sync=hide_sync)
        measured = count.to_json()
        if count.status == "exact":
            outcomes["valid_paths"] = passed("valid_paths", **measured)
        elif count.status == "bounds":
            outcomes["valid_paths"] = Outcome("valid_paths", "not run", f"not counted exactly: {count.reason}; "
                                              f"bounds {count.lower_text()} <= paths <= {count.upper_text()}",
                                              measured=measured)
        else:
            outcomes["valid_paths"] = not_run("valid_paths", count.reason, **measured)
    else:
        outcomes["valid_paths"] = failed("valid_paths", "PETRI-E101", "no valid path: the final marking is not reachable",
                                         None, valid_paths=json_number(0), status="exact")
    return outcomes

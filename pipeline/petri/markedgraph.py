"""Liveness and place bounds of marked graphs, by the classical structural theorems.

A marked graph is a P/T net in which every place has exactly one input and one output
transition, arcs of weight 1. For them (Commoner, Holt, Even, Pnueli, "Marked directed
graphs", J. Comput. Syst. Sci. 5, 1971; Murata, "Petri nets: properties, analysis and
applications", Proc. IEEE 77(4), 1989, section VI-A):

* the token count of every directed cycle is invariant under firing;
* the net is live iff every directed cycle carries at least one token initially, i.e. iff
  the subgraph of initially empty places is acyclic (one Kahn pass);
* in a live marked graph, the maximum number of tokens a place can hold over the
  reachable markings is the minimum token count of the directed cycles through it, and a
  place on no cycle is unbounded (the marked graph is bounded iff strongly connected).

Bounds: a simple cycle through an unmarked place p (a -> p -> b) must contain a marked
place; self-loops (a place from t back to t, as the per-transition slot places are) only
lie on their own cycle. For a marked place q (q0 -> q -> q1) we run one Dijkstra from q1
forward and one to q0 backward, with place tokens as edge weights; then
bound(p) = M0(p) + min_q [dist(b, q0) + M0(q) + dist(q1, a)] (a shortest closed walk
through p and q; the shortest closed walk through p is a simple cycle since weights are
non-negative). A place with a place straight back (b -> a) lies on a 2-cycle of U tokens;
cycles whose marked places all hold U tokens or more cannot beat it, so only marked places
with fewer tokens need their runs. Cost O(K · (P + T)) for the K marked places needed
(a bucket queue: weights are small token counts): one (the in-flight place) for the
periodic net of a pipeline, one per item (its loop) for the periodic schedule net, whose
sync buffers all have a credit place straight back. Runs cut at 0 tokens are
reachabilities: all of them together take one topological pass each way, a bit per hub
(the schedule net's item loops at depth 2: 16 graph walks become 2). Boundedness itself
(every place on a cycle) is one strong-components pass.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Sequence

from pipeline.petri.net import Net

INFINITE = float("inf")


@dataclass
class MarkedGraphResult:
    """What the theorems give: the form problems, liveness, a token-free cycle, the bounds."""

    not_marked_graph: list[int] = field(default_factory=list)   # places without one producer and one consumer
    live: bool = True
    empty_cycle: list[int] = field(default_factory=list)        # transitions of a token-free cycle
    bounds: dict[int, float] = field(default_factory=dict)      # place -> bound (inf: unbounded)


def form_problems(net: Net) -> list[int]:
    return [p for p in range(len(net.places))
            if len(net.producers[p]) != 1 or len(net.consumers[p]) != 1
            or net.producers[p][0][1] != 1 or net.consumers[p][0][1] != 1]


def _token_free_cycle(net: Net) -> list[int]:
    """Transitions on a cycle of initially empty places ([] when there is none)."""
    n = len(net.transitions)
    succ: list[list[int]] = [[] for _ in range(n)]
    indegree = [0] * n
    for p, place in enumerate(net.places):
        if place.initial == 0 and net.producers[p] and net.consumers[p]:
            a, b = net.producers[p][0][0], net.consumers[p][0][0]
            succ[a].append(b)
            indegree[b] += 1
    return _cycle_left(n, succ, indegree)


def _cycle_left(n: int, succ: list[list[int]], indegree: list[int]) -> list[int]:
    """A cycle of the graph `succ` ([] when it is acyclic); `indegree` is consumed."""
    ready = [t for t in range(n) if indegree[t] == 0]
    alive = [True] * n
    for t in ready:   # Kahn: the list grows while it is walked (which nodes remain does not depend on the order)
        alive[t] = False
        for b in succ[t]:
            indegree[b] -= 1
            if indegree[b] == 0:
                ready.append(b)
    if len(ready) == n:
        return []
    pred: list[list[int]] = [[] for _ in range(n)]
    for a in range(n):
        if alive[a]:
            for b in succ[a]:
                if alive[b]:
                    pred[b].append(a)
    current = next(t for t in range(n) if alive[t])
    order: list[int] = []
    seen: dict[int, int] = {}
    while current not in seen:
        seen[current] = len(order)
        order.append(current)
        current = pred[current][0]
    cycle = order[seen[current]:]
    cycle.reverse()
    return cycle


def _dijkstra(start: int, adjacency: list[list[tuple[int, int]]], cutoff: float = INFINITE) -> list[float]:
    """Token distances from `start` (INFINITE beyond `cutoff`: farther nodes cannot improve a bound).

    Weights are token counts, mostly 0 and never negative: a bucket per distance (Dial's
    queue, the distinct distances kept in a heap) settles each node once, so a run costs
    O(nodes + arcs + D log D) for D distinct distances, where a heap of nodes paid a log
    factor per arc.
    """
    dist = [INFINITE] * len(adjacency)
    dist[start] = 0
    buckets: dict[float, list[int]] = {0: [start]}
    keys: list[float] = [0]
    while keys:
        d = heapq.heappop(keys)
        bucket = buckets[d]
        for x in bucket:   # zero-weight arcs append to this very bucket, which the loop then reaches
            if dist[x] != d:
                continue   # settled earlier at a smaller distance
            for y, w in adjacency[x]:
                nd = d + w
                if nd <= cutoff and nd < dist[y]:
                    dist[y] = nd
                    target = buckets.get(nd)
                    if target is None:
                        buckets[nd] = [y]
                        heapq.heappush(keys, nd)
                    else:
                        target.append(y)
        del buckets[d]
    return dist


def _strong_components(n: int, succ: list[list[int]]) -> list[int]:
    """Component number of each transition (iterative Tarjan, linear)."""
    index = [-1] * n
    low = [0] * n
    comp = [-1] * n
    on_stack = [False] * n
    stack: list[int] = []
    counter = 0
    components = 0
    for root in range(n):
        if index[root] >= 0:
            continue
        work = [(root, 0)]
        while work:
            v, i = work.pop()
            if i == 0:
                index[v] = low[v] = counter
                counter += 1
                stack.append(v)
                on_stack[v] = True
            recurse = False
            while i < len(succ[v]):
                w = succ[v][i]
                i += 1
                if index[w] < 0:
                    work.append((v, i))
                    work.append((w, 0))
                    recurse = True
                    break
                if on_stack[w]:
                    low[v] = min(low[v], index[w])
            if recurse:
                continue
            if low[v] == index[v]:
                while True:
                    w = stack.pop()
                    on_stack[w] = False
                    comp[w] = components
                    if w == v:
                        break
                components += 1
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
    return comp


@dataclass
class _ZeroReach:
    """For hubs whose searches stop at 0 tokens: which hubs' ends reach each transition by token-free arcs.

    Bit i stands for the i-th hub by increasing tokens (the lowest bit set is the cheapest
    hub); `from_q1[x]` has bit i when hub i's consumer reaches x, `to_q0[x]` when x reaches
    hub i's producer: the distances 0 of the two searches, every other one being beyond the cut.
    """

    tokens: list[int]
    bit_of: dict[int, int]   # hub place -> its bit
    from_q1: list[int]
    to_q0: list[int]

    def improve(self, p: int, a: int, b: int, m: int, best: float) -> float:
        """`best` lowered by the cycles through p and one of these hubs (as the search loop would)."""
        shared = self.from_q1[a] & self.to_q0[b]
        own = self.bit_of.get(p)
        if own is not None:
            if self.from_q1[a] >> own & 1:
                best = min(best, m)   # p is a hub itself: the cycle p, then b ~> a without tokens
            shared &= ~(1 << own)
        if shared:
            best = min(best, m + self.tokens[(shared & -shared).bit_length() - 1])
        return best


def _zero_reach(n: int, forward: list[list[tuple[int, int]]], hubs: list[tuple[int, int, int, int]]) -> _ZeroReach | None:
    """Token-free reachability for `hubs` (q, a, b, tokens) in one pass each way; None when the
    token-free arcs have a cycle (no topological order: the searches run one by one)."""
    if not hubs:
        return None
    succ: list[list[int]] = [[] for _ in range(n)]
    indegree = [0] * n
    for x, arcs in enumerate(forward):
        for y, w in arcs:
            if w == 0:
                succ[x].append(y)
                indegree[y] += 1
    order = [x for x in range(n) if indegree[x] == 0]
    for x in order:   # Kahn: the list grows while it is walked
        for y in succ[x]:
            indegree[y] -= 1
            if indegree[y] == 0:
                order.append(y)
    if len(order) < n:
        return None
    ranked = sorted(hubs, key=lambda h: h[3])
    from_q1 = [0] * n
    to_q0 = [0] * n
    for i, (_, a, b, _) in enumerate(ranked):
        from_q1[b] |= 1 << i
        to_q0[a] |= 1 << i
    for x in order:
        mask = from_q1[x]
        if mask:
            for y in succ[x]:
                from_q1[y] |= mask
    for x in reversed(order):
        mask = to_q0[x]
        for y in succ[x]:
            mask |= to_q0[y]
        to_q0[x] = mask
    return _ZeroReach([h[3] for h in ranked], {h[0]: i for i, h in enumerate(ranked)}, from_q1, to_q0)


def analyse_marked_graph(net: Net, places: Sequence[int] | None = None) -> MarkedGraphResult:
    """Liveness (token-free cycle), boundedness (strong components) and the bounds of `places` (default all).

    Bounds: a place p (a -> b) with a place straight back (b -> a) lies on a 2-cycle, which
    bounds it by U = M0(p) + M0(back). A cycle through p whose marked places all hold >= U
    tokens cannot do better, so only marked places with fewer tokens than U (every marked
    place when there is no such 2-cycle) need their two Dijkstra runs (module doc).
    """
    n = len(net.transitions)
    forward: list[list[tuple[int, int]]] = [[] for _ in range(n)]
    backward: list[list[tuple[int, int]]] = [[] for _ in range(n)]
    succ: list[list[int]] = [[] for _ in range(n)]
    empty_succ: list[list[int]] = [[] for _ in range(n)]   # arcs through initially empty places
    empty_indegree = [0] * n
    arcs: dict[int, tuple[int, int, int]] = {}   # place -> (producer, consumer, tokens)
    back: dict[int, int] = {}                    # producer * n + consumer -> fewest tokens on such a place
    not_marked_graph: list[int] = []
    producers, consumers = net.producers, net.consumers
    # one pass over the places gives the form problems (form_problems), the token-free arcs
    # (_token_free_cycle) and the arcs of the marked graph
    for p, place in enumerate(net.places):
        made, taken = producers[p], consumers[p]
        m = place.initial
        if len(made) == 1 and len(taken) == 1:
            (a, wa), (b, wb) = made[0], taken[0]
            if wa != 1 or wb != 1:
                not_marked_graph.append(p)
            arcs[p] = (a, b, m)
            forward[a].append((b, m))
            backward[b].append((a, m))
            succ[a].append(b)
            key = a * n + b
            fewest = back.get(key)
            if fewest is None or m < fewest:
                back[key] = m
        else:
            not_marked_graph.append(p)
            if not (made and taken):
                continue
            a, b = made[0][0], taken[0][0]
        if m == 0:
            empty_succ[a].append(b)
            empty_indegree[b] += 1
    result = MarkedGraphResult(not_marked_graph=not_marked_graph)
    result.empty_cycle = _cycle_left(n, empty_succ, empty_indegree)
    del empty_succ, empty_indegree
    result.live = not result.empty_cycle and not any(not producers[p] for p in not_marked_graph)
    component = _strong_components(n, succ)
    del succ
    bounds = result.bounds
    for p, (a, b, _) in arcs.items():
        if component[a] != component[b]:
            bounds[p] = INFINITE
    for p in not_marked_graph:
        if producers[p] and not consumers[p]:
            bounds[p] = INFINITE
    wanted: list[tuple[int, int, int, int, float]] = []   # (place, producer, consumer, tokens, 2-cycle bound)
    get_arc, get_back = arcs.get, back.get
    limit: float = 0
    for p in (places if places is not None else range(len(net.places))):
        arc = get_arc(p)
        if arc is None or p in bounds:
            continue
        a, b, m = arc
        if a == b:
            wanted.append((p, a, b, m, m))
            continue
        there = get_back(b * n + a)
        u = INFINITE if there is None else m + there
        wanted.append((p, a, b, m, u))
        if u > limit:
            limit = u
    hubs = [(q, a, b, m) for q, (a, b, m) in arcs.items() if m > 0 and a != b and m < limit]
    # a run through q only matters below the largest 2-cycle bound: cut the searches there; a run
    # cut at 0 tokens is a reachability, done for all such hubs at once when it can be
    zero = _zero_reach(n, forward, [h for h in hubs if limit - h[3] - 1 == 0])
    runs = [(q, m, _dijkstra(b, forward, limit - m - 1), _dijkstra(a, backward, limit - m - 1))
            for q, a, b, m in hubs if zero is None or limit - m - 1 != 0]
    for p, a, b, m, best in wanted:
        if a == b:
            bounds[p] = m
            continue
        for q, tokens, from_q1, to_q0 in runs:
            if tokens >= best:
                continue
            if q == p:
                # p is itself marked: the cycle p, then b ~> a
                walk = m + from_q1[a]
            else:
                # closed walk: p (a -> b), then b ~> q0, q (its tokens), q1 ~> a
                walk = m + to_q0[b] + tokens + from_q1[a]
            if walk < best:
                best = walk
        if zero is not None:
            best = zero.improve(p, a, b, m, best)
        bounds[p] = best
    return result

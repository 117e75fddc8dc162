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
from typing import Any, Sequence

import numpy as np

from pipeline.petri.net import Net

INFINITE = float("inf")


@dataclass
class MarkedGraphResult:
    """What the theorems give: the form problems, liveness, a token-free cycle, the bounds."""

    not_marked_graph: list[int] = field(default_factory=list)   # places without one producer and one consumer
    live: bool = True
    empty_cycle: list[int] = field(default_factory=list)        # transitions of a token-free cycle
    bounds: dict[int, float] = field(default_factory=dict)      # place -> bound (inf: unbounded)
    values: Any = field(default=None, compare=False, repr=False)  # the bounds per place as an array (nan: none)


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
    """`_dijkstra_csr` on adjacency lists of (target, weight)."""
    offsets, targets, weights = [0], [], []
    for arcs in adjacency:
        for y, w in arcs:
            targets.append(y)
            weights.append(w)
        offsets.append(len(targets))
    return _dijkstra_csr(start, (offsets, targets, weights), cutoff)


Csr = tuple[list[int], list[int], list[int]]   # offsets (one per node, plus the end), targets, weights


def _csr(n: int, src: np.ndarray, dst: np.ndarray, weight: np.ndarray) -> Csr:
    """The arcs src -> dst (weight) grouped by source, in their order: flat lists, no tuple per arc."""
    order = np.argsort(src, kind="stable")
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(src, minlength=n), out=offsets[1:])
    return offsets.tolist(), dst[order].tolist(), weight[order].tolist()


def _dijkstra_csr(start: int, graph: Csr, cutoff: float = INFINITE) -> list[float]:
    """Token distances from `start` (INFINITE beyond `cutoff`: farther nodes cannot improve a bound).

    Weights are token counts, mostly 0 and never negative: a bucket per distance (Dial's
    queue, the distinct distances kept in a heap) settles each node once, so a run costs
    O(nodes + arcs + D log D) for D distinct distances, where a heap of nodes paid a log
    factor per arc.
    """
    offsets, targets, weights = graph
    dist = [INFINITE] * (len(offsets) - 1)
    dist[start] = 0
    buckets: dict[float, list[int]] = {0: [start]}
    keys: list[float] = [0]
    while keys:
        d = heapq.heappop(keys)
        bucket = buckets[d]
        for x in bucket:   # zero-weight arcs append to this very bucket, which the loop then reaches
            if dist[x] != d:
                continue   # settled earlier at a smaller distance
            begin, end = offsets[x], offsets[x + 1]
            for y, w in zip(targets[begin:end], weights[begin:end]):
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


def _reaches_all(n: int, succ: list[list[int]]) -> bool:
    """Whether node 0 reaches every node (a depth-first walk)."""
    seen = [False] * n
    seen[0] = True
    stack = [0]
    count = 1
    while stack:
        for y in succ[stack.pop()]:
            if not seen[y]:
                seen[y] = True
                count += 1
                stack.append(y)
    return count == n


def _components(n: int, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Strong component of each transition: one component when node 0 reaches every node and
    every node reaches it (the periodic nets of well-formed descriptions; two walks), else Tarjan."""
    succ = _successors(n, src, dst)
    if n and _reaches_all(n, succ) and _reaches_all(n, _successors(n, dst, src)):
        return np.zeros(n, np.int64)
    return np.asarray(_strong_components(n, succ), np.int64)


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

    def improve_all(self, p: np.ndarray, a: np.ndarray, b: np.ndarray, m: np.ndarray, best: np.ndarray) -> np.ndarray:
        """`improve` for arrays of places: bit arithmetic on int64 up to 62 hubs, else one place at a time."""
        if len(self.tokens) > 62:
            return np.array([self.improve(*args) for args in zip(p.tolist(), a.tolist(), b.tolist(), m.tolist(),
                                                                  best.tolist())], float)
        from_q1 = np.asarray(self.from_q1, np.int64)[a]
        shared = from_q1 & np.asarray(self.to_q0, np.int64)[b]
        own = np.zeros(len(p), np.int64)
        if self.bit_of:
            hubs = np.fromiter(self.bit_of, np.int64, len(self.bit_of))
            bits = np.fromiter(self.bit_of.values(), np.int64, len(self.bit_of))
            order = np.argsort(hubs)
            hubs, bits = hubs[order], bits[order]
            at = np.minimum(np.searchsorted(hubs, p), len(hubs) - 1)
            is_hub = hubs[at] == p
            own[is_hub] = np.left_shift(1, bits[at[is_hub]])
        best = np.where((from_q1 & own) != 0, np.minimum(best, m), best)
        shared &= ~own
        cheapest = np.full(len(p), INFINITE)
        for i in reversed(range(len(self.tokens))):   # the lowest bit set is the cheapest hub
            cheapest = np.where((shared >> i) & 1 == 1, float(self.tokens[i]), cheapest)
        return np.minimum(best, m + cheapest)


def _zero_reach(n: int, zero_arcs: tuple[np.ndarray, np.ndarray], hubs: list[tuple[int, int, int, int]],
                order: list[int] | None = None) -> _ZeroReach | None:
    """Token-free reachability for `hubs` (q, a, b, tokens) in one pass each way, over the arcs
    `zero_arcs` (producers, consumers) of the token-free places; None when those arcs have a
    cycle (no topological order: the searches run one by one). `order`: a topological order
    of those arcs, known already (else Kahn finds one)."""
    if not hubs:
        return None
    src, dst = zero_arcs
    succ = _successors(n, src, dst)
    if order is None:
        indegree = np.bincount(dst, minlength=n).tolist()
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


@dataclass
class MarkedArcs:
    """A net as the theorems read it, one entry per place, in integer arrays.

    The first producer and consumer of each place (-1: none), how many there are, whether
    those arcs weigh 1, and the initial tokens: all a marked-graph analysis needs, without
    a Python object per place (the periodic net of 100,000 operations has 370,000 places;
    pipeline.petri.pipelining builds it in this form directly).
    """

    n_transitions: int
    producer: np.ndarray
    consumer: np.ndarray
    producers: np.ndarray
    consumers: np.ndarray
    unit: np.ndarray      # the arcs of a place with one producer and one consumer weigh 1
    tokens: np.ndarray
    # a hint: the transitions in an order that the token-free arcs may follow (checked, never trusted)
    order: np.ndarray | None = None
    # a hint: (first, count) when places first, first + 1, ... first + count - 1 form a cycle (checked)
    cycles: list[tuple[int, int]] | None = None


def arcs_of(net: Net) -> MarkedArcs:
    """The arrays of `net` (its producer and consumer lists in their order)."""
    n_p = len(net.places)
    producers, consumers = net.producers, net.consumers
    return MarkedArcs(
        len(net.transitions),
        np.fromiter((a[0][0] if a else -1 for a in producers), np.int64, n_p),
        np.fromiter((a[0][0] if a else -1 for a in consumers), np.int64, n_p),
        np.fromiter(map(len, producers), np.int64, n_p),
        np.fromiter(map(len, consumers), np.int64, n_p),
        np.fromiter((len(a) != 1 or a[0][1] == 1 for a in producers), bool, n_p)
        & np.fromiter((len(a) != 1 or a[0][1] == 1 for a in consumers), bool, n_p),
        np.fromiter((p.initial for p in net.places), np.int64, n_p))


def _rank(n: int, order: np.ndarray | None) -> np.ndarray | None:
    """Each transition's position in `order`; None when `order` is not a permutation of the transitions."""
    if order is None or len(order) != n or (n and (order.min() < 0 or order.max() >= n)):
        return None
    rank = np.full(n, -1, np.int64)
    rank[order] = np.arange(n, dtype=np.int64)
    return rank if n == 0 or (rank >= 0).all() else None


def _ends(n: int, src: np.ndarray, dst: np.ndarray, tokens: np.ndarray) -> tuple[int, int] | None:
    """(source, sink) when the arcs are strongly connected by a cheap certificate, else None.

    Called when the token-free arcs are known to be acyclic: then every node is reached
    from a node without token-free arc in (a source) and reaches one without token-free
    arc out (a sink). With one source s and one sink k, s reaches every node and every
    node reaches k, all by token-free arcs; an arc k -> s then closes every cycle: one
    strong component, and searches from s forward or to k backward find 0 tokens
    everywhere. The periodic net of a live one-shot net has this form (start, end).
    """
    if n == 0:
        return None
    zero = tokens == 0
    sources = np.flatnonzero(np.bincount(dst[zero], minlength=n) == 0)
    sinks = np.flatnonzero(np.bincount(src[zero], minlength=n) == 0)
    if len(sources) != 1 or len(sinks) != 1:
        return None
    s, k = int(sources[0]), int(sinks[0])
    if s != k and not bool(((src == k) & (dst == s)).any()):
        return None
    return s, k


def _cycle_groups(n: int, arcs: MarkedArcs, single: np.ndarray) -> np.ndarray | None:
    """A group per transition such that a group's transitions reach each other, from `arcs.cycles`
    (transitions on one cycle, or on cycles sharing a transition, form one group; any other
    transition is a group of its own); None without cycles or when one of them is not a cycle."""
    cycles = arcs.cycles
    if not cycles or any(count <= 0 for _, count in cycles):
        return None
    firsts = np.fromiter((first for first, _ in cycles), np.int64, len(cycles))
    counts = np.fromiter((count for _, count in cycles), np.int64, len(cycles))
    if firsts.min() < 0 or (firsts + counts).max() > len(single):
        return None
    starts = np.cumsum(counts) - counts
    place = np.repeat(firsts - starts, counts) + np.arange(int(counts.sum()), dtype=np.int64)
    following = place + 1
    following[starts + counts - 1] = firsts   # the last place of a cycle leads back to its first
    if not (single[place].all() and (arcs.consumer[place] == arcs.producer[following]).all()):
        return None
    node = arcs.producer[place]
    cycle = np.repeat(np.arange(len(cycles), dtype=np.int64), counts)
    parent = list(range(len(cycles)))

    def root(c: int) -> int:
        while parent[c] != c:
            parent[c] = parent[parent[c]]
            c = parent[c]
        return c

    by_node = np.argsort(node, kind="stable")
    shared = np.flatnonzero(node[by_node][1:] == node[by_node][:-1])
    for c, d in zip(cycle[by_node][shared].tolist(), cycle[by_node][shared + 1].tolist()):
        parent[root(c)] = root(d)
    roots = np.fromiter((root(c) for c in range(len(cycles))), np.int64, len(cycles))
    group = np.full(n, -1, np.int64)
    group[node] = roots[cycle]
    alone = group < 0
    group[alone] = len(cycles) + np.arange(int(alone.sum()), dtype=np.int64)
    return group


def _quotient_components(group: np.ndarray, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """`_components` of the graph whose nodes are the groups (each group lies in one strong component)."""
    a, b = group[src], group[dst]
    across = a != b
    return _components(int(group.max()) + 1, a[across], b[across])[group]


def _successors(n: int, src: np.ndarray, dst: np.ndarray) -> list[list[int]]:
    """Adjacency lists of the arcs src[i] -> dst[i], each list in the order of the arcs."""
    order = np.argsort(src, kind="stable")
    targets = dst[order].tolist()
    ends = np.cumsum(np.bincount(src, minlength=n)).tolist()
    begin = 0
    succ: list[list[int]] = []
    for end in ends:
        succ.append(targets[begin:end])
        begin = end
    return succ


def analyse_marked_graph(net: Net, places: Sequence[int] | None = None) -> MarkedGraphResult:
    """Liveness (token-free cycle), boundedness (strong components) and the bounds of `places` (default all)."""
    return analyse_arcs(arcs_of(net), places)


def analyse_arcs(arcs: MarkedArcs, places: Sequence[int] | None = None) -> MarkedGraphResult:
    """`analyse_marked_graph` on the arrays of a net.

    Bounds: a place p (a -> b) with a place straight back (b -> a) lies on a 2-cycle, which
    bounds it by U = M0(p) + M0(back). A cycle through p whose marked places all hold >= U
    tokens cannot do better, so only marked places with fewer tokens than U (every marked
    place when there is no such 2-cycle) need their two Dijkstra runs (module doc). The
    per-place work (form, 2-cycles, combining the runs) is array arithmetic; the graph
    walks (Kahn, Tarjan, Dijkstra) run on adjacency lists of the transitions.
    """
    n = arcs.n_transitions
    producer, consumer, tokens = arcs.producer, arcs.consumer, arcs.tokens
    n_places = len(tokens)
    single = (arcs.producers == 1) & (arcs.consumers == 1)
    not_mg = ~(single & arcs.unit)
    result = MarkedGraphResult(not_marked_graph=np.flatnonzero(not_mg).tolist())
    empty = np.flatnonzero((arcs.producers > 0) & (arcs.consumers > 0) & (tokens == 0))
    src, dst = producer[empty], consumer[empty]
    rank = _rank(n, arcs.order)
    acyclic = rank is not None and bool((rank[src] < rank[dst]).all())
    result.empty_cycle = [] if acyclic else _cycle_left(n, _successors(n, src, dst),
                                                        np.bincount(dst, minlength=n).tolist())
    result.live = not result.empty_cycle and not bool((arcs.producers[not_mg] == 0).any())
    marked = np.flatnonzero(single)                  # the places of the marked graph's arcs
    a_all, b_all, m_all = producer[marked], consumer[marked], tokens[marked]
    loop = a_all == b_all
    ends = _ends(n, a_all[~loop], b_all[~loop], m_all[~loop]) if acyclic else None
    if ends is not None:
        component = np.zeros(n, np.int64)
    else:
        groups = _cycle_groups(n, arcs, single)
        component = _components(n, a_all[~loop], b_all[~loop]) if groups is None else \
            _quotient_components(groups, a_all[~loop], b_all[~loop])
    bound = np.full(n_places, np.nan)
    if len(marked):
        bound[marked[component[a_all] != component[b_all]]] = INFINITE
    bound[not_mg & (arcs.producers > 0) & (arcs.consumers == 0)] = INFINITE
    # the places whose bound is asked and not yet known
    asked = np.arange(n_places) if places is None else np.asarray(places, np.int64).reshape(-1)
    asked = asked[single[asked] & np.isnan(bound[asked])]
    a, b, m = producer[asked], consumer[asked], tokens[asked]
    own_loop = a == b
    # fewest tokens on a place straight back (b -> a): the 2-cycle bound U
    keys = a_all * n + b_all
    order = np.lexsort((m_all, keys))
    sorted_keys = keys[order]
    first = np.ones(len(sorted_keys), bool)
    first[1:] = sorted_keys[1:] != sorted_keys[:-1]
    back_keys, back_tokens = sorted_keys[first], m_all[order][first]
    wanted = b * n + a
    at = np.minimum(np.searchsorted(back_keys, wanted), max(len(back_keys) - 1, 0))
    found = (back_keys[at] == wanted) if len(back_keys) else np.zeros(len(wanted), bool)
    best = np.where(found, m + (back_tokens[at] if len(back_keys) else 0), INFINITE).astype(float)
    best[own_loop] = m[own_loop]
    limit = float(best[~own_loop].max()) if (~own_loop).any() else 0.0
    limit = max(limit, 0.0)
    is_hub = (m_all > 0) & ~loop & (m_all < limit)
    hubs = list(zip(marked[is_hub].tolist(), a_all[is_hub].tolist(), b_all[is_hub].tolist(), m_all[is_hub].tolist()))
    # a run through q only matters below the largest 2-cycle bound: cut the searches there; a run
    # cut at 0 tokens is a reachability, done for all such hubs at once when it can be
    zero_arcs = (a_all[m_all == 0], b_all[m_all == 0])
    zero = _zero_reach(n, zero_arcs, [h for h in hubs if limit - h[3] - 1 == 0],
                       arcs.order.tolist() if acyclic and arcs.order is not None else None)
    searched = [h for h in hubs if zero is None or limit - h[3] - 1 != 0]
    if searched:
        graphs: dict[bool, Csr] = {}

        def distances(start: int, forward: bool, cutoff: float) -> np.ndarray:
            if ends is not None and cutoff >= 0 and start == ends[0 if forward else 1]:
                return np.zeros(n)   # the only token-free source reaches every node (the sink: is reached) at 0
            if forward not in graphs:
                graphs[forward] = _csr(n, a_all, b_all, m_all) if forward else _csr(n, b_all, a_all, m_all)
            return np.asarray(_dijkstra_csr(start, graphs[forward], cutoff), float)

        other = ~own_loop
        ao, bo, mo, qo, bo_best = a[other], b[other], m[other], asked[other], best[other]
        for q, qa, qb, qm in searched:
            from_q1 = distances(qb, True, limit - qm - 1)
            to_q0 = distances(qa, False, limit - qm - 1)
            # closed walk: p (a -> b), then b ~> q0, q (its tokens), q1 ~> a; p == q: the cycle p, then b ~> a
            walk = np.where(qo == q, mo + from_q1[ao], mo + to_q0[bo] + qm + from_q1[ao])
            np.minimum(bo_best, walk, out=bo_best)
        best[other] = bo_best
    if zero is not None:
        other = ~own_loop
        best[other] = zero.improve_all(asked[other], a[other], b[other], m[other], best[other])
    bound[asked] = best
    known = np.flatnonzero(~np.isnan(bound))
    result.bounds = dict(zip(known.tolist(), bound[known].tolist()))
    result.values = bound
    return result

"""The marked-graph bounds keep their values when the searches take their fast paths.

`_dijkstra` (a bucket per distance) is compared with a textbook heap Dijkstra written
here; the one-pass token-free reachability of `_zero_reach` (hubs as bits) with the
per-hub searches it replaces; and, on small schedule nets, the buffer bounds with the
maxima an explicit-state exploration observes.
"""

from __future__ import annotations

import heapq
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.petri.petri_helpers import graphs_of, items_text, random_network, split_network
from tests.petri.petri_oracle import explore

from pipeline.petri import markedgraph
from pipeline.petri.markedgraph import INFINITE, analyse_marked_graph
from pipeline.petri.net import Net, PlaceKind, TransitionKind
from pipeline.petri.pipelining import check_pipeline, periodic_net, schedule_net
from pipeline.petri.schedule import default_schedule
from pipeline.petri.translate import translate


markedgraph_zero_reach = markedgraph._zero_reach


def heap_dijkstra(start: int, adjacency: list[list[tuple[int, int]]], cutoff: float) -> list[float]:
    dist = [INFINITE] * len(adjacency)
    dist[start] = 0
    heap = [(0, start)]
    while heap:
        d, x = heapq.heappop(heap)
        if d > dist[x]:
            continue
        for y, w in adjacency[x]:
            if d + w <= cutoff and d + w < dist[y]:
                dist[y] = d + w
                heapq.heappush(heap, (d + w, y))
    return dist


@pytest.mark.parametrize("seed", range(30))
def test_bucket_dijkstra_equals_heap_dijkstra(seed: int) -> None:
    rng = random.Random(seed)
    n = rng.randint(1, 60)
    adjacency = [[(rng.randrange(n), rng.choice([0, 0, 0, 1, 2, 5])) for _ in range(rng.randint(0, 4))] for _ in range(n)]
    for cutoff in (0, 1, 3, INFINITE):
        start = rng.randrange(n)
        assert markedgraph._dijkstra(start, adjacency, cutoff) == heap_dijkstra(start, adjacency, cutoff)


def split_schedule_net(seed: int, ops: int, n_items: int, depth: int) -> tuple[Net, Net]:
    rng = random.Random(seed)
    network = random_network(rng, ops, n_inputs=2, n_params=3, fan=6)
    items = [f"ITEM{i}" for i in range(n_items)]
    net = translate(graphs_of(items_text(split_network(network, items, rng))))
    return net, schedule_net(default_schedule(net), depth)


def without_zero_reach(monkeypatch: pytest.MonkeyPatch, net: Net, places: list[int] | None) -> markedgraph.MarkedGraphResult:
    with monkeypatch.context() as patch:
        patch.setattr(markedgraph, "_zero_reach", lambda *args: None)
        return analyse_marked_graph(net, places)


@pytest.mark.parametrize("seed", range(6))
def test_zero_reach_gives_the_bounds_of_the_per_hub_searches(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    net, code = split_schedule_net(seed, 120 + 40 * seed, 2 + seed % 4, 1 + seed % 3)
    buffers = [p for p, place in enumerate(code.places) if place.kind is PlaceKind.VALUE]
    fast = analyse_marked_graph(code, buffers)
    assert fast == without_zero_reach(monkeypatch, code, buffers)
    assert any(b == 1 for b in fast.bounds.values()) or seed % 3 == 0   # the reachability found short cycles
    periodic = periodic_net(net, 2)
    assert analyse_marked_graph(periodic) == without_zero_reach(monkeypatch, periodic, None)
    with monkeypatch.context() as patch:
        before = check_pipeline(net, 2, default_schedule(net)).to_json()
        patch.setattr(markedgraph, "_zero_reach", lambda *args: None)
        assert check_pipeline(net, 2, default_schedule(net)).to_json() == before


def test_a_token_free_cycle_falls_back_to_the_searches(monkeypatch: pytest.MonkeyPatch) -> None:
    looped = Net("looped", "periodic")
    a, b, c = (looped.add_transition(x, x, x, "c", TransitionKind.CONTROL) for x in "abc")
    # a <-> b without tokens (not live); b -> c -> b bounds b -> c by 2; c -> a holds 1 token (a hub cut at 0)
    for x, y, tokens in ((a, b, 0), (b, a, 0), (b, c, 0), (c, b, 2), (c, a, 1)):
        p = looped.add_place(f"p{x}{y}", "v", "c", PlaceKind.CONTROL, tokens)
        looped.arc_out(x, p)
        looped.arc_in(p, y)
    calls: list[object] = []
    with monkeypatch.context() as patch:
        patch.setattr(markedgraph, "_zero_reach", lambda *args: calls.append(markedgraph_zero_reach(*args)))
        spied = analyse_marked_graph(looped)
    assert calls == [None]   # asked, and declined: the token-free arcs have no topological order
    result = analyse_marked_graph(looped)
    assert result.empty_cycle and result == spied == without_zero_reach(monkeypatch, looped, None)
    assert result.bounds[3] == 2 and result.bounds[4] == 1 + 0 + 0


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**9), size=st.integers(2, 6), depth=st.integers(1, 2))
def test_schedule_net_buffer_bounds_agree_with_exploration(seed: int, size: int, depth: int) -> None:
    _, code = split_schedule_net(seed, size, 2, depth)
    buffers = [p for p, place in enumerate(code.places) if place.kind is PlaceKind.VALUE]
    result = analyse_marked_graph(code, buffers)
    found = explore(code, max_states=50_000, counts=False)
    assert not found.gave_up and result.live == (not found.dead)
    for p in buffers:
        assert result.bounds[p] == found.max_tokens.get(p, 0), code.places[p].id


@pytest.mark.parametrize("seed", range(150))
def test_zero_reach_on_random_marked_graphs(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Token-free arcs forward in index order (so acyclic), marked arcs anywhere: all bounds equal."""
    rng = random.Random(seed)
    net = Net("random", "periodic")
    n = rng.randint(2, 25)
    for t in range(n):
        net.add_transition(f"t{t}", f"t{t}", "x", "c", TransitionKind.CONTROL)
    for i in range(rng.randint(n, 4 * n)):
        x, y = rng.randrange(n), rng.randrange(n)
        tokens = rng.choice([1, 1, 2, 3]) if x >= y else rng.choice([0, 0, 0, 1, 2])
        p = net.add_place(f"p{i}", "v", "c", PlaceKind.CONTROL, tokens)
        net.arc_out(x, p)
        net.arc_in(p, y)
    result = analyse_marked_graph(net)
    assert result == without_zero_reach(monkeypatch, net, None)

"""The periodic and schedule nets built as arrays equal the arrays read from the nets themselves.

`check_pipeline` analyses `periodic_arcs` and `schedule_arcs` (no place objects) and builds
`periodic_net` / `schedule_net` only to describe a problem: both must index places and
transitions alike, on passing and failing cases (the golden cases) and on random splits.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from tests.petri import golden_cases
from tests.petri.petri_helpers import graphs_of, items_text, random_network, split_network

from pipeline.petri import markedgraph
from pipeline.petri.analysis import FIRING_ORDER, run
from pipeline.petri.markedgraph import MarkedArcs, analyse_arcs, analyse_marked_graph, arcs_of
from pipeline.petri.net import PlaceKind
from pipeline.petri.pipelining import periodic_arcs, periodic_net, schedule_arcs, schedule_net
from pipeline.petri.schedule import STEP_ORDER, Schedule, Step, check_schedule, default_schedule
from pipeline.petri.translate import translate


def same(x: MarkedArcs, y: MarkedArcs) -> None:
    assert x.n_transitions == y.n_transitions
    for name in ("producer", "consumer", "producers", "consumers", "unit", "tokens"):
        assert np.array_equal(getattr(x, name), getattr(y, name)), name


def random_split(seed: int):
    rng = random.Random(seed)
    network = random_network(rng, 30 + 10 * seed, n_inputs=2, n_params=3, fan=5)
    items = [f"ITEM{i}" for i in range(2 + seed % 3)]
    return translate(graphs_of(items_text(split_network(network, items, rng))))


@pytest.mark.parametrize("seed", range(8))
def test_arrays_equal_the_nets(seed: int) -> None:
    net = random_split(seed)
    for depth in (0, 1, 2):
        periodic = periodic_net(net, depth)
        same(periodic_arcs(net, depth), arcs_of(periodic))
        assert analyse_arcs(periodic_arcs(net, depth)) == analyse_marked_graph(periodic)
        loops, code = schedule_arcs(default_schedule(net), depth), schedule_net(default_schedule(net), depth)
        same(loops.arcs, arcs_of(code))
        assert loops.buffers == [p for p, place in enumerate(code.places) if place.kind is PlaceKind.VALUE]
        assert loops.buffer_ids == [code.places[p].id for p in loops.buffers]


@pytest.mark.parametrize("name", sorted(golden_cases._cases()))
def test_arrays_equal_the_nets_of_the_golden_cases(name: str) -> None:
    case = golden_cases._cases()[name]()
    net = translate(case["items"], case.get("encoding", "ours"))
    for depth in (0, 2):
        same(periodic_arcs(net, depth), arcs_of(periodic_net(net, depth)))
        loops, code = schedule_arcs(default_schedule(net), depth), schedule_net(default_schedule(net), depth)
        same(loops.arcs, arcs_of(code))


@pytest.mark.parametrize("seed", range(8))
def test_firing_order_hint_changes_no_result(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The one-shot run's firing order lets the periodic analysis skip its graph walks; a wrong,
    partial or absent order (or a net the certificate does not fit: depth 0) gives the same result."""
    net = random_split(seed)
    order = run(net).order
    assert len(order) == len(net.transitions)
    for depth in (0, 1, 2):
        net.memo.clear()
        plain = periodic_arcs(net, depth)
        assert plain.order is None
        expected = analyse_arcs(plain)
        for hint in (order[::-1], order[1:], order[:1] + order):
            net.memo[FIRING_ORDER] = hint
            assert analyse_arcs(periodic_arcs(net, depth)) == expected
        net.memo[FIRING_ORDER] = order
        hinted = periodic_arcs(net, depth)
        if depth > 0 and not expected.not_marked_graph:
            with monkeypatch.context() as patch:   # the certificate holds: no walk, no search
                patch.setattr(markedgraph, "_components", None)
                patch.setattr(markedgraph, "_dijkstra_csr", None)
                patch.setattr(markedgraph, "_cycle_left", None)
                assert analyse_arcs(hinted) == expected
        assert analyse_arcs(hinted) == expected
        assert np.array_equal(analyse_arcs(hinted).values, expected.values, equal_nan=True)


def with_barriers(schedule: Schedule, rng: random.Random) -> Schedule:
    """The schedule with barriers 1 and 2 at random places of every item (shared transitions)."""
    items = {}
    for item, steps in schedule.items.items():
        cut = sorted(rng.randint(0, len(steps)) for _ in range(2))
        items[item] = (steps[:cut[0]] + [Step("barrier", barrier=1)] + steps[cut[0]:cut[1]]
                       + [Step("barrier", barrier=2)] + steps[cut[1]:])
    return Schedule("barrier", items, "test")


@pytest.mark.parametrize("seed", range(8))
def test_cycle_hint_changes_no_result(seed: int) -> None:
    """The schedule net's program-counter loops group its transitions for the strong components;
    a wrong hint (not a cycle) is refused and gives the same result as none."""
    net = random_split(seed)
    rng = random.Random(seed)
    for schedule in (default_schedule(net), with_barriers(default_schedule(net), rng)):
        for depth in (0, 1, 2):
            loops = schedule_arcs(schedule, depth)
            arcs, cycles = loops.arcs, loops.arcs.cycles
            assert cycles and markedgraph._cycle_groups(arcs.n_transitions, arcs, arcs.producers == 1) is not None
            hinted = analyse_arcs(arcs, loops.buffers)
            arcs.cycles = None
            expected = analyse_arcs(arcs, loops.buffers)
            assert hinted == expected
            assert np.array_equal(hinted.values, expected.values, equal_nan=True)
            for wrong in ([(1, cycles[0][1])], [(c + 1, n) for c, n in cycles], [(0, len(arcs.tokens) + 1)], [(0, 0)]):
                arcs.cycles = wrong
                assert analyse_arcs(arcs, loops.buffers) == expected


@pytest.mark.parametrize("seed", range(20))
def test_cycle_hint_on_random_marked_graphs(seed: int) -> None:
    """Random cycles (some sharing transitions) plus random arcs, often not strongly connected:
    the grouped strong components give the bounds the plain ones give."""
    rng = random.Random(seed)
    n = rng.randint(1, 25)
    src: list[int] = []
    dst: list[int] = []
    cycles = []
    for _ in range(rng.randint(1, 4)):
        nodes = [rng.randrange(n) for _ in range(rng.randint(1, 6))]
        cycles.append((len(src), len(nodes)))
        src += nodes
        dst += nodes[1:] + nodes[:1]
    for _ in range(rng.randint(0, 2 * n)):
        src.append(rng.randrange(n))
        dst.append(rng.randrange(n))
    ones = np.ones(len(src), np.int64)
    tokens = np.asarray([rng.choice([0, 0, 1, 2]) for _ in src], np.int64)
    arcs = MarkedArcs(n, np.asarray(src, np.int64), np.asarray(dst, np.int64), ones, ones.copy(),
                      np.ones(len(src), bool), tokens, cycles=cycles)
    assert markedgraph._cycle_groups(n, arcs, np.ones(len(src), bool)) is not None
    hinted = analyse_arcs(arcs)
    arcs.cycles = None
    expected = analyse_arcs(arcs)
    assert hinted == expected
    assert np.array_equal(hinted.values, expected.values, equal_nan=True)


def test_repeated_buffer_ids_as_the_net_gives_them() -> None:
    """A get listed twice makes the buffer ids repeat: `schedule_arcs` then numbers them as `Net.unique_id` does."""
    schedule = default_schedule(random_split(3))
    item, steps = next((item, steps) for item, steps in schedule.items.items() if any(s.kind == "get" for s in steps))
    get = next(s for s in steps if s.kind == "get")
    twice = Schedule(schedule.sync, {**schedule.items, item: steps + [get]}, "test")
    loops, code = schedule_arcs(twice, 2), schedule_net(twice, 2)
    assert len(set(loops.buffer_ids)) == len(loops.buffer_ids)
    assert any(name.endswith(".2") for name in loops.buffer_ids)
    assert loops.buffer_ids == [code.places[p].id for p in loops.buffers]


@pytest.mark.parametrize("seed", range(8))
def test_step_order_hint_changes_no_result(seed: int) -> None:
    """The order in which the schedule check's simulation completes the steps (barriers once)
    orders the schedule net's token-free arcs; the analysis with it equals the one without."""
    net = random_split(seed)
    used = 0
    plain_order = default_schedule(net)
    around = Schedule("barrier", {item: [Step("barrier", barrier=1)] + steps + [Step("barrier", barrier=2)]
                                  for item, steps in plain_order.items.items()}, "test")
    for schedule in (plain_order, around, with_barriers(default_schedule(net), random.Random(seed))):
        outcome = check_schedule(net, schedule)
        memo = net.memo.get((STEP_ORDER, id(schedule)))
        assert (memo is not None) == (outcome.code != "PETRI-E122")   # stored when the simulation finishes
        for depth in (0, 1, 2):
            plain = schedule_arcs(schedule, depth)
            expected = analyse_arcs(plain.arcs, plain.buffers)
            if memo is None:
                continue
            hinted = schedule_arcs(schedule, depth, memo[1])
            rank = markedgraph._rank(hinted.arcs.n_transitions, hinted.arcs.order)
            empty = hinted.arcs.tokens == 0
            assert rank is not None
            forward = (rank[hinted.arcs.producer[empty]] < rank[hinted.arcs.consumer[empty]]).all()
            assert forward == (depth > 0)   # at depth 0 the credits close token-free cycles
            result = analyse_arcs(hinted.arcs, hinted.buffers)
            assert result == expected and np.array_equal(result.values, expected.values, equal_nan=True)
            used += 1
    assert used == 6   # program order and barriers around it, at depths 0, 1, 2

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

from pipeline.petri.markedgraph import MarkedArcs, analyse_arcs, analyse_marked_graph, arcs_of
from pipeline.petri.net import PlaceKind
from pipeline.petri.pipelining import periodic_arcs, periodic_net, schedule_arcs, schedule_net
from pipeline.petri.schedule import default_schedule
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

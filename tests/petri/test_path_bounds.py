"""Valid-path bounds of large orders: the log-space upper bound equals the exact one's log10."""

from __future__ import annotations

import random

import pytest

from tests.petri.petri_helpers import graphs_of, items_text, network_text, random_network, split_network

from pipeline.petri import paths
from pipeline.petri.net import Net, PlaceKind, TransitionKind
from pipeline.petri.outcome import approximate, log10_of
from pipeline.petri.translate import translate


def test_log_space_upper_bound_matches_the_exact_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    for seed in range(20):
        net = translate(graphs_of(network_text(random_network(random.Random(seed), 2500))))
        approximate_count = paths.count_valid_paths(net)
        if approximate_count.status == "bounds":
            break
    else:
        pytest.fail("no random 2,500-operation network without a series-parallel order in 20 seeds")
    assert approximate_count.upper is None and approximate_count.upper_log10 is not None
    assert approximate_count.upper_log10 > paths.UPPER_EXACT_DIGITS
    monkeypatch.setattr(paths, "UPPER_EXACT_DIGITS", 10**9)
    exact = paths.count_valid_paths(net)
    assert exact.upper is not None and exact.lower == approximate_count.lower
    assert abs(log10_of(exact.upper) - approximate_count.upper_log10) < 1e-9
    assert approximate_count.upper_text() == approximate(exact.upper)
    assert approximate_count.to_json()["valid_paths_upper"] == exact.to_json()["valid_paths_upper"]


def _walked(net: Net, hide_sync: bool) -> tuple[list[int], list[int]]:
    hidden = [hide_sync and t.kind is TransitionKind.SYNC for t in net.transitions]
    visible, keys = paths._dependency_keys_walk(net, hidden)
    return visible, sorted(keys)


@pytest.mark.parametrize("seed", range(6))
def test_dependency_edges_by_array_joins_equal_the_walk(seed: int) -> None:
    """The producer -> consumer edges joined as arrays are the walk's, for split nets (syncs hidden
    or not) and for the paper encoding (a place read by several instructions)."""
    rng = random.Random(seed)
    network = random_network(rng, 40 + 20 * seed, n_inputs=2, n_params=3, fan=5)
    items = [f"ITEM{i}" for i in range(2 + seed % 3)]
    split = graphs_of(items_text(split_network(network, items, rng)))
    for net in (translate(split), translate(split, "paper"), translate(graphs_of(network_text(network)))):
        for hide_sync in (True, False):
            visible, keys = paths.dependency_keys(net, hide_sync)
            assert (visible, keys.tolist()) == _walked(net, hide_sync)


def test_dependency_edges_through_a_chain_of_syncs() -> None:
    """A sync reading another sync's value (not what a translation makes) takes the walk: the
    instruction before the chain is a producer of the instruction after it."""
    net = Net("chain", "ours", colours=["A", "B"])
    source = net.add_place("x", "x", "A", PlaceKind.INPUT, 1)
    places = [net.add_place(f"v{i}", f"v{i}", "A", PlaceKind.VALUE) for i in range(3)]
    first = net.add_transition("t0", "v0", "relu", "A", TransitionKind.COMPUTE)
    hop1 = net.add_transition("s1", "v1", "send", "A", TransitionKind.SYNC)
    hop2 = net.add_transition("s2", "v2", "send", "A", TransitionKind.SYNC)
    last = net.add_transition("t3", "y", "relu", "B", TransitionKind.COMPUTE)
    net.arc_in(source, first)
    for t, (into, out) in zip((first, hop1, hop2), zip([None, *places[:2]], places)):
        if into is not None:
            net.arc_in(into, t)
        net.arc_out(t, out)
    net.arc_in(places[2], last)
    visible, keys = paths.dependency_keys(net)
    assert visible == [first, last] and keys.tolist() == [first * 4 + last]
    assert (visible, keys.tolist()) == _walked(net, True)

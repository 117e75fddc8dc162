"""The structural analyses agree with explicit-state exploration on small random nets.

Random DAG networks (hypothesis picks the seed and the sizes) are translated in both
encodings and split over 2-3 items; every verdict and every exact valid-path count must
equal what full exploration finds, bounds must contain it, and the stubborn-set
exploration must find the same dead markings as the full one.
"""

from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st


from tests.petri.petri_helpers import graphs_of, items_text, network_text, random_network, split_network
from tests.petri.petri_oracle import explore

from pipeline.petri.analysis import analyse
from pipeline.petri.equivalence import check_equivalence
from pipeline.petri.net import Net
from pipeline.petri.paths import count_valid_paths
from pipeline.petri.schedule import check_schedule, default_schedule
from pipeline.petri.translate import translate

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def oracle_verdicts(net: Net) -> tuple[tuple[bool, ...], object]:
    found = explore(net)
    assert not found.gave_up
    if net.encoding == "ours":
        verdicts = (found.final_reachable and not found.dead, not found.blocked, not found.leftover,
                    not found.double_firing and not found.blocked)
    else:
        verdicts = (found.final_reachable, not found.blocked and not found.double_firing,
                    not found.leftover and not found.double_firing, not found.double_firing and not found.blocked)
    return verdicts, found


def structural_verdicts(net: Net) -> tuple[bool, ...]:
    outcomes = analyse(net)
    return tuple(outcomes[name].ok for name in ("reachability", "deadlock", "termination", "once"))


def assert_count_matches(net: Net, paths: int, hide_sync: bool) -> None:
    count = count_valid_paths(net, hide_sync=hide_sync)
    if count.status == "exact":
        assert count.value == paths
    else:
        assert count.lower is not None and count.upper is not None and count.lower <= paths <= count.upper


@SETTINGS
@given(seed=st.integers(0, 10**9), size=st.integers(1, 8), unused=st.booleans(), encoding=st.sampled_from(["ours", "paper"]))
def test_single_item_verdicts_and_counts_agree_with_exploration(seed: int, size: int, unused: bool, encoding: str) -> None:
    rng = random.Random(seed)
    network = random_network(rng, size, n_inputs=rng.randint(1, 2), n_params=rng.randint(0, 2), unused=unused)
    net = translate(graphs_of(network_text(network)), encoding)
    expected, found = oracle_verdicts(net)
    assert structural_verdicts(net) == expected
    if found.final_reachable:
        assert_count_matches(net, found.paths_to_final, hide_sync=True)
    if encoding == "ours":
        assert explore(net, reduce=True).dead == found.dead


@SETTINGS
@given(seed=st.integers(0, 10**9), size=st.integers(2, 7), n_items=st.integers(2, 3))
def test_split_nets_agree_with_exploration_and_are_equivalent(seed: int, size: int, n_items: int) -> None:
    rng = random.Random(seed)
    network = random_network(rng, size, n_inputs=rng.randint(1, 2), n_params=rng.randint(0, 2))
    original = translate(graphs_of(network_text(network)))
    texts = split_network(network, ["A", "B", "C"][:n_items], rng)
    split = translate(graphs_of(items_text(texts)))
    expected, found = oracle_verdicts(split)
    assert structural_verdicts(split) == expected == (True, True, True, True)
    assert explore(split, reduce=True).dead == found.dead == set()
    # all interleavings, sync transitions included
    assert_count_matches(split, found.paths_to_final, hide_sync=False)
    # sync transitions hidden: the original's valid paths
    assert_count_matches(split, explore(original).paths_to_final, hide_sync=True)
    equivalence = check_equivalence(split, original)
    assert equivalence.ok, equivalence.reason
    assert check_schedule(split, default_schedule(split)).ok


@SETTINGS
@given(seed=st.integers(0, 10**9), size=st.integers(2, 7))
def test_a_dropped_send_is_a_deadlock_for_both(seed: int, size: int) -> None:
    rng = random.Random(seed)
    network = random_network(rng, size, n_inputs=1, n_params=1)
    texts = split_network(network, ["A", "B"], rng)
    text = items_text(texts)
    sends = [line for line in text.splitlines() if "send_var(" in line]
    if not sends:
        return
    victim = rng.choice(sends)
    split = translate(graphs_of(text.replace(victim + "\n", "")))
    expected, found = oracle_verdicts(split)
    assert structural_verdicts(split) == expected
    outcome = analyse(split)["deadlock"]
    assert not outcome.ok and outcome.code == "PETRI-E102" and found.blocked


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**9), size=st.integers(1, 4), depth=st.integers(0, 2))
def test_periodic_nets_bounds_and_liveness_agree_with_exploration(seed: int, size: int, depth: int) -> None:
    from pipeline.petri.markedgraph import analyse_marked_graph
    from pipeline.petri.pipelining import periodic_net

    rng = random.Random(seed)
    network = random_network(rng, size, n_inputs=1, n_params=rng.randint(0, 1))
    net = periodic_net(translate(graphs_of(network_text(network))), depth)
    result = analyse_marked_graph(net)
    found = explore(net, max_states=50_000, counts=False)
    assert not found.gave_up
    assert result.live == (not found.dead) == (depth > 0)
    if result.live:
        for p, bound in result.bounds.items():
            assert bound == found.max_tokens.get(p, 0), net.places[p].id

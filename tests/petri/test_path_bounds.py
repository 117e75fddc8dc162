"""Valid-path bounds of large orders: the log-space upper bound equals the exact one's log10."""

from __future__ import annotations

import random

import pytest

from tests.petri.petri_helpers import graphs_of, network_text, random_network

from pipeline.petri import paths
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

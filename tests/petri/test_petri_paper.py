"""The paper's numbers, in both encodings, and the paper encoding's flaw."""

from __future__ import annotations



from tests.petri.petri_helpers import BRANCH3, BRANCH3_ITEMS, LENET, graphs_of
from tests.petri.petri_oracle import explore

from pipeline.petri.analysis import analyse
from pipeline.petri.equivalence import check_equivalence
from pipeline.petri.load import load_graphs
from pipeline.petri.paths import count_valid_paths
from pipeline.petri.translate import translate
from pipeline.petri.verify import verify


def test_lenet5_paper_encoding_has_the_papers_counts() -> None:
    graphs, _ = load_graphs([LENET])
    net = translate(graphs, "paper")
    counts = net.counts()
    assert (counts["places"], counts["transitions"], counts["initial_tokens"]) == (24, 13, 11)
    outcomes = analyse(net)
    assert all(o.ok for o in outcomes.values())
    assert outcomes["valid_paths"].measured["valid_paths"] == 1


def test_lenet5_our_encoding_counts() -> None:
    graphs, _ = load_graphs([LENET])
    counts = translate(graphs, "ours").counts()
    # a chain: every variable has exactly one consumer, so both encodings coincide
    assert (counts["places"], counts["transitions"], counts["initial_tokens"], counts["arcs"]) == (24, 13, 11, 36)
    assert count_valid_paths(translate(graphs)).value == 1


def test_branch3_single_item_net_has_six_valid_paths_in_both_encodings() -> None:
    graphs, _ = load_graphs([BRANCH3])
    ours, paper = translate(graphs, "ours"), translate(graphs, "paper")
    assert count_valid_paths(ours).value == 6 and count_valid_paths(paper).value == 6
    # o1 has two consumers and v5, v6 two each: one place per consumer adds three places
    assert (ours.counts()["places"], paper.counts()["places"]) == (22, 19)
    assert ours.counts()["initial_tokens"] == paper.counts()["initial_tokens"] == 13
    assert all(o.ok for o in analyse(ours).values()) and all(o.ok for o in analyse(paper).values())
    assert explore(ours).paths_to_final == 6 and explore(paper).paths_to_final == 6


def test_branch3_split_is_equivalent_to_its_original() -> None:
    items, _ = load_graphs([BRANCH3_ITEMS])
    original, _ = load_graphs([BRANCH3])
    result = verify(items, original=original)
    assert result.ok, {k: v.reason for k, v in result.analyses.items() if not v.ok}
    assert result.analyses["equivalence"].ok
    assert result.analyses["valid_paths"].measured["valid_paths"] == 6   # sync transitions hidden
    split = result.net
    assert split.counts()["sync_transitions"] == 3 and split.colours == ["ITEM1", "ITEM2", "ITEM3"]
    # with the sync transitions as events of their own, the interleavings are more numerous
    assert count_valid_paths(split, hide_sync=False).value == explore(split).paths_to_final
    assert check_equivalence(split, translate(original)).measured["instructions_compared"] == 8


FLAW = """version 1.0;
graph g( x ) -> ( y, z )
{
    x = external<scalar>(shape = [1, 4]);
    y = relu(x);
    z = sigmoid(x);
}
"""


def test_paper_encoding_lets_relu_fire_twice_and_ours_does_not() -> None:
    graphs = graphs_of(FLAW)
    paper, ours = translate(graphs, "paper"), translate(graphs, "ours")
    # explicit-state exploration of the paper's net finds relu twice, sigmoid never, a dead marking
    found = explore(paper)
    assert found.double_firing and found.dead and found.final_reachable
    relu = next(i for i, t in enumerate(paper.transitions) if t.op == "relu")
    assert any(dict(m).get(next(p for p, _ in paper.post[relu]), 0) == 2 for m in found.dead)
    # the structural analysis of the paper encoding says the same, with the witness run
    outcomes = analyse(paper)
    assert not outcomes["deadlock"].ok and outcomes["deadlock"].code == "PETRI-E105"
    assert outcomes["deadlock"].counterexample["firing_sequence"] == ["t.y", "t.y"]
    assert "sigmoid z" in outcomes["deadlock"].counterexample["starved"][0]
    # ours: one place per consumer, relu cannot take sigmoid's token
    assert not explore(ours).double_firing and not explore(ours).dead
    assert all(o.ok for o in analyse(ours).values())
    assert explore(ours, reduce=True).dead == set()

"""`verify` given loaders, as the step calls it: the same verification, and the graphs released once translated.

The step hands `verify` a loader of the item files (and of a plan's own original) and the
exported description's net, so that no graph is held beside the nets; `translate_each`
collects the instructions once for both encodings and counts the paper net without building
it. Everything must be what the graphs themselves give (the golden cases, both encodings).
"""

from __future__ import annotations

import gc
import weakref
from typing import Any

import pytest

from tests.petri import golden_cases
from tests.petri.test_petri_golden import GOLDEN

from pipeline.petri import translate as translate_module
from pipeline.petri.pnml import pnml_document
from pipeline.petri.translate import translate, translate_each


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_loaders_give_the_golden_verification(name: str) -> None:
    case = golden_cases._cases()[name]()
    assert golden_cases.verification_of(case, loaders=True) == GOLDEN[name]


@pytest.mark.parametrize("name", sorted(golden_cases._cases()))
def test_one_collection_gives_each_encoding_and_its_counts(name: str) -> None:
    items = golden_cases._cases()[name]()["items"]
    both = translate_each(items, ["ours", "paper"], "n")
    counted = translate_each(items, ["paper"], "n", counts_only=["ours"])
    for encoding, net in zip(("ours", "paper"), both.nets):
        alone = translate(items, encoding, "n")
        assert pnml_document(net) == pnml_document(alone), encoding
        assert net.counts() == alone.counts()
    assert counted.counts["ours"] == both.nets[0].counts()
    assert translate_each(items, ["ours"], "n", counts_only=["paper"]).counts["paper"] == both.nets[1].counts()


def test_the_graphs_of_a_loader_are_released_before_the_places_are_built(monkeypatch: pytest.MonkeyPatch) -> None:
    case = golden_cases._cases()["deadlock (cyclic exchange)"]()
    refs = [weakref.ref(g) for g in case["items"]]
    holder = [case.pop("items")]
    alive: list[int] = []
    build = translate_module._places_ours

    def places(*args: Any) -> None:
        alive.append(sum(ref() is not None for ref in refs))
        build(*args)

    monkeypatch.setattr(translate_module, "_places_ours", places)
    gc.collect()
    translation = translate_each(holder.pop, ["ours"], "n", counts_only=["ours"])
    assert translation.nets[0].transitions and alive == [0, 0]


@pytest.mark.parametrize("seed", range(6))
def test_paper_counts_without_the_net_are_the_nets_counts(seed: int) -> None:
    """`_paper_counts` counts what `_places_paper` builds, on random splits (dead code, unread
    sends) and their originals, and on the shipped LeNet-5 and three-branch examples."""
    from tests.petri.petri_helpers import BRANCH3, BRANCH3_ITEMS, LENET, graphs_of
    from pipeline.petri.load import load_graphs

    original, items = golden_cases._split(seed, ops=30 + 7 * seed, unused=seed % 2 == 1)
    extra = [load_graphs([path])[0] for path in (LENET, BRANCH3, BRANCH3_ITEMS)] if seed == 0 else []
    for graphs in [graphs_of(items), graphs_of(original), *extra]:
        counted = translate_each(graphs, ["ours"], "n", counts_only=["paper"]).counts["paper"]
        assert counted == translate(graphs, "paper", "n").counts()
        # without our encoding's places to read the inputs from (`reads`), counted from the transitions
        assert translate_each(graphs, ["paper"], "n", counts_only=["paper"]).counts["paper"] == counted


@pytest.mark.parametrize("seed", range(4))
def test_the_original_read_without_places_compares_as_its_net(seed: int) -> None:
    """`original_of` (no places for a plain original) gives `check_equivalence` the outcome its net
    gives, passing and failing: the matching original, another one (missing and extra instructions,
    other arguments and outputs), one whose output is a declared parameter, and a split as the
    "original" (syncs: read from its net)."""
    from tests.petri.petri_helpers import graphs_of
    from pipeline.petri.equivalence import check_equivalence, original_of

    original, items = golden_cases._split(seed, ops=30 + 7 * seed, unused=seed % 2 == 1)
    other, _ = golden_cases._split(seed + 10, ops=25)
    declared_output = original.replace("-> ( ", "-> ( w0, ", 1)
    assert declared_output != original
    split = translate(graphs_of(items))
    outcomes = set()
    for text in (original, other, declared_output, items, _wrong_producer_original(original)):
        graphs = graphs_of(text)
        lean = check_equivalence(split, original_of(graphs)).to_json()
        assert lean == check_equivalence(split, translate(graphs, "ours", "original")).to_json()
        outcomes.add((lean["verdict"], lean.get("code")))
    assert {verdict for verdict, _ in outcomes} == {"pass", "fail"} and len(outcomes) >= 3


def _wrong_producer_original(text: str) -> str:
    """The original with its last binary instruction's second argument read from the first input."""
    lines = text.splitlines()
    for i in range(len(lines) - 1, -1, -1):
        line = lines[i]
        if " = " in line and "(" in line and ", " in line and "external" not in line and "variable" not in line:
            op, args = line.split(" = ", 1)[1].split("(", 1)
            first, second = args.rstrip(");").split(", ")[:2]
            lines[i] = line.replace(f"{op}({first}, {second}", f"{op}({first}, e0", 1)
            return "\n".join(lines) + "\n"
    raise AssertionError("no binary instruction")


# Chains of syncs (A -> B -> C) and a cycle of syncs: the syncs a counterexample names are written
# only when it is described (`_Origins.of_place`); messages as the walk that wrote them eagerly gave.
_FORWARD = """version 1.0;
graphitem A ga( e ) -> ( s1 )
{
    e = external<scalar>(shape = [1, 4]);
    s1 = variablesync<scalar>(shape = [1, 4]);
    a = relu(e);
    s1 = send_var([B], a);
}
graphitem B gb( s1 ) -> ( s2 )
{
    s1 = variablesync<scalar>(shape = [1, 4]);
    s2 = variablesync<scalar>(shape = [1, 4]);
    x = get_var(A, s1);
    s2 = send_var([C], x);
}
graphitem C gc( s2 ) -> ( r, q )
{
    s2 = variablesync<scalar>(shape = [1, 4]);
    z = get_var(B, s2);
    r = sigmoid(z);
    q = tanh(z);
}
"""
_FORWARD_ORIGINAL = """version 1.0;
graph g( e ) -> ( r, a )
{
    e = external<scalar>(shape = [1, 4]);
    a = relu(e);
    r = sigmoid(e);
    q = tanh(a);
}
"""
_SYNC_CYCLE = """version 1.0;
graphitem A ga( e, s2 ) -> ( s1, out )
{
    e = external<scalar>(shape = [1, 4]);
    s1 = variablesync<scalar>(shape = [1, 4]);
    s2 = variablesync<scalar>(shape = [1, 4]);
    b = get_var(B, s2);
    s1 = send_var([B], b);
    out = relu(b);
    o2 = tanh(b);
}
graphitem B gb( s1 ) -> ( s2 )
{
    s1 = variablesync<scalar>(shape = [1, 4]);
    s2 = variablesync<scalar>(shape = [1, 4]);
    x = get_var(A, s1);
    s2 = send_var([A], x);
}
"""
_SYNC_CYCLE_ORIGINAL = """version 1.0;
graph g( e ) -> ( out )
{
    e = external<scalar>(shape = [1, 4]);
    out = relu(e);
    o2 = tanh(e);
}
"""


@pytest.mark.parametrize("split, original, messages", [
    (_FORWARD, _FORWARD_ORIGINAL, [
        "argument 1 of sigmoid r (C, <test>:20:9) is 'a' computed by instruction a delivered through sync s2 (B -> C), "
        "s1 (A -> B); in the original it is the declared tensor 'e'",
        "outputs differ: the split also outputs 'q' computed by instruction q; the split does not output 'a' computed "
        "by instruction a"]),
    (_SYNC_CYCLE, _SYNC_CYCLE_ORIGINAL, [
        "argument 1 of relu out (A, <test>:9:11) is a cycle of syncs through sync.A.s1 delivered through sync "
        "s2 (B -> A), s1 (A -> B), s2 (B -> A); in the original it is the declared tensor 'e'",
        "argument 1 of tanh o2 (A, <test>:10:10) is a cycle of syncs through sync.A.s1 delivered through sync "
        "s2 (B -> A), s1 (A -> B), s2 (B -> A); in the original it is the declared tensor 'e'",
        "sync transitions forward each other in a cycle: sync.B.s2 -> sync.A.s1 -> sync.B.s2"]),
])
def test_chains_and_cycles_of_syncs_in_counterexamples(split: str, original: str, messages: list[str]) -> None:
    from tests.petri.petri_helpers import graphs_of
    from pipeline.petri.equivalence import check_equivalence, original_of

    net = translate(graphs_of(split))
    for reference in (translate(graphs_of(original), "ours", "original"), original_of(graphs_of(original))):
        outcome = check_equivalence(net, reference).to_json()
        assert [d["message"] for d in outcome["counterexample"]["differences"]] == messages

"""Small generated descriptions, passing and failing, whose complete verification is pinned.

The Petri step was made faster at 100,000 operations (issue 13) by changing how nets are
built and walked. `verification_of` runs everything `verify` establishes on each case
(analyses, equivalence, schedule, trace, pipeline at depth 2) and returns the report, the
PNML of the net and the outcome of a pipeline on the paper encoding's net; the golden
file tests/petri/data/golden_verdicts.json holds what the implementation *before* that
change produced. Regenerate it only for an intended change of verdicts or messages:

    python -m tests.petri.golden_cases --write
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import random
from pathlib import Path
from typing import Any, Callable

from tests.petri.petri_helpers import BRANCH3, BRANCH3_ITEMS, graphs_of, items_text, network_text, random_network, \
    split_network
from tests.petri.test_petri_negative import CYCLIC

from pipeline.nnef.graph import Graph
from pipeline.petri.load import load_graphs
from pipeline.petri.pnml import pnml_document
from pipeline.petri.schedule import Schedule, default_schedule, parse_schedule
from pipeline.petri.trace import Event, Trace
from pipeline.petri.translate import translate
from pipeline.petri.verify import verify

GOLDEN = Path(__file__).parent / "data" / "golden_verdicts.json"
ITEMS = ("A", "B", "C")


def _trace_of(schedule: Schedule) -> Trace:
    """Each item's steps in schedule order, interleaved so that every get follows its send (per-item clocks)."""
    pc = {item: 0 for item in schedule.items}
    sent: set[tuple[str, str]] = set()
    events: dict[str, list[Event]] = {item: [] for item in schedule.items}
    progress = True
    while progress:
        progress = False
        for item, steps in schedule.items.items():
            while pc[item] < len(steps):
                step = steps[pc[item]]
                if step.kind == "get" and (step.source, step.var) not in sent:
                    break
                if step.kind == "send":
                    sent.add((item, step.var))
                events[item] += [Event("start", pc[item]), Event("end", pc[item])]
                pc[item] += 1
                progress = True
    return Trace(events)


def _split(seed: int, ops: int = 40, unused: bool = False) -> tuple[str, str]:
    rng = random.Random(seed)
    network = random_network(rng, ops, n_inputs=2, n_params=3, unused=unused)
    return network_text(network, "g"), items_text(split_network(network, list(ITEMS), rng))


def _wrong_producer(text: str) -> str:
    """The first binary instruction of item B reads its second argument from another local value."""
    lines = text.splitlines()
    start = lines.index(next(line for line in lines if line.startswith("graphitem B")))
    defined: list[str] = []
    for i in range(start, len(lines)):
        line = lines[i].strip()
        if "=" not in line or line.startswith("graphitem") or "variablesync" in line or "send_var" in line:
            continue
        name, call = line.split(" = ", 1)
        if "(" in call and "," in call and not call.startswith(("external", "variable", "get_var")) and len(defined) >= 2:
            op, args = call.split("(", 1)
            first, second = args.rstrip(");").split(", ")
            other = next(d for d in reversed(defined) if d not in (first, second))
            lines[i] = lines[i].replace(f"{op}({first}, {second})", f"{op}({first}, {other})")
            return "\n".join(lines) + "\n"
        defined.append(name)
    raise AssertionError("no binary instruction to rewire")


def _swap_dependent(schedule: Schedule) -> Schedule:
    """Item B's first compute that reads the step before it runs before that step (PETRI-E121)."""
    doc = copy.deepcopy(schedule.to_json())
    steps = doc["items"]["B"]
    for k in range(1, len(steps)):
        if steps[k]["kind"] == "compute" and steps[k - 1]["kind"] in ("compute", "get"):
            steps[k - 1], steps[k] = steps[k], steps[k - 1]
            break
    return parse_schedule(doc)


def _cases() -> dict[str, Callable[[], dict[str, Any]]]:
    cases: dict[str, Callable[[], dict[str, Any]]] = {}
    for seed in (1, 2, 3):
        def clean(seed: int = seed) -> dict[str, Any]:
            original, items = _split(seed)
            return {"items": graphs_of(items), "original": graphs_of(original)}
        cases[f"split seed {seed}"] = clean
    cases["leftover token (an unused value)"] = lambda: {"items": graphs_of(_split(4, unused=True)[1]),
                                                         "original": graphs_of(_split(4, unused=True)[0])}
    cases["wrong producer"] = lambda: {"items": graphs_of(_wrong_producer(_split(5)[1])),
                                       "original": graphs_of(_split(5)[0])}
    cases["deadlock (cyclic exchange)"] = lambda: {"items": graphs_of(CYCLIC)}
    text = BRANCH3_ITEMS.read_text()
    cases["missing producer (send to one reader)"] = lambda: {
        "items": graphs_of(text.replace("s1 = send_var([ITEM2, ITEM3], o1);", "s1 = send_var([ITEM2], o1);")),
        "original": load_graphs([BRANCH3])[0]}
    cases["send to an item that never reads it"] = lambda: {
        "items": graphs_of(text.replace("s2 = send_var([ITEM1], o3);", "s2 = send_var([ITEM1], o2);")),
        "original": load_graphs([BRANCH3])[0]}
    cases["schedule out of order"] = lambda: {"items": graphs_of(_split(6)[1]), "original": graphs_of(_split(6)[0]),
                                              "schedule": _swap_dependent}
    cases["trace with a consumer before its producer"] = lambda: {"items": graphs_of(_split(7)[1]),
                                                                  "original": graphs_of(_split(7)[0]),
                                                                  "trace": "swap"}
    cases["pipeline depth 0"] = lambda: {"items": graphs_of(_split(8)[1]), "depth": 0}
    cases["plain graph, paper encoding"] = lambda: {"items": graphs_of(_split(9)[0]), "encoding": "paper"}
    return cases


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def verification_of(case: dict[str, Any], loaders: bool = False) -> dict[str, Any]:
    """Everything the step reports on one case, plus the digest of the nets it writes.

    `loaders`: hand `verify` the graphs as loaders (as the step does), the original as its net
    when the case has one (as the step does for the exported description)."""
    items: list[Graph] = case["items"]
    net = translate(items)
    schedule = default_schedule(net)
    if "schedule" in case:
        schedule = case["schedule"](schedule)
    trace = _trace_of(default_schedule(net))
    if case.get("trace") == "swap":
        events = trace.items["B"]
        steps = schedule.items["B"]
        reads = {tr.name: tr.inputs for tr in net.transitions if tr.colour == "B"}
        k = next(k for k in range(1, len(steps)) if steps[k].kind == "compute" and steps[k - 1].result
                 and steps[k - 1].result in reads[steps[k].result])
        events[2 * k - 1], events[2 * k] = events[2 * k], events[2 * k - 1]   # step k starts before k - 1 ended
    source: Any = items
    original = case.get("original")
    if loaders:
        def source() -> tuple[list[Graph], list[Any]]:
            return items, []
        original = translate(original, "ours", "original") if original is not None else None
    result = verify(source, encoding=case.get("encoding", "ours"), original=original, schedule=schedule,
                    traces=[trace] if len(net.colours) > 1 else [], depth=case.get("depth", 2))
    report = json.loads(json.dumps(result.to_json(), sort_keys=True))
    return {"report": report, "pnml": _digest(pnml_document(result.net)), "pnml_ours": _digest(pnml_document(net))}


def all_verifications() -> dict[str, dict[str, Any]]:
    return {name: verification_of(make()) for name, make in _cases().items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="rewrite the golden file")
    args = parser.parse_args()
    data = all_verifications()
    text = json.dumps(data, sort_keys=True, indent=1) + "\n"
    if args.write:
        GOLDEN.write_text(text)
    else:
        print(text)


if __name__ == "__main__":
    main()

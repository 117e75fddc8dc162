"""Everything the Petri step establishes about one description, in one call.

`verify` translates a description (one graph, or the items of a split), runs the
behavioural analyses on the chosen encoding, and, on our encoding, the equivalence with
the original, the static schedules, the trace replays and the periodic (pipelined) net.
The result is data: verdicts, counts and counterexamples, plus the time each phase took
(kept out of the report, which must not change from run to run).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Sequence

from pipeline.diagnostics import Finding
from pipeline.gcpause import gc_paused
from pipeline.registry.checks import Verdict
from pipeline.nnef.graph import Graph
from pipeline.petri.analysis import analyse
from pipeline.petri.equivalence import check_equivalence
from pipeline.petri.net import Net
from pipeline.petri.outcome import Outcome, not_run
from pipeline.petri.pipelining import check_pipeline
from pipeline.petri.schedule import Schedule, check_schedule, default_schedule
from pipeline.petri.trace import Trace, replay
from pipeline.petri.translate import translate

ORDER = ("reachability", "deadlock", "termination", "once", "valid_paths", "equivalence", "schedule", "trace", "pipeline")


@dataclass
class Verification:
    """The nets and the outcome of every analysis of one description."""

    label: str
    net: Net
    counts: dict[str, dict[str, int]]
    analyses: dict[str, Outcome]
    findings: list[Finding] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    sources: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not any(o.verdict is Verdict.FAIL for o in self.analyses.values())

    def to_json(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "sources": self.sources,
            "encoding": self.net.encoding,
            "counts": self.counts,
            "colours": self.net.colours,
            "ok": self.ok,
            "analyses": {name: self.analyses[name].to_json() for name in ORDER if name in self.analyses},
            "findings": [f.to_json() for f in self.findings],
        }


class _Clock:
    def __init__(self) -> None:
        self.timings: dict[str, float] = {}

    def phase(self, name: str, start: float) -> float:
        now = time.perf_counter()
        self.timings[name] = self.timings.get(name, 0.0) + now - start
        return now


def verify(
    graphs: Sequence[Graph],
    *,
    label: str = "",
    encoding: str = "ours",
    original: Sequence[Graph] | None = None,
    schedule: Schedule | None = None,
    traces: Sequence[Trace] = (),
    depth: int = 1,
    sync: str = "event",
    findings: Sequence[Finding] = (),
    sources: Sequence[str] = (),
    paper_counts: bool = True,
    net_name: str = "",
) -> Verification:
    """Translate and analyse; equivalence needs `original`, traces need a schedule (default: program order).

    `label` names the description in reports, `net_name` the nets (default: from the graphs).
    The cyclic garbage collector is paused meanwhile (pipeline.gcpause): the nets are
    millions of acyclic objects at 100,000 operations, which each collection would scan again.
    """
    with gc_paused():
        return _verify(graphs, label, encoding, original, schedule, traces, depth, sync, findings, sources, paper_counts,
                       net_name)


def _verify(graphs: Sequence[Graph], label: str, encoding: str, original: Sequence[Graph] | None,
            schedule: Schedule | None, traces: Sequence[Trace], depth: int, sync: str, findings: Sequence[Finding],
            sources: Sequence[str], paper_counts: bool, net_name: str) -> Verification:
    clock = _Clock()
    start = time.perf_counter()
    ours = translate(graphs, "ours", net_name)
    net = ours if encoding == "ours" else translate(graphs, encoding, net_name)
    counts = {encoding: net.counts()}
    if paper_counts:
        other = "paper" if encoding == "ours" else "ours"
        counts[other] = (ours if other == "ours" else translate(graphs, other, net_name)).counts()
    start = clock.phase("translate", start)
    analyses = dict(analyse(net))
    start = clock.phase("analyse", start)
    multi = len(ours.colours) > 1 or any(g.item is not None for g in graphs)
    if original is not None:
        analyses["equivalence"] = check_equivalence(ours, translate(original, "ours", "original"))
    elif multi:
        analyses["equivalence"] = not_run("equivalence", "no original description given to compare the items with")
    start = clock.phase("equivalence", start)
    effective = schedule if schedule is not None else default_schedule(ours, sync)
    analyses["schedule"] = check_schedule(ours, effective)
    if schedule is None:
        analyses["schedule"].measured["schedule"] = "program order"
    start = clock.phase("schedule", start)
    if traces:
        results = [replay(ours, effective, trace) for trace in traces]
        failing = next((r for r in results if r.failed), None)
        outcome = failing or results[0]
        outcome.measured["traces"] = len(results)
        analyses["trace"] = outcome
    else:
        analyses["trace"] = not_run("trace", "no execution trace yet (the execute step writes them)")
    start = clock.phase("trace", start)
    analyses["pipeline"] = check_pipeline(ours, depth, effective if len(ours.colours) > 1 else None)
    clock.phase("pipeline", start)
    return Verification(label or net.name, net, counts, analyses, list(findings), clock.timings, list(sources))

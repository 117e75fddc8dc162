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
from typing import Any, Callable, Sequence, Union

from pipeline.diagnostics import Finding
from pipeline.files.gcpause import gc_paused
from pipeline.ledger.checks import Verdict
from pipeline.nnef.graph import Graph
from pipeline.petri.analysis import analyse
from pipeline.petri.equivalence import check_equivalence, original_of
from pipeline.petri.net import Net
from pipeline.petri.outcome import Outcome, not_run
from pipeline.petri.pipelining import check_pipeline
from pipeline.petri.schedule import Schedule, check_schedule, default_schedule
from pipeline.petri.trace import Trace, replay
from pipeline.petri.translate import translate_each

# The graphs of a description, or a loader returning them with the checker's findings
# (e.g. functools.partial(pipeline.petri.load.load_graphs, paths, root)): `verify` calls it
# and drops the graphs once translated.
Loader = Callable[[], tuple[Sequence[Graph], Sequence[Finding]]]
Description = Union[Sequence[Graph], Loader]

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
    cpu: dict[str, float] = field(default_factory=dict)   # CPU seconds per phase (as timings)

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
    """Wall and CPU seconds per phase, each phase ending where the next begins; the loaders'
    reading is a phase of its own ("load", the NNEF front end: not Petri)."""

    def __init__(self) -> None:
        self.timings: dict[str, float] = {}
        self.cpu: dict[str, float] = {}
        self._wall, self._cpu = time.perf_counter(), time.process_time()

    def phase(self, name: str) -> None:
        """The time since the previous phase ended is `name`'s."""
        wall, cpu = time.perf_counter(), time.process_time()
        self.timings[name] = self.timings.get(name, 0.0) + wall - self._wall
        self.cpu[name] = self.cpu.get(name, 0.0) + cpu - self._cpu
        self._wall, self._cpu = wall, cpu

    def source(self, description: Description | None, findings: list[Finding] | None, phase: str) -> Any:
        """`description` for translate_each: a loader is wrapped to time it apart and keep its findings."""
        if not callable(description):
            return description

        def load() -> Sequence[Graph]:
            self.phase(phase)   # what ran before the reading
            graphs, found = description()
            if findings is not None:
                findings.extend(found)
            self.phase("load")
            return graphs
        return load


def verify(
    graphs: Description,
    *,
    label: str = "",
    encoding: str = "ours",
    original: Description | Net | None = None,
    schedule: Schedule | Callable[[], Schedule | None] | None = None,
    traces: Sequence[Trace] | Callable[[], Sequence[Trace]] = (),
    depth: int = 1,
    sync: str = "event",
    findings: Sequence[Finding] = (),
    sources: Sequence[str] = (),
    paper_counts: bool = True,
    net_name: str = "",
) -> Verification:
    """Translate and analyse; equivalence needs `original`, traces need a schedule (default: program order).

    `graphs` and `original` may be loaders (see `Loader`): each is called once, and its
    graphs are released as soon as their instructions are collected, so that the graphs
    of the items and of the original are never held with each other or with the nets;
    the loader's findings join `findings`, its time is the "load" phase (not Petri).
    `schedule` and `traces` may be loaders too, called once the items are translated (their
    objects then take the memory the graphs had).
    `original` may also be the original's net in our encoding (translated once for a model
    with several deployments). `label` names the description in reports, `net_name` the
    nets (default: from the graphs).
    The cyclic garbage collector is paused meanwhile (pipeline.files.gcpause): the nets are
    millions of acyclic objects at 100,000 operations, which each collection would scan again.
    """
    with gc_paused():
        return _verify(graphs, label, encoding, original, schedule, traces, depth, sync, findings, sources, paper_counts,
                       net_name)


def _verify(graphs: Description, label: str, encoding: str, original: Description | Net | None,
            schedule: Any, traces: Any, depth: int, sync: str, findings: Sequence[Finding],
            sources: Sequence[str], paper_counts: bool, net_name: str) -> Verification:
    clock = _Clock()
    found = list(findings)
    encodings = ["ours"] if encoding == "ours" else ["ours", encoding]
    other = "paper" if encoding == "ours" else "ours"
    counted = [other] if paper_counts and other not in encodings else []
    translation = translate_each(clock.source(graphs, found, "translate"), encodings, net_name, counted)
    nets = dict(zip(encodings, translation.nets))
    ours, net = nets["ours"], nets[encoding]
    counts = {encoding: net.counts()}
    if paper_counts:
        counts[other] = translation.counts[other] if counted else nets[other].counts()
    graphitems = translation.graphitems
    del nets, translation
    clock.phase("translate")
    if callable(schedule) or callable(traces):
        schedule = schedule() if callable(schedule) else schedule
        traces = traces() if callable(traces) else traces
        clock.phase("load")
    analyses = dict(analyse(net))
    clock.phase("analyse")
    multi = len(ours.colours) > 1 or graphitems
    if original is not None:
        theirs = (original if isinstance(original, Net) else original_of(clock.source(original, None, "equivalence")))
        analyses["equivalence"] = check_equivalence(ours, theirs)
        del theirs
    elif multi:
        analyses["equivalence"] = not_run("equivalence", "no original description given to compare the items with")
    clock.phase("equivalence")
    effective = schedule if schedule is not None else default_schedule(ours, sync)
    analyses["schedule"] = check_schedule(ours, effective)
    if schedule is None:
        analyses["schedule"].measured["schedule"] = "program order"
    clock.phase("schedule")
    if traces:
        results = [replay(ours, effective, trace) for trace in traces]
        failing = next((r for r in results if r.failed), None)
        outcome = failing or results[0]
        outcome.measured["traces"] = len(results)
        analyses["trace"] = outcome
    else:
        analyses["trace"] = not_run("trace", "no execution trace yet (the execute step writes them)")
    clock.phase("trace")
    analyses["pipeline"] = check_pipeline(ours, depth, effective if len(ours.colours) > 1 else None)
    clock.phase("pipeline")
    return Verification(label or net.name, net, counts, analyses, found, clock.timings, list(sources), clock.cpu)

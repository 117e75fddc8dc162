"""Trace conformance (HLR-EXE-004): every captured trace replayed on the deployment's Petri net.

One function, `replay_traces`, is the only place that calls the Petri package: the item
descriptions are read back (pipeline.petri.load), translated to the coloured net, and each
trace (the harness's per-item step logs, shared CLOCK_MONOTONIC) is replayed under the
split's schedule.json by pipeline.petri.trace.replay, which decides whether some global
order of the logged events is a valid path of the net that respects the schedule, the
send/get causality, the barriers and the clock.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from pipeline.diagnostics import PipelineError


@dataclass
class TraceVerdict:
    trace: str
    passed: bool
    reason: str
    measured: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {"trace": self.trace, "verdict": "pass" if self.passed else "fail", "reason": self.reason,
                "measured": self.measured}


def replay_traces(split_dir: Path, traces: Sequence[Path], root: Path) -> list[TraceVerdict]:
    """Replay each trace file on the net of the items in `split_dir` (plan.json, schedule.json)."""
    from pipeline.petri.load import load_graphs
    from pipeline.petri.schedule import load_schedule
    from pipeline.petri.trace import parse_trace, replay
    from pipeline.petri.translate import translate

    plan = json.loads((split_dir / "plan.json").read_text(encoding="utf-8"))
    files = [split_dir / item["file"] for item in plan["items"]]
    graphs, _ = load_graphs(files, root)
    net = translate(graphs, "ours", f"{plan['model']}.{plan['deployment']}")
    schedule = load_schedule(split_dir / "schedule.json")
    verdicts = []
    for path in traces:
        name = path.name
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
            dropped = {k: v for k, v in document.get("dropped", {}).items() if v}
            trace = parse_trace(document, str(path))
        except (OSError, ValueError, PipelineError) as error:
            verdicts.append(TraceVerdict(name, False, f"unreadable trace: {error}", {}))
            continue
        if dropped:
            verdicts.append(TraceVerdict(name, False, f"trace buffer overflowed: {dropped} events dropped", {}))
            continue
        outcome = replay(net, schedule, trace)
        measured = dict(outcome.measured)
        if outcome.failed:
            verdicts.append(TraceVerdict(name, False, f"{outcome.code}: {outcome.reason}", measured))
        else:
            verdicts.append(TraceVerdict(name, True, "", measured))
    return verdicts

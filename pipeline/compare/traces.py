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

from pipeline.compare import checks
from pipeline.compare.checks import result
from pipeline.diagnostics import PipelineError
from pipeline.files.atomic import write_json
from pipeline.ledger.checks import CheckResult, Verdict
from pipeline.project.layout import project_relative


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


def judge_traces(subject: str, split_dir: Path, run_dir: Path, run_doc: dict[str, Any], folder: Path, root: Path
                 ) -> CheckResult:
    """compare.traces: every trace the run captured (in `run_dir`) a valid path of the split's net, outputs identical
    across the runs, at least one run under temporal noise; traces.json in `folder`."""
    traces = sorted(run_dir.glob("trace-*.json"))
    read = [project_relative(p, root) for p in traces] + [project_relative(split_dir / "schedule.json", root)]
    if not traces:
        return result(checks.TRACES, subject, Verdict.NOT_RUN, "the execute step captured no trace", read=read)
    verdicts = replay_traces(split_dir, traces, root)
    different = [r["name"] for r in run_doc.get("traced_runs", []) if not r.get("outputs_identical_to_plain")]
    noisy = sum(1 for r in run_doc.get("traced_runs", []) if r.get("noise_seed") is not None)
    path = write_json(folder / "traces.json", {"schema_version": 1, "traces": [v.to_json() for v in verdicts],
                                               "runs_with_different_outputs": different})
    measured = {"traces": len(verdicts), "noise_runs": noisy, "valid": sum(v.passed for v in verdicts),
                "events": sum(v.measured.get("events", 0) for v in verdicts),
                "inferences_per_trace": max((v.measured.get("inferences", 0) for v in verdicts), default=0),
                "outputs_identical_across_runs": not different}
    failed = next((v for v in verdicts if not v.passed), None)
    if failed:
        return result(checks.TRACES, subject, Verdict.FAIL, f"{failed.trace}: {failed.reason}", measured, read,
                      [project_relative(path, root)])
    if different:
        return result(checks.TRACES, subject, Verdict.FAIL, f"outputs of {', '.join(different)} differ from the "
                      "uninstrumented run", measured, read, [project_relative(path, root)])
    if not noisy:
        return result(checks.TRACES, subject, Verdict.NOT_RUN, "no run under temporal noise was captured", measured,
                      read, [project_relative(path, root)])
    return result(checks.TRACES, subject, Verdict.PASS, "", measured, read, [project_relative(path, root)])

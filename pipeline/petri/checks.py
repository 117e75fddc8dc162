"""The checks of the Petri step and how analysis outcomes become their results.

Each check takes its verdict from one analysis (pipeline.petri.verify): the same closed
set, the reason and counterexample summary of the first failure, the analysis's numbers.
Results are per subject: `<model>` for the exported description, `<model>/<deployment>`
for each split.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from pipeline.ledger.checks import CheckResult, Verdict, register_check
from pipeline.petri.verify import Verification

STEP = "petri"


@dataclass(frozen=True)
class AnalysisCheck:
    check_id: str
    analysis: str
    splits_only: bool = False


REACHABILITY = AnalysisCheck("petri.reachability", "reachability")
DEADLOCK = AnalysisCheck("petri.deadlock", "deadlock")
TERMINATION = AnalysisCheck("petri.termination", "termination")
ONCE = AnalysisCheck("petri.once", "once")
EQUIVALENCE = AnalysisCheck("petri.equivalence", "equivalence", splits_only=True)
SCHEDULE = AnalysisCheck("petri.schedule", "schedule", splits_only=True)
TRACE = AnalysisCheck("petri.trace", "trace", splits_only=True)
PIPELINE = AnalysisCheck("petri.pipeline", "pipeline")

ALL = (REACHABILITY, DEADLOCK, TERMINATION, ONCE, EQUIVALENCE, SCHEDULE, TRACE, PIPELINE)

register_check(REACHABILITY.check_id, "The Petri net reaches its final marking from the initial one",
               STEP, ["HLR-EXE-001", "LLR-EXE-001", "LLR-EXE-002"],
               "Our encoding (one place per value and consumer) is conflict-free and 1-safe; one Kahn run gives the "
               "unique dead marking, compared with the final marking. Measured: the number of valid paths.")
register_check(DEADLOCK.check_id, "The Petri net has no deadlock",
               STEP, ["HLR-EXE-001", "LLR-EXE-002"],
               "Every transition fires on the unique maximal run; a blocked one is explained by a missing producer "
               "or a wait cycle.")
register_check(TERMINATION.check_id, "The Petri net ends with no token left over",
               STEP, ["HLR-EXE-001", "LLR-EXE-002"],
               "The dead marking has tokens only in output places (no dead code, no value sent and never read).")
register_check(ONCE.check_id, "Every transition of the Petri net fires exactly once",
               STEP, ["HLR-EXE-001", "LLR-EXE-002"],
               "1-safety gives at most once; the maximal run gives at least once.")
register_check(EQUIVALENCE.check_id, "The split coloured net is equivalent to the original net",
               STEP, ["HLR-EXE-002", "HLR-SPL-001", "LLR-EXE-003"],
               "Sync transitions hidden: a bijection of instructions, the same operations and attributes, the same "
               "origin for every argument, the same outputs.")
register_check(SCHEDULE.check_id, "The items' static schedules are deadlock-free under their sync implementation",
               STEP, ["HLR-EXE-003", "LLR-EXE-004"],
               "schedule.json covers each item's instructions, respects local dependencies, and the items run as "
               "sequential processes (gets wait for sends, barriers for all) never deadlock; barrier mode also "
               "separates each send from its gets by a barrier.")
register_check(TRACE.check_id, "Every trace of the executable split semantics is a valid path of the net",
               STEP, ["HLR-EXE-004", "LLR-EXE-005"],
               "The split step's run of the items as concurrent workers (trace-interpreter.json): per-item logs "
               "follow the schedule and the local dependencies, and some global order satisfies the communication "
               "constraints between items. The generated code's traces are replayed by compare.traces.")
register_check(PIPELINE.check_id, "The periodic net is live and bounded for the deployment's pipeline depth",
               STEP, ["HLR-EXE-001", "LLR-EXE-006"],
               "Marked-graph theorems: live iff every cycle carries a token; a place's bound is the minimum token "
               "count of the cycles through it.")


def results_for(verification: Verification, subject: str, read: Sequence[str], written: Sequence[str],
                split: bool) -> list[CheckResult]:
    """One result per applicable check from a verification's outcomes."""
    results = []
    paths = verification.analyses.get("valid_paths")
    for check in ALL:
        if check.splits_only and not split:
            continue
        outcome = verification.analyses.get(check.analysis)
        if outcome is None:
            results.append(CheckResult(check.check_id, subject, Verdict.NOT_RUN, "the analysis was not performed",
                                       read=list(read), written=list(written)))
            continue
        measured = dict(outcome.measured)
        if check is REACHABILITY and paths is not None:
            measured.update({f"paths_{k}" if not k.startswith("valid_paths") else k: v for k, v in paths.measured.items()})
            measured.update({f"net_{k}": v for k, v in verification.counts.get("ours", {}).items()})
            measured.update({f"paper_net_{k}": v for k, v in verification.counts.get("paper", {}).items()})
        reason = f"{outcome.code}: {outcome.reason}" if outcome.code and outcome.verdict is Verdict.FAIL else outcome.reason
        results.append(CheckResult(check.check_id, subject, outcome.verdict, reason, measured, list(read), list(written)))
    return results


def unavailable(subject: str, reason: str, verdict: Verdict, split: bool, read: Sequence[str] = (),
                written: Sequence[str] = ()) -> list[CheckResult]:
    """Every applicable check with the same verdict and reason (missing or unusable inputs)."""
    return [CheckResult(c.check_id, subject, verdict, reason, {}, list(read), list(written))
            for c in ALL if split or not c.splits_only]

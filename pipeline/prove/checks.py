"""The check of the prove step (one result per C deployment, subject `<model>/<deployment>`).

prove.eva   LLR-COD-009   Frama-C EVA on every item of the deployment (pipeline/prove/eva.py)

The verdict reads Frama-C's own report (docs/prove.md "Verdicts"):
* pass: every item analysed to the end, 0 alarms, 0 red statuses, every assertion reached and
  valid or unknown and justified in justified.json (listed in `measured`), no degeneration;
* fail: a red status or an invalid assertion: a run-time error that happens for certain, or a
  non-finite output for every input;
* not run: Frama-C missing (naming frama-c-base), its time limit reached, Frama-C could not read
  the code, or the analysis ran and did not prove it: N alarms (each listed with file, line and
  property), unknown assertions not justified, assertions never reached. The absence of run-time
  errors is then *not verified* (never pass), with the count in the reason;
* n/a: a deployment without C items analysed here (one cuda or one nvdla item alone).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from pipeline.ledger.checks import CheckResult, Verdict, not_applicable, register_check
from pipeline.prove.eva import Analysis

STEP = "prove"
EVA = "prove.eva"
JUSTIFIED_FILE = Path(__file__).with_name("justified.json")
MAX_LISTED = 50

register_check(EVA, "Generated C is free of run-time errors for every input in the deploy.yaml range", STEP,
               ["LLR-COD-009"],
               "Frama-C's EVA (Debian frama-c-base) on every cpu C item of every deployment, "
               "from a driver giving each input element every float32 value of its deploy.yaml range (an item that "
               "holds the whole model), or any finite float to its inputs and received values (an item of a split or "
               "beside cuda or nvdla items: memory safety only): no alarm (out-of-bounds access, uninitialised read, invalid pointer, integer "
               "overflow or division by zero, a NaN made by a float operation), every output element finite, every "
               "assertion valid or justified (pipeline/prove/justified.json). Alarms or a time limit: not run (not "
               "verified) with the count; a red status: fail.")


def justified() -> dict[str, str]:
    """{assertion name: why it holds} (justified.json)."""
    document = json.loads(JUSTIFIED_FILE.read_text(encoding="utf-8"))
    return {str(k): " ".join(str(v).split()) for k, v in (document.get("assertions") or {}).items()}


def expected_assertions(texts: list[str]) -> int:
    """The ACSL assertions written in the analysed texts (driver and item): each must be reached."""
    return sum(len(re.findall(r"/\*@\s*assert\b", t)) for t in texts)


def judge(subject: str, analyses: list[tuple[Analysis, int]], read: list[str], written: list[str]) -> CheckResult:
    """prove.eva of one deployment from its items' analyses (each with the assertions it must reach)."""
    reasons_fail, reasons_open = [], []
    accepted = justified()
    listed: dict[str, str] = {}
    items: list[dict[str, Any]] = []
    for analysis, expected in analyses:
        name = analysis.item
        doc = analysis.to_json()
        doc["alarms"] = doc["alarms"][:MAX_LISTED]
        items.append(doc)
        invalid = [k for k, s in analysis.assertions.items() if s == "invalid"]
        if analysis.red or invalid or any(v[2] for v in analysis.properties.values()):
            reasons_fail.append(f"item {name}: {len(analysis.red)} properties false for certain"
                                + (f" ({analysis.red[0]})" if analysis.red else f" ({', '.join(invalid[:3])})"))
            continue
        if analysis.error:
            reasons_open.append(f"item {name}: Frama-C did not analyse it: {analysis.error[:500]}")
            continue
        unknown = [k for k, s in analysis.assertions.items() if s == "unknown"]
        unjustified = [k for k in unknown if k.split()[-1] not in accepted]
        listed.update({k: accepted[k.split()[-1]] for k in unknown if k.split()[-1] in accepted})
        reached = sum(sum(v) for k, v in analysis.properties.items() if k == "Assertions")
        alarms = analysis.alarm_count if analysis.alarm_count is not None else len(analysis.alarms)
        if alarms:
            first = analysis.alarms[0] if analysis.alarms else {}
            reasons_open.append(f"item {name}: {alarms} alarms not proven absent (first: {first.get('file')}:"
                                f"{first.get('line')} {first.get('alarm', '')})")
        if unjustified:
            reasons_open.append(f"item {name}: {len(unjustified)} assertions unknown ({', '.join(unjustified[:3])})")
        if reached < expected:
            reasons_open.append(f"item {name}: {expected - reached} of its {expected} assertions never reached "
                                "(the analysis stopped before them)")
        if analysis.degenerated:
            reasons_open.append(f"item {name}: the analysis degenerated")
    measured = {"items": items, "justified_assertions": dict(sorted(listed.items())),
                "cpu_seconds": round(sum(a.seconds for a, _ in analyses), 1),
                "alarms": sum((a.alarm_count or len(a.alarms)) for a, _ in analyses)}
    if reasons_fail:
        return CheckResult(EVA, subject, Verdict.FAIL, "; ".join(reasons_fail)[:3000], measured, read, written)
    if reasons_open:
        return CheckResult(EVA, subject, Verdict.NOT_RUN, ("EVA ran, the absence of run-time errors is not proven: "
                                                            + "; ".join(reasons_open))[:3000], measured, read, written)
    return CheckResult(EVA, subject, Verdict.PASS, "", measured, read, written)


def not_run(subject: str, reason: str, measured: dict[str, Any] | None = None) -> CheckResult:
    return CheckResult(EVA, subject, Verdict.NOT_RUN, reason, measured or {})


def no_c_items(subject: str, kind: str) -> CheckResult:
    return not_applicable(EVA, subject, f"a deployment of one {kind} item alone has no C item")

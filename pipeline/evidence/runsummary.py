"""The codes of the run-level rules and the summary lines about them, read from trace.json alone.

Kept apart from the rules (pipeline/evidence/runverdict.py) so that `doit verify`, which
prints the summary, imports nothing heavy: the rules need the trace matrix, the summary only
the findings they left in reports/trace.json.
"""

from __future__ import annotations

from typing import Any, Mapping

from pipeline.project.oneline import shorten

E_MODEL_NOT_RUN = "EVID-E080"      # a model's chain did not run (error)
E_CHAIN_INCOMPLETE = "EVID-E081"   # a model's chain stopped part way (error)
E_MODEL_EXCLUDED = "EVID-E082"     # a model excluded from the run (note)
E_BASELINE_UNREADABLE = "EVID-E083"
E_REGRESSION = "EVID-E084"         # worse than the baseline (error)
E_CHANGE = "EVID-E085"             # changed since the baseline without getting worse (note)
COMPARED = "compared with the baseline"
BETTER = "better than the baseline"
MAX_LINES = 12


def _section(title: str, messages: list[str]) -> list[str]:
    if not messages:
        return []
    lines = ["", title]
    lines += [shorten(f"  {m}") for m in messages[:MAX_LINES]]
    if len(messages) > MAX_LINES:
        lines.append(f"  ... and {len(messages) - MAX_LINES} more (reports/trace.json, findings)")
    return lines


def summary_lines(document: Mapping[str, Any]) -> list[str]:
    """The summary's lines about models that did not run, excluded models, and the baseline comparison."""
    findings = document.get("findings", [])

    def messages(code: str, prefix: str = "") -> list[str]:
        return [str(f.get("message", "")) for f in findings
                if f.get("code") == code and str(f.get("message", "")).startswith(prefix)]

    lines = _section("Models whose chain did not run (the run fails):",
                     messages(E_MODEL_NOT_RUN) + messages(E_CHAIN_INCOMPLETE))
    lines += _section("Excluded models:", messages(E_MODEL_EXCLUDED))
    compared = messages(E_CHANGE, COMPARED)
    if compared:
        lines += ["", compared[0][0].upper() + compared[0][1:]]
        lines += _section("Worse than the baseline (the run fails):", [_item(m) for m in messages(E_REGRESSION)])
        lines += _section("Better than the baseline:", [_item(m) for m in messages(E_CHANGE, BETTER)])
    return lines


def _item(message: str) -> str:
    """`worse than the baseline <file>: HLR-X: a -> b` -> `HLR-X: a -> b`."""
    return message.split(": ", 1)[-1]

"""The run-level verdict rules: a run cannot pass on nothing, and may not get worse than its baseline.

The coverage rules (pipeline/evidence/matrix.py) judge each requirement; these rules judge the
run as a whole and add their findings to the trace matrix before the reports are written, so
that trace.json, the HTML matrix, `doit verify` and `evidence summary` all see them:

* every model's chain ran, unless the model is excluded (pipeline/evidence/completeness.py);
* with a baseline (`evidence build --baseline PREVIOUS`), nothing got worse than in it
  (pipeline/evidence/regression.py).

pipeline/evidence/runsummary.py prints them in the verify summary, from trace.json alone.
"""

from __future__ import annotations

from typing import Mapping

from pipeline.diagnostics import Finding, Severity
from pipeline.evidence.completeness import Exclusion, completeness_findings
from pipeline.evidence.junit import junit_xml
from pipeline.evidence.matrix import TraceMatrix
from pipeline.evidence.regression import JUNIT, Snapshot, compare, comparison_findings, snapshot_like
from pipeline.evidence.runsummary import COMPARED, E_CHANGE


def run_findings(matrix: TraceMatrix, excluded: Mapping[str, Exclusion] | None = None,
                 baseline: Snapshot | None = None) -> list[Finding]:
    """The findings of both rules for `matrix` (module docstring)."""
    excluded = {m: e for m, e in (excluded or {}).items() if m in matrix.models}
    findings = completeness_findings(matrix.models, matrix.specs, matrix.outcomes, excluded)
    if baseline is not None:
        junit_text = junit_xml(matrix) if baseline.kind == JUNIT else None
        current = snapshot_like(baseline, matrix.to_json(), junit_text)
        comparison = compare(baseline, current, excluded)
        findings += comparison_findings(comparison, baseline.source)
        findings.append(Finding(E_CHANGE, Severity.NOTE,
                                f"{COMPARED} {baseline.source} ({baseline.kind}): "
                                f"{len(comparison.regressions)} worse, {len(comparison.improvements)} better or new, "
                                f"{len(comparison.excused)} worse only on excluded models, {len(comparison.removed)} gone"
                                + (f", {len(comparison.applicability)} applying otherwise (n/a)"
                                   if comparison.applicability else "")))
    return findings


__all__ = ["run_findings"]

"""The numbers of a run on the host: 0 ULP against the reference semantics, within tolerance of onnxruntime.

The tolerance of each output is the one the export validation justified (validation.json), read, not
recomputed: the same function export applied (pipeline.numerics.tolerance).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from pipeline.compare import checks
from pipeline.compare.checks import result
from pipeline.compare.context import Run
from pipeline.compare.numeric import compare
from pipeline.files.atomic import write_json
from pipeline.ledger.checks import CheckResult, Verdict
from pipeline.numerics.tolerance import EffectiveTolerance, effective_tolerance
from pipeline.project.deploy import DeploySpec
from pipeline.project.layout import project_relative, step_dir


def output_tolerances(model: str, spec: DeploySpec, root: Path) -> dict[str, EffectiveTolerance]:
    """Per NNEF output, pipeline.numerics.tolerance's rule on the export validation's computed bound and measured
    rounding (validation.json) and this deploy.yaml's limit: the same function export applied."""
    path = step_dir(model, "export", root) / "validation.json"
    document = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {"outputs": []}
    limit = spec.validation.tolerance.max_abs_error
    rules = {}
    for output in document.get("outputs", []):
        recorded = output.get("tolerance") or {}
        yard = document.get("enclosure", {})
        why = (yard.get("bound") or {}).get("unavailable", "") or yard.get("unavailable", "")
        computed, rounding = recorded.get("computed_max_abs_error"), recorded.get("measured_rounding_max_abs_error")
        rules[output["nnef"]] = effective_tolerance(limit, None if computed is None else float(computed),
                                                    None if rounding is None else float(rounding), why)
    return rules


def judge_outputs(run: Run, outputs: dict[str, np.ndarray], reference: dict[str, np.ndarray],
                  ort: dict[str, np.ndarray], rules: dict[str, EffectiveTolerance], read: list[str]) -> list[CheckResult]:
    """compare.reference (0 ULP against the reference semantics) and compare.onnxruntime (within each output's
    tolerance) of a run on the host."""
    subject, spec, folder, root = run.subject, run.spec, run.folder, run.root
    exact = compare(outputs, reference, exact=True)
    limit = spec.validation.tolerance.max_abs_error
    rel = spec.validation.tolerance.max_rel_error
    per_output = {name: rule.effective for name, rule in rules.items()}
    versus = compare(outputs, ort, max_abs_error=limit, max_rel_error=rel, max_abs_errors=per_output)
    path = write_json(folder / "numeric.json", {
        "schema_version": 2, "reference": exact.to_json(),
        "onnxruntime": {**versus.to_json(), "tolerance": {"max_abs_error": limit, "max_rel_error": rel,
                                                          "deploy_max_abs_error": limit,
                                                          "outputs": {n: r.to_json() for n, r in sorted(rules.items())}}}})
    written = [project_relative(path, root)]
    failure = exact.first_failure()
    results = [result(checks.REFERENCE, subject, Verdict.PASS if exact.passed else Verdict.FAIL,
                      failure.reason if failure else "", exact.measured(), read, written)]
    failure = versus.first_failure()
    measured = {**versus.measured(), "tolerance_max_abs_error": max(per_output.values(), default=limit),
                "tolerance_max_rel_error": rel,
                **{f"{n}.tolerance_basis": r.basis for n, r in sorted(rules.items())}}
    reason = failure.reason if failure else ""
    if failure is not None and failure.name in rules:
        reason += f" (tolerance {rules[failure.name].basis}: {rules[failure.name].reason})"
    results.append(result(checks.ONNXRUNTIME, subject, Verdict.PASS if versus.passed else Verdict.FAIL,
                          reason, measured, read, written))
    return results

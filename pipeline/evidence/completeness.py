"""A run cannot pass on nothing: every model's chain must have run, unless the model is excluded.

The coverage rules judge requirements over the models that produced results; a model whose
whole chain did not run (a CI job dropped from the matrix, a job that died before its first
step) only turns some requirements from *verified* into *partially verified*, a warning. A
nightly run would then be green on nothing. This module adds the run-level rule
(docs/evidence.md, "Runs that cannot pass on nothing"):

* EVID-E080 (error): a model none of whose step checks passed, failed or was emulated: every
  one is `not run` (no step left results, or every result says `not run`);
* EVID-E081 (error): a model some of whose steps left no results at all (no `checks.json`,
  or one holding none of the step's checks): its chain stopped part way;
* EVID-E082 (note): a model excluded by its deploy.yaml (`excluded: <reason>`) or on the
  command line; neither error is raised for it, and the summary names it with the reason.

Only the steps of the chain count (pipeline.project.layout.STEPS) and only steps with registered
checks: the evidence builder's own checks always produce a verdict and prove nothing about
the chain.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, Mapping, NamedTuple

from pipeline.project.deploy import DeployError, load_deploy
from pipeline.diagnostics import Finding, Severity, Span
from pipeline.evidence.collect import Outcome
from pipeline.project.layout import STEPS, model_dir
from pipeline.evidence.runsummary import E_CHAIN_INCOMPLETE, E_MODEL_EXCLUDED, E_MODEL_NOT_RUN
from pipeline.ledger.checks import CheckSpec, Verdict


class Exclusion(NamedTuple):
    """Why a model may be absent from a run, and where that is said (None: the command line)."""

    reason: str
    span: Span | None = None


def excluded_models(root: str | Path, models: Iterable[str], command_line: Iterable[str] = ()) -> dict[str, Exclusion]:
    """Model -> its exclusion: on the command line, or its deploy.yaml's `excluded: <reason>`.

    A spec that does not load excludes nothing (the steps report its problems).
    """
    chosen = set(command_line)
    excluded: dict[str, Exclusion] = {}
    for model in models:
        if model in chosen:
            excluded[model] = Exclusion("excluded on the command line")
            continue
        path = model_dir(model, root) / "deploy.yaml"
        try:
            spec = load_deploy(path) if path.is_file() else None
        except DeployError:
            spec = None
        if spec is not None and spec.excluded:
            line, column = spec.location("excluded").line, spec.location("excluded").column
            excluded[model] = Exclusion(f"excluded by its deploy.yaml: {spec.excluded}",
                                        Span(f"models/{model}/deploy.yaml", line, column))
    return excluded


def _chain_checks(specs: Mapping[str, CheckSpec]) -> dict[str, list[str]]:
    """Step -> its registered checks, for the steps of the chain that have any."""
    by_step: dict[str, list[str]] = {}
    for spec in specs.values():
        if spec.step in STEPS:
            by_step.setdefault(spec.step, []).append(spec.id)
    return {step: sorted(by_step[step]) for step in STEPS if step in by_step}


def completeness_findings(models: Iterable[str], specs: Mapping[str, CheckSpec],
                          outcomes: Mapping[tuple[str, str], Outcome],
                          excluded: Mapping[str, Exclusion] | None = None) -> list[Finding]:
    """EVID-E080/E081 for each model whose chain did not (fully) run, EVID-E082 for each excluded one."""
    excluded = dict(excluded or {})
    by_step = _chain_checks(specs)
    findings: list[Finding] = []
    for model in models:
        if model in excluded:
            exclusion = excluded[model]
            findings.append(Finding(E_MODEL_EXCLUDED, Severity.NOTE, f"{model}: {exclusion.reason}; a run where its "
                                    "chain did not run passes", exclusion.span))
            continue
        if not by_step:
            continue
        silent = [step for step, ids in by_step.items() if not any(outcomes[(model, c)].results for c in ids)]
        verdicts = [outcomes[(model, c)].verdict for ids in by_step.values() for c in ids]
        total = len(verdicts)
        if all(v is Verdict.NOT_RUN for v in verdicts):
            why = ("no step left results" if len(silent) == len(by_step)
                   else f"steps without results: {', '.join(silent)}" if silent else "every result says not run")
            findings.append(Finding(E_MODEL_NOT_RUN, Severity.ERROR,
                                    f"{model}: its chain did not run: all {total} checks of its steps are not run "
                                    f"({why}); run it, or exclude it (`excluded: <reason>` in its deploy.yaml, or on the command line)"))
        elif silent:
            findings.append(Finding(E_CHAIN_INCOMPLETE, Severity.ERROR,
                                    f"{model}: its chain stopped part way: step(s) {', '.join(silent)} left no "
                                    f"results (artifacts/{model}/<step>/checks.json)"))
    return findings


__all__ = ["Exclusion", "E_CHAIN_INCOMPLETE", "E_MODEL_EXCLUDED", "E_MODEL_NOT_RUN", "completeness_findings",
           "excluded_models"]

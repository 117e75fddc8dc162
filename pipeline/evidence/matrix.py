"""The trace matrix: requirements <-> checks <-> verdicts per model <-> artifacts, and gaps.

Built from the requirement set, the check registry, the link baseline and whatever the steps
left under artifacts/. Coverage rules (docs/evidence.md):

* a requirement with checks of its own is judged on them, per model, result by result (a
  check has one result per subject: deployment, item, file): `pass` when every result passed,
  `partial` when some passed and the others did not run or were emulated (a platform whose
  tools are missing leaves the host's passes standing), `fail` when any failed; a check
  linked through a stale link counts as not run;
* a result `n/a` (the check does not apply: a model without a GPU deployment has no CUDA code)
  is left out: a model on which every result is `n/a` is `n/a` for the requirement and is left
  out of its overall status, and a requirement `n/a` on every model is *not applicable*
  (counted apart, a note, never coverage and never a gap);
* a requirement without checks but with children is judged on its children (worst first);
* a requirement with neither is a gap ("no check").

Only `pass` is coverage: a failing, emulated, not-run or n/a check never verifies anything.

Where a verdict was obtained matters for requirements verified on the target
(`verified_on: target`): a pass obtained on a host (`pass off target`) or an emulated result
verifies such a requirement only off its platform, and one whose checks could not run here
is *open for the target*. In the default (`development`) mode those are listed and do not
fail the run; the `strict` mode (the final certification run on the target) fails unless
every requirement is verified on its platform.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from pipeline.diagnostics import Finding, Severity, Span, sorted_findings
from pipeline.evidence import gaps, selfchecks
from pipeline.evidence.baseline import Link, current_links, link_findings, read_baseline
from pipeline.ledger.checks import CheckSpec, Verdict, Where
from pipeline.evidence.codetrace import CodeTrace, read_code_traces
from pipeline.evidence.collect import (
    ModelResults,
    Outcome,
    StoredResult,
    aggregate,
    collect_model,
    package_check_path,
    read_results_file,
)
from pipeline.ledger.objectives import OBJECTIVES
from pipeline.ledger.hashing import FileDigest, file_digest, iter_files, relative_posix
from pipeline.ledger.records import RecordCheck, check_records
from pipeline.evidence.checklinks import load_checks, registry_findings
from pipeline.ledger.requirements import RequirementSet, read_requirements
from pipeline.ledger.tools import GitState, git_state
from pipeline.project.layout import RECORD_FILE, STEPS, model_names, step_dir
from pipeline.ledger.freshness import FAILED_FILE
from pipeline.evidence.modes import DEVELOPMENT, MODES, STRICT  # noqa: F401 (re-exported)

SCHEMA_VERSION = 1

# Overall requirement statuses, worst first.
FAILED = "failed"
NO_CHECK = "no check"
NOT_VERIFIED = "not verified"
PARTIAL = "partially verified"
OFF_PLATFORM = "verified only on host or by emulation"
VERIFIED = "verified"
NOT_APPLICABLE = "not applicable"   # n/a on every model: counted apart, after every judged status
STATUS_ORDER: tuple[str, ...] = (FAILED, NO_CHECK, NOT_VERIFIED, PARTIAL, OFF_PLATFORM, VERIFIED, NOT_APPLICABLE)

# Per-model requirement statuses, worst first; `n/a` last: it never lowers or raises another.
M_FAIL, M_NO_CHECK, M_NOT_RUN, M_EMULATED, M_PARTIAL, M_PASS = "fail", "no check", "not run", "emulated", "partial", "pass"
M_OFF_PLATFORM = "pass off target"
M_NA = "n/a"
MODEL_STATUS_ORDER: tuple[str, ...] = (M_FAIL, M_NO_CHECK, M_NOT_RUN, M_EMULATED, M_PARTIAL, M_OFF_PLATFORM, M_PASS,
                                       M_NA)

E_NOT_VERIFIED_BY_CHECK = "EVID-E012"
E_REQUIREMENT_FAILED = "EVID-E013"
E_REQUIREMENT_NOT_VERIFIED = "EVID-E014"
E_PARTIAL = "EVID-E021"
E_UNREGISTERED_RESULT = "EVID-E023"
E_RECORDED_REQUIREMENTS = "EVID-E024"
E_OPEN_FOR_TARGET = "EVID-E026"


@dataclass
class RequirementStatus:
    """How one requirement stands: overall, per model, and through which checks."""

    id: str
    status: str
    per_model: dict[str, str]
    checks: list[str]
    children: list[str]
    via_children: bool
    detail: str = ""
    verified_on: str = "host"
    why: str = ""          # what it still owes, in brief (set with the gap findings: pipeline/evidence/gaps.py)

    @property
    def open_for_target(self) -> bool:
        """A target requirement that this run could not (fully) verify on the target, and that did not fail."""
        return (self.verified_on == "target" and not self.via_children
                and self.status in (NOT_VERIFIED, PARTIAL, OFF_PLATFORM))


@dataclass
class ArtifactInfo:
    """One artifact: digest (None when missing), producer, and the checks that used it.

    A folder a check names (`kind` "folder") is listed by its files (`files`, each indexed as
    an artifact of its own) and identified by the digest of its listing (`listing_digest`).
    """

    path: str
    model: str
    step: str = ""
    sha256: str | None = None
    size: int | None = None
    read_by: set[str] = field(default_factory=set)
    written_by: set[str] = field(default_factory=set)
    kind: str = "file"
    files: list[str] = field(default_factory=list)

    def to_json(self, specs: Mapping[str, CheckSpec]) -> dict[str, Any]:
        checks = sorted(self.read_by | self.written_by)
        reqs = sorted({r for c in checks if c in specs for r in specs[c].requirements})
        return {
            "path": self.path,
            "model": self.model,
            "step": self.step,
            "sha256": self.sha256,
            "size": self.size,
            "read_by": sorted(self.read_by),
            "written_by": sorted(self.written_by),
            "requirements": reqs,
            "kind": self.kind,
            "files": list(self.files),
        }


def listing_digest(folder: str, files: Iterable[FileDigest]) -> str:
    """SHA-256 of a folder's listing: one `<sha256>  <path inside the folder>` line per file, sorted by path.

    The text `sha256sum` prints for the folder's files, so an auditor can recompute it:
    `(cd F && find . -type f -printf '%P\\n' | LC_ALL=C sort | xargs -d '\\n' sha256sum) | sha256sum`.
    """
    prefix = folder.rstrip("/") + "/"
    lines = sorted((d.path[len(prefix):], d.sha256) for d in files if d.path.startswith(prefix))
    return hashlib.sha256("".join(f"{sha}  {name}\n" for name, sha in lines).encode("utf-8")).hexdigest()


@dataclass
class TraceMatrix:
    """Everything the reports show; `to_json` is reports/trace.json."""

    requirements: RequirementSet
    specs: dict[str, CheckSpec]
    models: list[str]
    outcomes: dict[tuple[str, str], Outcome]
    unregistered: dict[tuple[str, str], Outcome]
    statuses: dict[str, RequirementStatus]
    artifacts: dict[str, ArtifactInfo]
    code_traces: list[CodeTrace]
    stale_links: set[Link]
    findings: list[Finding]
    git: GitState
    mode: str = DEVELOPMENT
    step_states: dict[str, dict[str, str]] = field(default_factory=dict)   # model -> step -> ran | failed
    refused: dict[str, Finding] = field(default_factory=dict)              # model folder -> why doit did not run it

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.is_error]

    def coverage(self) -> dict[str, Any]:
        """Requirement counts per status, overall and per level."""
        counts = {status: 0 for status in STATUS_ORDER}
        per_level: dict[str, dict[str, int]] = {}
        for req in self.requirements:
            status = self.statuses[req.id].status
            counts[status] += 1
            per_level.setdefault(req.level, {s: 0 for s in STATUS_ORDER})[status] += 1
        open_for_target = sorted(r for r, s in self.statuses.items() if s.open_for_target)
        return {"total": len(self.requirements), "by_status": counts, "by_level": per_level,
                "open_for_target": open_for_target}

    def objectives(self) -> list[dict[str, Any]]:
        """DO-178C Annex A objective -> the requirements that name it, and the worst of their statuses:
        the compliance view an auditor starts from (pipeline/ledger/objectives.py). An objective no
        requirement names is listed with `status` None: this pipeline gives no evidence for it."""
        rows = []
        for objective in OBJECTIVES.values():
            reqs = [r.id for r in self.requirements if objective.key in r.objectives]
            statuses = [self.statuses[r].status for r in reqs]
            worst = min(statuses, key=STATUS_ORDER.index) if statuses else None
            rows.append({"objective": objective.key, "title": objective.title, "sections": list(objective.sections),
                         "requirements": reqs, "status": worst})
        return rows

    def outcome(self, model: str, check_id: str) -> Outcome | None:
        return self.outcomes.get((model, check_id))

    def to_json(self) -> dict[str, Any]:
        reqs = []
        for req in self.requirements:
            status = self.statuses[req.id]
            entry = req.to_json()
            entry.update(
                {
                    "status": status.status,
                    "status_detail": status.detail,
                    "per_model": status.per_model,
                    "checks": status.checks,
                    "children": status.children,
                    "via_children": status.via_children,
                    "open_for_target": status.open_for_target,
                    "why": status.why,
                }
            )
            reqs.append(entry)
        checks = []
        for spec in self.specs.values():
            checks.append(
                {
                    "id": spec.id,
                    "title": spec.title,
                    "step": spec.step,
                    "description": spec.description,
                    "requirements": list(spec.requirements),
                    "stale_links": sorted(l.target for l in self.stale_links if l.source == f"check:{spec.id}"),
                    "verdicts": {m: self.outcomes[(m, spec.id)].verdict.value for m in self.models},
                }
            )
        return {
            "schema_version": SCHEMA_VERSION,
            "mode": self.mode,
            "git": self.git.to_json(),
            "models": list(self.models),
            "requirement_files": list(self.requirements.files),
            "coverage": self.coverage(),
            "objectives": self.objectives(),
            "requirements": reqs,
            "checks": checks,
            "outcomes": [self.outcomes[k].to_json() for k in sorted(self.outcomes)],
            "unregistered": [self.unregistered[k].to_json() for k in sorted(self.unregistered)],
            "artifacts": [self.artifacts[p].to_json(self.specs) for p in sorted(self.artifacts)],
            "code_traces": [t.to_json() for t in self.code_traces],
            "findings": [f.to_json() for f in self.findings],
            "step_states": {m: dict(states) for m, states in sorted(self.step_states.items())},
            "refused": [{"model": m, "code": f.code, "message": f.message} for m, f in sorted(self.refused.items())],
        }


def model_status(verdicts: list[Verdict], on_platform: list[bool]) -> str:
    """One model's status from its checks' verdicts (one per result, or one per check) and, for each,
    whether it passed where it must; `n/a` verdicts are left out (all `n/a`: the model is `n/a`)."""
    if not verdicts:
        return M_NO_CHECK
    kept = [(v, p) for v, p in zip(verdicts, on_platform) if v is not Verdict.NOT_APPLICABLE]
    if not kept:
        return M_NA
    applicable = [v for v, _ in kept]
    if Verdict.FAIL in applicable:
        return M_FAIL
    if all(v is Verdict.PASS for v in applicable):
        return M_PASS if all(p for _, p in kept) else M_OFF_PLATFORM
    if Verdict.PASS in applicable:
        return M_PARTIAL
    if Verdict.EMULATED in applicable:
        return M_EMULATED
    return M_NOT_RUN


def _overall(per_model: Mapping[str, str], target: bool = False) -> str:
    if not per_model:
        return NOT_VERIFIED
    values = [v for v in per_model.values() if v != M_NA]
    if not values:
        return NOT_APPLICABLE
    if M_FAIL in values:
        return FAILED
    if all(v == M_PASS for v in values):
        return VERIFIED
    if target and all(v in (M_PASS, M_OFF_PLATFORM, M_EMULATED) for v in values):
        return OFF_PLATFORM
    if any(v in (M_PASS, M_PARTIAL, M_OFF_PLATFORM) for v in values):
        return PARTIAL
    if all(v == M_NO_CHECK for v in values):
        return NO_CHECK
    return NOT_VERIFIED


def _on_platform(outcome: Outcome, target: bool) -> bool:
    """Whether the passing results of `outcome` were obtained where the requirement must be verified."""
    if not target:
        return True
    passing = [s.result for s in outcome.results if s.result.verdict is Verdict.PASS]
    return bool(passing) and all(r.obtained is not None and r.obtained.where is Where.TARGET for r in passing)


def result_verdicts(outcome: Outcome, target: bool, stale: bool = False) -> tuple[list[Verdict], list[bool]]:
    """The verdicts a requirement is judged on for one check on one model, one per result (an outcome
    without results, or a stale link: its aggregate verdict, or `not run`), and for each whether it
    was obtained where the requirement must be verified (only a pass needs to be)."""
    if stale:
        return [Verdict.NOT_RUN], [True]
    if not outcome.results:
        return [outcome.verdict], [_on_platform(outcome, target)]
    verdicts, places = [], []
    for stored in outcome.results:
        result = stored.result
        verdicts.append(result.verdict)
        places.append(not target or result.verdict is not Verdict.PASS
                      or (result.obtained is not None and result.obtained.where is Where.TARGET))
    return verdicts, places


def compute_statuses(
    requirements: RequirementSet,
    specs: Mapping[str, CheckSpec],
    models: list[str],
    outcomes: Mapping[tuple[str, str], Outcome],
    stale: set[Link],
) -> dict[str, RequirementStatus]:
    """Apply the coverage rules of the module docstring to every requirement."""
    verifying: dict[str, list[str]] = {r.id: [] for r in requirements}
    for spec in specs.values():
        for req_id in spec.requirements:
            if req_id in verifying:
                verifying[req_id].append(spec.id)
    statuses: dict[str, RequirementStatus] = {}
    visiting: set[str] = set()

    def judge(req_id: str) -> RequirementStatus:
        if req_id in statuses:
            return statuses[req_id]
        visiting.add(req_id)
        checks = sorted(verifying[req_id])
        children = [c for c in requirements.children(req_id) if c not in visiting]
        target = requirements[req_id].verified_on == "target"
        if checks:
            per_model = {}
            for model in models:
                verdicts, on_platform = [], []
                for check_id in checks:
                    found, places = result_verdicts(outcomes[(model, check_id)], target,
                                                    Link(f"check:{check_id}", req_id) in stale)
                    verdicts += found
                    on_platform += places
                per_model[model] = model_status(verdicts, on_platform)
            status = RequirementStatus(req_id, _overall(per_model, target), per_model, checks, children, False,
                                       verified_on=requirements[req_id].verified_on)
            if not models:
                status.detail = "no model results"
        elif children:
            child_status = [judge(c) for c in children]
            per_model = {
                m: min((cs.per_model.get(m, M_NOT_RUN) for cs in child_status), key=MODEL_STATUS_ORDER.index) for m in models
            }
            overall = min((cs.status for cs in child_status), key=STATUS_ORDER.index)
            status = RequirementStatus(req_id, overall, per_model, [], children, True, "through its children",
                                       requirements[req_id].verified_on)
        else:
            status = RequirementStatus(req_id, NO_CHECK, {m: M_NO_CHECK for m in models}, [], [], False, "no check verifies it",
                                       requirements[req_id].verified_on)
        visiting.discard(req_id)
        statuses[req_id] = status
        return status

    for req in requirements:
        judge(req.id)
    return {r.id: statuses[r.id] for r in requirements}


def _results(outcome: Outcome) -> list[tuple[Verdict, str, str, Where | None]]:
    """(verdict, subject, reason, where obtained) of each result of `outcome` (its aggregate when it has none)."""
    if not outcome.results:
        return [(outcome.verdict, outcome.model, outcome.reason, None)]
    return [(s.result.verdict, s.result.subject, s.result.reason, s.result.obtained.where if s.result.obtained else None)
            for s in outcome.results]


def requirement_gaps(status: RequirementStatus, outcomes: Mapping[tuple[str, str], Outcome], models: list[str],
                     stale: set[Link]) -> list[gaps.Gap]:
    """One gap per model and check of `status` short of a pass where the requirement must be verified."""
    found = []
    for model in models:
        for check_id in status.checks:
            outcome = outcomes[(model, check_id)]
            gap = gaps.gaps_of(status.id, model, check_id, _results(outcome), status.verified_on == "target",
                               Link(f"check:{check_id}", status.id) in stale, outcome.step)
            if gap is not None:
                found.append(gap)
    return found


def _gap_findings(
    requirements: RequirementSet,
    statuses: Mapping[str, RequirementStatus],
    outcomes: Mapping[tuple[str, str], Outcome],
    models: list[str],
    stale: set[Link],
    mode: str = DEVELOPMENT,
    root: Path = Path("."),
) -> list[Finding]:
    """Findings for requirements not verified on their platform, one per requirement, model and check
    (pipeline/evidence/gaps.py); `strict` makes every one of a requirement open for the target an error.
    Sets each status's `why` (what its gaps say, in brief)."""
    strict = mode == STRICT
    locator = gaps.Locator(root)
    findings: list[Finding] = []
    for req in requirements:
        status = statuses[req.id]
        if status.via_children:
            continue  # its children carry the findings
        if status.status == NO_CHECK:
            findings.append(Finding(E_NOT_VERIFIED_BY_CHECK, Severity.ERROR, f"{req.id} is verified by no check", req.span,
                                    fix="register a check that verifies it (docs/conventions.md \"Checks and results\")"))
            status.why = "no check verifies it"
            continue
        if status.status == NOT_APPLICABLE:
            na = [(m, c, outcomes[(m, c)].reason) for m in models for c in status.checks]
            model, check_id, reason = na[0] if na else ("", "", status.detail)
            status.why = gaps.shorten(f"n/a on every model: {gaps.brief(reason, 200)}", gaps.MAX_WHY)
            findings.append(Finding(gaps.E_NOT_APPLICABLE, Severity.NOTE, gaps.shorten(
                f"{req.id} applies to no model: {check_id} n/a on {model}"
                + (f" and {len(models) - 1} more" if len(models) > 1 else "") + f": {gaps.brief(reason)}", gaps.MAX_MESSAGE),
                req.span, fix="nothing to do, unless a model should exercise it (add a deployment that does)"))
            continue
        if status.status == VERIFIED:
            continue
        if not models:
            status.why = status.detail or "no model results"
            findings.append(Finding(E_REQUIREMENT_NOT_VERIFIED, Severity.ERROR, f"{req.id} is not verified: no model "
                                    "results", req.span, fix="add a model under models/ and run `doit verify`"))
            continue
        owed = requirement_gaps(status, outcomes, models, stale)
        status.why = gaps.owed_why(owed)
        if status.open_for_target:
            code, severity = E_OPEN_FOR_TARGET, Severity.ERROR if strict else Severity.NOTE
        elif status.status == FAILED:
            code, severity = E_REQUIREMENT_FAILED, Severity.ERROR
            owed = [g for g in owed if g.verdict is Verdict.FAIL]
        elif status.status == NOT_VERIFIED:
            code, severity = E_REQUIREMENT_NOT_VERIFIED, Severity.ERROR
        elif status.status == PARTIAL:
            code, severity = E_PARTIAL, Severity.WARNING
        else:
            continue
        findings += [gaps.finding(g, code, severity, locator.span, req.span) for g in owed]
    return findings


def _model_link_findings(
    collected: ModelResults, specs: Mapping[str, CheckSpec], requirements: RequirementSet, stale: set[Link]
) -> list[Finding]:
    """Trace-integrity problems concerning one model (they decide evidence.trace)."""
    model = collected.model
    findings: list[Finding] = []
    for check_id, outcome in collected.unregistered.items():
        findings.append(
            Finding(
                E_UNREGISTERED_RESULT,
                Severity.ERROR,
                f"{model}: {outcome.source} holds results of check {check_id}, which is not registered (no requirement traces to it)",
                Span(outcome.source, 1, 1) if outcome.source else None,
            )
        )
    for check_id, outcome in collected.outcomes.items():
        spec = specs[check_id]
        for stored in outcome.results:
            if stored.source == selfchecks.SOURCE:
                continue
            if set(stored.recorded_requirements) != set(spec.requirements):
                findings.append(
                    Finding(
                        E_RECORDED_REQUIREMENTS,
                        Severity.ERROR,
                        f"{model}: result of {check_id} recorded requirements {', '.join(stored.recorded_requirements) or 'none'} "
                        f"but the check now traces to {', '.join(spec.requirements) or 'none'}; re-execute step {spec.step}",
                        Span(stored.source, 1, 1),
                    )
                )
                break
        if outcome.results and outcome.step != selfchecks.STEP:
            for req_id in spec.requirements:
                if req_id not in requirements:
                    findings.append(
                        Finding(
                            "EVID-E010",
                            Severity.ERROR,
                            f"{model}: check {check_id} produced results but names requirement {req_id}, which does not exist",
                        )
                    )
                elif Link(f"check:{check_id}", req_id) in stale:
                    findings.append(
                        Finding(
                            "EVID-E015",
                            Severity.ERROR,
                            f"{model}: results of {check_id} trace to {req_id} through a stale link",
                        )
                    )
    return findings


def _index_artifacts(
    model: str, records: RecordCheck, outcomes: Iterable[Outcome], root: Path, artifacts: dict[str, ArtifactInfo]
) -> None:
    for step, record in records.records.items():
        for digest in record.outputs:
            current = records.current.get(digest.path)
            info = artifacts.setdefault(digest.path, ArtifactInfo(digest.path, model))
            info.step = step
            if current is not None:
                info.sha256, info.size = current.sha256, current.size
    for outcome in outcomes:
        for paths, attr in ((outcome.artifacts_read, "read_by"), (outcome.artifacts_written, "written_by")):
            for raw in paths:
                try:
                    rel = relative_posix(raw, root)
                except ValueError:
                    rel = raw
                known = artifacts.get(rel)
                if known is None:
                    known = artifacts[rel] = ArtifactInfo(rel, model)
                    full = root / rel
                    if not Path(rel).is_absolute() and full.is_file():
                        now: FileDigest = records.current.get(rel) or file_digest(full, root)
                        known.sha256, known.size = now.sha256, now.size
                    elif not Path(rel).is_absolute() and full.is_dir() and not full.is_symlink():
                        _index_folder(known, model, records, root, artifacts)
                getattr(known, attr).add(outcome.check_id)
                for member in known.files:
                    getattr(artifacts[member], attr).add(outcome.check_id)


def _index_folder(folder: ArtifactInfo, model: str, records: RecordCheck, root: Path,
                  artifacts: dict[str, ArtifactInfo]) -> None:
    """A folder named by a check: listed by its files (each indexed too), identified by its listing digest."""
    digests = []
    for member in iter_files(root / folder.path):
        rel = relative_posix(member, root)
        digest = records.current.get(rel) or file_digest(member, root)
        digests.append(digest)
        info = artifacts.setdefault(rel, ArtifactInfo(rel, model))
        if info.sha256 is None:
            info.sha256, info.size = digest.sha256, digest.size
    folder.kind = "folder"
    folder.files = [d.path for d in digests]
    folder.sha256 = listing_digest(folder.path, digests)
    folder.size = sum(d.size for d in digests)


def step_states(model: str, root: Path) -> dict[str, str]:
    """step -> `failed` (its last run failed: failed.json) or `ran` (it left a record), for the steps present."""
    states = {}
    for step in STEPS:
        folder = step_dir(model, step, root)
        if (folder / FAILED_FILE).is_file():
            states[step] = "failed"
        elif (folder / RECORD_FILE).is_file():
            states[step] = "ran"
    return states


def _refusal_findings(root: Path) -> dict[str, Finding]:
    """One error per model folder that `doit` refuses to run (pipeline.project.tasking.refusals_by_model)."""
    from pipeline.project.tasking import refusal_line, refusals_by_model

    return {model: Finding(error.code, Severity.ERROR, f"model {model} not run: {refusal_line(error, with_code=False)}")
            for model, error in refusals_by_model(root).items()}


def _package_result(model: str, root: Path, mode: str) -> StoredResult:
    if mode == "placeholder":
        return selfchecks.package_placeholder(model)
    path = package_check_path(model, root)
    if path.is_file():
        stored, _ = read_results_file(path, root)
        for item in stored or []:
            if item.result.check_id == selfchecks.PACKAGE:
                return item
    return selfchecks.package_missing(model)


def build_matrix(
    root: str | Path = ".",
    models: list[str] | None = None,
    *,
    package_results: str = "read",
    git: GitState | None = None,
    check_modules: Iterable[str] | None = None,
    mode: str = DEVELOPMENT,
) -> TraceMatrix:
    """Collect everything under `root` and judge it.

    `models`: default every shipped model. `package_results`: "read" takes the
    evidence.package verdict from reports/<m>/package-check.json; "placeholder" is used
    inside a package, which cannot attest itself. `mode`: `development` lists requirements
    open for the target; `strict` makes them errors (module docstring).
    """
    if mode not in MODES:
        raise ValueError(f"unknown evidence mode {mode!r}; modes are {', '.join(MODES)}")
    base = Path(root)
    refused: dict[str, Finding] = {}
    if models is None:   # every shipped model: those doit refuses to run are named as errors, not judged
        refused = _refusal_findings(base)
        models = [m for m in model_names(base) if m not in refused]
    models = list(models)
    requirements, findings = read_requirements(base)
    findings = findings + list(refused.values())
    specs, load_findings = load_checks(check_modules)
    findings = findings + load_findings + registry_findings(specs, requirements)
    links = current_links(specs, requirements)
    baseline, baseline_findings = read_baseline(base)
    findings += baseline_findings
    link_problems, stale = link_findings(links, baseline)
    findings += link_problems

    outcomes: dict[tuple[str, str], Outcome] = {}
    unregistered: dict[tuple[str, str], Outcome] = {}
    artifacts: dict[str, ArtifactInfo] = {}
    code_traces: list[CodeTrace] = []
    states: dict[str, dict[str, str]] = {}
    for model in models:
        states[model] = step_states(model, base)
        records = check_records(model, base)
        traces, trace_findings = read_code_traces(model, base, {r.id for r in requirements})
        code_traces.extend(traces)
        extra = [selfchecks.records_result(model, records), _package_result(model, base, package_results)]
        collected = collect_model(model, specs, base, extra)
        model_findings = _model_link_findings(collected, specs, requirements, stale) + trace_findings
        has_results = bool(collected.steps_present)
        trace = selfchecks.trace_result(model, has_results, model_findings + collected.findings)
        if selfchecks.TRACE in specs:
            collected.outcomes[selfchecks.TRACE] = aggregate(model, selfchecks.TRACE, selfchecks.STEP, [trace], trace.source)
        findings += records.findings + collected.findings + model_findings
        for check_id, outcome in collected.outcomes.items():
            outcomes[(model, check_id)] = outcome
        for check_id, outcome in collected.unregistered.items():
            unregistered[(model, check_id)] = outcome
        _index_artifacts(model, records, collected.outcomes.values(), base, artifacts)
    statuses = compute_statuses(requirements, specs, models, outcomes, stale)
    findings += _gap_findings(requirements, statuses, outcomes, models, stale, mode, base)
    return TraceMatrix(
        requirements=requirements,
        specs=specs,
        models=models,
        outcomes=outcomes,
        unregistered=unregistered,
        statuses=statuses,
        artifacts=artifacts,
        code_traces=code_traces,
        stale_links=stale,
        findings=sorted_findings(gaps.with_fixes(findings)),
        git=git if git is not None else git_state(base),
        mode=mode,
        step_states=states,
        refused=refused,
    )

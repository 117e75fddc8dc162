"""Comparing a run with a baseline (the previous night's trace.json or junit.xml): nothing may get worse.

`evidence build --baseline PREVIOUS` reads the baseline into a `Snapshot` (verdict per model
and check, status per requirement overall and per model) and compares tonight's snapshot of
the same kind with it:

* a check whose verdict on a model got worse (pass -> emulated -> not run -> fail, or the
  model gone) is a regression (EVID-E084, error);
* a requirement whose overall status got worse (verified -> verified only on host or by
  emulation -> partially verified -> not verified -> no check -> failed), or whose status on a
  model got worse (so a requirement verified on fewer models than in the baseline), is a
  regression;
* everything that got better, new models, checks and requirements, checks and requirements
  that no longer exist (their requirements' statuses say what that cost) are listed
  (EVID-E085, note);
* a check or a requirement that now does not apply (`n/a`, `not applicable`), or applies
  where it did not, is neither worse nor better: it is listed (EVID-E085, note), and the
  statuses of the requirements it traces to say what that changed.

A model excluded from the run (pipeline/evidence/completeness.py) excuses what got worse on it
alone: such changes are listed as excused, not failed.

A JUnit baseline carries no per-model requirement status: both sides are then derived the same
way from the JUnit testcases (a requirement's checks on one model, judged as the trace matrix
judges them), so that the comparison is like for like. The baseline is hostile input: only a
regular file within the size limit, parsed without exception; every problem is EVID-E083 with
the file and the key path or element.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from pipeline.diagnostics import Finding, Location, PipelineError, Severity
from pipeline.files.readguard import InputRefused, read_input
from pipeline.files.treeguard import TreeRefused, loads_json, parse_xml
from pipeline.files.yamlguard import limit_from_env
from pipeline.evidence.collect import VERDICT_ORDER
from pipeline.evidence.junit import TRACEABILITY_SUITE
from pipeline.evidence.matrix import MODEL_STATUS_ORDER, STATUS_ORDER, model_status
from pipeline.evidence.runsummary import BETTER, E_BASELINE_UNREADABLE, E_CHANGE, E_REGRESSION
from pipeline.ledger.checks import Verdict

MAX_BASELINE_BYTES = 256 * 1024 * 1024
# What a baseline may hold once parsed (pipeline/files/treeguard.py judges it first): the trace.json
# of the five shipped models has 119,000 values and keys and nests 10 deep, their junit.xml 3,860 tags.
MAX_DEPTH = 64
MAX_NODES = 8_000_000          # PIPELINE_MAX_BASELINE_NODES
NODES_VARIABLE = "PIPELINE_MAX_BASELINE_NODES"
MAX_ELEMENTS = 2_000_000
MAX_ATTRIBUTES = 8_000_000
TRACE, JUNIT = "trace.json", "junit.xml"
GONE = "absent"   # tonight's side of a model the baseline had and this run does not

_VERDICTS = tuple(v.value for v in VERDICT_ORDER)   # worst first


@dataclass(frozen=True)
class Snapshot:
    """What a run verified, in the terms the comparison needs."""

    kind: str                                   # TRACE or JUNIT
    models: tuple[str, ...]
    checks: dict[tuple[str, str], str]          # (model, check) -> verdict
    requirements: dict[str, str]                # requirement -> overall status
    per_model: dict[tuple[str, str], str]       # (requirement, model) -> per-model status
    source: str = ""


@dataclass(frozen=True)
class Change:
    """One thing that differs from the baseline: `subject` was `before`, is `after`."""

    subject: str
    before: str
    after: str
    detail: str = ""

    def text(self) -> str:
        change = f"{self.before} -> {self.after}" if self.before and self.after else (self.after or self.before)
        return f"{self.subject}: {change}" + (f" ({self.detail})" if self.detail else "")


@dataclass
class Comparison:
    regressions: list[Change] = field(default_factory=list)
    improvements: list[Change] = field(default_factory=list)
    excused: list[Change] = field(default_factory=list)     # worse only on excluded models
    removed: list[Change] = field(default_factory=list)     # checks or requirements that no longer exist
    applicability: list[Change] = field(default_factory=list)   # now n/a, or applies where it was n/a


# ---------------------------------------------------------------------- reading


def _problem(source: str, message: str, key_path: str = "") -> PipelineError:
    return PipelineError(E_BASELINE_UNREADABLE, f"baseline: {message}", Location(source, key_path=key_path))


def _read_text(path: Path) -> str:
    source = path.as_posix()
    try:   # not through a link, a regular file, never more read than it holds (pipeline/files/readguard.py)
        data = read_input(path, max_bytes=MAX_BASELINE_BYTES)
    except InputRefused as refused:
        raise _problem(source, f"cannot read it: {refused.reason}" if refused.unreadable else refused.reason) from None
    except OSError as exc:
        raise _problem(source, f"cannot read it: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _problem(source, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None


def read_baseline(path: str | Path) -> Snapshot:
    """The snapshot of a previous run's reports/trace.json or reports/junit.xml (told apart by content),
    its nesting and size judged before it is parsed (pipeline/files/treeguard.py)."""
    file = Path(path)
    text = _read_text(file)
    if text.lstrip().startswith("<"):
        return snapshot_from_junit(text, file.as_posix())
    try:
        document = loads_json(text.encode("utf-8"), MAX_DEPTH, limit_from_env(NODES_VARIABLE, MAX_NODES))
    except TreeRefused as refused:
        raise _problem(file.as_posix(), f"refused before parsing: {refused.reason} (raise the count with "
                       f"{NODES_VARIABLE})") from None
    except ValueError as exc:
        raise _problem(file.as_posix(), f"neither JUnit XML nor JSON: {exc}") from None
    return snapshot_from_trace(document, file.as_posix())


def _field(data: Any, key: str, kind: type | tuple[type, ...], source: str, path: str) -> Any:
    if not isinstance(data, dict) or key not in data:
        raise _problem(source, f"missing '{key}' (is this a reports/trace.json?)", path)
    value = data[key]
    if not isinstance(value, kind) or isinstance(value, bool):
        raise _problem(source, f"'{key}' has the wrong type", f"{path}.{key}" if path else key)
    return value


def _known(value: str, allowed: Iterable[str], source: str, path: str) -> str:
    allowed = tuple(allowed)
    if value not in allowed:
        raise _problem(source, f"unknown value '{value[:80]}' (expected one of: {', '.join(allowed)})", path)
    return value


def snapshot_from_trace(document: Any, source: str = TRACE) -> Snapshot:
    """The snapshot of a trace.json document (`TraceMatrix.to_json`)."""
    models = _field(document, "models", list, source, "")
    if not all(isinstance(m, str) for m in models):
        raise _problem(source, "a model name is not a string", "models")
    checks: dict[tuple[str, str], str] = {}
    for index, outcome in enumerate(_field(document, "outcomes", list, source, "")):
        where = f"outcomes[{index}]"
        model = _field(outcome, "model", str, source, where)
        check = _field(outcome, "check_id", str, source, where)
        checks[(model, check)] = _known(_field(outcome, "verdict", str, source, where), _VERDICTS, source,
                                        f"{where}.verdict")
    requirements: dict[str, str] = {}
    per_model: dict[tuple[str, str], str] = {}
    for index, entry in enumerate(_field(document, "requirements", list, source, "")):
        where = f"requirements[{index}]"
        req_id = _field(entry, "id", str, source, where)
        requirements[req_id] = _known(_field(entry, "status", str, source, where), STATUS_ORDER, source,
                                      f"{where}.status")
        for model, status in _field(entry, "per_model", dict, source, where).items():
            if not isinstance(status, str):
                raise _problem(source, "a per-model status is not a string", f"{where}.per_model.{model}")
            per_model[(req_id, model)] = _known(status, MODEL_STATUS_ORDER, source, f"{where}.per_model.{model}")
    if not requirements:
        raise _problem(source, "no requirements: not a trace.json of this pipeline", "requirements")
    return Snapshot(TRACE, tuple(models), checks, requirements, per_model, source)


def _properties(case: ET.Element) -> dict[str, str]:
    props = case.find("properties")
    if props is None:
        return {}
    return {p.get("name", ""): p.get("value", "") for p in props.findall("property")}


def snapshot_from_junit(text: str, source: str = JUNIT) -> Snapshot:
    """The snapshot of a junit.xml this pipeline wrote (with its testcase properties)."""
    try:
        root = parse_xml(text, MAX_DEPTH, MAX_ELEMENTS, MAX_ATTRIBUTES)
    except TreeRefused as refused:
        raise PipelineError(E_BASELINE_UNREADABLE, f"baseline: refused before parsing: {refused.reason} (the JUnit "
                            "this pipeline writes has no declaration and nests 5 deep)",
                            Location(source, refused.line, refused.column)) from None
    except ET.ParseError as exc:
        line, column = exc.position
        raise PipelineError(E_BASELINE_UNREADABLE, f"baseline: not well-formed XML: {exc}",
                            Location(source, line, column + 1)) from None
    if root.tag != "testsuites":
        raise _problem(source, f"root element <{root.tag[:40]}>, expected <testsuites> (a reports/junit.xml)")
    checks: dict[tuple[str, str], str] = {}
    obtained: dict[tuple[str, str], str] = {}
    requirements: dict[str, str] = {}
    req_checks: dict[str, tuple[list[str], bool]] = {}
    models: list[str] = []
    for s_index, suite in enumerate(root.findall("testsuite")):
        name = suite.get("name", "")
        for c_index, case in enumerate(suite.findall("testcase")):
            where = f"testsuite[{s_index}]/testcase[{c_index}]"
            props = _properties(case)
            if not props:
                raise _problem(source, "testcase without properties: only the JUnit this pipeline writes by default "
                               "(junit_xml with testcase properties) can be a baseline", where)
            if name == TRACEABILITY_SUITE:
                req_id = props.get("requirement", "")
                if not req_id:
                    raise _problem(source, "traceability testcase without a 'requirement' property", where)
                requirements[req_id] = _known(props.get("status", ""), STATUS_ORDER, source, f"{where}/status")
                req_checks[req_id] = ([c for c in props.get("checks", "").split(",") if c],
                                      props.get("verified_on") == "target")
                continue
            model, check = props.get("model", ""), props.get("check_id", "")
            if not model or not check:
                raise _problem(source, "check testcase without 'model' or 'check_id' property", where)
            if case.find("error") is not None:
                continue   # the result of an unregistered check: no verdict to compare
            checks[(model, check)] = _known(props.get("verdict", ""), _VERDICTS, source, f"{where}/verdict")
            obtained[(model, check)] = props.get("obtained", "")
            if model not in models:
                models.append(model)
    if not requirements:
        raise _problem(source, f"no '{TRACEABILITY_SUITE}' testsuite with requirements: not a junit.xml of this pipeline")
    per_model = _derived_per_model(models, checks, obtained, req_checks)
    return Snapshot(JUNIT, tuple(models), checks, requirements, per_model, source)


def _derived_per_model(models: Iterable[str], checks: Mapping[tuple[str, str], str], obtained: Mapping[tuple[str, str], str],
                       req_checks: Mapping[str, tuple[list[str], bool]]) -> dict[tuple[str, str], str]:
    """Per-model status of each requirement with checks of its own, judged like the trace matrix."""
    per_model: dict[tuple[str, str], str] = {}
    for req_id, (ids, target) in req_checks.items():
        if not ids:
            continue
        for model in models:
            keys = [(model, c) for c in ids if (model, c) in checks]
            if not keys:
                continue
            verdicts = [Verdict(checks[k]) for k in keys]
            on_platform = [not target or _on_target(obtained[k]) for k in keys]
            per_model[(req_id, model)] = model_status(verdicts, on_platform)
    return per_model


def _on_target(obtained: str) -> bool:
    """Whether every place a JUnit `obtained` property names is the target (`target:<platform>`)."""
    places = [p.strip() for p in obtained.split(",") if p.strip()]
    return bool(places) and all(p.startswith("target:") for p in places)


def snapshot_like(baseline: Snapshot, document: Mapping[str, Any], junit_text: str | None) -> Snapshot:
    """Tonight's snapshot, of the baseline's kind (a JUnit baseline is compared with tonight's JUnit)."""
    if baseline.kind == JUNIT:
        if junit_text is None:
            raise ValueError("a JUnit baseline needs tonight's JUnit text")
        return snapshot_from_junit(junit_text, "reports/junit.xml")
    return snapshot_from_trace(document, "reports/trace.json")


# ---------------------------------------------------------------------- comparing


_NOT_APPLICABLE = ("n/a", "not applicable")


def _applicability(before: str, after: str) -> bool:
    """Whether a change is one of applicability (to or from n/a), which is neither worse nor better."""
    return before != after and (before in _NOT_APPLICABLE or after in _NOT_APPLICABLE) and after != GONE


def _worse(order: tuple[str, ...], before: str, after: str) -> bool:
    """Whether `after` is worse than `before` in `order` (worst first); GONE is worst of all."""
    rank = {value: index for index, value in enumerate(order)}
    return (-1 if after == GONE else rank[after]) < rank[before]


def compare(baseline: Snapshot, current: Snapshot, excluded: Iterable[str] = ()) -> Comparison:
    """What got worse, what got better, what is new or gone (module docstring)."""
    excused_models = set(excluded)
    result = Comparison()
    now_models = set(current.models)
    for model in current.models:
        if model not in baseline.models:
            result.improvements.append(Change(f"model {model}", "", "new"))
    for model in baseline.models:
        if model not in now_models:
            change = Change(f"model {model}", "in the baseline", "absent from this run")
            (result.excused if model in excused_models else result.regressions).append(change)

    registered_now = {check for _, check in current.checks}
    for check in sorted({c for _, c in current.checks} - {c for _, c in baseline.checks}):
        result.improvements.append(Change(f"check {check}", "", "new"))
    for check in sorted({c for _, c in baseline.checks} - registered_now):
        result.removed.append(Change(f"check {check}", "", "no longer registered"))
    for (model, check), before in sorted(baseline.checks.items()):
        if check not in registered_now or model not in now_models:
            continue   # said once above (no longer registered, model absent)
        after = current.checks.get((model, check), GONE)
        if after == before:
            continue
        change = Change(f"{model}/{check}", before, after)
        if _applicability(before, after):
            result.applicability.append(change)
        elif _worse(_VERDICTS, before, after):
            (result.excused if model in excused_models else result.regressions).append(change)
        elif after != GONE:
            result.improvements.append(change)

    for req_id in sorted(set(current.requirements) - set(baseline.requirements)):
        result.improvements.append(Change(req_id, "", f"new requirement, {current.requirements[req_id]}"))
    for req_id in sorted(set(baseline.requirements) - set(current.requirements)):
        result.removed.append(Change(req_id, "", "no longer in the requirement set"))
    for req_id, before in sorted(baseline.requirements.items()):
        if req_id in current.requirements:
            _compare_requirement(req_id, before, baseline, current, excused_models, result)
    return result


def _compare_requirement(req_id: str, before: str, baseline: Snapshot, current: Snapshot, excused_models: set[str],
                         result: Comparison) -> None:
    after = current.requirements[req_id]
    worse_on, better_on = [], []
    for model in sorted(set(baseline.models) | set(current.models)):
        was, now = baseline.per_model.get((req_id, model)), current.per_model.get((req_id, model))
        if was is None or now == was:
            continue
        now = GONE if now is None else now
        if _applicability(was, now):
            continue          # the requirement's overall status says what it changed
        (worse_on if _worse(MODEL_STATUS_ORDER, was, now) else better_on).append((model, was, now))
    verified_before = sum(1 for m in baseline.models if baseline.per_model.get((req_id, m)) == "pass")
    verified_now = sum(1 for m in current.models if current.per_model.get((req_id, m)) == "pass")
    counts = f"verified on {verified_now} model(s), was {verified_before}" if verified_now != verified_before else ""
    models_text = "; ".join(f"{m}: {w} -> {n}" for m, w, n in worse_on)
    if _applicability(before, after) and not worse_on:
        result.applicability.append(Change(req_id, before, after, counts))
        return
    status_worse = after != before and not _applicability(before, after) and _worse(STATUS_ORDER, before, after)
    if status_worse or worse_on:
        detail = "; ".join(t for t in (counts, models_text) if t)
        change = Change(req_id, before, after, detail) if after != before else Change(req_id, "", f"still {after}", detail)
        on_excluded_only = bool(worse_on) and all(m in excused_models for m, _, _ in worse_on)
        (result.excused if on_excluded_only else result.regressions).append(change)
    elif after != before or better_on:
        detail = "; ".join(t for t in (counts, "; ".join(f"{m}: {w} -> {n}" for m, w, n in better_on)) if t)
        result.improvements.append(Change(req_id, before if after != before else "", after if after != before
                                          else f"still {after}", detail))


def comparison_findings(comparison: Comparison, source: str) -> list[Finding]:
    """EVID-E084 per regression (error), EVID-E085 per improvement, excused or removed item (note)."""
    findings = [Finding(E_REGRESSION, Severity.ERROR, f"worse than the baseline {source}: {c.text()}")
                for c in comparison.regressions]
    findings += [Finding(E_CHANGE, Severity.NOTE, f"{BETTER} {source}: {c.text()}")
                 for c in comparison.improvements]
    findings += [Finding(E_CHANGE, Severity.NOTE, f"worse than the baseline {source} only on excluded models: "
                         f"{c.text()}") for c in comparison.excused]
    findings += [Finding(E_CHANGE, Severity.NOTE, f"gone since the baseline {source}: {c.text()}")
                 for c in comparison.removed]
    findings += [Finding(E_CHANGE, Severity.NOTE, f"applies otherwise than in the baseline {source}: {c.text()}")
                 for c in comparison.applicability]
    return findings


__all__ = ["Change", "Comparison", "E_BASELINE_UNREADABLE", "E_CHANGE", "E_REGRESSION", "JUNIT", "Snapshot",
           "TRACE", "compare", "comparison_findings", "read_baseline", "snapshot_from_junit", "snapshot_from_trace",
           "snapshot_like"]

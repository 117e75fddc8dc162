"""JUnit XML for CI: one testcase per (model, check), plus one per requirement.

Built with the `junit-xml` package, then adjusted so that the file validates against the
Jenkins xunit junit-10.xsd (the `disabled` attribute junit-xml always writes is not in it)
and so that each testcase carries its requirement IDs twice: in its name (GitLab shows only
names) and as `<properties>` (Jenkins' JUnit plugin reads them, as pytest's xunit1 files do).
junit-10.xsd itself has no testcase properties; `testcase_properties=False` writes the strict
form for consumers that validate against it.

Verdict mapping: pass -> passed; fail -> <failure> with the reason; not run -> <skipped>;
emulated -> <skipped> with message "emulated (not coverage): ...", because only a pass on the
real target is coverage and CI must not count an emulation as a passed test; n/a -> <skipped>
with message "n/a (does not apply): ..." (the `verdict` property says which of the three). A result of an
unregistered check is an <error>: the evidence itself is wrong. Each check testcase says where
its verdict was obtained (property `obtained`: host, emulation or target:<platform>).

Requirement testcases: failed, not verified or unchecked -> <failure>; a requirement open for
the target (verified on the target platform, not here) -> <skipped> "open for the target: ..."
in the development mode and <failure> in the strict mode; partially verified -> <skipped>;
not applicable (n/a on every model) -> <skipped> "not applicable: ...". The message is the
requirement's first gap finding (one per model and check, pipeline/evidence/gaps.py) and the
output all of them.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import Iterable

from junit_xml import TestCase, TestSuite

from pipeline.ledger.checks import Verdict
from pipeline.evidence.collect import Outcome
from pipeline.evidence.gaps import E_NOT_APPLICABLE
from pipeline.evidence.matrix import (E_NOT_VERIFIED_BY_CHECK, E_OPEN_FOR_TARGET, E_PARTIAL, E_REQUIREMENT_FAILED,
                                      E_REQUIREMENT_NOT_VERIFIED, FAILED, NO_CHECK, NOT_APPLICABLE, NOT_VERIFIED,
                                      PARTIAL, STRICT, TraceMatrix)

_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
TRACEABILITY_SUITE = "traceability"
GAP_CODES = (E_NOT_VERIFIED_BY_CHECK, E_REQUIREMENT_FAILED, E_REQUIREMENT_NOT_VERIFIED, E_PARTIAL, E_OPEN_FOR_TARGET,
             E_NOT_APPLICABLE)


def _clean(text: str) -> str:
    return _ILLEGAL.sub("", text)


def testcase_name(check_id: str, requirements: Iterable[str]) -> str:
    reqs = list(requirements)
    return f"{check_id} [{', '.join(reqs) if reqs else 'NO REQUIREMENT'}]"


def _details(outcome: Outcome) -> str:
    lines = []
    for stored in outcome.results:
        r = stored.result
        lines.append(f"{r.subject}: {r.verdict.value}" + (f": {r.reason}" if r.reason else ""))
        for key in sorted(r.measured):
            lines.append(f"  {key} = {r.measured[key]}")
    return _clean("\n".join(lines))


def _check_case(matrix: TraceMatrix, model: str, outcome: Outcome, registered: bool) -> tuple[TestCase, dict[str, str]]:
    spec = matrix.specs.get(outcome.check_id)
    reqs = list(spec.requirements) if spec else []
    step = spec.step if spec else "unknown"
    case = TestCase(testcase_name(outcome.check_id, reqs), classname=f"{model}.{step}")
    reason = _clean(outcome.reason)
    if not registered:
        case.add_error_info(
            message=f"results of unregistered check {outcome.check_id}: it traces to no requirement",
            output=_details(outcome),
            error_type="EVID-E023",
        )
    elif outcome.verdict is Verdict.FAIL:
        case.add_failure_info(message=reason or "failed", output=_details(outcome) or reason, failure_type="fail")
    elif outcome.verdict is Verdict.NOT_RUN:
        case.add_skipped_info(message=f"not run: {reason}")
    elif outcome.verdict is Verdict.EMULATED:
        case.add_skipped_info(message=f"emulated (not coverage): {reason}", output=_details(outcome) or None)
    elif outcome.verdict is Verdict.NOT_APPLICABLE:
        case.add_skipped_info(message=f"n/a (does not apply): {reason}")
    properties = {
        "model": model,
        "check_id": outcome.check_id,
        "step": step,
        "verdict": outcome.verdict.value,
        "requirements": ",".join(reqs),
        "obtained": ", ".join(sorted({s.result.obtained.label() for s in outcome.results if s.result.obtained})),
    }
    for req_id in reqs:
        properties[f"requirement.{req_id}"] = (
            f"sha256:{matrix.requirements[req_id].fingerprint}" if req_id in matrix.requirements else "unknown requirement"
        )
    return case, properties


def _requirement_case(matrix: TraceMatrix, req_id: str) -> tuple[TestCase, dict[str, str]]:
    req = matrix.requirements[req_id]
    status = matrix.statuses[req_id]
    case = TestCase(f"{req_id} {req.title}", classname=f"requirements.{req.level}")
    relevant = [f for f in matrix.findings if f.code in GAP_CODES and f.message.startswith(f"{req_id} ")]
    message = _clean(relevant[0].message) if relevant else status.status
    output = _clean("\n".join(f"{f.message} [{f.span}]" + (f" fix: {f.fix}" if f.fix else "") for f in relevant)) or message
    strict = matrix.mode == STRICT
    if status.open_for_target:
        message = f"open for the target ({status.status} here): {message}"
        if strict:
            case.add_failure_info(message=message, output=output, failure_type="open for the target")
        else:
            case.add_skipped_info(message=message, output=output)
    elif status.status in (FAILED, NOT_VERIFIED, NO_CHECK):
        case.add_failure_info(message=message, output=output, failure_type=status.status)
    elif status.status == PARTIAL:
        case.add_skipped_info(message=message, output=output)
    elif status.status == NOT_APPLICABLE:
        case.add_skipped_info(message=f"not applicable: {message}", output=output)
    properties = {
        "requirement": req_id,
        "verified_on": status.verified_on,
        "open_for_target": "true" if status.open_for_target else "false",
        "status": status.status,
        "fingerprint": f"sha256:{req.fingerprint}",
        "checks": ",".join(status.checks),
    }
    return case, properties


def _suite_element(name: str, cases: list[tuple[TestCase, dict[str, str]]], testcase_properties: bool) -> ET.Element:
    element = TestSuite(name, [c for c, _ in cases]).build_xml_doc()
    element.attrib.pop("disabled", None)
    if testcase_properties:
        for case_element, (_, properties) in zip(element.iter("testcase"), cases):
            props = ET.Element("properties")
            for key, value in properties.items():
                ET.SubElement(props, "property", {"name": key, "value": _clean(value)})
            case_element.insert(0, props)
    return element


def junit_xml(matrix: TraceMatrix, *, testcase_properties: bool = True) -> str:
    """The JUnit XML document for `matrix` (see module docstring)."""
    root = ET.Element("testsuites", {"name": "certification evidence"})
    totals = {"tests": 0, "failures": 0, "errors": 0}
    for model in matrix.models:
        cases = [_check_case(matrix, model, matrix.outcomes[(model, c)], True) for c in matrix.specs]
        cases += [_check_case(matrix, model, o, False) for (m, _), o in sorted(matrix.unregistered.items()) if m == model]
        root.append(_suite_element(model, cases, testcase_properties))
    req_cases = [_requirement_case(matrix, r.id) for r in matrix.requirements]
    root.append(_suite_element(TRACEABILITY_SUITE, req_cases, testcase_properties))
    for suite in root:
        for key in totals:
            totals[key] += int(suite.get(key, "0"))
    for key, value in totals.items():
        root.set(key, str(value))
    ET.indent(root, space="  ")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"

"""Which checks there are and what they link to, seen from the evidence side: tolerant loading, link checks.

`all_checks()` stops at the first check module that cannot be imported. The evidence
builder must still report everything else, so `load_checks()` turns a module that fails to
import into a finding, and the registry is validated against the requirement set: every check must name
at least one requirement, and only requirements that exist.
"""

from __future__ import annotations

import importlib
import logging
import re
from typing import Iterable, Mapping

from pipeline.diagnostics import Finding, Severity
from pipeline.ledger import checks
from pipeline.ledger.checks import CheckSpec
from pipeline.ledger.requirements import RequirementSet
from pipeline.project.layout import STEPS

LOG = logging.getLogger(__name__)

EVIDENCE_STEP = "evidence"
KNOWN_STEPS: tuple[str, ...] = STEPS + (EVIDENCE_STEP,)
CHECK_ID = re.compile(r"^[a-z][a-z0-9_]*(\.[a-z0-9_]+)+$")

E_UNKNOWN_REQUIREMENT = "EVID-E010"
E_NO_REQUIREMENT = "EVID-E011"
E_MODULE_IMPORT = "EVID-E018"
E_BAD_CHECK = "EVID-E019"


def load_checks(modules: Iterable[str] | None = None) -> tuple[dict[str, CheckSpec], list[Finding]]:
    """Import every check module that can be imported; the others become findings."""
    findings: list[Finding] = []
    for module in checks.CHECK_MODULES if modules is None else modules:
        try:
            importlib.import_module(module)
        except Exception as exc:  # noqa: BLE001 - any import failure is reported, not raised
            LOG.info("check module %s cannot be imported: %s", module, exc)
            findings.append(
                Finding(
                    E_MODULE_IMPORT,
                    Severity.ERROR,
                    f"check module {module} (listed in CHECK_MODULES) cannot be imported: {type(exc).__name__}: {exc}; "
                    "its checks are missing from the trace",
                )
            )
    return dict(sorted(checks._REGISTRY.items())), findings


def all_checks() -> dict[str, CheckSpec]:
    """Every registered check, after importing every module in CHECK_MODULES (an import error propagates)."""
    for module in checks.CHECK_MODULES:
        importlib.import_module(module)
    return dict(sorted(checks._REGISTRY.items()))


def registry_findings(specs: Mapping[str, CheckSpec], requirements: RequirementSet) -> list[Finding]:
    """Every check names existing requirements, has a dotted ID and a known step."""
    findings: list[Finding] = []
    for spec in specs.values():
        if not CHECK_ID.match(spec.id):
            findings.append(Finding(E_BAD_CHECK, Severity.ERROR, f"check {spec.id!r}: IDs are lower-case dotted, like export.numeric"))
        if spec.step not in KNOWN_STEPS:
            findings.append(
                Finding(E_BAD_CHECK, Severity.ERROR, f"check {spec.id}: unknown step {spec.step!r} (steps: {', '.join(KNOWN_STEPS)})")
            )
        if not spec.requirements:
            findings.append(
                Finding(E_NO_REQUIREMENT, Severity.ERROR, f"check {spec.id} (step {spec.step}) traces to no requirement: it cannot provide coverage")
            )
        for req_id in spec.requirements:
            if req_id not in requirements:
                findings.append(
                    Finding(
                        E_UNKNOWN_REQUIREMENT,
                        Severity.ERROR,
                        f"check {spec.id} (step {spec.step}) names requirement {req_id}, which is not in requirements/*.yaml",
                    )
                )
    return findings

"""The link baseline: which requirement version each link was reviewed against.

A link (check -> requirement, or child requirement -> parent) is only evidence for the
requirement text it was established against. `requirements/links.lock.json` records, for
every link, the fingerprint of the target requirement at the last review. When the
requirement changes, its fingerprint no longer matches and the link is reported *stale*
until someone reviews the check (or child) and re-baselines with
`python -m pipeline evidence baseline`. This is Doorstop's "suspect link" idea applied to
checks as well as requirements.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from pipeline.files.atomic import write_json
from pipeline.diagnostics import Finding, Severity, Span
from pipeline.files.readguard import InputRefused, read_input
from pipeline.ledger.checks import CheckSpec
from pipeline.ledger.requirements import RequirementSet
from pipeline.project.layout import REQUIREMENTS_DIR
from pipeline.files.schema import validate
from pipeline.evidence.paths import BASELINE_FILE, baseline_path  # noqa: F401 (re-exported)

SCHEMA_VERSION = 1

E_STALE_LINK = "EVID-E015"
E_UNBASELINED = "EVID-E016"
E_OBSOLETE = "EVID-E017"
E_BASELINE_INVALID = "EVID-E020"


@dataclass(frozen=True, order=True)
class Link:
    """`source` is `check:<id>` or a requirement ID; `target` is a requirement ID."""

    source: str
    target: str


def current_links(specs: Mapping[str, CheckSpec], requirements: RequirementSet) -> dict[Link, str]:
    """Every link that exists now, with the target's current fingerprint ('' if unknown)."""
    fingerprints = requirements.fingerprints()
    links: dict[Link, str] = {}
    for req in requirements:
        for parent in req.parents:
            links[Link(req.id, parent)] = fingerprints.get(parent, "")
    for spec in specs.values():
        for req_id in spec.requirements:
            links[Link(f"check:{spec.id}", req_id)] = fingerprints.get(req_id, "")
    return dict(sorted(links.items()))


def baseline_document(links: Mapping[Link, str]) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "links": [{"source": l.source, "target": l.target, "fingerprint": fp} for l, fp in sorted(links.items()) if fp],
    }


def write_baseline(specs: Mapping[str, CheckSpec], requirements: RequirementSet, root: str | Path = ".") -> Path:
    """Accept every current link as reviewed against the current requirement text."""
    return write_json(baseline_path(root), baseline_document(current_links(specs, requirements)))


MAX_BASELINE_BYTES = 64 * 1024 * 1024   # the shipped baseline: about 40 KiB

def read_baseline(root: str | Path = ".") -> tuple[dict[Link, str] | None, list[Finding]]:
    """The recorded links, None when there is no baseline file yet."""
    path = baseline_path(root)
    display = f"{REQUIREMENTS_DIR}/{BASELINE_FILE}"
    if not path.is_file():
        return None, []
    try:   # not through a link, a regular file, bounded (pipeline/files/readguard.py)
        data = json.loads(read_input(path, max_bytes=MAX_BASELINE_BYTES).decode("utf-8"))
    except InputRefused as refused:
        return None, [Finding(E_BASELINE_INVALID, Severity.ERROR, f"link baseline refused: {refused.reason}",
                              Span(display, 1, 1))]
    except (OSError, ValueError) as exc:
        return None, [Finding(E_BASELINE_INVALID, Severity.ERROR, f"unreadable link baseline: {exc}", Span(display, 1, 1))]
    problems = validate(data, "links-1", E_BASELINE_INVALID)
    if problems:
        return None, [Finding(E_BASELINE_INVALID, Severity.ERROR, f"invalid link baseline: {p.path}: {p.message}"
                              if p.path else f"invalid link baseline: {p.message}", Span(display, 1, 1)) for p in problems]
    return {Link(e["source"], e["target"]): e["fingerprint"] for e in data["links"]}, []


def link_findings(current: Mapping[Link, str], baseline: Mapping[Link, str] | None) -> tuple[list[Finding], set[Link]]:
    """Stale links (error), links not yet baselined and obsolete baseline entries (warnings).

    Returns the findings and the set of stale links, which the trace matrix marks.
    """
    display = Span(f"{REQUIREMENTS_DIR}/{BASELINE_FILE}", 1, 1)
    if baseline is None:
        return [
            Finding(
                E_UNBASELINED,
                Severity.WARNING,
                "no link baseline yet: stale links cannot be detected; run `python -m pipeline evidence baseline` after review",
                display,
            )
        ], set()
    findings: list[Finding] = []
    stale: set[Link] = set()
    for link, fingerprint in current.items():
        recorded = baseline.get(link)
        if not fingerprint:
            continue  # dangling target: reported by the registry / requirement checks
        if recorded is None:
            findings.append(
                Finding(E_UNBASELINED, Severity.WARNING, f"link {link.source} -> {link.target} is not in the baseline (new link, not yet reviewed)", display)
            )
        elif recorded != fingerprint:
            stale.add(link)
            findings.append(
                Finding(
                    E_STALE_LINK,
                    Severity.ERROR,
                    f"stale link {link.source} -> {link.target}: {link.target} changed since the link was reviewed "
                    f"(fingerprint {recorded[:12]} -> {fingerprint[:12]}); review it, then re-baseline",
                    display,
                )
            )
    for link in sorted(set(baseline) - set(current)):
        findings.append(
            Finding(E_OBSOLETE, Severity.WARNING, f"baseline lists link {link.source} -> {link.target}, which no longer exists", display)
        )
    return findings, stale

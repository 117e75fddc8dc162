"""Issue 42: the check registry cannot be changed silently.

A check ID registered again with other requirements would move its coverage to requirements it never
verified: it must raise and leave the first definition in place. `CHECK_MODULES` is what the evidence
step imports to know every check; a module that registers checks and is missing from it would leave
its checks out of the trace matrix, so the list is pinned to the modules that call `register_check`.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from pipeline.ledger import checks
from pipeline.ledger.checks import CheckResult, Verdict, check_spec, register_check
from tests.evidence.evidence_fakeproject import isolated_registry

PIPELINE = Path(checks.__file__).resolve().parents[1]


def test_a_check_registered_twice_with_other_requirements_raises_and_keeps_the_first() -> None:
    with isolated_registry({}):
        first = register_check("fake.twice", "a check", "export", ["HLR-EXP-001"])
        assert register_check("fake.twice", "a check", "export", ["HLR-EXP-001"]) == first   # the same: re-import
        for other in (("a check", "export", ["HLR-EXP-002"]), ("a check", "export", ["HLR-EXP-001", "HLR-EXP-002"]),
                      ("a check", "compare", ["HLR-EXP-001"]), ("another title", "export", ["HLR-EXP-001"])):
            with pytest.raises(ValueError, match="'fake.twice' registered twice"):
                register_check("fake.twice", *other)
        assert check_spec("fake.twice") == first
        assert CheckResult("fake.twice", "m", Verdict.PASS).to_json()["requirements"] == ["HLR-EXP-001"]
    with pytest.raises(KeyError, match="fake.twice"):
        check_spec("fake.twice")


def _registering_modules() -> set[str]:
    """Every pipeline module (other than the registry) that calls register_check."""
    found = set()
    for path in sorted(PIPELINE.rglob("*.py")):
        if path == Path(checks.__file__).resolve():
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call):
                func = node.func
                name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
                if name == "register_check":
                    parts = path.relative_to(PIPELINE.parent).with_suffix("").parts
                    found.add(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
                    break
    return found


def test_check_modules_are_exactly_the_modules_that_register_checks() -> None:
    assert len(set(checks.CHECK_MODULES)) == len(checks.CHECK_MODULES)
    assert set(checks.CHECK_MODULES) == _registering_modules()



def test_every_check_traces_to_the_requirements_its_reviewed_links_name() -> None:
    """A check's requirement list changed in code (a typo, a dropped ID) moves coverage without review: the
    registered links must be those of requirements/links.lock.json (rebaselined by `python -m pipeline evidence
    baseline` after a review)."""
    import json

    from pipeline.evidence.checklinks import load_checks

    specs, _ = load_checks()
    registered = {(f"check:{spec.id}", req) for spec in specs.values() for req in spec.requirements}
    lock = json.loads((PIPELINE.parent / "requirements/links.lock.json").read_text(encoding="utf-8"))
    reviewed = {(link["source"], link["target"]) for link in lock["links"] if link["source"].startswith("check:")}
    assert registered == reviewed

"""The qualified flags exclude GCC 12's null-access miscompilation (issue 15, efficientnet_b0).

pipeline.codegen.compilerdefects holds the reduced wrong-code cases. Pinned here: with the
build flags of either vector width every case computes the right result; on GCC 12 each case
is miscompiled once the excluding flag is removed (so the flag, not luck, is why it passes),
and -fno-ipa-icf -fno-ipa-cp, the obvious alternative, leave a case miscompiled; the flag is
qualified and its opposite refused.
"""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from tests.codegen import cghelpers as H

from pipeline.codegen.compilerdefects import CASES, EXCLUDING_FLAG, GLOBAL_ARRAY, check_cases, run_case
from pipeline.diagnostics import PipelineError
from pipeline.toolchain import cc as build

pytestmark = pytest.mark.skipif(not shutil.which("gcc"), reason="gcc is not installed")


def _gcc_major() -> int | None:
    out = subprocess.run(["gcc", "-dumpfullversion"], capture_output=True, text=True, check=False).stdout.strip()
    version = subprocess.run(["gcc", "--version"], capture_output=True, text=True, check=False).stdout
    if "gcc" not in version.lower() or "clang" in version.lower():
        return None
    match = re.match(r"(\d+)\.", out)
    return int(match.group(1)) if match else None


def _without(flags: list[str], removed: str) -> list[str]:
    assert removed in flags, (removed, flags)
    return [f for f in flags if f != removed]


def test_the_flag_is_qualified_and_its_opposite_refused(monkeypatch):
    assert EXCLUDING_FLAG in build.QUALIFIED_FLAGS
    assert "-fdelete-null-pointer-checks" in build.FORBIDDEN_FLAGS
    for lanes in (4, 8):
        flags, _ = build.build_flags(lanes)
        assert EXCLUDING_FLAG in flags
    monkeypatch.setattr(build, "EXTRA_FLAGS", build.EXTRA_FLAGS + ("-fdelete-null-pointer-checks",))
    with pytest.raises(PipelineError) as error:
        build.build_flags(8)
    assert error.value.code == "RUN-E002"


@pytest.mark.parametrize("lanes", H.lanes_available())
def test_cases_compute_the_right_result_with_the_build_flags(lanes, tmp_path):
    flags, _ = build.build_flags(lanes)
    problems, outcomes = check_cases("gcc", flags, tmp_path)
    assert problems == [], problems
    assert [o.case.name for o in outcomes] == [c.name for c in CASES]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
@pytest.mark.parametrize("lanes", H.lanes_available())
def test_gcc12_miscompiles_each_case_without_the_flag(case, lanes, tmp_path):
    if _gcc_major() != 12:
        pytest.skip("the cases pin GCC 12 (the qualified compiler); this compiler is another one")
    flags, _ = build.build_flags(lanes)
    outcome = run_case(case, "gcc", _without(flags, case.excluded_by), tmp_path)
    assert outcome.status == "wrong", (outcome.status, outcome.detail)


@pytest.mark.parametrize("lanes", H.lanes_available())
def test_disabling_icf_and_ipa_cp_instead_would_not_do(lanes, tmp_path):
    if _gcc_major() != 12:
        pytest.skip("the cases pin GCC 12 (the qualified compiler); this compiler is another one")
    flags, _ = build.build_flags(lanes)
    flags = _without(flags, EXCLUDING_FLAG) + ["-fno-ipa-icf", "-fno-ipa-cp"]
    outcome = run_case(GLOBAL_ARRAY, "gcc", flags, tmp_path)
    assert outcome.status == "wrong", (outcome.status, outcome.detail)


def test_a_miscompiled_case_is_reported(tmp_path):
    if _gcc_major() != 12:
        pytest.skip("the cases pin GCC 12 (the qualified compiler); this compiler is another one")
    flags, _ = build.build_flags(4)
    problems, outcomes = check_cases("gcc", _without(flags, EXCLUDING_FLAG), tmp_path)
    assert [o.status for o in outcomes] == ["wrong"] * len(CASES)
    assert len(problems) == len(CASES) and all("not excluded by the build flags" in p for p in problems)

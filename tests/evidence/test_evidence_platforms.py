"""Where verdicts were obtained, requirements verified on the target, the strict mode, shards.

The requirement set of these fake projects is the minimal one of evidence_fakeproject with
HLR-COD-002 declared `verified_on: target`; its only check is codegen.trace.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from pipeline.evidence.build import build_all, build_reports
from pipeline.evidence.junit import junit_xml
from pipeline.evidence.matrix import OFF_PLATFORM, STRICT, VERIFIED, build_matrix
from pipeline.evidence.merge import merge_shards
from pipeline.evidence.summary import summary_text
from pipeline.diagnostics import PipelineError
from pipeline.ledger.checks import CheckResult, Obtained, Verdict, Where, read_results_document, results_document
from pipeline.files.atomic import write_json
from pipeline.project.layout import checks_path
from tests.evidence.evidence_fakeproject import MINIMAL_CHECKS, FakeProject, isolated_registry, load

TARGET_REQ = "HLR-COD-002"


def _target_project(root: Path, models: tuple[str, ...] = ("alpha",), **verdicts: tuple[str, str]) -> FakeProject:
    fake = FakeProject(root, minimal=True)
    path = root / "requirements" / "hlr.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    for req in data["requirements"]:
        if req["id"] == TARGET_REQ:
            req["verified_on"] = "target"
    path.write_text(yaml.safe_dump(data, sort_keys=False, width=100), encoding="utf-8")
    for model in models:
        fake.add_model(model, verdicts={k.replace("_", "."): v for k, v in verdicts.items()},
                       steps=("export", "codegen"))
    return fake


def _requirement_case(junit: str, req_id: str):  # type: ignore[no-untyped-def]
    import xml.etree.ElementTree as ET

    return next(c for c in ET.fromstring(junit).iter("testcase") if c.get("name", "").startswith(req_id + " "))


def _codes(matrix) -> dict[str, str]:  # type: ignore[no-untyped-def]
    return {f.code: f.severity.value for f in matrix.findings}


def test_a_result_says_where_it_was_obtained() -> None:
    with isolated_registry(MINIMAL_CHECKS):
        host = CheckResult("codegen.trace", "m", Verdict.PASS)
        assert host.obtained.where is Where.HOST and host.obtained.label().startswith("host (")
        emulated = CheckResult("codegen.trace", "m", Verdict.EMULATED, "host emulation of the CUDA kernels")
        assert emulated.obtained == Obtained(Where.EMULATION, "host emulation of the CUDA kernels")
        target = CheckResult("codegen.trace", "m", Verdict.PASS, obtained=Obtained.target("orin-cpu3"))
        assert target.obtained.label() == "target:orin-cpu3"
        again = read_results_document(results_document([host, emulated, target]))
        assert [r.obtained for r in again] == [host.obtained, emulated.obtained, target.obtained]
        with pytest.raises(ValueError):
            CheckResult("codegen.trace", "m", Verdict.EMULATED, "x", obtained=Obtained.host())


def test_a_target_requirement_passed_on_a_host_is_open_and_does_not_fail(tmp_path: Path) -> None:
    with isolated_registry(MINIMAL_CHECKS):
        _target_project(tmp_path)
        build_all(tmp_path)
        matrix = build_reports(tmp_path)
        status = matrix.statuses[TARGET_REQ]
        assert status.status == OFF_PLATFORM and status.per_model == {"alpha": "pass off target"}
        assert status.open_for_target
        assert _codes(matrix).get("EVID-E026") == "note" and not matrix.errors
        text = summary_text(matrix.to_json())
        owed = next(line for line in text.splitlines() if line.strip().startswith(TARGET_REQ))
        assert "a pass on the target" in owed and "pass off target 1 of 1" in owed and f"#req-{TARGET_REQ}" in owed
        assert "1 of them open for the target" in text and "VERIFY PASSED" in text
        junit = junit_xml(matrix)
        assert "open for the target (verified only on host or by emulation here): " in junit and 'name="obtained"' in junit
        strict = build_matrix(tmp_path, mode=STRICT)
        assert _codes(strict).get("EVID-E026") == "error"
        assert "VERIFY FAILED" in summary_text(strict.to_json()) and strict.to_json()["mode"] == "strict"
        assert _requirement_case(junit_xml(strict), TARGET_REQ).find("failure") is not None
        assert _requirement_case(junit, TARGET_REQ).find("skipped") is not None


def test_the_package_records_the_mode(tmp_path: Path) -> None:
    import zipfile
    import json

    with isolated_registry(MINIMAL_CHECKS):
        _target_project(tmp_path)
        build_all(tmp_path, mode=STRICT)
        with zipfile.ZipFile(tmp_path / "reports/alpha/evidence.zip") as archive:
            name = next(n for n in archive.namelist() if n.endswith("manifest.json") or n.endswith(".intoto.json"))
            manifest = json.loads(archive.read(name))
        assert manifest["predicate"]["buildDefinition"]["externalParameters"]["mode"] == "strict"


def test_emulation_verifies_a_target_requirement_only_off_platform_and_a_host_one_not_at_all(tmp_path: Path) -> None:
    with isolated_registry(MINIMAL_CHECKS):
        _target_project(tmp_path, codegen_trace=("emulated", "host emulation"), export_numeric=("emulated", "x"))
        matrix = build_matrix(tmp_path)
        assert matrix.statuses[TARGET_REQ].status == OFF_PLATFORM
        assert matrix.statuses["HLR-EXP-001"].status == "not verified"
        assert _codes(matrix)["EVID-E014"] == "error"  # a host requirement with no pass fails the run


def test_a_target_requirement_verified_on_the_target_is_verified_in_strict_mode(tmp_path: Path) -> None:
    with isolated_registry(MINIMAL_CHECKS):
        _target_project(tmp_path)
        path = checks_path("alpha", "codegen", tmp_path)
        results = [CheckResult(r.check_id, r.subject, r.verdict, r.reason, r.measured, r.read, r.written,
                               Obtained.target("orin-cpu3")) for r in read_results_document(load(path))]
        write_json(path, results_document(results))
        matrix = build_matrix(tmp_path, mode=STRICT)
        assert matrix.statuses[TARGET_REQ].status == VERIFIED and "EVID-E026" not in _codes(matrix)


def test_a_failing_target_check_fails_the_run(tmp_path: Path) -> None:
    with isolated_registry(MINIMAL_CHECKS):
        _target_project(tmp_path, codegen_trace=("fail", "1 ULP at out[3]"))
        matrix = build_matrix(tmp_path)
        assert matrix.statuses[TARGET_REQ].status == "failed" and _codes(matrix)["EVID-E013"] == "error"


def test_two_shards_merged_give_the_single_run_evidence(tmp_path: Path) -> None:
    with isolated_registry(MINIMAL_CHECKS):
        single, shard_a, shard_b, merged = (tmp_path / n for n in ("single", "a", "b", "merged"))
        _target_project(single, ("alpha", "beta"))
        for shard in (shard_a, shard_b, merged):
            shutil.copytree(single / "requirements", shard / "requirements")
            shutil.copytree(single / "models", shard / "models")
        for shard, model in ((shard_a, "alpha"), (shard_b, "beta")):
            shutil.copytree(single / "artifacts" / model, shard / "artifacts" / model)
            build_all(shard, [model])
        build_all(single)
        build_all(single)  # as the merge, which finds the shards' packages: compared with a previous build
        origin = merge_shards([shard_a, shard_b], merged)
        assert origin == {"alpha": str(shard_a), "beta": str(shard_b)}
        build_all(merged)
        for name in ("trace.json", "junit.xml", "trace-matrix.csv", "alpha/evidence.zip", "beta/evidence.zip"):
            assert (merged / "reports" / name).read_bytes() == (single / "reports" / name).read_bytes(), name
        with pytest.raises(PipelineError) as twice:
            merge_shards([shard_a, shard_a], tmp_path / "again")
        assert twice.value.code == "EVID-E070"

"""One way to validate a document (pipeline.files.schema + pipeline/schemas/*.schema.json).

The schemas are checked by jsonschema's own meta-schema; every DEPLOY code is produced for a
crafted document with its key path and line; the documented example validates; random
mutations of a valid spec raise nothing but DeployError; the JSON readers (plan, schedule,
trace, MET baseline) report their codes with a key path.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.files import schema
from pipeline.project.deploy import CODES, SYNC_MODES, TARGETS, DeployError, DeploySpec, parse_deploy_text
from pipeline.diagnostics import PipelineError
from pipeline.numerics.vectors import DISTRIBUTION_KINDS
from tests.test_deploy import VALID

ROOT = Path(__file__).parents[1]
SCHEMAS = sorted(schema.SCHEMA_DIR.glob("*.schema.json"))


def test_there_are_schemas() -> None:
    assert {p.name for p in SCHEMAS} >= {"deploy-1.schema.json", "plan-1.schema.json", "schedule-1.schema.json",
                                          "trace-1.schema.json", "met-baseline-1.schema.json"}


@pytest.mark.parametrize("path", SCHEMAS, ids=lambda p: p.name)
def test_every_schema_is_a_valid_draft_2020_12_schema(path: Path) -> None:
    document = json.loads(path.read_text(encoding="utf-8"))
    assert document["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(document)
    assert schema.validator(path.name.removesuffix(".schema.json")) is not None


def test_schema_enums_agree_with_the_typed_model() -> None:
    deploy = schema.load_schema("deploy-1")
    deployment = deploy["$defs"]["deployment"]["properties"]
    assert tuple(deployment["items"]["items"]["properties"]["target"]["enum"]) == TARGETS
    assert tuple(deployment["sync"]["enum"]) == SYNC_MODES
    distribution = deploy["properties"]["inputs"]["additionalProperties"]["properties"]["distribution"]
    assert tuple(distribution["properties"]["kind"]["enum"]) == DISTRIBUTION_KINDS


def test_importing_a_reader_does_not_import_jsonschema() -> None:
    code = "import sys, pipeline.project.deploy, pipeline.split.plan; print('jsonschema' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "False"


# ---------------------------------------------------------------------- deploy: every code, path and line

def _line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


@pytest.mark.parametrize("old,new,code,path,line_text", [
    ("inputs:\n  x:", "inputs: [unclosed\n  x:", "DEPLOY-E001", "", None),
    ("  runs: 100\n", "", "DEPLOY-E002", "met", "budget_us: 250"),  # the mapping's first line
    ("  seed: 3", "  seed: 3.0", "DEPLOY-E003", "validation.seed", "seed: 3.0"),
    ("  vectors: 10", "  vectors: true", "DEPLOY-E003", "validation.vectors", "vectors: true"),
    ("    max_abs_error: 1.0e-5", "    max_abs_error: .nan", "DEPLOY-E004",
     "validation.tolerance.max_abs_error", "max_abs_error: .nan"),
    ("low: -1.0", "low: -.inf", "DEPLOY-E004", "inputs.x.distribution.low", "low: -.inf"),
    ("model: tiny", "model: ''", "DEPLOY-E003", "model", "model: ''"),
    ("    distribution", "    colour: red\n    distribution", "DEPLOY-E005", "inputs.x.colour", "colour: red"),
    ("  seed: 3", "  seed: 3\n  seed: 4", "DEPLOY-E006", "validation.seed", "seed: 4"),
    ("      GPU0: [a, b]", "      GPU0: [a, b]\n      CPU0: [b]", "DEPLOY-E007",
     "deployments.two.allocation.CPU0[0]", "CPU0: [b]"),
    ("schema_version: 1", "schema_version: 7", "DEPLOY-E008", "schema_version", "schema_version: 7"),
    ("inputs:\n  x:", "inputs:\n  3:", "DEPLOY-E003", "inputs", "  3:"),
])
def test_each_code_with_path_and_line(old: str, new: str, code: str, path: str, line_text: str | None) -> None:
    assert old in VALID
    text = VALID.replace(old, new, 1)
    with pytest.raises(DeployError) as info:
        parse_deploy_text(text, "d.yaml")
    found = [p for p in info.value.problems if p.code == code and p.path == path]
    assert found, [(p.code, p.path, p.message) for p in info.value.problems]
    assert all(p.code in CODES for p in info.value.problems)
    if line_text is not None:
        assert found[0].line == _line_of(text, line_text), found[0]
    else:
        assert found[0].line >= 1


def test_messages_stay_helpful() -> None:
    text = VALID.replace("    max_rel_error: null", "    max_rel_eror: null").replace("target: cuda", "target: fpga")
    with pytest.raises(DeployError) as info:
        parse_deploy_text(text, "d.yaml")
    messages = {p.path: p.message for p in info.value.problems}
    assert messages["validation.tolerance.max_rel_eror"] == \
        "unknown key 'max_rel_eror'; allowed here: max_abs_error, max_rel_error"
    assert messages["deployments.two.items[1].target"] == "'fpga' is not one of cpu, cuda, nvdla"
    with pytest.raises(DeployError) as info:
        parse_deploy_text(VALID.replace("  runs: 100", "  runs: 0"), "d.yaml")
    assert info.value.problems[0].message == "expected an integer >= 1, got 0"


def test_problems_are_sorted_by_position() -> None:
    text = VALID.replace("seed: 3", "seed: x").replace("runs: 100", "runs: -1").replace("model: tiny", "model: 3")
    with pytest.raises(DeployError) as info:
        parse_deploy_text(text, "d.yaml")
    lines = [p.line for p in info.value.problems]
    assert lines == sorted(lines) and [p.path for p in info.value.problems] == ["model", "validation.seed", "met.runs"]


def test_the_documented_example_validates() -> None:
    doc = (ROOT / "docs" / "deploy.md").read_text(encoding="utf-8")
    section = doc[doc.index("## Schema (version 1)"):]
    example = re.search(r"```yaml\n(.*?)```", section, re.S)
    assert example is not None
    spec = parse_deploy_text(example.group(1), "docs/deploy.md")
    assert spec.deployments["split2"].item_of("fc1") == "CPU1" and spec.met.platform == "orin-cpu3"


# ---------------------------------------------------------------------- deploy: random mutations

_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.floats(allow_nan=True, allow_infinity=True),
                     st.text(max_size=5), st.sampled_from(["CPU0", "GPU0", "cpu", "event", "uniform", "1e-5"]))
_VALUES = st.recursive(_SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                         st.dictionaries(st.one_of(st.text(max_size=4), st.integers(0, 3)),
                                                                         inner, max_size=3)), max_leaves=6)


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(node, dict):
        for key, value in node.items():
            found += _paths(value, prefix + (key,))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found += _paths(value, prefix + (index,))
    return found


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_mutations_raise_only_deploy_errors(data: st.DataObject) -> None:
    document = yaml.safe_load(VALID)
    for _ in range(data.draw(st.integers(1, 3))):
        paths = _paths(document)
        path = data.draw(st.sampled_from(paths))
        action = data.draw(st.sampled_from(["replace", "delete", "add"]))
        parent: Any = document
        for part in path[:-1]:
            parent = parent[part]
        if not path:
            document = data.draw(_VALUES)
            continue
        if action == "replace":
            parent[path[-1]] = data.draw(_VALUES)
        elif action == "delete":
            del parent[path[-1]]
        elif isinstance(parent[path[-1]], dict):
            parent[path[-1]][data.draw(st.text(max_size=4))] = data.draw(_VALUES)
        elif isinstance(parent[path[-1]], list):
            parent[path[-1]].append(data.draw(_VALUES))
    text = yaml.safe_dump(document)
    if data.draw(st.booleans()):
        cut = data.draw(st.integers(0, max(0, len(text) - 1)))
        text = text[:cut] + data.draw(st.sampled_from(["", ":", "-", "\n", " ", "{", "'", "&a", "*a"])) + text[cut + 1:]
    try:
        assert isinstance(parse_deploy_text(text, "m.yaml"), DeploySpec)
    except DeployError as error:
        assert error.problems and all(p.code in CODES and isinstance(p.path, str) for p in error.problems)


# ---------------------------------------------------------------------- the JSON readers

SCHEDULE: dict[str, Any] = {"schema_version": 1, "sync": "event",
                            "items": {"A": [{"kind": "compute", "result": "x", "op": "relu"}]}}


def test_petri_schedule_reader_reports_the_first_problem_with_its_path() -> None:
    from pipeline.petri.schedule import parse_schedule
    bad = {**SCHEDULE, "items": {"A": [{"kind": "compute", "result": "x"}, {"kind": "jump"}]}}
    with pytest.raises(PipelineError) as info:
        parse_schedule(bad, "schedule.json")
    assert info.value.code == "PETRI-E010" and info.value.location.key_path == "items.A[0]"
    assert "required key 'op' is missing" in info.value.message and "(and 1 more problem(s))" in info.value.message


def test_petri_trace_reader_needs_times_on_a_shared_clock() -> None:
    from pipeline.petri.trace import parse_trace
    trace = {"schema_version": 1, "clock": "shared", "items": {"A": [{"event": "start", "step": 0}]}}
    with pytest.raises(PipelineError) as info:
        parse_trace(trace)
    assert info.value.code == "PETRI-E012" and info.value.location.key_path == "items.A[0]"
    trace["clock"] = "per-item"
    assert parse_trace(trace).items["A"][0].t is None


def test_petri_plan_reader_keeps_item_files_beside_the_plan(tmp_path: Path) -> None:
    from pipeline.petri.plan import parse_plan
    plan = {"schema_version": 1, "model": "m", "deployment": "d", "sync": "event", "pipeline_depth": 1,
            "items": [{"name": "A", "target": "cpu", "file": "../A.nnef"}], "sync_variables": [],
            "allocation": {}, "outputs": {}, "rewrites": []}
    with pytest.raises(PipelineError) as info:
        parse_plan(plan, tmp_path / "plan.json")
    assert info.value.code == "PETRI-E011" and info.value.location.key_path == "items[0].file"
    plan["items"][0]["file"] = "A.nnef"
    assert parse_plan(plan, tmp_path / "plan.json").item_files == (tmp_path / "A.nnef",)
    del plan["pipeline_depth"]
    with pytest.raises(PipelineError) as info:
        parse_plan(plan, tmp_path / "plan.json")
    assert info.value.code == "PETRI-E011" and "pipeline_depth" in info.value.message


def test_met_baseline_reader(tmp_path: Path) -> None:
    from pipeline.compare.met import load_baseline
    folder = tmp_path / "models" / "m"
    folder.mkdir(parents=True)
    entry = {"runs": 10, "mean_us": 1.0, "median_us": 1.0, "p99_us": 2.0, "max_us": 3.0, "min_us": 0.5}
    (folder / "met-baseline.json").write_text(json.dumps({"schema_version": 1, "model": "m",
                                                          "deployments": {"single": entry}}))
    assert load_baseline("m", tmp_path)["deployments"]["single"]["runs"] == 10
    (folder / "met-baseline.json").write_text(json.dumps({"schema_version": 1, "model": "m",
                                                          "deployments": {"single": {**entry, "median_us": 0}}}))
    with pytest.raises(PipelineError) as info:
        load_baseline("m", tmp_path)
    assert info.value.code == "COMPARE-E003" and info.value.location.key_path == "deployments.single.median_us"


def test_code_trace_reader_reports_every_problem() -> None:
    from pipeline.evidence.codetrace import TARGETS, _parse
    assert tuple(schema.load_schema("codetrace-1")["properties"]["target"]["enum"]) == TARGETS
    good = {"schema_version": 1, "item": "CPU0", "target": "c", "nnef_file": "a.nnef", "nnef_sha256": "0" * 64,
            "entries": [{"nnef_line": 3, "instruction": "y = relu(x);", "code_file": "a.c", "code_lines": [4, 6]}]}
    trace, problems = _parse("m", "trace.json", good)
    assert not problems and trace is not None and trace.entries[0].last_line == 6
    bad = {**good, "target": "fpga", "entries": [{"nnef_line": "3", "code_file": "a.c", "code_lines": [4]}]}
    trace, problems = _parse("m", "trace.json", bad)
    assert trace is None and problems == ["entries[0].code_lines: expected at least 2 entries, got 1",
                                          "entries[0].nnef_line: expected an integer, got string '3'",
                                          "target: 'fpga' is not one of c, cuda, nvdla"]  # by path: JSON has no lines


def test_checks_reader_drops_bad_results_and_rejects_bad_files(tmp_path: Path) -> None:
    from pipeline.evidence.collect import read_results_file
    good = {"check_id": "nnef.syntax", "subject": "m", "verdict": "pass", "reason": "", "requirements": ["HLR-FMT-001"],
            "measured": {}, "read": [], "written": []}
    path = tmp_path / "checks.json"
    path.write_text(json.dumps({"schema_version": 1, "results": [good, {**good, "verdict": "fail"},
                                                                  {**good, "verdict": "maybe"}]}))
    stored, findings = read_results_file(path, tmp_path)
    assert stored is not None and [s.result.check_id for s in stored] == ["nnef.syntax"]
    assert [f.message for f in findings] == ["results[1].reason: expected a non-empty string, got string ''",
                                             "results[2].reason: expected a non-empty string, got string ''",
                                             "results[2].verdict: 'maybe' is not one of pass, fail, not run, emulated, n/a"]
    emulated = {**good, "verdict": "emulated", "reason": "ran on the emulator",
                "obtained": {"where": "host", "detail": "x86_64 Linux"}}
    path.write_text(json.dumps({"schema_version": 1, "results": [emulated]}))
    stored, findings = read_results_file(path, tmp_path)
    assert stored == [] and [f.message for f in findings] == ["results[0].obtained.where: expected 'emulation', "
                                                              "got string 'host'"]
    path.write_text(json.dumps({"schema_version": 2, "results": [good]}))
    stored, findings = read_results_file(path, tmp_path)
    assert stored is None and findings[0].code == "EVID-E022" and "schema_version" in findings[0].message


def test_link_baseline_reader(tmp_path: Path) -> None:
    from pipeline.evidence.baseline import read_baseline
    folder = tmp_path / "requirements"
    folder.mkdir()
    link = {"source": "HLR-FMT-001", "target": "SYS-002", "fingerprint": "ab12"}
    (folder / "links.lock.json").write_text(json.dumps({"schema_version": 1, "links": [link]}))
    links, findings = read_baseline(tmp_path)
    assert links is not None and not findings and list(links.values()) == ["ab12"]
    (folder / "links.lock.json").write_text(json.dumps({"schema_version": 1, "links": [{**link, "fingerprint": 7}]}))
    links, findings = read_baseline(tmp_path)
    assert links is None and [(f.code, f.message) for f in findings] == [
        ("EVID-E020", "invalid link baseline: links[0].fingerprint: expected a non-empty string, got number 7")]

"""Deployment specs (pipeline.project.deploy): the shipped ones load; every structural problem is
reported with its DEPLOY code, key path and line."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.terminal import render_error
from pipeline.project.deploy import CODES, DeployError, check_inputs_match, load_deploy, parse_deploy_text
from pipeline.project.layout import model_names
from pipeline.numerics.vectors import Distribution, InputSpec

ROOT = Path(__file__).parents[1]
MODELS = model_names(ROOT)   # every shipped model (models/)

VALID = """\
schema_version: 1
model: tiny
inputs:
  x:
    shape: [1, 4]
    distribution: {kind: uniform, low: -1.0, high: 1.0}
validation:
  vectors: 10
  seed: 3
  tolerance:
    max_abs_error: 1.0e-5
    max_rel_error: null
deployments:
  single:
    items: [{name: CPU0, target: cpu}]
    default_item: CPU0
    sync: event
  two:
    items: [{name: CPU0, target: cpu}, {name: GPU0, target: cuda}]
    default_item: CPU0
    allocation:
      GPU0: [a, b]
    sync: barrier
met:
  runs: 100
  budget_us: 250
"""


@pytest.mark.parametrize("model", MODELS)
def test_shipped_specs_load(model: str) -> None:
    spec = load_deploy(ROOT / "models" / model / "deploy.yaml")
    assert spec.model == model
    assert spec.validation.vectors == 100 and spec.validation.seed == 1234
    assert "single" in spec.deployments and spec.met.runs > 0
    for deployment in spec.deployments.values():
        assert deployment.default_item in {item.name for item in deployment.items}


def test_valid_document() -> None:
    spec = parse_deploy_text(VALID, "tiny.yaml")
    assert spec.inputs["x"] == InputSpec("x", (1, 4), Distribution("uniform", -1.0, 1.0))
    assert spec.validation.tolerance.max_abs_error == 1e-5 and spec.validation.tolerance.max_rel_error is None
    two = spec.deployments["two"]
    assert two.item_of("a") == "GPU0" and two.item_of("c") == "CPU0" and two.sync == "barrier"
    assert spec.met.budget_us == 250.0


def test_vectors_default_to_100() -> None:
    spec = parse_deploy_text(VALID.replace("  vectors: 10\n", ""), "tiny.yaml")
    assert spec.validation.vectors == 100


def _problems(text: str) -> list:
    with pytest.raises(DeployError) as info:
        parse_deploy_text(text, "models/tiny/deploy.yaml")
    return info.value.problems


def test_yaml_1_1_exponent_is_a_string_with_a_hint() -> None:
    with pytest.raises(DeployError) as info:
        parse_deploy_text(VALID.replace("1.0e-5", "1e-5"), "models/tiny/deploy.yaml")
    error = info.value
    assert error.code == "DEPLOY-E003"
    assert str(error).startswith("models/tiny/deploy.yaml:11:20: validation.tolerance.max_abs_error: DEPLOY-E003: "
                                 "expected a number, got string '1e-5'")
    assert error.location.key_path == "validation.tolerance.max_abs_error" and error.location.line == 11
    assert "write e.g. 1.0e-5" in str(error)
    assert error.problems[0].line == 11


@pytest.mark.parametrize("old,new,code,path", [
    ("schema_version: 1", "schema_version: 2", "DEPLOY-E008", "schema_version"),
    ("model: tiny\n", "", "DEPLOY-E002", ""),
    ("    shape: [1, 4]", "    shape: [1, 0]", "DEPLOY-E004", "inputs.x.shape[1]"),
    ("    shape: [1, 4]", "    shape: 4", "DEPLOY-E003", "inputs.x.shape"),
    ("kind: uniform", "kind: normal", "DEPLOY-E004", "inputs.x.distribution.kind"),
    ("low: -1.0, high: 1.0", "low: 1.0, high: -1.0", "DEPLOY-E004", "inputs.x.distribution.high"),
    ("  seed: 3", "  seed: -3", "DEPLOY-E004", "validation.seed"),
    ("  seed: 3", "  seed: three", "DEPLOY-E003", "validation.seed"),
    ("    max_rel_error: null", "    max_rel_error: true", "DEPLOY-E003", "validation.tolerance.max_rel_error"),
    ("    max_rel_error: null", "    max_rel_eror: null", "DEPLOY-E005", "validation.tolerance.max_rel_eror"),
    ("target: cuda", "target: fpga", "DEPLOY-E004", "deployments.two.items[1].target"),
    ("    sync: barrier", "    sync: mutex", "DEPLOY-E004", "deployments.two.sync"),
    ("    default_item: CPU0\n    allocation", "    default_item: CPU7\n    allocation", "DEPLOY-E007",
     "deployments.two.default_item"),
    ("      GPU0: [a, b]", "      GPU1: [a, b]", "DEPLOY-E007", "deployments.two.allocation.GPU1"),
    ("      GPU0: [a, b]", "      GPU0: [a, a]", "DEPLOY-E007", "deployments.two.allocation.GPU0[1]"),
    ("{name: GPU0, target: cuda}", "{name: CPU0, target: cuda}", "DEPLOY-E007", "deployments.two.items[1].name"),
    ("{name: GPU0, target: cuda}", "{name: cpu0, target: cuda}", "DEPLOY-E007", "deployments.two.items[1].name"),
    ("  two:\n", "  Single:\n", "DEPLOY-E007", "deployments.Single"),
    ("  budget_us: 250", "  budget_us: 0", "DEPLOY-E004", "met.budget_us"),
    ("  runs: 100", "  runs: 1.5", "DEPLOY-E003", "met.runs"),
    ("met:\n", "met:\n  jitter: 3\n", "DEPLOY-E005", "met.jitter"),
    ("  seed: 3", "  seed: 3\n  seed: 4", "DEPLOY-E006", "validation.seed"),
])
def test_structural_problems(old: str, new: str, code: str, path: str) -> None:
    assert old in VALID
    problems = _problems(VALID.replace(old, new, 1))
    assert any(p.code == code and p.path == path for p in problems), [(p.code, p.path, p.message) for p in problems]
    assert all(p.code in CODES for p in problems)


def test_every_problem_is_reported_with_a_line() -> None:
    text = VALID.replace("seed: 3", "seed: x").replace("runs: 100", "runs: -1").replace("sync: event", "sync: e")
    problems = _problems(text)
    assert {p.path for p in problems} == {"validation.seed", "met.runs", "deployments.single.sync"}
    assert all(p.line > 0 for p in problems)
    with pytest.raises(DeployError) as info:
        parse_deploy_text(text, "f.yaml")
    rendered = [line for line in render_error(info.value).splitlines() if line.startswith("f.yaml:")]
    assert len(rendered) == 3 and all(" error DEPLOY-E" in line for line in rendered)
    assert "(and 2 more problem(s))" in str(info.value)


def test_not_yaml_and_not_a_mapping() -> None:
    problems = _problems("inputs: [unclosed\n")
    assert problems[0].code == "DEPLOY-E001" and problems[0].line >= 1
    assert _problems("- a list\n")[0].code == "DEPLOY-E003"
    assert _problems("")[0].code == "DEPLOY-E003"


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(DeployError) as info:
        load_deploy(tmp_path / "absent.yaml")
    assert info.value.code == "DEPLOY-E001"


def test_inputs_must_match_the_model() -> None:
    spec = parse_deploy_text(VALID, "tiny.yaml")
    check_inputs_match(spec.inputs, {"x": [1, 4]}, spec.path)
    with pytest.raises(DeployError) as info:
        check_inputs_match(spec.inputs, {"x": [1, 5], "y": [2]}, spec.path)
    assert {p.path for p in info.value.problems} == {"inputs", "inputs.x.shape"}
    assert all(p.code == "DEPLOY-E009" for p in info.value.problems)


def test_codes_are_documented() -> None:
    doc = (ROOT / "docs" / "deploy.md").read_text(encoding="utf-8")
    for code in CODES:
        assert f"| {code} |" in doc, code


def test_split_keys_pass_through_structurally() -> None:
    """pipeline_depth and rewrites belong to the split step; the loader checks their form only."""
    text = VALID.replace("    sync: barrier\n", "    sync: barrier\n    pipeline_depth: 2\n    rewrites: [{kind: x}]\n")
    spec = parse_deploy_text(text, "tiny.yaml")
    assert spec.raw["deployments"]["two"]["pipeline_depth"] == 2
    problems = _problems(VALID.replace("    sync: barrier\n", "    sync: barrier\n    pipeline_depth: 0\n    rewrites: [3]\n"))
    assert {(p.code, p.path) for p in problems} == {("DEPLOY-E004", "deployments.two.pipeline_depth"),
                                                   ("DEPLOY-E003", "deployments.two.rewrites[0]")}


def test_gpu_architectures_of_a_deployment() -> None:
    text = VALID.replace("    sync: barrier\n", "    sync: barrier\n    architectures: [sm_90, sm_87]\n")
    spec = parse_deploy_text(text, "tiny.yaml")
    assert spec.deployments["two"].architectures == ("sm_90", "sm_87")
    assert spec.deployments["single"].architectures == ()
    with pytest.raises(DeployError):
        parse_deploy_text(VALID.replace("    sync: barrier\n", "    sync: barrier\n    architectures: [volta]\n"),
                          "tiny.yaml")


def test_an_fp16_requirement_belongs_to_a_deployment_with_an_nvdla_item() -> None:
    dla = VALID.replace("GPU0", "DLA0").replace("target: cuda", "target: nvdla").replace(
        "    sync: barrier\n", "    sync: barrier\n    fp16: {max_abs_error: 1.0e-2, top1_agreement: 1.0}\n")
    spec = parse_deploy_text(dla, "tiny.yaml")
    assert spec.deployments["two"].fp16 == {"max_abs_error": 0.01, "top1_agreement": 1.0}
    assert spec.deployments["single"].fp16 is None
    with pytest.raises(DeployError) as caught:
        parse_deploy_text(VALID.replace("    sync: barrier\n", "    sync: barrier\n    fp16: {max_abs_error: 1.0e-2}\n"),
                          "tiny.yaml")
    assert caught.value.code == "DEPLOY-E004" and "without an nvdla item" in caught.value.message


# The modules that may build Python values from YAML text: the deployment spec's one loader, the
# requirement files' reader (positions of their own) and the guard that screens both first.
YAML_READERS = {"pipeline/project/deploy.py", "pipeline/ledger/yamlsource.py", "pipeline/files/yamlguard.py"}
YAML_CALLS = {"compose", "compose_all", "load", "load_all", "safe_load", "safe_load_all", "full_load", "unsafe_load",
              "SafeLoader", "CSafeLoader", "Loader", "FullLoader", "UnsafeLoader", "parse", "scan"}


def _yaml_uses(path: Path) -> list[int]:
    """Lines of `path` that name a YAML parsing entry point or loader class of PyYAML (`yaml.compose`, ...)."""
    import ast

    return [node.lineno for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.Attribute) and node.attr in YAML_CALLS
            and isinstance(node.value, ast.Name) and node.value.id == "yaml"]


def test_deploy_yaml_has_one_loader(tmp_path: Path) -> None:
    """Every consumer of a deployment spec goes through load_deploy: no other module parses YAML.

    Its result carries the position of every key (`DeploySpec.positions`), so a later step
    locates its own problems without reading the file again (pipeline/split/allocation.py).
    """
    found = {path.relative_to(ROOT).as_posix(): _yaml_uses(path) for path in sorted((ROOT / "pipeline").rglob("*.py"))}
    assert {path for path, lines in found.items() if lines} <= YAML_READERS, {
        path: lines for path, lines in found.items() if lines and path not in YAML_READERS}
    assert found["pipeline/project/deploy.py"]  # the loader itself is seen
    reparse = tmp_path / "reparse.py"
    reparse.write_text("import yaml\n\ndef f(text):\n    return yaml.compose(text, Loader=yaml.SafeLoader)\n")
    assert _yaml_uses(reparse) == [4, 4]  # the rule can fail: a second parser of the spec is caught


def test_a_loaded_spec_carries_the_position_of_every_key(tmp_path: Path) -> None:
    path = tmp_path / "deploy.yaml"
    path.write_text(VALID, encoding="utf-8")
    spec = load_deploy(path)
    assert load_deploy(path) is spec  # cached per file: every consumer gets the same spec
    lines = VALID.splitlines()
    for key_path, value in (("model", "tiny"), ("inputs.x.shape", "[1, 4]"),
                            ("validation.tolerance.max_abs_error", "1.0e-5")):
        line, column = spec.positions[key_path]
        assert lines[line - 1][column - 1:].startswith(value), key_path
        assert (spec.location(key_path).line, spec.location(key_path).column) == (line, column)

"""Deployment semantics against the graph: every allocation error with its code and key path."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.split.split_helpers import branch3_export, branch3_spec, spec_text, with_tensors, write_spec
from pipeline.project.deploy import DeployError
from pipeline.nnef import build
from pipeline.nnef.printer import print_document
from pipeline.terminal import render_error
from pipeline.split.allocation import resolve_deployment
from pipeline.split.errors import CODES, SplitError
from pipeline.split.exported import followers_from_provenance, load_exported
from pipeline.split.splitter import split_deployment

PAPER = """  paper3:
    items: [{{name: ITEM1, target: cpu}}, {{name: ITEM2, target: cpu}}, {{name: ITEM3, target: cpu}}]
    default_item: ITEM1
    allocation:
{allocation}
    sync: event
{extra}"""


def problems(tmp_path: Path, allocation: str, extra: str = "") -> DeployError:
    branch3_export(tmp_path / "export")
    exported = load_exported(tmp_path / "export")
    spec = branch3_spec(tmp_path, PAPER.format(allocation=allocation, extra=extra))
    with pytest.raises(DeployError) as caught:
        resolve_deployment(spec, "paper3", exported.graph)
    return caught.value


def test_an_unknown_name_is_reported_with_its_key_path_and_the_results(tmp_path: Path) -> None:
    error = problems(tmp_path, "      ITEM2: [o2, o9]")
    assert [(p.code, p.path) for p in error.problems] == [("SPLIT-E002", "deployments.paper3.allocation.ITEM2[1]")]
    assert str(error).endswith(f"deploy.yaml:{error.problems[0].line}:{error.problems[0].column}: "
                               "deployments.paper3.allocation.ITEM2[1]: SPLIT-E002: 'o9' is not an "
                               "instruction result of the exported graph; results are: o1, o2, o3, o4, o5, o6, o7, out")
    lines = (tmp_path / "deploy.yaml").read_text().splitlines()
    assert "o9" in lines[error.problems[0].line - 1]  # located in the YAML
    rendered = render_error(error).splitlines()
    assert rendered[0].startswith(f"{tmp_path / 'deploy.yaml'}:{error.problems[0].line}:")
    assert "o9" in rendered[1] and rendered[2].strip().startswith("^")  # the source line and the caret


def test_an_input_or_parameter_is_not_an_instruction_result(tmp_path: Path) -> None:
    error = problems(tmp_path, "      ITEM2: [e1]\n      ITEM3: [v5]")
    assert [(p.code, p.path) for p in error.problems] == [
        ("SPLIT-E003", "deployments.paper3.allocation.ITEM2[0]"), ("SPLIT-E003", "deployments.paper3.allocation.ITEM3[0]")]
    assert "'e1' is an input (external)" in error.problems[0].message
    assert "'v5' is a parameter (variable)" in error.problems[1].message


def test_every_problem_is_reported_at_once(tmp_path: Path) -> None:
    error = problems(tmp_path, "      ITEM2: [nope, e1]\n      ITEM3: [o4, o5, v7]")
    assert [(p.code, p.path) for p in error.problems] == [
        ("SPLIT-E002", "deployments.paper3.allocation.ITEM2[0]"), ("SPLIT-E003", "deployments.paper3.allocation.ITEM2[1]"),
        ("SPLIT-E003", "deployments.paper3.allocation.ITEM3[2]")]


def test_a_name_allocated_twice_and_an_undeclared_item_are_deploy_errors(tmp_path: Path) -> None:
    # structural problems come from pipeline.project.deploy (DEPLOY-E007), before any graph is read
    with pytest.raises(DeployError) as caught:
        branch3_spec(tmp_path, PAPER.format(allocation="      ITEM2: [o2]\n      ITEM3: [o2]\n      ITEM9: [o4]", extra=""))
    assert {(p.code, p.path) for p in caught.value.problems} == {
        ("DEPLOY-E007", "deployments.paper3.allocation.ITEM3[0]"), ("DEPLOY-E007", "deployments.paper3.allocation.ITEM9")}


def test_an_unknown_deployment(tmp_path: Path) -> None:
    branch3_export(tmp_path / "export")
    spec = branch3_spec(tmp_path)
    with pytest.raises(SplitError) as caught:
        resolve_deployment(spec, "nine", load_exported(tmp_path / "export").graph)
    assert caught.value.code == "SPLIT-E001" and "single, paper3" in caught.value.message


def test_pipeline_depth_is_read_and_validated(tmp_path: Path) -> None:
    branch3_export(tmp_path / "export")
    graph = load_exported(tmp_path / "export").graph
    spec = branch3_spec(tmp_path)
    assert resolve_deployment(spec, "paper3", graph).pipeline_depth == 1
    assert resolve_deployment(spec, "paper3", graph, pipeline_depth=3).pipeline_depth == 3
    spec = branch3_spec(tmp_path, PAPER.format(allocation="      ITEM2: [o2, o3]\n      ITEM3: [o4, o5]",
                                               extra="    pipeline_depth: 2\n"))
    assert resolve_deployment(spec, "paper3", graph).pipeline_depth == 2
    with pytest.raises(DeployError) as caught:  # the structure is pipeline.project.deploy's
        branch3_spec(tmp_path, PAPER.format(allocation="      ITEM2: [o2, o3]", extra="    pipeline_depth: 0\n"))
    assert caught.value.problems[0].path == "deployments.paper3.pipeline_depth"


def test_a_declared_item_left_without_instruction_is_refused(tmp_path: Path) -> None:
    """Issue 28: ITEM3 declared, nothing allocated to it: it once vanished from the split without a word."""
    error = problems(tmp_path, "      ITEM2: [o2, o3]")
    assert [(p.code, p.path) for p in error.problems] == [("SPLIT-E008", "deployments.paper3.items[2]")]
    assert "ITEM3 gets no instruction" in error.problems[0].message and error.problems[0].line > 0


MULTI = """version 1.0;

graph g( x ) -> ( y )
{
    x = external<scalar>(shape = [1, 4, 2, 2]);
    [a, b] = split(x, axis = 1, ratios = [1, 1]);
    y = add(a, b);
}
"""


def test_results_of_one_instruction_go_to_one_item(tmp_path: Path) -> None:
    with_tensors(MULTI, tmp_path / "export")
    graph = load_exported(tmp_path / "export").graph
    spec = write_spec(tmp_path, spec_text("g", {"x": [1, 4, 2, 2]}, """  two:
    items: [{name: A, target: cpu}, {name: B, target: cpu}]
    default_item: A
    allocation: {A: [a], B: [b]}
    sync: event
"""))
    with pytest.raises(DeployError) as caught:
        resolve_deployment(spec, "two", graph)
    assert caught.value.problems[0].code == "SPLIT-E004"
    assert caught.value.problems[0].path == "deployments.two.allocation.B[0]"


def test_a_graph_output_computed_on_a_non_default_item_is_that_items_output(tmp_path: Path) -> None:
    with_tensors(MULTI, tmp_path / "export")
    graph = load_exported(tmp_path / "export").graph
    spec = write_spec(tmp_path, spec_text("g", {"x": [1, 4, 2, 2]}, """  two:
    items: [{name: A, target: cpu}, {name: B, target: cpu}]
    default_item: A
    allocation: {B: [y]}
    sync: event
"""))
    split = split_deployment(resolve_deployment(spec, "two", graph))
    assert split.outputs == {"y": "B"}
    a, b = split.item("A"), split.item("B")
    assert a.outputs == ["s1", "s2"] and b.outputs == ["y"] and b.inputs == ["s1", "s2"]
    assert [s.value for s in split.sync_variables] == ["a", "b"]


def test_exporter_intermediates_follow_their_nodes_result(tmp_path: Path) -> None:
    body = [build.assign("x", build.invoke("external", type_arg="scalar", shape=[1, 3])),
            build.assign("t_1d", build.invoke("unsqueeze", build.ref("x"), axes=[0])),
            build.assign("t", build.invoke("squeeze", build.ref("t_1d"), axes=[0])),
            build.assign("y", build.invoke("relu", build.ref("t")))]
    with_tensors(print_document(build.document([build.graph("g", ["x"], ["y"], body)])), tmp_path / "export")
    graph = load_exported(tmp_path / "export").graph
    provenance = {"tensors": {"T": "t", "Y": "y"},
                  "nodes": [{"index": 0, "outputs": ["T"]}, {"index": 1, "outputs": ["Y"]}],
                  "lines": [{"assigns": ["x"], "operation": "external", "node": None},
                            {"assigns": ["t_1d"], "operation": "unsqueeze", "node": {"index": 0}},
                            {"assigns": ["t"], "operation": "squeeze", "node": {"index": 0}},
                            {"assigns": ["y"], "operation": "relu", "node": {"index": 1}}]}
    followers = followers_from_provenance(provenance)
    assert followers == {"t_1d": "t"}
    spec = write_spec(tmp_path, spec_text("g", {"x": [1, 3]}, """  two:
    items: [{name: A, target: cpu}, {name: B, target: cpu}]
    default_item: A
    allocation: {B: [t]}
    sync: event
"""))
    deployment = resolve_deployment(spec, "two", graph, followers=followers)
    assert deployment.assignment == {"t_1d": "B", "t": "B", "y": "A"}


def test_every_code_is_documented() -> None:
    text = (Path(__file__).resolve().parents[2] / "docs" / "split.md").read_text(encoding="utf-8")
    for code in CODES:
        assert f"`{code}`" in text, code


def test_a_problem_is_located_from_the_specs_positions_without_reading_the_file_again(tmp_path: Path) -> None:
    """The loader's positions locate split's problems: the spec file gone, the line is still right."""
    branch3_export(tmp_path / "export")
    exported = load_exported(tmp_path / "export")
    spec = branch3_spec(tmp_path, PAPER.format(allocation="      ITEM2: [o2, o9]", extra=""))
    lines = (tmp_path / "deploy.yaml").read_text().splitlines()
    (tmp_path / "deploy.yaml").unlink()
    with pytest.raises(DeployError) as caught:
        resolve_deployment(spec, "paper3", exported.graph)
    problem = caught.value.problems[0]
    assert (problem.code, problem.path) == ("SPLIT-E002", "deployments.paper3.allocation.ITEM2[1]")
    assert problem.line > 0 and "o9" in lines[problem.line - 1]

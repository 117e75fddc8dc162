"""The layer-parallel rewrite: halo arithmetic, bit-identity with the interpreter, errors.

The reference is the reference interpreter on the original description; the rewritten
description must give the same bytes on random inputs for every geometry of the grid
(kernel, stride, padding, dilation, k = 2..4, chains with and without pooling).
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

from tests.split.split_helpers import spec_text, with_tensors, write_spec
from pipeline.ledger.checks import Verdict
from pipeline.nnef import build
from pipeline.nnef.checker import check_text
from pipeline.nnef.graph import Graph
from pipeline.nnef.printer import print_document
from pipeline.semantics import interpret
from pipeline.split.allocation import resolve_deployment
from pipeline.split.errors import SplitError
from pipeline.split.exported import load_exported
from pipeline.split.halo import Window, chain_parts, split_rows, window_part
from pipeline.split.layer_parallel import LayerParallelSpec, layer_parallel, rewrite_graph
from pipeline.split.plan import load_plan
from pipeline.split.step import split_to_directory


def network(height: int, kernel: int, stride: int, padding: tuple[int, int], dilation: int, chain: str,
            border: str = "constant", width: int = 6) -> str:
    x, w, b = build.ref("x"), build.ref("w"), build.ref("b")
    body = [build.assign("x", build.invoke("external", type_arg="scalar", shape=[1, 2, height, width])),
            build.assign("w", build.invoke("variable", type_arg="scalar", shape=[3, 2, kernel, 3], label="w")),
            build.assign("b", build.invoke("variable", type_arg="scalar", shape=[1, 3], label="b")),
            build.assign("c", build.invoke("conv", x, w, b, border=border, padding=[padding, (1, 1)],
                                           stride=[stride, 1], dilation=[dilation, 1], groups=1))]
    last = "c"
    if chain in ("relu", "relu+max", "relu+avg"):
        body.append(build.assign("r", build.invoke("relu", build.ref("c"))))
        last = "r"
    if chain == "relu+max":
        body.append(build.assign("p", build.invoke("max_pool", build.ref("r"), size=[1, 1, 2, 2], border="ignore",
                                                   padding=[(0, 0), (0, 0), (1, 0), (0, 0)], stride=[1, 1, 2, 2],
                                                   dilation=[1, 1, 1, 1])))
        last = "p"
    if chain == "relu+avg":
        body.append(build.assign("p", build.invoke("avg_pool", build.ref("r"), size=[1, 1, 3, 1], border="constant",
                                                   padding=[(0, 0), (0, 0), (1, 1), (0, 0)], stride=[1, 1, 1, 1],
                                                   dilation=[1, 1, 1, 1])))
        last = "p"
    body.append(build.assign("y", build.invoke("sigmoid", build.ref(last))))
    return print_document(build.document([build.graph("g", ["x"], ["y"], body)]))


CHAINS = {"": (), "relu": ("r",), "relu+max": ("r", "p"), "relu+avg": ("r", "p")}


def checked(text: str) -> Graph:
    report = check_text(text)
    assert report.findings == [], [f.message for f in report.findings]
    return report.graphs[0]


def random_inputs(graph: Graph, seed: int) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    inputs, variables = {}, {}
    for op in graph.operations:
        shape = [int(s) for s in op.attribs.get("shape", [])]
        if op.name == "external":
            inputs[op.output_refs()[0].name] = rng.uniform(-1, 1, shape).astype(np.float32)
        elif op.name == "variable":
            variables[op.attribs["label"]] = rng.uniform(-1, 1, shape).astype(np.float32)
    return inputs, variables


GEOMETRIES = [(kernel, stride, padding, dilation)
              for kernel, stride, padding, dilation in itertools.product((1, 3, 5), (1, 2), ((0, 0), (1, 1), (2, 1), (3, 0)), (1, 2))
              if not (kernel == 1 and dilation == 2)]


@pytest.mark.parametrize("kernel,stride,padding,dilation", GEOMETRIES,
                         ids=[f"k{k}s{s}p{p[0]}{p[1]}d{d}" for k, s, p, d in GEOMETRIES])
def test_rewrite_is_bit_identical(kernel: int, stride: int, padding: tuple[int, int], dilation: int) -> None:
    for height, chain, parts in itertools.product((11, 16), CHAINS, (2, 3, 4)):
        graph = checked(network(height, kernel, stride, padding, dilation, chain))
        last = (("c",) + CHAINS[chain])[-1]
        if parts > graph.tensors[last].shape[2]:
            continue
        try:
            outcome = rewrite_graph(graph, [LayerParallelSpec("c", CHAINS[chain], parts)])
        except SplitError as error:  # a part whose windows see padding only (kernel 1 under padding 3)
            assert error.code == "SPLIT-E013" and "no real input row" in error.message and padding[0] >= kernel
            continue
        assert outcome.graph.operations != graph.operations
        for seed in range(2):
            inputs, variables = random_inputs(graph, seed)
            expected = interpret(graph, inputs, variables)["y"]
            actual = interpret(outcome.graph, inputs, variables)["y"]
            assert expected.tobytes() == actual.tobytes(), (height, chain, parts, seed)


def test_the_grid_covers_the_interesting_cases() -> None:
    """Parts whose padding becomes 0, parts whose padding shrinks but stays, uneven rows."""
    seen: set[str] = set()
    for kernel, stride, padding, dilation in GEOMETRIES:
        for height, parts in itertools.product((11, 16), (2, 3, 4)):
            window = Window(kernel, stride, dilation, padding[0], padding[1], height)
            if parts > window.out_extent:
                continue
            ranges = split_rows(window.out_extent, parts)
            if len({e - b for b, e in ranges}) > 1:
                seen.add("uneven")
            for begin, end in ranges:
                part = window_part(window, begin, end)
                if padding[0] and begin and part.pad_before == 0:
                    seen.add("top padding removed")
                if 0 < part.pad_before < padding[0]:
                    seen.add("top padding reduced")
                if padding[1] and end < window.out_extent and part.pad_after == 0:
                    seen.add("bottom padding removed")
    assert seen == {"uneven", "top padding removed", "top padding reduced", "bottom padding removed"}


def test_halo_arithmetic_worked_example() -> None:
    """docs/split.md: a 3x3 conv, stride 1, padding (1, 1) on 8 rows, in 2 parts."""
    window = Window(size=3, stride=1, dilation=1, pad_before=1, pad_after=1, in_extent=8)
    assert window.out_extent == 8
    assert split_rows(8, 2) == [(0, 4), (4, 8)]
    top, bottom = (window_part(window, b, e) for b, e in split_rows(8, 2))
    assert (top.in_begin, top.in_end, top.pad_before, top.pad_after) == (0, 5, 1, 0)
    assert (bottom.in_begin, bottom.in_end, bottom.pad_before, bottom.pad_after) == (3, 8, 0, 1)
    # then a 2x2 max pool, stride 2, on the conv's 8 rows: pool rows [0, 2) need conv rows [0, 4)
    pool = Window(2, 2, 1, 0, 0, 8)
    conv_part, pool_part = chain_parts([window, pool], 0, 2)
    assert (pool_part.in_begin, pool_part.in_end) == (0, 4)
    assert (conv_part.out_begin, conv_part.out_end, conv_part.in_begin, conv_part.in_end) == (0, 4, 0, 5)
    assert split_rows(10, 3) == [(0, 4), (4, 7), (7, 10)]
    # padding reduced but not removed: 3x3, padding (3, 3) on 4 rows, 4 parts
    window = Window(3, 1, 1, 3, 3, 4)
    assert [window_part(window, b, e).pad_before for b, e in split_rows(window.out_extent, 4)] == [3, 1, 0, 0]


def rewrite_error(text: str, spec: LayerParallelSpec, profile: str = "certification") -> SplitError:
    graph = check_text(text, profile=profile).graphs[0]
    with pytest.raises(SplitError) as caught:
        layer_parallel(graph, spec)
    return caught.value


def test_rewrite_errors() -> None:
    text = network(12, 3, 1, (1, 1), 1, "relu+max")
    assert rewrite_error(text, LayerParallelSpec("r", (), 2)).code == "SPLIT-E010"
    assert rewrite_error(text, LayerParallelSpec("nope", (), 2)).code == "SPLIT-E010"
    assert rewrite_error(text, LayerParallelSpec("c", ("p",), 2)).code == "SPLIT-E011"  # skips r
    assert rewrite_error(text, LayerParallelSpec("c", ("r", "p", "y", "x"), 2)).code == "SPLIT-E011"
    assert rewrite_error(text, LayerParallelSpec("c", ("r", "p"), 7)).code == "SPLIT-E013"  # p has 6 rows
    assert rewrite_error(network(12, 3, 1, (1, 1), 1, "relu", border="reflect"),
                         LayerParallelSpec("c", ("r",), 2)).code == "SPLIT-E012"
    auto = text.replace("padding = [(1, 1), (1, 1)]", "padding = []")
    assert rewrite_error(auto, LayerParallelSpec("c", (), 2), profile="standard").code == "SPLIT-E012"
    taken = text.replace("y = sigmoid(p)", "c_p0 = sigmoid(p)").replace("-> ( y )", "-> ( c_p0 )")
    assert rewrite_error(taken, LayerParallelSpec("c", ("r", "p"), 2)).code == "SPLIT-E014"
    # a chain result read twice cannot be cut
    shared = text.replace("y = sigmoid(p);", "y = sigmoid(p);\n    q = sigmoid(r);").replace("-> ( y )", "-> ( y, q )")
    error = rewrite_error(shared, LayerParallelSpec("c", ("r", "p"), 2))
    assert error.code == "SPLIT-E011" and "'r' must be read only by the next element" in error.message


def test_only_padding_windows_are_rejected() -> None:
    # padding 3 above a 1-row kernel: the first output row reads padding only
    text = network(4, 1, 1, (3, 0), 1, "")
    error = rewrite_error(text, LayerParallelSpec("c", (), 7))
    assert error.code == "SPLIT-E013" and "no real input row" in error.message


LENET_LIKE = "\n".join([
    "  lp:",
    "    items: [{{name: A, target: cpu}}, {{name: B, target: cpu}}]",
    "    default_item: A",
    "    sync: {sync}",
])


@pytest.mark.parametrize("sync", ["event", "barrier"])
def test_parts_on_different_items_execute_bit_identically(tmp_path: Path, sync: str) -> None:
    with_tensors(network(16, 5, 1, (2, 2), 1, "relu+max"), tmp_path / "export")
    exported = load_exported(tmp_path / "export")
    rewrite = "    rewrites:\n      - {kind: layer_parallel, conv: c, chain: [r, p], parts: 3, items: [A, B, B]}\n"
    spec = write_spec(tmp_path, spec_text("g", {"x": [1, 2, 16, 6]}, LENET_LIKE.format(sync=sync) + "\n" + rewrite))
    deployment = resolve_deployment(spec, "lp", exported.graph)
    assert deployment.assignment["c_p0"] == "A" and deployment.assignment["c_p2"] == "B"
    assert deployment.assignment["p"] == "A"  # the concat stays with the chain's last name
    outcome = split_to_directory(exported, spec, tmp_path / "out", vectors=3)[0]
    verdicts = {r.check_id: r.verdict for r in outcome.results}
    assert all(v is Verdict.PASS for v in verdicts.values()), outcome.results
    plan = load_plan(outcome.directory / "plan.json")
    assert plan["rewrites"][0]["rows"] == [[0, 3], [3, 6], [6, 8]]
    assert plan["rewrites"][0]["part_results"][1] == ["c_p1_rows", "c_p1", "r_p1", "p_p1"]
    assert [(s["value"], s["writer"], s["readers"]) for s in plan["sync_variables"]] == [
        ("p_p1", "B", ["A"]), ("p_p2", "B", ["A"])]  # x is an input: declared by both, never sent
    assert (outcome.directory / "rewritten.nnef").is_file() and plan["original"] == "rewritten.nnef"


def test_allocating_a_replaced_name_is_an_error(tmp_path: Path) -> None:
    from pipeline.project.deploy import DeployError

    with_tensors(network(16, 5, 1, (2, 2), 1, "relu+max"), tmp_path / "export")
    exported = load_exported(tmp_path / "export")
    rewrite = "    rewrites:\n      - {kind: layer_parallel, conv: c, chain: [r, p], parts: 2}\n"
    spec = write_spec(tmp_path, spec_text("g", {"x": [1, 2, 16, 6]}, LENET_LIKE.format(sync="event")
                                          + "\n    allocation: {B: [r]}\n" + rewrite))
    with pytest.raises(DeployError) as caught:
        resolve_deployment(spec, "lp", exported.graph)
    assert caught.value.problems[0].code == "SPLIT-E006"
    assert "r_p0" in caught.value.problems[0].message
    spec = write_spec(tmp_path, spec_text("g", {"x": [1, 2, 16, 6]}, LENET_LIKE.format(sync="event") + "\n"
                                          + "    rewrites:\n      - {kind: layer_parallel, conv: c, parts: 1, item: A}\n"))
    with pytest.raises(DeployError) as caught:
        resolve_deployment(spec, "lp", exported.graph)
    assert [(p.code, p.path) for p in caught.value.problems] == [
        ("SPLIT-E005", "deployments.lp.rewrites[0].item"), ("SPLIT-E005", "deployments.lp.rewrites[0].parts")]
    lines = (tmp_path / "deploy.yaml").read_text().splitlines()
    assert "item: A" in lines[caught.value.problems[0].line - 1]  # located in the YAML

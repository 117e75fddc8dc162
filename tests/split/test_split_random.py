"""Random dataflow graphs over random allocations: every split checks, unions and runs exactly.

Properties checked on each: zero checker findings over all items, the union check, the
barrier schedule (every get in a later phase than its send; every item passes the same
barriers in increasing order), bit-identical execution in both sync modes, and the
plan/schedule files read back to what was written.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.split.split_helpers import spec_text, with_tensors, write_spec
from pipeline.nnef import build
from pipeline.nnef.checker import check_paths
from pipeline.nnef.printer import print_document
from pipeline.semantics import interpret
from pipeline.split.allocation import resolve_deployment
from pipeline.split.workers import compare_with_reference
from pipeline.split.exported import load_exported
from pipeline.split.plan import load_plan, load_schedule
from pipeline.split.schedule import item_schedules, phases
from pipeline.split.splitter import split_deployment
from pipeline.split.step import write_split
from pipeline.split.union import check_union

ITEMS = ("A", "B", "C")


def random_graph(rng: np.random.Generator, size: int) -> tuple[str, list[str]]:
    """A random DAG of element-wise operations on [1, 2, 3] tensors; the last two values are outputs."""
    body = [build.assign("x", build.invoke("external", type_arg="scalar", shape=[1, 2, 3])),
            build.assign("w", build.invoke("variable", type_arg="scalar", shape=[1, 2, 3], label="w"))]
    values = ["x", "w"]
    results = []
    for index in range(size):
        name = f"t{index}"
        kind = rng.integers(0, 4)
        a = build.ref(values[rng.integers(0, len(values))])
        b = build.ref(values[rng.integers(0, len(values))])
        if index == 0:
            call = build.invoke("add", build.ref("x"), build.ref("w"))  # the input and parameter are used
        elif kind == 0:
            call = build.invoke("add", a, b)
        elif kind == 1:
            call = build.invoke("mul", a, b)
        elif kind == 2:
            call = build.invoke("sigmoid", a)
        else:
            call = build.invoke("max", a, b)
        body.append(build.assign(name, call))
        values.append(name)
        results.append(name)
    consumed = {arg.value.name for stmt in body for arg in getattr(stmt.rhs, "args", ())
                if hasattr(arg.value, "name") and isinstance(arg.value.name, str)}
    outputs = [r for r in results if r not in consumed] or results[-1:]
    return print_document(build.document([build.graph("g", ["x"], outputs, body)])), results


@pytest.mark.parametrize("seed", range(30))
def test_random_split(tmp_path: Path, seed: int) -> None:
    rng = np.random.default_rng(seed)
    text, results = random_graph(rng, int(rng.integers(4, 14)))
    with_tensors(text, tmp_path / "export", seed)
    exported = load_exported(tmp_path / "export")
    graph = exported.graph
    assert exported.report.findings == []
    allocation = {item: [] for item in ITEMS}
    for name in results:
        allocation[ITEMS[int(rng.integers(0, 3))]].append(name)
    used = [item for item in ITEMS if allocation[item]]   # an item left empty is refused (SPLIT-E008)
    targets = {"A": "cpu", "B": "cuda", "C": "nvdla"}
    listing = "\n".join(f"      {item}: [{', '.join(names)}]" for item, names in allocation.items() if names and item != used[0])
    declared = ", ".join(f"{{name: {item}, target: {targets[item]}}}" for item in used)
    deployments = (f"  d:\n    items: [{declared}]\n"
                   f"    default_item: {used[0]}\n" + (f"    allocation:\n{listing}\n" if listing else "") + "    sync: barrier\n")
    spec = write_spec(tmp_path, spec_text("g", {"x": [1, 2, 3]}, deployments))
    split = split_deployment(resolve_deployment(spec, "d", graph))
    folder = tmp_path / "split"
    write_split(split, folder, "../export/graph.nnef")
    files = [folder / item.file for item in split.items]
    report = check_paths(files, tensor_dir=exported.directory)
    assert report.findings == [], [f"{f.span} {f.code} {f.message}" for f in report.findings]
    union = check_union(graph, report.graphs)
    assert union.ok, union.problems

    plain = {item.name: item.steps() for item in split.items}
    phase = phases(plain)
    sent = {s.var: phase[i][k] for i, steps in plain.items() for k, s in enumerate(steps) if s.kind == "send"}
    for item, steps in plain.items():
        assert phase[item] == sorted(phase[item])
        for k, step in enumerate(steps):
            if step.kind == "get":
                assert phase[item][k] > sent[step.var]
    barrier = item_schedules(split, "barrier")
    ids = {tuple(s.id for s in steps if s.kind == "barrier") for steps in barrier.values()}
    assert len(ids) == 1 and list(next(iter(ids))) == sorted(next(iter(ids)))

    plan = load_plan(folder / "plan.json")
    assert set(plan["allocation"]) == set(results)
    assert load_schedule(folder / "schedule.json").items == barrier
    variables = exported.variables()
    vectors = [{"x": np.random.default_rng(seed + v).uniform(-2, 2, (1, 2, 3)).astype(np.float32)} for v in range(2)]
    for sync in ("barrier", "event"):
        from pipeline.split.plan import Schedule

        schedule = Schedule(sync, item_schedules(split, sync))
        comparison = compare_with_reference(report.graphs, schedule, lambda i: interpret(graph, vectors[i], variables),
                                            vectors, variables, timeout=20.0)
        assert comparison.ok, (sync, comparison.first_difference)

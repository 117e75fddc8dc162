"""The structural coverage section of a model's page shows execute.coverage's figures and the listed lines' reasons."""

from __future__ import annotations

from types import SimpleNamespace

from pipeline.evidence.structural import COVERAGE_CHECK, structural_section
from pipeline.ledger.checks import CheckResult, Verdict


def _matrix(*results: CheckResult) -> SimpleNamespace:
    stored = [SimpleNamespace(result=r) for r in results]
    return SimpleNamespace(outcomes={("m", COVERAGE_CHECK): SimpleNamespace(results=stored)})


def test_the_figures_and_the_reasons_are_shown():
    measured = {"files": {"CPU0/nnef_item_CPU0.c": {"role": "generated", "lines": 247, "lines_executed": 247,
                                                    "line_percent": 100.0, "branches": 142, "branches_taken": 142,
                                                    "branch_percent": 100.0, "unexecuted_lines": []},
                          "nnef_runtime.c": {"role": "runtime", "lines": 52, "lines_executed": 16, "line_percent": 30.8,
                                             "branches": 26, "branches_taken": 4, "branch_percent": 15.4,
                                             "unexecuted_lines": list(range(36))}},
                "listed": {"nnef_runtime.c:nnef_trace_write": {"reason": "the instrumented build's only <b>",
                                                               "lines": ["nnef_runtime.c:211"]}}}
    html = structural_section(_matrix(CheckResult(COVERAGE_CHECK, "m/single", Verdict.PASS, "", measured),
                                      CheckResult(COVERAGE_CHECK, "m/gpu", Verdict.NOT_APPLICABLE, "no C program")),
                              "m")
    assert "247/247 (100.0 %)" in html and "16/52 (30.8 %)" in html and "4/26 (15.4 %)" in html
    assert html.index("CPU0/nnef_item_CPU0.c") < html.index("nnef_runtime.c")       # generated files first
    assert "nnef_runtime.c:nnef_trace_write" in html and "&lt;b&gt;" in html and "<b>" not in html
    assert "no C program" in html


def test_every_role_the_check_gives_is_shown_in_order():
    """An nvdla proxy item's file (role `proxy`, lenet5 convdla) crashed the page once: every role of
    coverage.role() has its place, and an unknown one goes last instead of failing the evidence step."""
    from pipeline.execute.coverage import role

    assert {role("nnef_main.c"), role("nnef_runtime.c"), role("DLA0/nnef_item_DLA0.c", {"DLA0": "DLA0"}),
            role("CPU1/nnef_item_CPU1.c")} <= {"generated", "proxy", "runtime", "harness"}
    files = {name: {"role": kind, "lines": 2, "lines_executed": 2, "line_percent": 100.0, "branches": 0,
                    "branches_taken": 0, "branch_percent": 0.0, "unexecuted_lines": []}
             for name, kind in [("nnef_main.c", "harness"), ("DLA0/nnef_item_DLA0.c", "proxy"),
                                ("CPU1/nnef_item_CPU1.c", "generated"), ("x.c", "future")]}
    html = structural_section(_matrix(CheckResult(COVERAGE_CHECK, "m/convdla", Verdict.PASS, "", {"files": files})), "m")
    order = [html.index(name) for name in ("CPU1/nnef_item_CPU1.c", "DLA0/nnef_item_DLA0.c", "nnef_main.c", "x.c")]
    assert order == sorted(order)


def test_no_result_says_so():
    assert "no result" in structural_section(SimpleNamespace(outcomes={}), "m")

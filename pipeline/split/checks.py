"""The checks of the split step and how their verdicts are decided.

One result per check and deployment (subject `<model>/<deployment>`). Each check is a
validator that does not trust the splitter: it works from the files written (re-read by
the checker, the Khronos parser, the reference interpreter), not from the splitter's
data structures. `nnef.multiitem` (pipeline.nnef.checks) covers HLR-SPL-002 from the same
item files.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

import numpy as np

from pipeline.diagnostics import Finding, Severity
from pipeline.ledger.checks import CheckResult, Verdict, register_check
from pipeline.nnef.graph import Graph
from pipeline.split.workers import Comparison, first_difference, identical
from pipeline.split.union import UnionResult

STEP = "split"

UNION = "split.union"
ITEMS_CHECKED = "split.items_checked"
KHRONOS = "split.khronos"
EXECUTION = "split.execution"
REWRITE = "split.rewrite"

register_check(UNION, "The union of the items' instructions is the original's, plus communication",
               STEP, ["HLR-SPL-001", "LLR-SPL-001"],
               "The item files, re-read by the checker, hold the original's computing instructions as a multiset "
               "(operation, arguments, results, type), its declarations identically, each output on one item, and "
               "every received value computed by its sender (pipeline/split/union.py).")
register_check(ITEMS_CHECKED, "Every item file passes the NNEF checker with zero findings",
               STEP, ["HLR-FMT-001", "HLR-FMT-002", "HLR-FMT-003", "HLR-FMT-004", "LLR-SPL-004"],
               "All item files of a deployment checked together in the certification profile, tensor files from "
               "the export folder: no error, warning or note.")
register_check(KHRONOS, "Every item file, with the extension lines removed, reads the same in the Khronos parser",
               STEP, ["HLR-FMT-005", "LLR-SPL-005"],
               "graphitem -> graph, variablesync and send_var removed, get_var -> external; Khronos load_graph + "
               "infer_shapes against our checker: operations, attributes, inputs, outputs, shapes.")
register_check(EXECUTION, "The items executed as communicating threads compute bit-identical outputs",
               STEP, ["HLR-SPL-003", "LLR-SPL-002"],
               "One thread per item runs its schedule with the reference kernels, exchanging values through "
               "per-reader queues (event) or barrier phases (barrier); outputs compared byte for byte with the "
               "unsplit interpreter on seeded vectors.")
register_check(REWRITE, "Layer-parallel rewrites compute bit-identical results",
               STEP, ["HLR-SPL-003", "LLR-SPL-003"],
               "The rewritten description (rewritten.nnef) and the exported one, run by the reference interpreter on "
               "seeded vectors, give byte-identical outputs.")

ALL = (UNION, ITEMS_CHECKED, KHRONOS, EXECUTION, REWRITE)


def not_run(check_id: str, subject: str, reason: str, read: Sequence[str] = ()) -> CheckResult:
    return CheckResult(check_id, subject, Verdict.NOT_RUN, reason, {}, list(read), [])


def union_result(subject: str, union: UnionResult, read: Sequence[str]) -> CheckResult:
    if union.ok:
        return CheckResult(UNION, subject, Verdict.PASS, "", dict(union.measured), list(read), [])
    more = f" (and {len(union.problems) - 1} more)" if len(union.problems) > 1 else ""
    return CheckResult(UNION, subject, Verdict.FAIL, union.problems[0] + more,
                       {**union.measured, "problems": len(union.problems)}, list(read), [])


def items_checked_result(subject: str, findings: Sequence[Finding], items: int, read: Sequence[str]) -> CheckResult:
    counts = {s.value: sum(1 for f in findings if f.severity is s) for s in Severity}
    measured = {"items": items, "errors": counts["error"], "warnings": counts["warning"], "notes": counts["note"]}
    if not findings:
        return CheckResult(ITEMS_CHECKED, subject, Verdict.PASS, "", measured, list(read), [])
    first = findings[0]
    where = f"{first.span}: " if first.span else ""
    more = f" (and {len(findings) - 1} more)" if len(findings) > 1 else ""
    return CheckResult(ITEMS_CHECKED, subject, Verdict.FAIL,
                       f"{where}{first.severity.value} {first.code}: {first.message}{more}", measured, list(read), [])


def khronos_result(subject: str, differences: Mapping[str, str] | None, read: Sequence[str],
                   reason: str = "") -> CheckResult:
    """`differences`: item -> '' (agree) or the first difference; None when not run."""
    if differences is None:
        return not_run(KHRONOS, subject, reason or "the Khronos parser (PyPI nnef) is not installed", read)
    failed = {item: d for item, d in differences.items() if d}
    measured = {"items": len(differences), "items_agreeing": len(differences) - len(failed)}
    if failed:
        item, difference = sorted(failed.items())[0]
        return CheckResult(KHRONOS, subject, Verdict.FAIL, f"{item}: {difference}", measured, list(read), [])
    return CheckResult(KHRONOS, subject, Verdict.PASS, "", measured, list(read), [])


def execution_result(subject: str, comparison: Comparison, sync: str, read: Sequence[str],
                     written: Sequence[str]) -> CheckResult:
    measured = {"vectors": comparison.vectors, "vectors_bit_identical": comparison.identical_vectors,
                "outputs_compared": comparison.outputs_compared, "sync": sync}
    if comparison.ok:
        return CheckResult(EXECUTION, subject, Verdict.PASS, "", measured, list(read), list(written))
    return CheckResult(EXECUTION, subject, Verdict.FAIL, comparison.first_difference or "no vector ran",
                       measured, list(read), list(written))


def execution_error(subject: str, error: Exception, read: Sequence[str]) -> CheckResult:
    return CheckResult(EXECUTION, subject, Verdict.FAIL, f"the split execution failed: {error}", {}, list(read), [])


def rewrite_result(subject: str, rewritten: Graph, reference: Callable[[int], Mapping[str, np.ndarray]],
                   run: Callable[[Graph, int], Mapping[str, np.ndarray]], vectors: int, rewrites: int,
                   read: Sequence[str]) -> CheckResult:
    """Compare the rewritten description with the original, vector by vector."""
    if rewrites == 0:
        return CheckResult(REWRITE, subject, Verdict.NOT_APPLICABLE, "this deployment has no rewrite", {}, list(read), [])
    same = 0
    difference = ""
    for index in range(vectors):
        expected = reference(index)
        actual = run(rewritten, index)
        ok = True
        for name, value in expected.items():
            if name not in actual or not identical(value, actual[name]):
                ok = False
                if not difference:
                    difference = f"vector {index}: " + (first_difference(name, value, actual[name])
                                                        if name in actual else f"output '{name}' missing")
        same += int(ok)
    measured: dict[str, Any] = {"vectors": vectors, "vectors_bit_identical": same, "rewrites": rewrites}
    if vectors and same == vectors:
        return CheckResult(REWRITE, subject, Verdict.PASS, "", measured, list(read), [])
    return CheckResult(REWRITE, subject, Verdict.FAIL, difference or "no vector ran", measured, list(read), [])

"""Mutation testing of the modules that decide verdicts: can each of their checks go red?

    python benchmarks/mutation_bench.py                         every verdict module, 30 sampled mutants each
    python benchmarks/mutation_bench.py --sample 0              every mutant (about 9,000: hours on 2 cores)
    python benchmarks/mutation_bench.py --modules compare.numeric numerics.tolerance --sample 60 --seed 3
    python benchmarks/mutation_bench.py --list                  the modules, their mutant counts and test files
    python benchmarks/mutation_bench.py --json reports/mutation.json   the table and every mutant's outcome

The mutants are mutmut's (PyPI `mutmut`, its libcst operators: numbers, strings, comparisons, boolean
and arithmetic operators, `None` for an argument, a dropped argument, ...), applied one at a time to a
scratch copy of the repository, plus the hand mutants of `HAND` for what mutmut does not mutate (module
constants, properties). Each mutant runs the module's light test files (`MODULES`) in a process forked
from one that imported the third-party libraries once, stopped at the first failure: a failing or
timed-out run kills the mutant. A mutant that survives and is listed in `EQUIVALENT` (with the reason it
cannot change a verdict or a figure) is counted apart. docs/mutation.md has the measured table.

The sample is drawn per module with a fixed seed (`--seed`), the same mutants on every run of the same
source; `--sample 0` takes all of them. Each module's tests first run unmutated: a module whose tests
fail as they are is reported and skipped (a mutant cannot be judged against red tests).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]

# The compare step and its parts share their light tests (each a second or two: recorders and planted documents).
_COMPARE_PARTS = ("tests/compare/test_step_verdicts.py", "tests/compare/test_step_dispatch.py",
                  "tests/compare/test_traces_verdicts.py")

# The verdict modules and the test files that judge them: light enough to run once per mutant.
MODULES: dict[str, tuple[str, ...]] = {
    "numerics.tolerance": ("tests/compare/test_failing_verdicts.py", "tests/tolerance/test_discrimination.py",
                           "tests/tolerance/test_rule.py"),
    "numerics.metrics": ("tests/compare/test_numeric.py", "tests/compare/test_failing_verdicts.py",
                         "tests/export/test_metrics_vectors.py"),
    "compare.numeric": ("tests/compare/test_numeric.py", "tests/compare/test_failing_verdicts.py",
                        "tests/compare/test_planted_error.py"),
    "compare.step": _COMPARE_PARTS,
    "compare.numbers": _COMPARE_PARTS,
    "compare.timing": _COMPARE_PARTS,
    "compare.gpu": _COMPARE_PARTS,
    "compare.nvdla": _COMPARE_PARTS,
    "compare.platform": _COMPARE_PARTS,
    "compare.traces": _COMPARE_PARTS,
    "compare.context": _COMPARE_PARTS,
    "compare.nvdla_bound": ("tests/compare/test_nvdla_bound_report.py", "tests/compare/test_nvdla_bound_verdicts.py",
                            "tests/compare/test_nvdla_fp16.py"),
    "export.checks": ("tests/export/test_export_checks.py", "tests/test_check_registry.py",
                      "tests/export/test_masks.py::test_the_finite_parameters_check_counts_the_masks_and_needs_an_export",
                      "tests/export/test_masks.py::test_a_finite_pass_on_attention_masks_names_what_it_read",
                      "tests/tolerance/test_discrimination.py", "tests/tolerance/test_rule.py"),
    "evidence.matrix": ("tests/evidence/test_matrix_verdicts.py", "tests/evidence/test_evidence_gaps.py",
                        "tests/evidence/test_failing_verdicts.py", "tests/evidence/test_objectives.py"),
    "ledger.checks": ("tests/test_ledger_checks.py", "tests/test_check_registry.py"),
    "codegen.nvdla.validate": ("tests/codegen/test_nvdla_validate_rules.py", "tests/codegen/test_nvdla_loadable.py",
                               "tests/codegen/test_nvdla_firmware_rules.py"),
}

# Mutants mutmut does not make (module constants, properties): (module, what it stands for, text, replacement).
HAND: tuple[tuple[str, str, str, str], ...] = (
    ("compare.numeric", "Comparison.passed: all -> any", "return all(o.passed for o in self.outputs)",
     "return any(o.passed for o in self.outputs)"),
    ("evidence.matrix", "MODEL_STATUS_ORDER: fail moved last",
     "MODEL_STATUS_ORDER: tuple[str, ...] = (M_FAIL, M_NO_CHECK,",
     "MODEL_STATUS_ORDER: tuple[str, ...] = (M_NO_CHECK,"),
    ("evidence.matrix", "STATUS_ORDER: failed moved after verified",
     "STATUS_ORDER: tuple[str, ...] = (FAILED, NO_CHECK, NOT_VERIFIED, PARTIAL, OFF_PLATFORM, VERIFIED,",
     "STATUS_ORDER: tuple[str, ...] = (NO_CHECK, NOT_VERIFIED, PARTIAL, OFF_PLATFORM, VERIFIED, FAILED,"),
    ("ledger.checks", "CHECK_MODULES: a registering module dropped", '    "pipeline.compare.checks",\n', ""),
    ("ledger.checks", "register_check: the duplicate guard removed", "if existing is not None and existing != spec:",
     "if False:"),
    ("numerics.tolerance", "DISCRIMINATION_RATIO 100 -> 1000", "DISCRIMINATION_RATIO = 100.0",
     "DISCRIMINATION_RATIO = 1000.0"),
    ("codegen.nvdla.validate", "ATOM 32 -> 16", "ATOM = 32", "ATOM = 16"),
    # the surviving mutants issue 42 listed, each killed by the test that names its defect
    ("compare.numeric", "compare(): the relative tolerance dropped",
     "ok, why = within_tolerance(stats, limit, max_rel_error)", "ok, why = within_tolerance(stats, limit, None)"),
    ("compare.numeric", "OutputComparison.to_json: a failing output reported pass",
     '"verdict": "pass" if self.passed else "fail"', '"verdict": "pass" if self.passed else "pass"'),
    ("compare.numeric", "compare(): the first element beyond the tolerance not named",
     'f"; first element beyond the tolerance: {first.describe()}"', 'f"; first element beyond the tolerance: "'),
    ("compare.numeric", "same_bits: NaN against NaN of another sign unequal",
     "return (a.view(np.uint32) == e.view(np.uint32)) | (np.isnan(a) & np.isnan(e))",
     "return (a.view(np.uint32) == e.view(np.uint32))"),
    ("numerics.metrics", "mean_abs_error of the last vector only",
     "stats.mean_abs_error = self._abs_sum / self._counted if self._counted else 0.0",
     "stats.mean_abs_error = float(abs_error.sum()) / counted if counted else 0.0"),
    ("numerics.tolerance", "spread() of one vector 1.0", "if values.shape[0] < 2:\n        return 0.0",
     "if values.shape[0] < 2:\n        return 1.0"),
    ("evidence.matrix", "EVID-E024 severity ERROR -> None", "E_RECORDED_REQUIREMENTS,\n                        Severity.ERROR,",
     "E_RECORDED_REQUIREMENTS,\n                        None,"),
    ("codegen.nvdla.validate", "descriptor blob lengths or -> and",
     "if len(deps) < 36 * n or len(ops) < R.OP_CONTAINER * n or len(surfaces) < R.SURFACE_CONTAINER * n:",
     "if len(deps) < 36 * n and len(ops) < R.OP_CONTAINER * n and len(surfaces) < R.SURFACE_CONTAINER * n:"),
    ("codegen.nvdla.validate", "surface strides against the cube or -> and",
     "if cube.line_stride < cube.width * ATOM or cube.surf_stride < cube.height * cube.line_stride:",
     "if cube.line_stride < cube.width * ATOM and cube.surf_stride < cube.height * cube.line_stride:"),
    ("codegen.nvdla.validate", "per-kernel SDP operand: one byte per channel", "if cube.size < 2 * cube.channel:",
     "if cube.size < cube.channel:"),
    ("codegen.nvdla.validate", "PDP pool width limit 8 -> 9", '("pool width", op.pool_width + 1, 1, 8)',
     '("pool width", op.pool_width + 1, 1, 9)'),
)

# Survivors that cannot change a verdict or a reported figure, by (module, key): the reason.
_ERRSTATE = "np.errstate only silences numpy's floating-point warnings: the values computed are the same"
_FLOAT32 = "the values are float32 already (compare() converts its inputs), so the conversion changes nothing"
EQUIVALENT: dict[tuple[str, str], str] = {
    ("numerics.metrics", 'add: np.errstate(invalid="ignore", over="ignore") -> np.errstate(invalid="ignore", over=None)'):
        _ERRSTATE,
    ("numerics.metrics", 'add: np.errstate(invalid="ignore", over="ignore") -> np.errstate(invalid=None, over="ignore")'):
        _ERRSTATE,
    ("numerics.metrics", 'add: np.errstate(invalid="ignore", over="ignore") -> np.errstate(invalid="ignore", )'):
        _ERRSTATE,
    ("compare.numeric", "first_divergence: np.array([a], np.float32) -> np.array([a], None)"):
        "a is a float32 value; ulp_distance converts its arguments to float32 itself",
    ("compare.numeric", "top1: np.asarray(actual, np.float32) -> np.asarray(actual, )"): _FLOAT32,
    ("compare.numeric", "top1: np.asarray(expected, np.float32) -> np.asarray(expected, None)"): _FLOAT32,
    ("compare.numeric", "top1: np.asarray(expected, np.float32) -> np.asarray(expected, )"): _FLOAT32,
    ("compare.numbers", 'output_tolerances: (yard.get("bound") or {}).get("unavailable", "") -> '
                        '(yard.get("bound") or {}).get("unavailable", )'):
        "None instead of \"\" where the bound records no reason: both are falsy, so `or` takes the enclosure's reason "
        "in both cases and the rule gets the same text",
    ("compare.traces", 'judge_traces: max((v.measured.get("inferences", 0) for v in verdicts), default=0) -> '
                       'max((v.measured.get("inferences", 0) for v in verdicts), default=None)'):
        "the default of an empty max is never taken: judge_traces returns `not run` before it when no trace was "
        "captured, and replay_traces gives one verdict per trace",
    ("evidence.matrix", '_gap_findings: na[0] if na else ("", "", status.detail) -> '
                        'na[0] if (na) or True else ("", "", status.detail)'):
        "`na` is never empty there: a requirement is `not applicable` only when it has checks and models "
        "(_overall of no model is `not verified`), and `na` lists every (model, check) pair",
    ("compare.numeric", "<module>: True -> False"):
        "OutputComparison.passed's default: compare() sets `passed` on every OutputComparison it makes",
    # the seed-7 sample's (docs/mutation.md "An independent sample")
    ("compare.numeric", "first_exceeding: np.asarray(expected, np.float64) -> np.asarray(expected, )"):
        "compare() hands first_exceeding float32 arrays and `a` is float64: `a - e` and `a == e` promote `e` to "
        "float64 exactly, and np.isnan is the same on either width",
    ("compare.numeric", "first_exceeding: bad.reshape(-1) -> bad.reshape(None)"):
        "ndarray.reshape(None) returns the array in its own shape, and np.argmax without an axis takes the flat "
        "index either way (unravelled against bad.shape)",
    ("compare.traces", 'replay_traces: "utf-8" -> "UTF-8"'):
        "Python's codec names are case-insensitive: the same codec",
    ("compare.traces", "judge_traces: 0 -> 1 #3"):
        "max(..., default=1) instead of default=0: the default of an empty max is never taken (judge_traces "
        "returns `not run` before it when no trace was captured, and replay_traces gives one verdict per trace)",
    ("compare.nvdla_bound", "judge: np.asarray(outputs[name][v], np.float64) -> np.asarray(outputs[name][v], None)"):
        "the outputs keep their float32/float16 type, which reshape and np.isnan treat alike, and Ball.distance "
        "(pipeline/numerics/doubled.py) converts its argument to float64 itself, exactly",
    ("codegen.nvdla.validate", '<module>: "firmware blob of another interface version than 0.12.x, or blob size '
                               'field wrong" -> "FIRMWARE BLOB OF ANOTHER INTERFACE VERSION THAN 0.12.X, OR BLOB SIZE '
                               'FIELD WRONG"'):
        "FINDINGS' descriptions are read by no code: a finding's message is written where it is found (add(code, "
        "where, what)) and the tests pin FINDINGS' codes; no verdict, message or report shows a description",
}

# The third-party libraries the tests import, loaded once before forking (never the pipeline: it is mutated).
PRELOAD = ("numpy", "yaml", "onnx", "onnx.helper", "onnx.numpy_helper", "onnxruntime", "jsonschema", "lark",
           "pytest", "hypothesis", "numba", "flatbuffers", "cryptography", "pygments", "doit")


@dataclass
class Mutant:
    module: str
    key: str            # function: original code -> mutated code (stable across runs of the same source)
    build: Callable[[], str] = field(repr=False, default=lambda: "")   # the whole mutated module
    hand: bool = False
    line: int = 0       # known once built
    outcome: str = ""   # killed, timeout, survived, equivalent
    seconds: float = 0.0
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"module": self.module, "key": self.key, "line": self.line, "hand": self.hand,
                "outcome": self.outcome, "seconds": round(self.seconds, 2), "note": self.note}


@dataclass
class Row:
    module: str
    total: int = 0
    mutants: list[Mutant] = field(default_factory=list)
    baseline_s: float = 0.0
    error: str = ""

    def count(self, *outcomes: str) -> int:
        return sum(1 for m in self.mutants if m.outcome in outcomes)


def module_path(module: str) -> Path:
    return Path("pipeline", *module.split(".")).with_suffix(".py")


def _line(original: str, mutated: str) -> int:
    """The first line where `mutated` differs from `original`."""
    for number, (a, b) in enumerate(zip(original.splitlines(), mutated.splitlines()), 1):
        if a != b:
            return number
    return 0


def _squeeze(text: str) -> str:
    return " ".join(text.split())


def mutants_of(module: str) -> list[Mutant]:
    """Every mutmut mutant of `module`, then its hand mutants, each with a stable key (the mutated source is
    made when the mutant runs: a module has thousands)."""
    from mutmut.mutation.file_mutation import create_mutations

    path = ROOT / module_path(module)
    code = path.read_text(encoding="utf-8")
    cwd = os.getcwd()
    os.chdir(ROOT)     # mutmut reads its configuration ([tool.mutmut] in pyproject.toml) from here
    try:
        tree, mutations, _, _ = create_mutations(str(module_path(module)), code)
    finally:
        os.chdir(cwd)
    out: list[Mutant] = []
    seen: dict[str, int] = {}
    for mutation in mutations:
        function = mutation.contained_by_top_level_function
        name = function.name.value if hasattr(function, "name") else "<module>"
        change = f"{_squeeze(tree.code_for_node(mutation.original_node))} -> " \
                 f"{_squeeze(tree.code_for_node(mutation.mutated_node))}"
        key = f"{name}: {change}"
        seen[key] = seen.get(key, 0) + 1
        build = (lambda m=mutation: tree.deep_replace(m.original_node, m.mutated_node).code)  # noqa: E731
        out.append(Mutant(module, key if seen[key] == 1 else f"{key} #{seen[key]}", build))
    for owner, what, text, replacement in HAND:
        if owner == module:
            if code.count(text) != 1:
                raise SystemExit(f"hand mutant {what!r}: {text!r} occurs {code.count(text)} times in {path}")
            out.append(Mutant(module, f"hand: {what}", lambda t=text, r=replacement: code.replace(t, r), hand=True))
    return out


def _scratch() -> Path:
    """A copy of the repository's files (tracked and new, not ignored) to mutate in place."""
    folder = Path(tempfile.mkdtemp(prefix="mutation-"))
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            check=True, capture_output=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file() and not source.is_symlink():
            target = folder / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    return folder


_CHILD = [0]    # the running child's process group, killed with us


def _run_tests(scratch: Path, tests: tuple[str, ...], timeout: float, check_origin: bool = False) -> tuple[str, str]:
    """Run `tests` in a forked child: ('passed'|'failed'|'timeout', detail)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:   # the child: pytest on the scratch tree, stopped at the first failure
        os.close(read)
        os.setpgid(0, 0)
        code = 3
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
            import pytest

            code = pytest.main(["-x", "-q", "-n", "0", "-p", "no:cacheprovider", "--no-header", "-o",
                                "addopts=", *tests])
            if check_origin:
                import pipeline

                origin = str(Path(pipeline.__file__).resolve())
                os.write(write, origin.encode())
        finally:
            os._exit(int(code))
    os.close(write)
    _CHILD[0] = pid
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            os.waitpid(pid, 0)
            os.close(read)
            return "timeout", f"over {timeout:.0f} s"
        time.sleep(0.05)
    detail = os.read(read, 4096).decode()
    os.close(read)
    code = os.waitstatus_to_exitcode(status)
    return ("passed" if code == 0 else "failed"), (detail or f"exit {code}")


def _terminate(signum: int, frame: Any) -> None:
    if _CHILD[0]:
        try:
            os.killpg(_CHILD[0], signal.SIGKILL)
        except ProcessLookupError:
            pass
    raise SystemExit(128 + signum)     # the scratch copy is removed on the way out (judge's finally)


def judge(modules: list[str], sample: int, seed: int, progress: bool = True,
          only: dict[str, set[str]] | None = None, done: Callable[[list[Row]], None] | None = None) -> list[Row]:
    """Run the sampled mutants of `modules` (or, with `only`, the mutants of those keys per module); `done`
    is called with the rows after each module (a run cut short keeps what it finished)."""
    for name in PRELOAD:
        try:
            __import__(name)
        except ImportError:
            pass
    signal.signal(signal.SIGTERM, _terminate)
    sys.dont_write_bytecode = True      # a mutant of the same size and second as the original: never a stale .pyc
    scratch = _scratch()
    sys.path.insert(0, str(scratch))
    os.chdir(scratch)
    rows: list[Row] = []
    try:
        for module in modules:
            every = mutants_of(module)
            row = Row(module, total=len(every))
            rows.append(row)
            generated = [m for m in every if not m.hand]
            hand = [m for m in every if m.hand]
            chosen = generated if sample <= 0 or sample >= len(generated) else \
                random.Random(f"{seed}:{module}").sample(generated, sample)
            if only is not None:
                chosen = [m for m in generated if m.key in only.get(module, set())]
                hand = [m for m in hand if m.key in only.get(module, set())]
            tests = MODULES[module]
            for test in tests:   # afresh: tests written while a long run goes count for the modules after
                name = test.split("::")[0]
                shutil.copy2(ROOT / name, scratch / name)
            target = scratch / module_path(module)
            original = target.read_text(encoding="utf-8")
            if original != (ROOT / module_path(module)).read_text(encoding="utf-8"):
                # the mutants are made from the repository's source: mutated into an older scratch copy they
                # would be judged against other modules than their own (a merge during a long run)
                row.error = "the module changed since the run started: run it again"
                print(f"{module}: {row.error}; skipped", file=sys.stderr)
                continue
            sources = {}
            for mutant in chosen + hand:
                sources[id(mutant)] = mutant.build()
                mutant.line = _line(original, sources[id(mutant)])
            start = time.monotonic()
            state, detail = _run_tests(scratch, tests, 1800, check_origin=True)
            row.baseline_s = time.monotonic() - start
            if state != "passed" or not detail.startswith(str(scratch)):
                row.error = f"the tests fail unmutated ({state}: {detail})" if state != "passed" else \
                    f"pipeline imported from {detail}, not the scratch copy"
                print(f"{module}: {row.error}; skipped", file=sys.stderr)
                continue
            timeout = max(60.0, 6 * row.baseline_s)   # generous: on a shared machine a survivor may run slow
            todo = sorted(chosen, key=lambda m: m.line) + hand
            for index, mutant in enumerate(todo, 1):
                target.write_text(sources[id(mutant)], encoding="utf-8")
                start = time.monotonic()
                state, detail = _run_tests(scratch, tests, timeout)
                mutant.seconds = time.monotonic() - start
                if state == "passed":
                    reason = EQUIVALENT.get((module, mutant.key))
                    mutant.outcome, mutant.note = ("equivalent", reason) if reason else ("survived", "")
                else:
                    mutant.outcome = "killed" if state == "failed" else "timeout"
                row.mutants.append(mutant)
                if progress:
                    print(f"[{module} {index}/{len(todo)}] {mutant.outcome:<10} {mutant.seconds:5.1f} s  "
                          f"line {mutant.line}: {mutant.key[:110]}", file=sys.stderr, flush=True)
            target.write_text(original, encoding="utf-8")
            if done is not None:
                done(rows)
    finally:
        os.chdir(ROOT)
        shutil.rmtree(scratch, ignore_errors=True)
    return rows


def table(rows: list[Row]) -> str:
    """The benchmark-style table: per module, what was run and what it did."""
    head = ("module", "mutants", "run", "killed", "of which timeouts", "survived", "equivalent", "% killed",
            "hand killed", "s/mutant")
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    totals = [0, 0, 0, 0, 0, 0, 0]
    for row in rows:
        if row.error:
            lines.append(f"| {row.module} | {row.total} | - | - | - | - | - | - | - | ({row.error}) |")
            continue
        run = len(row.mutants)
        killed = row.count("killed", "timeout")
        survived, equivalent = row.count("survived"), row.count("equivalent")
        hand = [m for m in row.mutants if m.hand]
        hand_killed = sum(1 for m in hand if m.outcome in ("killed", "timeout"))
        judged = run - equivalent
        seconds = sum(m.seconds for m in row.mutants) / run if run else 0.0
        lines.append(f"| {row.module} | {row.total} | {run} | {killed} | {row.count('timeout')} | {survived} | {equivalent} | "
                     f"{100 * killed / judged if judged else 100:.0f} % | {hand_killed}/{len(hand)} | {seconds:.1f} |")
        for i, value in enumerate((row.total, run, killed, survived, equivalent, hand_killed, len(hand))):
            totals[i] += value
    judged = totals[1] - totals[4]
    timeouts = sum(r.count("timeout") for r in rows)
    lines.append(f"| **all** | {totals[0]} | {totals[1]} | {totals[2]} | {timeouts} | {totals[3]} | {totals[4]} | "
                 f"{100 * totals[2] / judged if judged else 100:.0f} % | {totals[5]}/{totals[6]} | |")
    return "\n".join(lines)


def survivors(rows: list[Row]) -> str:
    out = []
    for row in rows:
        for m in row.mutants:
            if m.outcome == "survived":
                out.append(f"- {m.module}:{m.line} {m.key}")
    return "\n".join(out) or "(none)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--modules", nargs="*", default=list(MODULES), choices=list(MODULES), metavar="MODULE",
                        help="dotted under pipeline/ (default: every verdict module)")
    parser.add_argument("--sample", type=int, default=30, help="mutants per module, drawn at random; 0: all")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--json", type=Path, help="write the table's figures and every mutant's outcome here")
    parser.add_argument("--rerun", type=Path, metavar="JSON",
                        help="only the survivors (and timeouts) of a previous --json run, e.g. after adding tests")
    parser.add_argument("--table", type=Path, nargs="+", metavar="JSON",
                        help="print the table of saved --json runs (a later file's module replaces an earlier's)")
    parser.add_argument("--list", action="store_true", help="list the modules, mutant counts and test files")
    parser.add_argument("--fail-under", type=float, default=None,
                        help="exit 1 when the killed share of the judged mutants (all modules) is below this %%")
    args = parser.parse_args(argv)
    if args.list:
        for module in args.modules:
            print(f"{module}: {len(mutants_of(module))} mutants; tests {', '.join(MODULES[module])}")
        return 0
    if args.table:
        saved: dict[str, Row] = {}
        for path in args.table:
            for data in json.loads(path.read_text(encoding="utf-8"))["rows"]:
                saved[data["module"]] = Row(data["module"], data["total"], [Mutant(
                    m["module"], m["key"], hand=m["hand"], line=m["line"], outcome=m["outcome"], seconds=m["seconds"],
                    note=m["note"]) for m in data["mutants"]], data["baseline_s"], data["error"])
        rows = [saved[m] for m in MODULES if m in saved]
        for row in rows:
            for m in row.mutants:
                reason = EQUIVALENT.get((m.module, m.key))
                if m.outcome == "survived" and reason:
                    m.outcome, m.note = "equivalent", reason
        print(table(rows))
        print("\nsurvivors:\n" + survivors(rows))
        return 0
    only = None
    if args.rerun:
        previous = json.loads(args.rerun.read_text(encoding="utf-8"))
        only = {}
        for row in previous["rows"]:
            only[row["module"]] = {m["key"] for m in row["mutants"] if m["outcome"] in ("survived", "timeout")}
        args.modules = [m for m in args.modules if only.get(m)]
    def save(rows: list[Row]) -> None:
        if args.json:
            args.json.parent.mkdir(parents=True, exist_ok=True)
            args.json.write_text(json.dumps({"sample": args.sample, "seed": args.seed, "rows": [
                {"module": r.module, "total": r.total, "baseline_s": round(r.baseline_s, 1), "error": r.error,
                 "mutants": [m.to_json() for m in r.mutants]} for r in rows]}, indent=1, sort_keys=True) + "\n")

    rows = judge(args.modules, args.sample, args.seed, only=only, done=None if args.rerun else save)
    if args.rerun:     # the whole sample again: the previous run's outcomes, its survivors replaced by tonight's
        rerun = {r.module: r for r in rows}
        rows = []
        for previous_row in previous["rows"]:
            row = rerun.get(previous_row["module"]) or Row(previous_row["module"], previous_row["total"])
            again = {m.key: m for m in row.mutants}
            row.mutants = [again.get(m["key"]) or Mutant(
                m["module"], m["key"], hand=m["hand"], line=m["line"], outcome=m["outcome"], seconds=m["seconds"],
                note=m["note"]) for m in previous_row["mutants"]]
            for m in row.mutants:   # a survivor now known equivalent
                reason = EQUIVALENT.get((m.module, m.key))
                if m.outcome == "survived" and reason:
                    m.outcome, m.note = "equivalent", reason
            row.error = row.error or previous_row["error"]
            rows.append(row)
    print(table(rows))
    print("\nsurvivors:\n" + survivors(rows))
    save(rows)
    if any(r.error for r in rows):
        return 2
    if args.fail_under is not None:
        run = sum(len(r.mutants) - r.count("equivalent") for r in rows)
        killed = sum(r.count("killed", "timeout") for r in rows)
        if run and 100 * killed / run < args.fail_under:
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

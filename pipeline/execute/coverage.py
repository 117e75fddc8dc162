"""The structural coverage of a deployment: its program built with gcov's instrumentation and run on
the validation vectors and on robustness vectors (execute.coverage, LLR-COD-010, docs/execute.md
"Coverage").

The build is the sanitizer build's twin (pipeline/execute/sanitizers.py): the same sources and
flags as the qualified build plus COVERAGE_FLAGS, built by the host's compiler and run on the
host (a deployment on another platform: its sources built for the host, `measured.built_for`).
It runs twice: on the deployment's validation vectors, whose outputs must be bit-identical to
the qualified build's (the instrumentation adds counters, never a change of a result), and on
the robustness vectors this module writes into the deployment's `coverage/` folder (NaN, +-inf,
signed zeros, subnormals, ties, the ends of the deploy.yaml range, a seeded mix), with a short
timing campaign so the harness's timing path runs too. gcov (the one of the compiler's own
version) then gives, per file, the lines executed and the branch arcs taken.

The verdict: every line of the generated files (the items, the deployment's tables, the
transcendental programs) executed, and every runtime or harness line not executed listed in
uncovered.json with its reason (a reviewed file: an entry names the file, the function and the
line's text, or the file and a function never entered: then it covers the function's every
line). The C items that stand in for nvdla items on the host (the proxies: a channel to the
emulator server; on a target the item is the loadable) are judged like the runtime: their
unexecuted lines (the channel's error paths) are listed under PROXY, the item's name written
ITEM. Branches are reported, not judged: the generated code's decisions are branch-free masks
that gcov does not see (tests/codegen/test_mask_mcdc.py exercises them condition by condition),
and its branches are loop back edges. A mixed deployment's cuda items, built by g++ for the host
emulation, are not instrumented (listed in `measured.not_measured`).
"""

from __future__ import annotations

import json
import logging
import re
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np

from pipeline.codegen.c import RUNTIME_FILES
from pipeline.diagnostics import PipelineError
from pipeline.execute.harness import read_outputs
from pipeline.execute.instructions import special_vector
from pipeline.files.atomic import write_json
from pipeline.ledger.checks import CheckResult, Verdict, not_applicable, register_check
from pipeline.nnef.tensorfile import read_tensor, write_tensor
from pipeline.project.layout import BUILD_FILE, project_relative
from pipeline.toolchain import process
from pipeline.toolchain.cc import COVERAGE_FLAGS
from pipeline.toolchain.platforms import host_platform

log = logging.getLogger(__name__)

# The programs it runs (pipeline/ledger/dependencies.py): the gcov of the compiler's version.
TOOLS: tuple[str, ...] = ("gcov",)

COVERAGE = "execute.coverage"
UNCOVERED_FILE = Path(__file__).with_name("uncovered.json")
FOLDER = "coverage"                  # artifacts/<m>/execute/<deployment>/coverage/
RESULT_FILE = "coverage.json"
ROBUSTNESS = "robustness"            # coverage/robustness/<input>.dat
HARNESS_FILES = ("nnef_main.c", "nnef_harness.h")
PROXY = "nvdla proxy"                # the `file` of an uncovered.json entry for the nvdla proxy items' lines
ITEM = "<item>"                      # stands for the proxy item's name in such an entry's function and text
TIMED_RUNS = 2                       # --time 2 --warmup 1 on the robustness run: the harness's timing path
MAX_LISTED = 40                      # unexecuted lines named in a reason

register_check(COVERAGE, "Every generated line is executed; the runtime's unexecuted lines are listed with their reason",
               "execute", ["LLR-COD-010"],
               f"Every deployment whose C program runs on the host: the program (runtime, harness, items) built with "
               f"the build flags plus {' '.join(COVERAGE_FLAGS)} and run on the deployment's validation vectors "
               "(outputs bit-identical to the qualified build's) and on robustness vectors (NaN, +-inf, +-0, "
               "subnormals, ties, the deploy.yaml range ends, a seeded mix); gcov of the compiler's version: every "
               "line of the generated files executed (statement coverage 100 %), every unexecuted line of the runtime, "
               "the harness and the nvdla proxies listed in pipeline/execute/uncovered.json with its reason; branch "
               "arcs reported. A "
               "deployment on another platform: its sources built by the host's compiler and run on the host; n/a "
               "for a deployment without a C program; not run without gcov.")


@dataclass(frozen=True)
class Entry:
    """One reviewed entry of uncovered.json: the unexecuted lines of `function` in `file` whose text is `text`
    (whitespace collapsed), or without a text every line of `function` when it was never entered; and why
    they need not run."""

    file: str
    function: str
    text: str
    reason: str

    def matches(self, file: str, function: str, text: str, entered: bool) -> bool:
        """Whether the entry covers an unexecuted line of `file` (a runtime file's name, or PROXY with the item's
        name written ITEM in `function` and `text`) in `function` with `text`; an entry without a text covers only
        a function never `entered` (no line of it executed); a text ending in `...` matches the lines it begins."""
        if file != self.file or function != self.function:
            return False
        if not self.text:
            return not entered
        return text.startswith(self.text[:-3]) if self.text.endswith("...") else text == self.text

    def key(self) -> str:
        return f"{self.file}:{self.function}" + (f": {self.text}" if self.text else "")


def _words(text: str) -> str:
    return " ".join(text.split())


def reviewed_entries(path: Path = UNCOVERED_FILE) -> list[Entry]:
    """The entries of uncovered.json; ValueError naming the first malformed one."""
    document = json.loads(path.read_text(encoding="utf-8"))
    entries = []
    for index, item in enumerate(document.get("lines") or []):
        if not isinstance(item, dict) or set(item) - {"file", "function", "text", "reason"} or not all(
                isinstance(item.get(k), str) and item.get(k).strip() for k in ("file", "function", "reason")):
            raise ValueError(f"{path.name}: lines[{index}] needs a file, a function and a reason (strings), "
                             "and optionally a text")
        if Path(item["file"]).name not in RUNTIME_FILES and item["file"] != PROXY:
            raise ValueError(f"{path.name}: lines[{index}] names {item['file']}, not a runtime or harness file nor "
                             f"'{PROXY}': a generated line is never listed")
        entries.append(Entry(item["file"], item["function"], _words(str(item.get("text", ""))), _words(item["reason"])))
    return entries


def role(path: str, proxies: Mapping[str, str] | None = None) -> str:
    """`harness`, `runtime` (files the program copies from pipeline/codegen/c/runtime), `proxy` (the C item
    standing in for an nvdla item on the host: `proxies` maps their folders to the item names) or `generated`."""
    name = Path(path).name
    if name in HARNESS_FILES or name in RUNTIME_FILES:
        return "harness" if name in HARNESS_FILES else "runtime"
    return "proxy" if Path(path).parts[0] in (proxies or {}) else "generated"


def program_parts(code: Path) -> tuple[dict[str, str], list[str]]:
    """From build.json: {folder: item name} of the nvdla proxies, and the sources this build does not measure
    (a mixed deployment's cuda items, compiled by g++ for the host emulation without instrumentation)."""
    manifest = json.loads((code / BUILD_FILE).read_text(encoding="utf-8"))
    proxies = {str(i.get("dir", i["name"])): str(i["name"]) for i in manifest.get("items", []) if i.get("target") == "nvdla"}
    return proxies, sorted((manifest.get("cuda") or {}).get("sources", []))


# ---------------------------------------------------------------- robustness vectors

def robustness_vectors(shapes: Mapping[str, tuple[int, ...]], ranges: Mapping[str, tuple[float, float]]
                       ) -> list[tuple[str, dict[str, np.ndarray]]]:
    """(label, {input: float32 array}) of each robustness vector: every element NaN, +inf, -inf, +0, -0;
    subnormals of both signs; all elements equal (every max, min and arg tie); halves (rounding ties, ties to
    even); the deploy.yaml range's low and high end (where `ranges` gives it); the seeded mix of special values
    the instruction counts use (NaN next to ordinary values)."""
    def filled(pattern: list[float]) -> dict[str, np.ndarray]:
        return {n: np.resize(np.array(pattern, np.float32), s).astype(np.float32) for n, s in shapes.items()}

    vectors = [("nan", filled([np.nan])), ("+inf", filled([np.inf])), ("-inf", filled([-np.inf])),
               ("+0", filled([0.0])), ("-0", filled([-0.0])),
               ("subnormals", filled([1e-45, -1e-45, 1e-40, -1e-40, 1.1754942e-38, -1.1754942e-38])),
               ("equal", {n: np.full(s, np.float32(sum(ranges.get(n, (1.0, 1.0))) / 2), np.float32)
                          for n, s in shapes.items()}),
               ("halves", filled([0.5, -0.5, 1.5, -1.5, 2.5, -2.5]))]
    if ranges and all(n in ranges for n in shapes):
        vectors += [("range low", {n: np.full(s, np.float32(ranges[n][0]), np.float32) for n, s in shapes.items()}),
                    ("range high", {n: np.full(s, np.float32(ranges[n][1]), np.float32) for n, s in shapes.items()})]
    vectors.append(("mixed", {n: special_vector(tuple(s), seed=7 + k) for k, (n, s) in enumerate(sorted(shapes.items()))}))
    return vectors


def write_robustness(folder: Path, inputs_dir: Path, names: list[str], ranges: Mapping[str, tuple[float, float]]
                     ) -> tuple[list[str], list[Path]]:
    """<folder>/robustness/<input>.dat ([R, *shape]) for the inputs in `inputs_dir`; (labels, files)."""
    shapes = {n: tuple(read_tensor(inputs_dir / f"{n}.dat").shape[1:]) for n in names}
    vectors = robustness_vectors(shapes, ranges)
    written = [write_tensor(folder / ROBUSTNESS / f"{n}.dat", np.stack([v[n] for _, v in vectors])) for n in sorted(shapes)]
    return [label for label, _ in vectors], [Path(p) for p in written]


# ---------------------------------------------------------------- gcov

def _version(program: str, option: str) -> str:
    return process.text([program, option]).strip()


def find_gcov(cc: str) -> tuple[str | None, str]:
    """(the gcov whose version is the compiler `cc`'s, or None; the Debian package that has it)."""
    version = _version(cc, "-dumpfullversion") or _version(cc, "-dumpversion")
    major = version.split(".")[0] if version else ""
    package = f"gcc-{major}" if major.isdigit() else "gcc"
    name = Path(cc).name
    candidates = ([name.replace("gcc", "gcov")] if "gcc" in name else []) + ([f"gcov-{major}"] if major else []) + ["gcov"]
    for candidate in dict.fromkeys(candidates):
        found = shutil.which(candidate)
        if found and version and (_version(found, "--version").splitlines() or [""])[0].strip().endswith(version):
            return found, package
    return None, package


def gcov_version() -> str | None:
    """The first line of `gcov --version` of the gcov matching the host's compiler (recorded with the step), or None."""
    gcov, _ = find_gcov(host_platform().cc())
    return (_version(gcov, "--version").splitlines() or [None])[0] if gcov else None


def enclosing_function(lines: list[str], number: int) -> str:
    """The function whose definition encloses line `number` (1-based) of a C file: the nearest definition
    head at column 0 above it (`type name(`), the stable key of an uncovered.json entry."""
    for index in range(min(number, len(lines)) - 1, -1, -1):
        line = re.sub(r"^__attribute__\s*\(\(.*?\)\)\s*", "", lines[index])
        head = re.match(r"[A-Za-z_][\w \t\*]*?\b([A-Za-z_]\w*)\s*\(", line)
        if head and not line.rstrip().endswith(";") and head.group(1) not in ("if", "for", "while", "return",
                                                                             "defined", "__attribute__"):
            return head.group(1)
    return ""


def measure(gcov: str, work: Path) -> dict[str, dict[str, Any]]:
    """{source path (relative to the code folder): {"lines": {n: count}, "branches": {n: [counts]}}} from every
    .gcda in `work`; a header's lines summed over the translation units that inline it, its branch arcs kept
    per unit."""
    files: dict[str, dict[str, Any]] = {}
    for data in sorted(work.glob("*.gcda")):
        done = process.run([gcov, "--json-format", "--stdout", "--branch-probabilities", "--branch-counts",
                            "--object-directory", str(work), str(data)], cwd=work, timeout=300)
        if done.returncode != 0:
            raise PipelineError("RUN-E032", f"gcov exited {done.returncode} on {data.name}: {done.err.strip()[:1500]}")
        for text in done.out.splitlines():
            if not text.strip():
                continue
            for found in json.loads(text).get("files", []):
                path = str(found["file"])
                record = files.setdefault(path, {"lines": {}, "branches": {}})
                for line in found.get("lines", []):
                    number = int(line["line_number"])
                    record["lines"][number] = record["lines"].get(number, 0) + int(line["count"])
                    if line.get("branches"):
                        record["branches"].setdefault(number, []).extend(int(b["count"]) for b in line["branches"])
    return files


# ---------------------------------------------------------------- the verdict

def judge(subject: str, measured_files: Mapping[str, Mapping[str, Any]], code: Path, entries: list[Entry],
          measured: dict[str, Any], proxies: Mapping[str, str] | None = None) -> CheckResult:
    """execute.coverage from gcov's figures (`measure`) of the program built from `code` (`proxies`: its nvdla
    proxy items, program_parts)."""
    summary: dict[str, dict[str, Any]] = {}
    unreached: list[str] = []        # generated lines never executed
    unlisted: list[str] = []         # runtime or harness lines never executed, not in uncovered.json
    listed: dict[str, dict[str, Any]] = {}
    for path, record in sorted(measured_files.items()):
        if Path(path).is_absolute() or ".." in Path(path).parts:
            continue                 # a system header inlined into the program: not the deployment's code
        source = (code / path).read_text(encoding="utf-8", errors="replace").splitlines() if (code / path).is_file() else []
        lines, branches = record["lines"], [c for counts in record["branches"].values() for c in counts]
        missed = sorted(n for n, c in lines.items() if c == 0)
        kind = role(path, proxies)
        summary[path] = {"role": kind, "lines": len(lines), "lines_executed": len(lines) - len(missed),
                         "line_percent": round(100.0 * (len(lines) - len(missed)) / len(lines), 1) if lines else 100.0,
                         "branches": len(branches), "branches_taken": sum(1 for c in branches if c),
                         "branch_percent": round(100.0 * sum(1 for c in branches if c) / len(branches), 1)
                         if branches else 100.0, "unexecuted_lines": missed}
        functions = {n: enclosing_function(source, n) for n in lines} if kind != "generated" else {}
        entered = {functions[n] for n, c in lines.items() if c and n in functions}
        for number in missed:
            text = _words(source[number - 1]) if 0 < number <= len(source) else ""
            where = f"{path}:{number} `{text[:80]}`"
            if kind == "generated":
                unreached.append(where)
                continue
            function, key = functions[number], Path(path).name
            if kind == "proxy":           # the item's name in the proxy's texts and names stands as ITEM
                name = (proxies or {})[Path(path).parts[0]]
                function, key, text = function.replace(name, ITEM), PROXY, text.replace(name, ITEM)
            entry = next((e for e in entries if e.matches(key, function, text, functions[number] in entered)), None)
            if entry is None:
                unlisted.append(f"{where} (in {function or 'no function'})")
            else:
                listed.setdefault(entry.key(), {"reason": entry.reason, "lines": []})["lines"].append(f"{path}:{number}")
    measured.update({"files": summary, "listed": dict(sorted(listed.items()))})
    reasons = []
    if unreached:
        reasons.append(f"{len(unreached)} generated lines never executed by the validation and robustness vectors: "
                       + "; ".join(unreached[:MAX_LISTED]))
    if unlisted:
        reasons.append(f"{len(unlisted)} runtime, harness or nvdla proxy lines never executed and not listed in "
                       f"pipeline/execute/{UNCOVERED_FILE.name}: " + "; ".join(unlisted[:MAX_LISTED]))
    if reasons:
        return CheckResult(COVERAGE, subject, Verdict.FAIL, " | ".join(reasons)[:4000], measured)
    return CheckResult(COVERAGE, subject, Verdict.PASS, "", measured)


def _differs(got: Path, expected: Path, output_names: list[str]) -> str:
    """'' when every output in `got` is bit-identical to `expected`'s, else which one differs and where."""
    have, want = read_outputs(got, output_names), read_outputs(expected, output_names)
    for name in output_names:
        if have[name].tobytes() != want[name].tobytes():
            count = int((have[name].view("u4") != want[name].view("u4")).sum()) if have[name].shape == want[name].shape \
                else have[name].size
            return f"output {name}: the coverage build differs from the qualified build in {count} elements"
    return ""


def coverage_result(subject: str, cc: str, build: Callable[[Path], Any], harness: Callable[..., Any],
                    harness_on: Callable[[Path, int], Callable[..., Any]], where: Any, inputs_dir: Path,
                    expected: Path, output_names: list[str], vectors: int, folder: Path, code: Path, root: Path,
                    ranges: Mapping[str, tuple[float, float]], platform: str = "host",
                    uncovered: Path = UNCOVERED_FILE) -> CheckResult:
    """execute.coverage of one deployment: `build(binary)` makes the instrumented program with compiler `cc`;
    `harness(binary, outputs, **options)` runs it on the validation vectors, `harness_on(inputs, count)` gives
    the same runner on other vectors; the robustness vectors and coverage.json are written to `folder`."""
    start = time.monotonic()
    result = _coverage(subject, cc, build, harness, harness_on, where, inputs_dir, expected, output_names, vectors,
                       folder, code, root, ranges, platform, uncovered)
    log.info("coverage %s: %s in %.1f s", subject, result.verdict.value, time.monotonic() - start)
    return result


def _coverage(subject: str, cc: str, build: Callable[[Path], Any], harness: Callable[..., Any],
              harness_on: Callable[[Path, int], Callable[..., Any]], where: Any, inputs_dir: Path, expected: Path,
              output_names: list[str], vectors: int, folder: Path, code: Path, root: Path,
              ranges: Mapping[str, tuple[float, float]], platform: str, uncovered: Path) -> CheckResult:
    gcov, package = find_gcov(cc)
    if gcov is None:
        return CheckResult(COVERAGE, subject, Verdict.NOT_RUN, f"gcov of the compiler {cc} is not installed "
                           f"(Debian package {package})")
    try:
        entries = reviewed_entries(uncovered)
    except (OSError, ValueError) as error:
        return CheckResult(COVERAGE, subject, Verdict.FAIL, f"the reviewed list of uncovered lines is unreadable: {error}")
    if folder.exists():
        shutil.rmtree(folder)
    names = sorted(p.stem for p in inputs_dir.glob("*.dat"))
    labels, robust_files = write_robustness(folder, inputs_dir, names, ranges)
    measured: dict[str, Any] = {"built_for": "host" if platform == "host" else
                                f"host (the sources of the {platform} deployment, the host's compiler)",
                                "gcov": (_version(gcov, "--version").splitlines() or [""])[0], "vectors": vectors,
                                "robustness_vectors": labels}
    with tempfile.TemporaryDirectory(prefix="nnef-coverage-") as tmp:
        work = Path(tmp)
        try:
            built = build(work / "nnef_run_coverage")
        except PipelineError as error:
            return CheckResult(COVERAGE, subject, Verdict.FAIL, f"the coverage build failed: {error.code}: "
                               f"{error.message}"[:2000], measured)
        measured["flags"] = list(built.flags)
        done = harness(built.binary, work / "outputs", session=where, check=False)
        if done.returncode != 0:
            return CheckResult(COVERAGE, subject, Verdict.FAIL, f"the coverage build exited {done.returncode} on the "
                               f"validation vectors: {done.stderr.strip()[:1500]}", measured)
        differs = _differs(work / "outputs", expected, output_names)
        if differs:
            return CheckResult(COVERAGE, subject, Verdict.FAIL, differs, measured)
        measured["outputs_identical"] = True
        robust = harness_on(folder / ROBUSTNESS, len(labels))(
            built.binary, work / "robust", session=where, check=False, time_runs=TIMED_RUNS,
            timing=work / "robust" / "timing.json", warmup=1)
        if robust.returncode != 0:
            return CheckResult(COVERAGE, subject, Verdict.FAIL, f"the coverage build exited {robust.returncode} on the "
                               f"robustness vectors: {robust.stderr.strip()[:1500]}", measured)
        try:
            figures = measure(gcov, work)
        except PipelineError as error:
            return CheckResult(COVERAGE, subject, Verdict.NOT_RUN, f"{error.code}: {error.message}"[:2000], measured)
    proxies, unmeasured = program_parts(code)
    if unmeasured:
        measured["not_measured"] = {source: "a cuda item, built by g++ for the host emulation without gcov's "
                                            "instrumentation" for source in unmeasured}
    result = judge(subject, figures, code, entries, measured, proxies)
    document = {"schema_version": 1, "subject": subject, "gcov": measured["gcov"], "flags": measured["flags"],
                "vectors": vectors, "robustness_vectors": labels,
                "files": {path: {"role": role(path, proxies), "lines": {str(n): c for n, c in sorted(r["lines"].items())},
                                 "branches": {str(n): c for n, c in sorted(r["branches"].items())}}
                          for path, r in sorted(figures.items()) if path in result.measured["files"]}}
    written = [project_relative(write_json(folder / RESULT_FILE, document), root)] + \
        [project_relative(p, root) for p in robust_files]
    result.written = written
    result.read = [project_relative(expected / f"{n}.dat", root) for n in output_names]
    return result


def not_run(subject: str, reason: str) -> CheckResult:
    """The check on a deployment whose program did not run (the reason why)."""
    return CheckResult(COVERAGE, subject, Verdict.NOT_RUN, reason)


def no_program(subject: str, kind: str) -> CheckResult:
    """The check on a deployment of one cuda or one nvdla item alone: no C program to measure."""
    return not_applicable(COVERAGE, subject, f"a deployment of one {kind} item alone has no C program to measure")

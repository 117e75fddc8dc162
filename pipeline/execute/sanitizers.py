"""The sanitizer run of a deployment: its program built with AddressSanitizer and
UndefinedBehaviorSanitizer and run on the validation vectors (execute.sanitizers, LLR-COD-003).

The warnings of the qualified build (codegen.compile) cannot see an out-of-bounds access, a read
past an arena, a signed overflow or a misaligned access that happens only at run time; the
sanitizers can, on the inputs that run. So every deployment whose C program runs on the host is
built a second time with SANITIZE_FLAGS (no recovery: the first report stops the program) and
run on the same vectors as the qualified build; the check fails on a sanitizer report, a non-zero
exit, or an output that differs by one bit from the qualified build's (the sanitizer build is
the same C: a difference is undefined behaviour the compiler exploited in one of the two).

A deployment on another platform (an emulator, a board): its sources are built with the host's
compiler and flags for its lanes and run here (the sanitizers' runtimes are the host's): the C is
the deployment's, the compiler the host's, which the result says (`measured.built_for`); its
outputs are compared with the platform run's. A deployment without a C program (one cuda or one
nvdla item alone) is `n/a`.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any, Callable

from pipeline.diagnostics import PipelineError
from pipeline.execute.harness import read_outputs
from pipeline.project.layout import project_relative
from pipeline.ledger.checks import CheckResult, Verdict, not_applicable, register_check
from pipeline.toolchain.cc import SANITIZE_FLAGS

SANITIZERS = "execute.sanitizers"

# No recovery (the flags), leaks reported, the first report the last: any report is a non-zero exit.
ENVIRONMENT = {"ASAN_OPTIONS": "detect_leaks=1:halt_on_error=1:abort_on_error=0:exitcode=86",
               "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1:exitcode=87"}
REPORT_MARKERS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:", "SUMMARY: UndefinedBehaviorSanitizer")

register_check(SANITIZERS, "Generated code runs the validation vectors clean under AddressSanitizer and "
               "UndefinedBehaviorSanitizer", "execute", ["LLR-COD-003"],
               f"Every deployment whose C program runs on the host: the program (runtime, harness, items) built with "
               f"the build flags plus {' '.join(SANITIZE_FLAGS)} and run on the deployment's validation vectors "
               "(ASAN_OPTIONS detect_leaks=1, halt_on_error=1): exit 0, no sanitizer report, outputs bit-identical to "
               "the qualified build's. A deployment on another platform: its sources built by the host's compiler "
               "and run on the host (the sanitizers' runtimes are the host's); n/a for a deployment without a C "
               "program.")


def _report(text: str) -> str:
    """The first lines of a sanitizer report in `text` (stderr), or ''."""
    lines = text.splitlines()
    for index, line in enumerate(lines):
        if any(marker in line for marker in REPORT_MARKERS):
            return " | ".join(l.strip() for l in lines[index:index + 6] if l.strip())[:1500]
    return ""


def sanitizer_result(subject: str, build: Callable[[Path], Any], harness: Callable[..., Any], where: Any,
                     expected: Path, output_names: list[str], vectors: int, root: Path,
                     platform: str = "host") -> CheckResult:
    """execute.sanitizers of one deployment: `build(binary)` makes the sanitized program (a BuildResult),
    `harness(binary, outputs, session=..., env=..., check=False)` runs it on the vectors; the outputs are
    compared with the qualified build's in `expected`."""
    with tempfile.TemporaryDirectory(prefix="nnef-sanitize-") as tmp:
        work = Path(tmp)
        try:
            built = build(work / "nnef_run_sanitized")
        except PipelineError as error:
            return CheckResult(SANITIZERS, subject, Verdict.FAIL, f"the sanitizer build failed: {error.code}: "
                               f"{error.message}"[:2000])
        done = harness(built.binary, work / "outputs", session=where, env=dict(ENVIRONMENT), check=False)
        measured: dict[str, Any] = {"built_for": "host" if platform == "host" else
                                    f"host (the sources of the {platform} deployment, the host's compiler)",
                                    "vectors": vectors, "flags": list(built.flags), "exit": done.returncode,
                                    "options": dict(ENVIRONMENT)}
        report = _report(done.stderr)
        if report or done.returncode != 0:
            return CheckResult(SANITIZERS, subject, Verdict.FAIL,
                               f"sanitized run exited {done.returncode}: {report or done.stderr.strip()[:1500]}",
                               measured)
        got = read_outputs(work / "outputs", output_names)
        want = read_outputs(expected, output_names)
        for name in output_names:
            if got[name].tobytes() != want[name].tobytes():
                differing = int((got[name].view("u4") != want[name].view("u4")).sum())
                return CheckResult(SANITIZERS, subject, Verdict.FAIL,
                                   f"output {name}: the sanitizer build differs from the qualified build in "
                                   f"{differing} elements", measured)
    measured["outputs_identical"] = True
    return CheckResult(SANITIZERS, subject, Verdict.PASS, "", measured,
                       read=[project_relative(expected / f"{n}.dat", root) for n in output_names])


def not_run(subject: str, reason: str) -> CheckResult:
    """The check on a deployment whose program did not run (the reason why)."""
    return CheckResult(SANITIZERS, subject, Verdict.NOT_RUN, reason)


def no_program(subject: str, kind: str) -> CheckResult:
    """The check on a deployment of one cuda or one nvdla item alone: nothing to sanitize."""
    return not_applicable(SANITIZERS, subject, f"a deployment of one {kind} item alone has no C program to sanitize")

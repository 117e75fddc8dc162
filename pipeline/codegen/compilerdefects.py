"""Known wrong-code defects of the qualified compiler, reduced to self-checking C programs.

A qualified flag that excludes a transformation needs evidence that the exclusion works on
the compiler actually used. Each case here is a small valid C99 program (no undefined
behaviour, no restrict, no sanitizer finding) that a defective compiler miscompiles; it
exits 0 when the compiler computed the right result and 1 otherwise. The codegen.compile
check builds and runs every case with the build flags of each deployment (the same flags
as the generated code), so a compiler or flag change that brings a defect back fails the
check; tests/codegen/test_compiler_defects.py also pins that, on GCC 12, each case is
miscompiled without the excluding flag (the flag is why the case passes). On a platform other
than the host (pipeline/toolchain/platforms.py) the cases are built by the platform's compiler
with its flags and link flags and run by its runner (under qemu-aarch64, on a board), so the
compiler that builds the deployment is the one whose defects are excluded.

GCC 12.2 null-access inference on zero-based addresses (issue 15, efficientnet_b0).
IVOPTs may rewrite the addresses of a loop whose bases are known constants (arena offsets
propagated by IPA-CP into a clone, or a global array) into TARGET_MEM_REFs whose base is
the literal address 0, the real address in the index ("MEM[(float *)0B + _9 + iv * 4]").
The late local pure-const and modref analyses ask infer_nonnull_range_by_dereference
whether a statement dereferences NULL; for such a reference it answers yes, so they log
"NULL memory access; terminating BB", skip the rest of the block (the stores), find the
function "locally pure" and the callers' DCE deletes every call whose result is unused,
that is every call. Newer GCC rewrites such references into a LEA and a plain MEM_REF
("to avoid basing a memory reference on address zero", rewrite_use_address in
tree-ssa-loop-ivopts.cc). -fno-delete-null-pointer-checks turns the inference off
(infer_nonnull_range_by_dereference returns false), which is exactly the unsound step;
-fno-ipa-icf or -fno-ipa-cp only remove some ways of reaching it (GLOBAL_ARRAY needs
neither).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from pipeline.diagnostics import PipelineError
from pipeline.toolchain import process
from pipeline.toolchain.runners import LOCAL

# The programs it runs, the platforms' compilers (pipeline/ledger/dependencies.py).
TOOLS: tuple[str, ...] = ("${CC:-gcc}", "aarch64-linux-gnu-gcc", "@platforms")

EXCLUDING_FLAG = "-fno-delete-null-pointer-checks"


@dataclass(frozen=True)
class DefectCase:
    """One reduced wrong-code case: the program, the flag that excludes it, what it shows."""

    name: str
    excluded_by: str
    what: str
    source: str


# The efficientnet_b0 chain: two identical functions (one per NNEF instruction), each called once
# with the same constant addresses (the same arena offsets). ICF merges them, IPA-CP clones the
# survivor for the constants, the clone is wrongly found pure and both calls are deleted.
ICF_IPA_CP_CLONE = DefectCase(
    "icf_ipa_cp_clone", EXCLUDING_FLAG,
    "two identical functions called with the same constant addresses are merged (ICF), cloned for the "
    "constants (IPA-CP), the clone's zero-based vector stores taken for NULL accesses: clone found pure, "
    "both calls deleted",
    """\
/* GCC 12.2 -O2 deletes both calls: exit 1. Right result: exit 0. */
float a[3072];

static void f(const float *s, const float *x, float *y)
{
    for (int i0 = 0; i0 < 256; ++i0) {
        const float h0 = s[i0];
        for (int i = 0; i < 4; ++i)
            y[i0 * 4 + i] = h0 * x[i0 * 4 + i];
    }
}

static void g(const float *s, const float *x, float *y)
{
    for (int i0 = 0; i0 < 256; ++i0) {
        const float h0 = s[i0];
        for (int i = 0; i < 4; ++i)
            y[i0 * 4 + i] = h0 * x[i0 * 4 + i];
    }
}

int main(void)
{
    for (int i = 0; i < 1024; ++i) {
        a[1024 + i] = 1.0f;
        a[2048 + i] = 2.0f;
    }
    f(a + 2048, a + 1024, a);
    const float first = a[5];
    g(a + 2048, a + 1024, a);
    return (first == 2.0f && a[7] == 2.0f) ? 0 : 1;
}
""")

# The same inference without ICF or IPA-CP: a function that is not inlined and addresses a global
# array with two strides. -fno-ipa-icf -fno-ipa-cp leave it miscompiled.
GLOBAL_ARRAY = DefectCase(
    "global_array", EXCLUDING_FLAG,
    "a function that is not inlined and addresses a global array with two strides: zero-based vector "
    "stores taken for NULL accesses, function found pure, its call deleted (no ICF, no IPA-CP involved)",
    """\
/* GCC 12.2 -O2 (even with -fno-ipa-icf -fno-ipa-cp) deletes the call: exit 1. Right result: exit 0. */
float a[3072];

__attribute__((noinline)) static void f(void)
{
    for (int i0 = 0; i0 < 256; ++i0) {
        const float h0 = a[2048 + i0];
        for (int i = 0; i < 4; ++i)
            a[i0 * 4 + i] = h0 * a[1024 + i0 * 4 + i];
    }
}

int main(void)
{
    for (int i = 0; i < 1024; ++i) {
        a[1024 + i] = 1.0f;
        a[2048 + i] = 2.0f;
    }
    f();
    return a[5] == 2.0f ? 0 : 1;
}
""")

CASES: tuple[DefectCase, ...] = (ICF_IPA_CP_CLONE, GLOBAL_ARRAY)


@dataclass(frozen=True)
class CaseOutcome:
    """How one case fared with one set of flags: 'right', 'wrong' (exit 1), or 'error' (see detail)."""

    case: DefectCase
    flags: tuple[str, ...]
    status: str
    detail: str = ""


def run_case(case: DefectCase, cc: str, flags: Sequence[str], scratch: Path, timeout: float = 60.0,
             link_flags: Sequence[str] = (), session: Any = None) -> CaseOutcome:
    """Build `case` with `cc`, `flags` and `link_flags` in `scratch`, run it in `session` (a platform's
    runner, pipeline/toolchain/runners.py; default here), classify the exit status."""
    scratch.mkdir(parents=True, exist_ok=True)
    source = scratch / f"defect_{case.name}.c"
    binary = scratch / f"defect_{case.name}"
    source.write_text(case.source, encoding="utf-8")
    try:
        build = process.run([cc, *flags, str(source), *link_flags, "-o", str(binary)], timeout=timeout)
    except PipelineError as error:
        return CaseOutcome(case, tuple(flags), "error", f"build: {error.code}: {error.message[:300]}")
    output = build.said.strip()
    if build.returncode != 0 or output:
        return CaseOutcome(case, tuple(flags), "error", f"build (exit {build.returncode}): {output[:300]}")
    where = session or LOCAL
    try:
        proc = where.run([where.program(binary)], timeout=timeout)
    except PipelineError as error:
        return CaseOutcome(case, tuple(flags), "error", f"{error.code}: {error.message[:300]}")
    if proc.returncode == 0:
        return CaseOutcome(case, tuple(flags), "right")
    if proc.returncode == 1:
        return CaseOutcome(case, tuple(flags), "wrong", "the program computed a wrong result (exit 1)")
    said = (proc.stdout.decode("utf-8", "replace") + proc.stderr)[:300]
    return CaseOutcome(case, tuple(flags), "error", f"exit {proc.returncode}: {said}")


_OUTCOMES: dict[tuple[str, str, tuple[str, ...], str], list[CaseOutcome]] = {}


def check_cases(cc: str, flags: Sequence[str], scratch: Path, link_flags: Sequence[str] = (), session: Any = None,
                runner: str = "local") -> tuple[list[str], list[CaseOutcome]]:
    """Every case built with `flags` and `link_flags` and run in `session` (named `runner`): (problems,
    outcomes); a problem for each case not computed right.

    The outcomes depend on the compiler, the flags and where the programs run only, so a process
    runs them once per (compiler path, `cc --version`, flags, runner): every deployment of a model
    on one platform shares them."""
    version = process.text([cc, "--version"])
    key = (cc, version, tuple(flags) + ("--link",) + tuple(link_flags), runner)
    if key not in _OUTCOMES:
        _OUTCOMES[key] = [run_case(case, cc, flags, scratch, link_flags=link_flags, session=session) for case in CASES]
    outcomes = _OUTCOMES[key]
    problems = [f"known {o.case.name} miscompilation not excluded by the build flags ({o.case.what}): {o.detail}"
                if o.status == "wrong" else f"compiler defect case {o.case.name} did not run: {o.detail}"
                for o in outcomes if o.status != "right"]
    return problems, outcomes

"""The checks of the codegen step (one result per check and deployment, subject `<model>/<deployment>`).

codegen.static   HLR-COD-001   pipeline.codegen.static on the sources and objects
codegen.trace    HLR-COD-002, LLR-COD-001, LLR-COD-002   pipeline.codegen.tracecheck
codegen.compile  HLR-COD-003, LLR-COD-003   every source compiled with the qualified flags, no diagnostic;
                 the compiler's known wrong-code cases (compilerdefects) right with the same flags
                 (deployments on the host platform)
codegen.platform HLR-NUM-005   the same on a deployment's other platform (its compiler, flags, link flags),
                 with the transcendental programs, the programs run by its runner (qemu, a board)
codegen.standards LLR-COD-011   MISRA C:2012 by cppcheck's addon, every finding a reviewed deviation
                 (pipeline.codegen.standards, pipeline/codegen/misra-deviations.json)
codegen.accelerators  LLR-COD-008      NVDLA loadables: independent validator on the bytes, debug-table trace

A check with no subject on a model (no nvdla item, no cuda item, no deployment on another platform
than the host) says `n/a` with the reason, never `not run`: it does not apply there.

The validators read the generated files (and compile them); they do not use the generator's
data structures.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pipeline.codegen import compilerdefects, standards, static, tracecheck
from pipeline.diagnostics import PipelineError
from pipeline.ledger.checks import CheckResult, Obtained, Verdict, Where, register_check
from pipeline.toolchain import process
from pipeline.toolchain.cc import (QUALIFIED_FLAGS, binutil, build_flags, compile_objects, compiler_path,
                                   compiler_version)
from pipeline.toolchain.platforms import Platform, described, host_platform, missing_reason, missing_tools, runner_version
from pipeline.toolchain.runners import session

# The programs it runs, the platforms' compilers (pipeline/ledger/dependencies.py).
TOOLS: tuple[str, ...] = ("${CC:-gcc}", "aarch64-linux-gnu-gcc", "@platforms")

STEP = "codegen"
STATIC = "codegen.static"
TRACE = "codegen.trace"
COMPILE = "codegen.compile"
TRANSCENDENTAL = "codegen.transcendental"
ACCELERATORS = "codegen.accelerators"
CUDA = "codegen.cuda"
PLATFORM = "codegen.platform"
STANDARDS = "codegen.standards"
ALL = (STATIC, TRACE, COMPILE, STANDARDS)

register_check(STATIC, "Generated code is static: no allocation, no recursion, no libm, no branch in kernels, "
               "fixed loop bounds, a consistent buffer plan", STEP, ["HLR-COD-001", "LLR-COD-004"],
               "Source scan (forbidden calls, VLAs, goto), acyclic call graph, nm of the objects against libm's "
               "exports, branch-free numeric kernels with constant loop bounds, selection primitives without "
               "conditional jumps in the assembly, no fused multiply-add instruction in any object (objdump; the "
               "mnemonics of the objects' own architecture, x86-64 or AArch64; not run for another), buffer plan "
               "without overlapping live buffers, item segregation.")
register_check(STANDARDS, "Generated C conforms to MISRA C:2012 but for reviewed deviations", STEP, ["LLR-COD-011"],
               "cppcheck's MISRA C:2012 addon (Debian cppcheck) on every C source of the deployment (items, runtime, "
               "harness, deployment tables) and every header they include, as gcc compiles them (C99, __GNUC__): every "
               "finding (rule, file, line) covered by a deviation of pipeline/codegen/misra-deviations.json (rule, "
               "files, construct, reason); a finding no deviation covers fails. Not run without cppcheck (naming the "
               "package) or when cppcheck cannot read the code.")
register_check(PLATFORM, "Generated C code builds for its deployment platform and the programs the build relies on "
               "compute right there", STEP, ["HLR-NUM-005"],
               "A deployment on a platform other than the host (pipeline/toolchain/platforms.py): every source compiled "
               "by the platform's compiler with the qualified flags plus the platform's (exit 0, no output); the "
               "compiler's known wrong-code programs (pipeline.codegen.compilerdefects) and the transcendental "
               "programs (pipeline.codegen.c.mathcheck, scalar and at the platform's lanes, bit-identical to the "
               "reference programs) built with those flags and link flags and run by the platform's runner. "
               "Verdict emulated under an emulator (never pass), pass on the target, not run without the compiler "
               "or the runner (naming the Debian packages).")
register_check(TRACE, "Generated code is traced to every NNEF instruction and every weight to its tensor file",
               STEP, ["HLR-COD-002", "LLR-COD-001", "LLR-COD-002"],
               "trace.json covers every instruction of the item file with existing code lines naming it, every "
               "kernel and weight array is inside an entry, every other line the program compiles is inside a named "
               "infrastructure part (run function, buffer plan, runtime, ...) with the requirements it serves; every "
               "weight array equals its tensor file (sha256 checked) in the documented layout, re-derived "
               "independently.")
register_check(TRANSCENDENTAL, "The generator emits the reference's transcendental programs: same bits",
               STEP, ["HLR-SEM-001", "LLR-SEM-002"],
               "exp, log, tanh, sigmoid, softplus and pow as generated C (nnef_math.h, built with the build flags, "
               "linked without -lm) against the NumPy evaluation of the same programs on special values and "
               "seeded random inputs: every result bit-identical (NaN payloads aside).")
register_check(ACCELERATORS, "NVDLA loadables are structurally valid and traced to the NNEF instructions",
               STEP, ["LLR-COD-008"],
               "Deployments with nvdla items: every loadable (artifacts/<m>/codegen/nvdla/<d>/<ITEM>.nvdla) re-read "
               "from its bytes by the independent reader and validator (pipeline/codegen/nvdla/validate.py, never "
               "the writer): no NVDLA-Vnnn finding, the sha256 build.json recorded, as many tasks as its debug table "
               "names; every computing instruction of the item file (as the NNEF checker reads it) has a trace entry "
               "whose debug-table lines name its NNEF line. Structural only: the numbers are compare.nvdla_reference's "
               "(HLR-NUM-004). Not run for a model without an nvdla deployment.")
register_check(CUDA, "CUDA items compile for every architecture without a diagnostic and pass the PTX/SASS gate",
               STEP, ["HLR-COD-003", "LLR-COD-006"],
               "nvcc --fmad=false -ftz=false -prec-div=true -prec-sqrt=true -Werror all-warnings for sm_87 and sm_90 "
               "(PTX and cubin); the gate (pipeline/codegen/cuda_gate.py) reads the PTX, the SASS (cuobjdump) and "
               "ptxas -v: per kernel no fused multiply-add, no atomic or reduction, no approximate instruction, no "
               "local memory or spill. Not run where nvcc or cuobjdump is missing.")
register_check(COMPILE, "Generated code compiles without a diagnostic under the qualified flags",
               STEP, ["HLR-COD-003", "LLR-COD-003"],
               "Every source compiled with -std=c99 -O2 -Wall -Wextra -Werror -ffp-contract=off "
               "-fno-delete-null-pointer-checks (+ -fno-math-errno -pthread, and -mavx2 -mno-fma for 8-lane code on "
               "AVX2 hosts): exit 0 and no output; the reduced programs of the compiler's known wrong-code defects "
               "(pipeline.codegen.compilerdefects), built and run with the same flags, compute the right result.")


def not_run(check_id: str, subject: str, reason: str) -> CheckResult:
    return CheckResult(check_id, subject, Verdict.NOT_RUN, reason)


def failed_generation(check_id: str, subject: str, reason: str) -> CheckResult:
    return CheckResult(check_id, subject, Verdict.FAIL, f"code generation failed: {reason}")


def _rel(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def _files(folder: Path, manifest: dict[str, Any] | None = None) -> dict[str, str]:
    """The C sources and headers of a generated folder (a mixed deployment's CUDA files, which
    codegen.cuda judges, left out)."""
    cuda = (manifest or {}).get("cuda", {})
    skip = set(cuda.get("headers", [])) | set(cuda.get("sources", []))
    return {_p.relative_to(folder).as_posix(): _p.read_text(encoding="utf-8")
            for _p in sorted(folder.rglob("*")) if _p.suffix in (".c", ".h")
            and _p.relative_to(folder).as_posix() not in skip}


def _result(check_id: str, subject: str, problems: list[str], measured: dict[str, Any], read: list[str],
            written: list[str] | None = None) -> CheckResult:
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        measured = {**measured, "problems": len(problems), "first_problems": problems[:10]}
        return CheckResult(check_id, subject, Verdict.FAIL, problems[0] + more, measured, read, written or [])
    return CheckResult(check_id, subject, Verdict.PASS, "", measured, read, written or [])


def evaluate(subject: str, folder: Path, root: Path, scratch: Path, objects_dir: Path | None = None,
             platform: Platform | None = None) -> list[CheckResult]:
    """The codegen checks of one generated deployment folder built for `platform` (default host):
    codegen.static, codegen.trace, and codegen.compile on the host platform or codegen.platform on
    another one (its compiler, flags and link flags; its runner for the programs it runs).

    The objects compiled for the compile check go to `objects_dir` (default: under `scratch`); the
    codegen step keeps them so that the execute step links the very objects judged here."""
    target = platform or host_platform()
    manifest = json.loads((folder / "build.json").read_text(encoding="utf-8"))
    lanes = int(manifest["lanes"])
    files = _files(folder, manifest)
    read = [_rel(folder / name, root) for name in files] + [_rel(folder / "build.json", root)]
    absent = [t for t in missing_tools(target) if t[0] == target.cc()]
    if absent:                                  # nothing can be compiled: the source-level checks only
        why = missing_reason(target, absent)
        problems, measured = _source_problems(files, manifest, folder, read, root)
        static_result = (_result(STATIC, subject, problems, measured, read) if problems
                         else CheckResult(STATIC, subject, Verdict.NOT_RUN, f"{why}: the object and assembly scans "
                                          "did not run (the source scans found nothing)", measured, read, []))
        compiled = not_run(COMPILE if target.is_host else PLATFORM, subject, why)
        return [static_result, _trace_result(subject, folder, manifest, root, read), compiled,
                not_run(STANDARDS, subject, why)]
    # compile (shared by the compile check and the object scans of codegen.static)
    objects, commands, diagnostics = compile_objects(folder, manifest["sources"], objects_dir or scratch / "obj", lanes,
                                                     platform=target)
    flags, _ = build_flags(lanes, platform=target)
    compile_problems = []
    if diagnostics:
        compile_problems.append(f"compiler output (warnings are errors): {diagnostics.splitlines()[0]}")
    missing = [f for f in QUALIFIED_FLAGS if f not in flags]
    if missing:
        compile_problems.append(f"qualified flags missing: {missing}")
    compile_measured = {"compiler": compiler_version(platform=target), "flags": flags, "sources": len(manifest["sources"]),
                        "objects": len(objects), "diagnostics_chars": len(diagnostics), "commands": commands}
    if target.is_host:
        defect_problems, defect_outcomes = compilerdefects.check_cases(compiler_path(), flags, scratch / "defects")
        compile_result = _result(COMPILE, subject, compile_problems + defect_problems,
                                 {**compile_measured,
                                  "compiler_defect_cases": {o.case.name: o.status for o in defect_outcomes}}, read)
    else:
        compile_result = platform_result(subject, target, lanes, flags, compile_problems, compile_measured, scratch, read)
    # static
    problems, measured = _source_problems(files, manifest, folder, read, root)
    unknown = _object_problems(objects, manifest, target, folder, scratch, lanes, problems, measured)
    if problems:
        static_result = _result(STATIC, subject, problems, measured, read)
    elif unknown:
        static_result = CheckResult(STATIC, subject, Verdict.NOT_RUN, unknown, measured, read, [])
    else:
        static_result = _result(STATIC, subject, [], measured, read)
    return [static_result, _trace_result(subject, folder, manifest, root, read), compile_result,
            standards.standards_result(STANDARDS, subject, folder, manifest, scratch / "standards", list(read))]


def _source_problems(files: dict[str, str], manifest: dict[str, Any], folder: Path, read: list[str], root: Path
                     ) -> tuple[list[str], dict[str, Any]]:
    """The source-level part of codegen.static: forbidden constructs, recursion, kernels, plan, segregation."""
    problems = static.forbidden_constructs(files)
    function_count, cycles = static.call_graph_cycles(files)
    problems += [f"recursion: {' -> '.join(c)}" for c in cycles]
    kernels = loops = 0
    arena_bytes: dict[str, int] = {}
    for item in [i for i in manifest["items"] if i.get("language", "c") == "c"]:
        source = files[item["source"]]
        k, n, p = static.kernel_problems(item["source"], source)
        kernels, loops = kernels + k, loops + n
        problems += p
        memory_map = json.loads((folder / item["memory_map"]).read_text(encoding="utf-8"))
        problems += [f"{item['name']}: {p}" for p in static.plan_problems(memory_map, source)]
        arena_bytes[item["name"]] = int(memory_map["arena_bytes"])
        problems += static.segregation_problems(item["name"], source, set(item["sends"]) | set(item["gets"]))
        read.append(_rel(folder / item["memory_map"], root))
    return problems, {"functions": function_count, "numeric_kernels": kernels, "kernel_loops": loops,
                      "recursion_cycles": len(cycles), "arena_bytes": arena_bytes}


def _object_problems(objects: list[Path], manifest: dict[str, Any], target: Platform, folder: Path, scratch: Path,
                     lanes: int, problems: list[str], measured: dict[str, Any]) -> str:
    """The object-level part of codegen.static, appended to `problems` and `measured`: libm symbols (nm),
    fused multiply-adds in every object and conditional jumps in the selection primitives (the
    architecture's mnemonics, pipeline/codegen/static.py). Returns why the instruction scans did not
    run (an architecture they do not know), or ""."""
    nm = binutil("nm", platform=target)
    libm = static.libm_symbols(compiler_path(platform=target), nm)
    undefined = static.undefined_symbols(objects, nm)
    libm_refs = sorted({f"{obj}: {sym}" for obj, syms in undefined.items() for sym in syms if sym in libm})
    problems += [f"libm symbol referenced: {r}" for r in libm_refs]
    if len(objects) != len(manifest["sources"]):
        problems.append("not every source compiled, so the libm and instruction scans are incomplete")
    measured.update({"libm_references": len(libm_refs),
                     "undefined_symbols": sorted({s for v in undefined.values() for s in v})})
    architectures = sorted({static.elf_architecture(o) or "not ELF" for o in objects})
    architecture = architectures[0] if len(architectures) == 1 else ",".join(architectures)
    measured["architecture"] = architecture
    if architecture != target.architecture and objects:
        problems.append(f"the objects are for {architecture}, platform {target.name} declares {target.architecture}")
    if architecture not in static.ARCHITECTURES:
        return (f"the instruction scans (fused multiply-add, branch-free selection primitives) do not know "
                f"architecture {architecture}: not judged")
    objdump = binutil("objdump", platform=target)
    fused: dict[str, list[str]] = {}
    for obj in objects:
        for function, found in (static.fused_multiply_adds(static.disassemble(objdump, obj), architecture) or {}).items():
            fused[f"{obj.name}:{function}"] = found
    problems += [f"fused multiply-add in {where}: {found[:3]}" for where, found in sorted(fused.items())]
    jumps = _primitive_jumps(folder, scratch, lanes, target, architecture)
    problems += [f"selection primitive {name} compiles to conditional jumps: {j[:3]}" for name, j in jumps.items() if j]
    measured.update({"fused_multiply_adds": sum(len(v) for v in fused.values()),
                     "branch_free_primitives": sorted(n for n, j in jumps.items() if not j)})
    return ""


def _trace_result(subject: str, folder: Path, manifest: dict[str, Any], root: Path, read: list[str]) -> CheckResult:
    trace_problems: list[str] = []
    trace_measured: dict[str, Any] = {"items": len(manifest["items"])}
    c_items = [i for i in manifest["items"] if i.get("language", "c") == "c"]
    for item in manifest["items"]:
        item_dir = folder / item["dir"]
        p, m = tracecheck.check_trace(item_dir, root)
        trace_problems += [f"{item['name']}: {x}" for x in p]
        q, w = tracecheck.check_weights(item_dir, root) if item in c_items else ([], {})
        trace_problems += [f"{item['name']}: {x}" for x in q]
        for key, value in {**m, **w}.items():
            trace_measured[key] = trace_measured.get(key, 0) + value
    files = list(manifest["sources"]) + list(manifest["headers"]) + list(manifest.get("cuda", {}).get("sources", [])) \
        + list(manifest.get("cuda", {}).get("headers", []))
    p, m = tracecheck.check_coverage(folder, list(dict.fromkeys(files)), root)
    trace_problems += p
    trace_measured.update(m)
    trace_read = read + [_rel(folder / i["trace"], root) for i in manifest["items"]] \
        + [_rel(folder / i["weights_json"], root) for i in manifest["items"]]
    return _result(TRACE, subject, trace_problems, trace_measured, trace_read)


def cuda_trace_result(subject: str, folder: Path, root: Path) -> CheckResult:
    """`codegen.trace` of a one-item CUDA deployment (pipeline/codegen/cuda/generate.py): its item's
    trace.json against the item file, and every line of the program (item, harness, headers) in an
    instruction's entry or a named part."""
    manifest = json.loads((folder / "build.json").read_text(encoding="utf-8"))
    problems: list[str] = []
    measured: dict[str, Any] = {"items": len(manifest["items"])}
    for item in manifest["items"]:
        p, m = tracecheck.check_trace(folder / item["name"], root)
        problems += [f"{item['name']}: {x}" for x in p]
        for key, value in m.items():
            measured[key] = measured.get(key, 0) + value
    files = [i["source"] for i in manifest["items"]] + [manifest["main"]] + sorted(p.name for p in folder.glob("*.h"))
    p, m = tracecheck.check_coverage(folder, files, root)
    measured.update(m)
    read = [_rel(folder / "build.json", root)] + [_rel(folder / f, root) for f in files] \
        + [_rel(folder / i["name"] / "trace.json", root) for i in manifest["items"]]
    return _result(TRACE, subject, problems + p, measured, read)


def _primitive_jumps(folder: Path, scratch: Path, lanes: int, target: Platform | None = None,
                     architecture: str = "x86_64") -> dict[str, list[str]]:
    """Conditional jumps in each selection primitive compiled alone with the build flags."""
    probe = scratch / "probe.c"
    probe.write_text(static.probe_source(), encoding="utf-8")
    flags, _ = build_flags(lanes, platform=target)
    asm = scratch / "probe.s"
    try:
        proc = process.run([compiler_path(platform=target), *flags, f"-I{folder.resolve()}", "-S", str(probe), "-o",
                            str(asm)], timeout=600)
    except PipelineError as error:
        return {"probe": [f"probe did not compile: {error.code}: {error.message[:300]}"]}
    if proc.returncode != 0:
        return {"probe": [f"probe did not compile: {proc.err.strip()[:300]}"]}
    names = [f"probe_{n}" for n in static.SELECT_PRIMITIVES]
    return static.conditional_jumps(asm.read_text(encoding="utf-8"), names, architecture) or {}


_PROGRAMS: dict[tuple[str, int, str], tuple[list[Any], int]] = {}   # per process: (platform, lanes, compiler)


def platform_result(subject: str, target: Platform, lanes: int, flags: list[str], problems: list[str],
                    measured: dict[str, Any], scratch: Path, read: list[str]) -> CheckResult:
    """`codegen.platform` of a deployment on a platform other than the host: `problems` of its compile,
    then the compiler's known wrong-code programs and the transcendental programs built by the
    platform's compiler with its flags and link flags and run by its runner. Verdict: emulated under
    an emulator, pass on a board (or a local runner), not run without the runner, fail on a problem."""
    from pipeline.codegen.c.mathcheck import MathCheckError, check_programs

    measured = {**measured, "platform": target.name, "architecture": target.architecture,
                "link_flags": list(target.link_flags), "lanes": lanes, "runner": runner_version(target.runner)}
    absent = missing_tools(target)
    if absent:
        why = missing_reason(target, absent)
        if problems:
            return _result(PLATFORM, subject, problems, measured, read)
        return CheckResult(PLATFORM, subject, Verdict.NOT_RUN, f"compiled cleanly; the programs did not run: {why}",
                           measured, read, [])
    with session(target, scratch) as where:
        defect_problems, outcomes = compilerdefects.check_cases(target.cc(), flags, scratch / "defects",
                                                                target.link_flags, where, repr(target.runner))
        key = (repr(target), lanes, compiler_version(platform=target))
        try:
            if key not in _PROGRAMS:
                _PROGRAMS[key] = check_programs(scratch / "math", lanes=lanes, platform=target, session=where)
            mismatches, compared = _PROGRAMS[key]
        except MathCheckError as error:
            mismatches, compared = [], 0
            defect_problems.append(f"transcendental programs: {error}")
    problems = problems + defect_problems + [
        f"transcendental program {m.function}{m.first_input}: {m.c_value!r} on {target.name}, the reference program "
        f"{m.reference_value!r} ({m.count} mismatches)" for m in mismatches]
    measured.update({"compiler_defect_cases": {o.case.name: o.status for o in outcomes},
                     "transcendental_inputs_compared": compared,
                     "transcendental_mismatches": sum(m.count for m in mismatches)})
    obtained = platform_obtained(target)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        return CheckResult(PLATFORM, subject, Verdict.FAIL, problems[0] + more,
                           {**measured, "problems": len(problems), "first_problems": problems[:10]}, read, [], obtained)
    summary = (f"built by {measured['compiler']} for {target.name} without a diagnostic; the compiler-defect programs "
               f"and {compared} transcendental inputs (scalar and {lanes} lanes) right on {described(target)}")
    if obtained.where is Where.EMULATION:
        return CheckResult(PLATFORM, subject, Verdict.EMULATED, summary, measured, read, [], obtained)
    return CheckResult(PLATFORM, subject, Verdict.PASS, "", measured, read, [], obtained)


def platform_obtained(target: Platform) -> Obtained:
    """Where results of programs run on `target` are obtained: host, emulation (runner and version), target."""
    if target.runner.where == "emulation":
        return Obtained.emulation(described(target))
    if target.runner.where == "target":
        return Obtained.target(target.name)
    return Obtained.host()


def transcendental_result(subject: str, scratch: Path, lanes: int = 4) -> CheckResult:
    """`codegen.transcendental`: the C programs, scalar and at the build's `lanes`, against the NumPy
    programs (pipeline.codegen.c.mathcheck)."""
    from pipeline.codegen.c.mathcheck import MathCheckError, check_programs

    read = ["pipeline/semantics/transcendental.py", "pipeline/codegen/shared/programs.py", "pipeline/codegen/c/programs.py"]
    try:
        mismatches, compared = check_programs(scratch, lanes=lanes)
    except MathCheckError as error:
        return CheckResult(TRANSCENDENTAL, subject, Verdict.NOT_RUN if "not installed" in str(error) else Verdict.FAIL,
                           str(error), {}, read, [])
    measured = {"inputs_compared": compared, "functions": 6, "lanes": lanes, "mismatches": sum(m.count for m in mismatches)}
    if mismatches:
        m = mismatches[0]
        reason = (f"{m.function}{m.first_input}: C gives {m.c_value!r}, the reference program {m.reference_value!r} "
                  f"({m.count} mismatches)")
        return CheckResult(TRANSCENDENTAL, subject, Verdict.FAIL, reason, measured, read, [])
    return CheckResult(TRANSCENDENTAL, subject, Verdict.PASS, "", measured, read, [])


def accelerators_result(subject: str, folder: Path, root: Path) -> CheckResult:
    """`codegen.accelerators` for one generated NVDLA deployment folder (pipeline.codegen.nvdla.accelerators)."""
    from pipeline.codegen.nvdla.accelerators import check_folder

    problems, measured, read = check_folder(folder, root)
    return _result(ACCELERATORS, subject, problems, measured, read)


def no_accelerators(subject: str) -> CheckResult:
    """`codegen.accelerators` of a model none of whose deployments has an nvdla item."""
    return CheckResult(ACCELERATORS, subject, Verdict.NOT_APPLICABLE, "no deployment of this model has an nvdla item",
                       {"deployments": 0}, [], [])


def not_applicable_rest(model: str, results: list[CheckResult], kinds: dict[str, bool]) -> list[CheckResult]:
    """`n/a` for codegen.cuda and codegen.platform when no deployment of `model` gives them a subject
    (`kinds`: whether some deployment has a cuda item, runs on a platform other than the host)."""
    done = {r.check_id for r in results}
    reasons = {CUDA: ("cuda", "no deployment of this model has a cuda item"),
               PLATFORM: ("platform", "every deployment of this model is built for the host platform (no `platform:` "
                                      "in deploy.yaml names another)")}
    return [CheckResult(check_id, model, Verdict.NOT_APPLICABLE, why)
            for check_id, (kind, why) in reasons.items() if check_id not in done and not kinds[kind]]


def cuda_result(subject: str, folder: Path, root: Path, scratch: Path,
                c_objects: list[Path] | None = None) -> CheckResult:
    """`codegen.cuda` for one generated CUDA deployment folder: the nvcc builds and the gate. A mixed
    deployment's GPU program links `c_objects` (codegen.compile's objects of its C files) when given."""
    from pipeline.codegen.cuda_gate import cuobjdump_path, gate
    from pipeline.toolchain.nvcc import ARCHITECTURES, check_architectures, device_build, nvcc_path

    manifest = json.loads((folder / "build.json").read_text(encoding="utf-8"))
    if nvcc_path() is None:
        return not_run(CUDA, subject, "nvcc is not installed (CUDA toolkit)")
    if cuobjdump_path() is None:
        return not_run(CUDA, subject, "cuobjdump is not installed (pip install nvidia-cuda-cuobjdump)")
    archs = list(manifest.get("architectures") or manifest.get("cuda", {}).get("architectures") or ARCHITECTURES)
    problems: list[str] = []
    measured: dict[str, Any] = {"architectures": archs}
    read = [_rel(folder / "build.json", root)]
    for item in [i for i in manifest["items"] if i.get("language", "cuda") == "cuda"]:   # a mixed program's too
        source = folder / item["source"]
        read.append(_rel(source, root))
        try:
            archs = check_architectures(archs)
            build = device_build(folder, source, scratch / item["name"], archs, link=False)
        except PipelineError as error:
            problems.append(f"{item['name']}: {error.code}: {error.message.splitlines()[0]}")
            continue
        report = gate(scratch / item["name"], archs, source)
        problems += [str(f) for f in report.findings]
        commands = [" ".join(Path(a).name if "/" in a else a for a in c) for c in build.commands]
        measured[item["name"]] = {"nvcc": build.version, "commands": commands,
                                  "kernels": {arch: report.counts.get(arch, {}) for arch in archs}}
    if "cuda" in manifest and not problems:      # a mixed deployment: the GPU program itself (not run here)
        problems += _device_program(folder, manifest, archs, scratch / "program", measured, c_objects)
    return _result(CUDA, subject, problems, measured, read)


def _device_program(folder: Path, manifest: dict[str, Any], archs: list[str], scratch: Path,
                    measured: dict[str, Any], c_objects: list[Path] | None = None) -> list[str]:
    """Build a mixed deployment's GPU program: the C files by gcc (qualified flags), the .cu by nvcc,
    linked by nvcc with the CUDA runtime; the problems (a diagnostic, a failed link)."""
    from pipeline.toolchain.nvcc import device_program

    if c_objects is not None:
        objects, diagnostics = c_objects, ""
    else:
        objects, _, diagnostics = compile_objects(folder, manifest["sources"], scratch / "c", int(manifest["lanes"]))
    if diagnostics:
        return [f"GPU program: gcc: {diagnostics.splitlines()[0]}"]
    try:
        build = device_program(folder, manifest["cuda"]["sources"], objects, scratch / "nnef_run_gpu", archs)
    except PipelineError as error:
        return [f"GPU program: {error.code}: {error.message.splitlines()[0]}"]
    measured["device_program"] = {"commands": [" ".join(Path(a).name if "/" in a else a for a in c)
                                               for c in build.commands], "linked": build.binary.is_file()}
    return []

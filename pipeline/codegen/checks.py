"""The checks of the codegen step (one result per check and deployment, subject `<model>/<deployment>`).

codegen.static   HLR-COD-001   pipeline.codegen.static on the sources and objects
codegen.trace    HLR-COD-002, LLR-COD-001, LLR-COD-002   pipeline.codegen.tracecheck
codegen.compile  HLR-COD-003, LLR-COD-003   every source compiled with the qualified flags, no diagnostic;
                 the compiler's known wrong-code cases (compilerdefects) right with the same flags
codegen.accelerators  LLR-COD-008      NVDLA loadables: independent validator on the bytes, debug-table trace

The validators read the generated files (and compile them); they do not use the generator's
data structures.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from pipeline.codegen import compilerdefects, static, tracecheck
from pipeline.diagnostics import PipelineError
from pipeline.registry.checks import CheckResult, Verdict, register_check
from pipeline.toolchain.cc import QUALIFIED_FLAGS, build_flags, compile_objects, compiler_path, compiler_version

STEP = "codegen"
STATIC = "codegen.static"
TRACE = "codegen.trace"
COMPILE = "codegen.compile"
TRANSCENDENTAL = "codegen.transcendental"
ACCELERATORS = "codegen.accelerators"
CUDA = "codegen.cuda"
ALL = (STATIC, TRACE, COMPILE)

register_check(STATIC, "Generated code is static: no allocation, no recursion, no libm, no branch in kernels, "
               "fixed loop bounds, a consistent buffer plan", STEP, ["HLR-COD-001", "LLR-COD-004"],
               "Source scan (forbidden calls, VLAs, goto), acyclic call graph, nm of the objects against libm's "
               "exports, branch-free numeric kernels with constant loop bounds, selection primitives without "
               "conditional jumps in the assembly, buffer plan without overlapping live buffers, item segregation.")
register_check(TRACE, "Generated code is traced to every NNEF instruction and every weight to its tensor file",
               STEP, ["HLR-COD-002", "LLR-COD-001", "LLR-COD-002"],
               "trace.json covers every instruction of the item file with existing code lines naming it, every "
               "kernel and weight array is inside an entry; every weight array equals its tensor file (sha256 "
               "checked) in the documented layout, re-derived independently.")
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


def evaluate(subject: str, folder: Path, root: Path, scratch: Path,
             objects_dir: Path | None = None) -> list[CheckResult]:
    """The three codegen checks of one generated deployment folder.

    The objects compiled for codegen.compile go to `objects_dir` (default: under `scratch`); the
    codegen step keeps them so that the execute step links the very objects judged here."""
    manifest = json.loads((folder / "build.json").read_text(encoding="utf-8"))
    lanes = int(manifest["lanes"])
    files = _files(folder, manifest)
    read = [_rel(folder / name, root) for name in files] + [_rel(folder / "build.json", root)]
    # compile (shared by codegen.compile and the libm part of codegen.static)
    objects, commands, diagnostics = compile_objects(folder, manifest["sources"], objects_dir or scratch / "obj", lanes)
    flags, _ = build_flags(lanes)
    compile_problems = []
    if diagnostics:
        compile_problems.append(f"compiler output (warnings are errors): {diagnostics.splitlines()[0]}")
    missing = [f for f in QUALIFIED_FLAGS if f not in flags]
    if missing:
        compile_problems.append(f"qualified flags missing: {missing}")
    defect_problems, defect_outcomes = compilerdefects.check_cases(compiler_path(), flags, scratch / "defects")
    compile_problems += defect_problems
    compile_result = _result(COMPILE, subject, compile_problems,
                             {"compiler": compiler_version(), "flags": flags, "sources": len(manifest["sources"]),
                              "objects": len(objects), "diagnostics_chars": len(diagnostics),
                              "commands": commands,
                              "compiler_defect_cases": {o.case.name: o.status for o in defect_outcomes}}, read)
    # static
    problems = static.forbidden_constructs(files)
    function_count, cycles = static.call_graph_cycles(files)
    problems += [f"recursion: {' -> '.join(c)}" for c in cycles]
    kernels = loops = 0
    arena_bytes: dict[str, int] = {}
    c_items = [i for i in manifest["items"] if i.get("language", "c") == "c"]
    for item in c_items:
        source = files[item["source"]]
        k, n, p = static.kernel_problems(item["source"], source)
        kernels, loops = kernels + k, loops + n
        problems += p
        memory_map = json.loads((folder / item["memory_map"]).read_text(encoding="utf-8"))
        problems += [f"{item['name']}: {p}" for p in static.plan_problems(memory_map, source)]
        arena_bytes[item["name"]] = int(memory_map["arena_bytes"])
        problems += static.segregation_problems(item["name"], source, set(item["sends"]) | set(item["gets"]))
        read.append(_rel(folder / item["memory_map"], root))
    libm = static.libm_symbols(compiler_path())
    undefined = static.undefined_symbols(objects)
    libm_refs = sorted({f"{obj}: {sym}" for obj, syms in undefined.items() for sym in syms if sym in libm})
    problems += [f"libm symbol referenced: {r}" for r in libm_refs]
    if len(objects) != len(manifest["sources"]):
        problems.append("not every source compiled, so the libm check is incomplete")
    jumps = _primitive_jumps(folder, scratch, lanes)
    problems += [f"selection primitive {name} compiles to conditional jumps: {j[:3]}" for name, j in jumps.items() if j]
    static_result = _result(STATIC, subject, problems, {
        "functions": function_count, "numeric_kernels": kernels, "kernel_loops": loops, "recursion_cycles": len(cycles),
        "libm_references": len(libm_refs), "undefined_symbols": sorted({s for v in undefined.values() for s in v}),
        "branch_free_primitives": sorted(n for n, j in jumps.items() if not j), "arena_bytes": arena_bytes}, read)
    # trace
    trace_problems: list[str] = []
    trace_measured: dict[str, Any] = {"items": len(manifest["items"])}
    for item in manifest["items"]:
        item_dir = folder / item["dir"]
        p, m = tracecheck.check_trace(item_dir, root)
        trace_problems += [f"{item['name']}: {x}" for x in p]
        q, w = tracecheck.check_weights(item_dir, root) if item in c_items else ([], {})
        trace_problems += [f"{item['name']}: {x}" for x in q]
        for key, value in {**m, **w}.items():
            trace_measured[key] = trace_measured.get(key, 0) + value
    trace_read = read + [_rel(folder / i["trace"], root) for i in manifest["items"]] \
        + [_rel(folder / i["weights_json"], root) for i in manifest["items"]]
    trace_result = _result(TRACE, subject, trace_problems, trace_measured, trace_read)
    return [static_result, trace_result, compile_result]


def _primitive_jumps(folder: Path, scratch: Path, lanes: int) -> dict[str, list[str]]:
    """Conditional jumps in each selection primitive compiled alone with the build flags."""
    probe = scratch / "probe.c"
    probe.write_text(static.probe_source(), encoding="utf-8")
    flags, _ = build_flags(lanes)
    asm = scratch / "probe.s"
    proc = subprocess.run([compiler_path(), *flags, f"-I{folder.resolve()}", "-S", str(probe), "-o", str(asm)],
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        return {"probe": [f"probe did not compile: {proc.stderr.strip()[:300]}"]}
    names = [f"probe_{n}" for n in static.SELECT_PRIMITIVES]
    return static.conditional_jumps(asm.read_text(encoding="utf-8"), names)


def transcendental_result(subject: str, scratch: Path, lanes: int = 4) -> CheckResult:
    """`codegen.transcendental`: the C programs, scalar and at the build's `lanes`, against the NumPy
    programs (pipeline.codegen.c.mathcheck)."""
    from pipeline.codegen.c.mathcheck import MathCheckError, check_programs

    read = ["pipeline/semantics/transcendental.py", "pipeline/codegen/c/programs.py"]
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
    """`codegen.accelerators` for one generated NVDLA deployment folder (pipeline.codegen.nvdla.check)."""
    from pipeline.codegen.nvdla.check import check_folder

    problems, measured, read = check_folder(folder, root)
    return _result(ACCELERATORS, subject, problems, measured, read)


def no_accelerators(subject: str) -> CheckResult:
    """`codegen.accelerators` of a model none of whose deployments has an nvdla item."""
    return CheckResult(ACCELERATORS, subject, Verdict.NOT_RUN, "no deployment of this model has an nvdla item",
                       {"deployments": 0}, [], [])


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

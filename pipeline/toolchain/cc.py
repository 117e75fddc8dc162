"""Compile generated C code with the qualified flags (docs/codegen.md "Flags").

QUALIFIED_FLAGS fix the language and the floating-point contract: C99, -O2, every warning an
error, no contraction of a*b+c into a fused multiply-add; and they exclude a GCC 12 wrong-code
defect:
    -fno-delete-null-pointer-checks
                      GCC 12.2 -O2 takes a vector access that IVOPTs based on address 0 (the real
                      address in the index) for a NULL dereference, so its late pure-const and
                      modref analyses skip the stores after it, find the function pure and the
                      callers' DCE deletes its calls (efficientnet_b0, issue 15). The flag removes
                      that inference and changes no result of valid C: the generated code never
                      dereferences or tests a null pointer. The reduced cases are in
                      pipeline.codegen.compilerdefects (run by codegen.compile with these flags).
Added, with the reason:
    -fno-math-errno   sqrt becomes the IEEE instruction instead of a libm call that sets errno;
                      it changes no result (errno is never read)
    -pthread          one thread per item (POSIX threads, barriers)
    -mavx2 -mno-fma   (only for code generated with 8 lanes for the `host` platform, on an x86-64
                      host with AVX2) 256-bit registers for the same IEEE single-precision
                      operations; -mno-fma makes fused multiply-add instructions unavailable outright
    -mavx512f -mno-fma  (only for code generated with 16 lanes for the `host` platform, on an
                      x86-64 host with AVX-512F) 512-bit registers, the same operations; AVX-512F
                      has fused multiply-adds of its own (EVEX vfmadd*), which nothing emits:
                      contraction is off (-ffp-contract=off), the code calls no fma, and the
                      static check rejects any vfmadd* in the objects (pipeline/codegen/static.py)
A platform (pipeline/toolchain/platforms.py) names the compiler and adds its own flags before
these (its sysroot, -mcpu=...; refused when forbidden or overriding one of these, so the
qualified flags, which come after, stay in force) and its link flags (-static) at the link.
Never: -ffast-math, -Ofast, -ffinite-math-only, -fno-trapping-math, -march=native, any flag
enabling FMA, or -fdelete-null-pointer-checks (brings the defect back). Linking uses no -lm: a
libm symbol left in the code fails the link.
"""

from __future__ import annotations

import os
import shlex
import shutil
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Sequence

from pipeline.files.atomic import write_bytes
from pipeline.diagnostics import Location, PipelineError
from pipeline.toolchain import process
from pipeline.toolchain.flags import FORBIDDEN_FLAGS, FORBIDDEN_MACROS
from pipeline.toolchain.platforms import Platform, host_isa, host_platform

# The programs it runs, the compilers of the host, aarch64_qemu and a spec's own platforms, and the host's
# vector ISA its flags and the host platform's lanes come from (pipeline/ledger/dependencies.py).
TOOLS: tuple[str, ...] = ("${CC:-gcc}", "aarch64-linux-gnu-gcc", "@platforms", "@host")

QUALIFIED_FLAGS: tuple[str, ...] = ("-std=c99", "-O2", "-Wall", "-Wextra", "-Werror", "-ffp-contract=off",
                                     "-fno-delete-null-pointer-checks")
EXTRA_FLAGS: tuple[str, ...] = ("-fno-math-errno", "-pthread")
ISA_FLAGS: dict[str, tuple[str, ...]] = {"avx512": ("-mavx512f", "-mno-fma"), "avx2": ("-mavx2", "-mno-fma"),
                                          "baseline": ()}
# The vector ISA whose registers hold `lanes` float32 lanes (host_isa() names the widest the host has).
ISA_LANES: dict[str, int] = {"avx512": 16, "avx2": 8}
SANITIZE_FLAGS: tuple[str, ...] = ("-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer")
# gcov's instrumentation (execute.coverage): arc counters, updated atomically (one thread per item).
COVERAGE_FLAGS: tuple[str, ...] = ("--coverage", "-fprofile-update=atomic")


@dataclass
class BuildResult:
    """A built executable and how it was built."""

    binary: Path
    command: list[str]
    compiler: str
    flags: list[str]
    defines: list[str]
    diagnostics: str = ""
    objects: list[Path] = field(default_factory=list)


def compiler_path(cc: str | None = None, platform: Platform | None = None) -> str:
    """The C compiler: `cc`, the platform's, $CC, or gcc; RUN-E001 naming its Debian package when
    it is not installed."""
    name = cc or (platform or host_platform()).cc()
    found = shutil.which(name)
    if not found:
        package = (platform.compiler_package if platform is not None and not cc else "") or "gcc"
        raise PipelineError("RUN-E001", f"C compiler '{name}' not found (install it: Debian package {package})")
    return name


def binutil(tool: str, cc: str | None = None, platform: Platform | None = None) -> str:
    """The binutils program `tool` (nm, objdump) that goes with the compiler: `cc -print-prog-name`
    (a cross compiler names its own, e.g. aarch64-linux-gnu's objdump), else `tool` on the PATH."""
    name = compiler_path(cc, platform)
    said = process.text([name, f"-print-prog-name={tool}"]).strip()
    if said and os.path.isabs(said) and os.path.isfile(said):
        return said
    return shutil.which(said or tool) or tool


def compiler_version(cc: str | None = None, platform: Platform | None = None) -> str:
    """The first line of `cc --version` (recorded with every build)."""
    name = compiler_path(cc, platform)
    return (process.text([name, "--version"]).splitlines() or ["unknown"])[0].strip()


def isa_for(lanes: int) -> str:
    """The instruction-set flags for code generated with `lanes` lanes on this host: the ISA whose
    registers hold that many lanes when the host has it (an AVX-512 host has AVX2 too), else none."""
    have = host_isa()
    for isa, width in ISA_LANES.items():
        if width == lanes and ISA_LANES.get(have, 0) >= width:
            return isa
    return "baseline"


def build_flags(lanes: int, *, trace: bool = False, sanitize: bool = False,
                defines: Sequence[str] = (), platform: Platform | None = None,
                isa: str | None = None, coverage: bool = False) -> tuple[list[str], list[str]]:
    """(compiler flags, -D defines) of a build for `platform` (default host); never one of FORBIDDEN_FLAGS.
    `isa`: another key of ISA_FLAGS than isa_for(lanes) for a host build (a narrower one for valgrind)."""
    target = platform or host_platform()
    isa = ISA_FLAGS[isa or isa_for(lanes)] if target.is_host else ()
    flags = list(target.compile_flags()) + list(QUALIFIED_FLAGS) + list(EXTRA_FLAGS) + list(isa)
    if sanitize:
        flags += list(SANITIZE_FLAGS)
    if coverage:
        flags += list(COVERAGE_FLAGS)
    all_defines = (["NNEF_TRACE"] if trace else []) + list(defines)
    bad = [f for f in flags if f in FORBIDDEN_FLAGS]
    if bad:
        raise PipelineError("RUN-E002", f"forbidden compiler flags {bad}")
    return flags, all_defines


@lru_cache(maxsize=64)
def _predefined(name: str, flags: tuple[str, ...], timeout: float) -> str | None:
    try:
        proc = process.run([name, *flags, "-dM", "-E", "-x", "c", os.devnull], timeout=timeout)
    except PipelineError:
        return None
    return proc.out if proc.returncode == 0 else None


def checked_flags(name: str, flags: Sequence[str], timeout: float = 60.0) -> None:
    """RUN-E002 when compiler `name`, given a build's `flags`, says it will do what the qualified flags
    exclude: its predefined macros (`-dM -E`) name FMA instructions on x86 (__FMA__), fast or finite
    math, or another language or optimisation than C99 at -O2. The compiler's own word, whatever the
    spelling of the flags (pipeline/toolchain/flags.py judges the spelling; this, the effect). Where the
    query does not run, the build itself reports."""
    said = _predefined(name, tuple(flags), min(timeout, 60.0))
    if said is None:
        return
    lines = {line.strip() for line in said.splitlines()}
    found = [m for m in FORBIDDEN_MACROS if f"#define {m}" in lines or any(l.startswith(f"#define {m} ") for l in lines)]
    if "#define __STDC_VERSION__ 199901L" not in lines:
        found.append("__STDC_VERSION__ other than 199901L (C99)")
    if "#define __OPTIMIZE__ 1" not in lines or any(l.startswith("#define __OPTIMIZE_SIZE__") for l in lines):
        found.append("an optimisation level other than -O2")
    if found:
        raise PipelineError("RUN-E002", f"{name} with the flags {shlex.join(flags)} predefines {', '.join(found)}: "
                            "the build would not be the qualified one (docs/codegen.md \"Flags\")")


def compile_and_link(code_dir: str | os.PathLike[str], sources: Sequence[str], binary: str | os.PathLike[str],
                     lanes: int, *, trace: bool = False, sanitize: bool = False, defines: Sequence[str] = (),
                     include_dirs: Sequence[str] = (".",), cc: str | None = None,
                     timeout: float = 600.0, objects: Sequence[str | os.PathLike[str]] = (),
                     libraries: Sequence[str] = (), platform: Platform | None = None,
                     isa: str | None = None, coverage: bool = False) -> BuildResult:
    """Compile `sources` (relative to `code_dir`) into `binary`; RUN-E003 with the diagnostics on
    any error or warning (warnings are errors under -Werror, so an empty stderr is the proof
    that none was issued). Written atomically: a failed build leaves no binary. `objects` built
    by another compiler (a mixed deployment's CUDA items) are linked in, with `libraries`
    (-l options) after them. `platform` (default host) gives the compiler, its flags and its link
    flags (after the libraries); `isa` as build_flags. `coverage`: gcov's instrumentation (COVERAGE_FLAGS);
    its notes files (.gcno) are written beside `binary`, its counts (.gcda) there when the program exits."""
    target = platform or host_platform()
    name = compiler_path(cc, target)
    flags, defs = build_flags(lanes, trace=trace, sanitize=sanitize, defines=defines, platform=target, isa=isa,
                              coverage=coverage)
    checked_flags(name, flags, timeout)
    folder = Path(code_dir)
    binary_path = Path(binary).resolve()
    binary_path.parent.mkdir(parents=True, exist_ok=True)
    temporary = binary_path.with_name(f".{binary_path.name}.tmp{os.getpid()}")
    command = [name, *flags, *[f"-I{d}" for d in include_dirs], *[f"-D{d}" for d in defs], *sources,
               *[str(o) for o in objects], *libraries, *target.link_flags, "-o", str(temporary)]
    try:
        proc = process.run(command, cwd=folder, timeout=timeout)
    except PipelineError:
        temporary.unlink(missing_ok=True)
        raise
    diagnostics = proc.said.strip()
    if proc.returncode != 0 or diagnostics:
        temporary.unlink(missing_ok=True)
        raise PipelineError("RUN-E003", f"build failed (exit {proc.returncode}) in {folder}: "
                            f"{shlex.join(command)}\n{diagnostics}", Location.in_file(folder))
    write_bytes(binary_path, temporary.read_bytes())
    temporary.unlink(missing_ok=True)
    os.chmod(binary_path, 0o755)
    shown = [c if c != str(temporary) else binary_path.name for c in command]
    return BuildResult(binary_path, shown, compiler_version(cc, platform), flags, defs, diagnostics)


def compile_objects(code_dir: str | os.PathLike[str], sources: Sequence[str], out_dir: str | os.PathLike[str],
                    lanes: int, *, defines: Sequence[str] = (), include_dirs: Sequence[str] = (".",),
                    cc: str | None = None, platform: Platform | None = None,
                    timeout: float = 600.0) -> tuple[list[Path], list[str], str]:
    """Compile each source to an object with the build flags of `platform` (default host; for static
    analysis and the link); returns the objects, the command lines and the concatenated diagnostics
    (empty when clean)."""
    name = compiler_path(cc, platform)
    flags, defs = build_flags(lanes, defines=defines, platform=platform)
    checked_flags(name, flags, timeout)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    objects, commands, diagnostics = [], [], []
    for source in sources:
        obj = out / (Path(source).name.rsplit(".", 1)[0] + ".o")
        command = [name, *flags, *[f"-I{d}" for d in include_dirs], *[f"-D{d}" for d in defs], "-c", source,
                   "-o", str(obj.resolve())]
        proc = process.run(command, cwd=code_dir, timeout=timeout)
        text = proc.said.strip()
        commands.append(shlex.join(command[:-1] + [obj.name]))
        if text or proc.returncode != 0:
            diagnostics.append(f"{source} (exit {proc.returncode}):\n{text}")
        if proc.returncode == 0:
            objects.append(obj)
    return objects, commands, "\n".join(diagnostics)

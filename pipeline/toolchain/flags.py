"""Which flags a platform may add: an allow-list, judged on what the compiler will see (docs/deploy.md "Platforms").

A platform's flags come before the qualified ones (pipeline/toolchain/cc.py), and its link flags at
the link. A deny-list judged by spelling let through what GCC reads as something else:
`--no-warnings` is GCC's own spelling of `-w` (every warning gone, so the compile check passes code
that fails `-Wall -Wextra -Werror`), `--machine-fma` is `-mfma`, `-Wp,-w` hands `-w` to the
preprocessor, `@file` reads more options from a file, `-mdaz-ftz` or `-mfpmath=387` change results
without a word. So:

1. A flag spelt as one of GCC's long aliases is first resolved to the option GCC sees
   (`--no-warnings` -> `-w`, `--machine-X` -> `-mX`, `--optimize` -> `-O`, ...); forwards
   (`-Wp,`, `-Xpreprocessor`, `-Wa,`, `-Xassembler`, nvcc's `-Xcompiler`) and response files
   (`@file`) are refused outright: what they pass is not judged here.
2. The option is then accepted only when it is on the allow-list below (target selection,
   position-independent code, frame pointers and stack protection, debug information, include
   folders, macros outside the pipeline's own names), with its value checked where it matters
   (no `=native`, nothing that makes FMA instructions available on x86).

Anything else is refused with the reason; the refusals name the known culprits (a forbidden
flag, one overriding a qualified flag) so the message says why, not only that.
"""

from __future__ import annotations

import re
from typing import Any

# The flags no build may carry (cc.build_flags refuses them again, RUN-E002).
FORBIDDEN_FLAGS = ("-ffast-math", "-Ofast", "-ffinite-math-only", "-fno-trapping-math", "-march=native",
                   "-mfma", "-ffp-contract=fast", "-funsafe-math-optimizations", "-fassociative-math",
                   "-fdelete-null-pointer-checks")

# GCC's long spellings (gcc.cc `option_map`) of the options a platform could use to switch a check off.
ALIASES = {"--no-warnings": "-w", "--pedantic": "-pedantic", "--pedantic-errors": "-pedantic-errors", "--ansi": "-ansi",
           "--traditional-cpp": "-traditional-cpp", "--trigraphs": "-trigraphs", "--no-standard-includes": "-nostdinc",
           "--no-standard-libraries": "-nostdlib", "--no-line-commands": "-P", "--preprocess": "-E",
           "--assemble": "-S", "--compile": "-c", "--debug": "-g", "--profile": "-p", "--save-temps": "-save-temps",
           "--verbose": "-v", "--extra-warnings": "-W", "--all-warnings": "-Wall", "--user-dependencies": "-MM",
           "--print-missing-file-dependencies": "-MG", "--dependencies": "-M", "--write-dependencies": "-MD",
           "--write-user-dependencies": "-MMD", "--coverage": "-coverage", "--pass-exit-codes": "-pass-exit-codes",
           "--pipe": "-pipe", "--static": "-static", "--shared": "-shared", "--symbolic": "-symbolic",
           "--no-integrated-cpp": "-no-integrated-cpp", "--pie": "-pie", "--no-pie": "-no-pie"}
ALIAS_PREFIXES = (("--machine-", "-m"), ("--warn-", "-W"), ("--optimize=", "-O"),
                  ("--optimize", "-O"), ("--std=", "-std="), ("--define-macro=", "-D"), ("--undefine-macro=", "-U"),
                  ("--include-directory=", "-I"), ("--include-directory-after=", "-idirafter"),
                  ("--include-prefix=", "-iprefix"), ("--include-with-prefix=", "-iwithprefix"),
                  ("--include-barrier", "-I-"), ("--include=", "-include"), ("--imacros=", "-imacros"),
                  ("--language=", "-x"), ("--specs=", "-specs="), ("--sysroot=", "--sysroot="),
                  ("--param=", "--param="), ("--for-assembler=", "-Wa,"), ("--for-linker=", "-Xlinker"),
                  ("--force-link=", "-u"), ("--library-directory=", "-L"), ("--prefix=", "-B"),
                  ("--output-class-directory=", "-foutput-class-dir="), ("--comments-in-macros", "-CC"),
                  ("--comments", "-C"))
FORWARDS = ("-Wp,", "-Xpreprocessor", "-Wa,", "-Xassembler", "-Xcompiler", "--compiler-options", "-Xlinker", "-Wl,",
            "-Xptxas", "-Xnvlink")

# Compile options a platform may add (whole options, or option=value with the value checked).
COMPILE_EXACT = frozenset({
    "-pthread", "-g", "-g0", "-g1", "-g2", "-g3", "-ggdb", "-gdwarf-4", "-gdwarf-5",
    "-fPIC", "-fpic", "-fPIE", "-fpie", "-fno-pie", "-fno-pic", "-fno-plt", "-fomit-frame-pointer",
    "-fno-omit-frame-pointer", "-fstack-protector", "-fstack-protector-strong", "-fstack-protector-all",
    "-fno-stack-protector", "-fstack-clash-protection", "-fcf-protection", "-fno-common", "-fno-strict-aliasing",
    "-fno-math-errno", "-fno-delete-null-pointer-checks", "-ffunction-sections", "-fdata-sections",
    "-fasynchronous-unwind-tables", "-fno-asynchronous-unwind-tables", "-fno-unwind-tables",
    # AArch64 / Arm
    "-mthumb", "-marm", "-mlittle-endian", "-mbig-endian", "-mstrict-align", "-mno-strict-align",
    "-munaligned-access", "-mno-unaligned-access", "-mgeneral-regs-only", "-moutline-atomics", "-mno-outline-atomics",
    "-mfix-cortex-a53-835769", "-mfix-cortex-a53-843419",
    # x86 instruction sets without fused multiply-add, and their removal
    "-msse", "-msse2", "-msse3", "-mssse3", "-msse4", "-msse4.1", "-msse4.2", "-mavx", "-mavx2", "-mf16c", "-mpopcnt",
    "-mbmi", "-mbmi2", "-mlzcnt", "-mmovbe", "-maes", "-mpclmul", "-mno-fma", "-mno-fma4", "-mno-avx512f",
    "-mno-avx2", "-mno-avx", "-mfpmath=sse",
})
VALUE = r"[A-Za-z0-9][A-Za-z0-9._+-]*"
COMPILE_PATTERNS = (
    re.compile(rf"-m(cpu|tune|arch)={VALUE}"),                         # native and FMA ISAs refused below
    re.compile(rf"-m(fpu|float-abi|abi|cmodel|branch-protection|tls-dialect|sve-vector-bits)={VALUE}"),
    re.compile(rf"-fcf-protection={VALUE}"),
    re.compile(r"-fvisibility=(default|hidden|internal|protected)"),
    re.compile(r"-D(?!NNEF)[A-Z][A-Z0-9_]*(=[^\s]*)?"),                 # not the pipeline's own NNEF_* macros
    re.compile(r"-I(?![-\s])[^\s]+"),
)
NATIVE = re.compile(r"=\s*native\b")
FMA_FLAGS = re.compile(r"^-m(fma|fma4|avx512|arch=(haswell|broadwell|skylake|cannonlake|icelake|tigerlake|sapphirerapids|"
                       r"alderlake|raptorlake|meteorlake|arrowlake|lunarlake|pantherlake|graniterapids|emeraldrapids|"
                       r"diamondrapids|sierraforest|grandridge|clearwaterforest|cascadelake|cooperlake|rocketlake|knl|"
                       r"knm|znver|bdver|x86-64-v3|x86-64-v4|native|core-avx2))")
# What the compiler itself says with a build's flags (cc.checked_flags): none of these may be defined.
FORBIDDEN_MACROS = ("__FMA__", "__FMA4__", "__FAST_MATH__", "__FINITE_MATH_ONLY__ 1")
# Known culprits, for the reason given (the allow-list refuses them anyway).
OVERRIDING_PREFIXES = ("-O", "-std=", "-ffp-contract", "-W", "-w", "-fdelete-null-pointer-checks",
                       "-fno-fast-math", "-ffast-math", "-fmath-errno", "-fno-signed-zeros", "-freciprocal-math",
                       "-fno-rounding-math", "-fexcess-precision", "-fcx-", "-fpermissive", "-fsanitize", "-fno-",
                       "-ansi", "-pedantic", "-trigraphs", "-traditional", "-x")
RESULT_CHANGING = ("-mdaz-ftz", "-mfpmath", "-mpc32", "-mpc64", "-mpc80", "-m80387", "-mno-ieee-fp", "-mrecip",
                   "-mno-sse", "-mieee")

# Link options: the linker's and the C library's, never one that brings libm back (the math check
# reads `nm -u` of the static binary: a libm linked in would hide a call into it) or replaces symbols.
LINK_EXACT = frozenset({"-static", "-static-libgcc", "-static-pie", "-pthread", "-no-pie", "-pie", "-fno-pie",
                        "-rdynamic"})
LINK_PATTERNS = (re.compile(r"-L(?![-\s])[^\s]+"), re.compile(r"-l(?!m$|:libm[.-])[A-Za-z0-9_+.:-]+"))
LINKER_WORDS = frozenset({"--gc-sections", "--no-gc-sections", "--as-needed", "--no-as-needed", "-O1", "--build-id",
                          "--eh-frame-hdr", "--no-undefined", "--fatal-warnings", "-s", "--strip-all", "--strip-debug"})
LINKER_TAKES = frozenset({"-z", "-rpath", "-rpath-link", "--dynamic-linker", "-soname"})   # next part is the value
LINKER_Z = frozenset({"relro", "norelro", "now", "lazy", "noexecstack", "execstack", "nodelete", "separate-code",
                      "noseparate-code"})
LINKER_PATTERNS = (re.compile(rf"--(hash-style|build-id|sysroot|dynamic-linker|rpath|rpath-link|soname)={VALUE}|"
                              r"-rpath=[^\s,]+|-L[^\s,]+"),)


def resolved(flag: str) -> str:
    """The option GCC sees for `flag` (its long aliases resolved; anything else as written)."""
    if flag in ALIASES:
        return ALIASES[flag]
    for prefix, canonical in ALIAS_PREFIXES:
        if flag.startswith(prefix):
            return canonical + flag[len(prefix):]
    return flag


def _said(flag: str, seen: str) -> str:
    return flag if seen == flag else f"{flag} (GCC's spelling of {seen})"


def _forward(flag: str) -> str | None:
    for prefix in FORWARDS:
        if flag == prefix or flag.startswith(prefix):
            return prefix.rstrip(",")
    return None


def compile_problem(flag: str) -> str | None:
    """Why a platform may not add the compile option `flag`, or None (module docstring)."""
    if flag.startswith("@"):
        return f"{flag} is a response file: the options it holds cannot be judged (write them out)"
    forward = _forward(flag)
    if forward is not None:
        return f"{flag} forwards options past the compiler driver ({forward}): what it passes is not judged, so it is refused"
    seen = resolved(flag)
    shown = _said(flag, seen)
    if seen in FORBIDDEN_FLAGS or flag in FORBIDDEN_FLAGS:
        return f"{shown} is forbidden (docs/codegen.md \"Flags\")"
    if NATIVE.search(seen):
        return f"{shown} names the build host's CPU, not the platform's"
    if FMA_FLAGS.match(seen):
        return f"{shown} makes fused multiply-add instructions available on x86"
    if seen.startswith(RESULT_CHANGING):
        return f"{shown} changes floating-point results (precision, denormals or approximations)"
    allowed = seen in COMPILE_EXACT or any(p.fullmatch(seen) for p in COMPILE_PATTERNS)
    if allowed:
        return None
    if seen.startswith(OVERRIDING_PREFIXES):
        return f"{shown} would override or weaken a qualified flag (platforms add flags, never remove one)"
    if seen.startswith("-D") or seen.startswith("-U"):
        return (f"{shown}: a platform may define macros named [A-Z][A-Z0-9_]* outside the pipeline's own NNEF_*, "
                "and undefine none")
    return f"{shown} is not among the options a platform may add (docs/deploy.md \"Platforms\" lists them)"


def _linker_problem(flag: str) -> str | None:
    parts = flag[len("-Wl,"):].split(",")
    index = 0
    while index < len(parts):
        part = parts[index]
        if part in LINKER_TAKES:
            value = parts[index + 1] if index + 1 < len(parts) else ""
            if not value or (part == "-z" and value not in LINKER_Z and not value.startswith(("max-page-size=",
                                                                                                "common-page-size="))):
                return f"{flag}: '{part} {value}' is not a linker option this pipeline passes"
            index += 2
            continue
        if not (part in LINKER_WORDS or any(p.fullmatch(part) for p in LINKER_PATTERNS)):
            return (f"{flag}: '{part}' is not a linker option this pipeline passes (libraries, symbol wrapping, "
                    "scripts and response files are refused)")
        index += 1
    return None


def link_problem(flag: str) -> str | None:
    """Why a platform may not add the link option `flag`, or None."""
    if flag.startswith("@"):
        return f"{flag} is a response file: the options it holds cannot be judged (write them out)"
    seen = resolved(flag)
    shown = _said(flag, seen)
    if seen in FORBIDDEN_FLAGS:
        return f"{shown} is forbidden (docs/codegen.md \"Flags\")"
    if NATIVE.search(seen):
        return f"{shown} names the build host's CPU, not the platform's"
    if seen.startswith("-Wl,"):
        return _linker_problem(seen)
    if seen in LINK_EXACT or any(p.fullmatch(seen) for p in LINK_PATTERNS):
        return None
    if re.fullmatch(r"-l(m|:libm[.-].*)", seen):
        return f"{shown} links libm, which the generated code never calls (a libm symbol must fail the link)"
    return (f"{shown} is not a link option this pipeline passes (allowed: -static, -pthread, -pie, -no-pie, -L..., "
            "-l... but libm, -Wl,... with the linker options docs/deploy.md lists)")


def flag_problem(flag: Any, link: bool = False) -> str | None:
    """Why a platform may not add `flag` (a sentence), or None: compile flags by `compile_problem`,
    link flags by `link_problem` (module docstring)."""
    if not isinstance(flag, str) or not flag.startswith(("-", "@")) or any(c in flag for c in "\n\r\0"):
        return f"{flag!r} is not a compiler option (options start with '-')"
    return link_problem(flag) if link else compile_problem(flag)

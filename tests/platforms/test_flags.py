"""Platform flags judged by what the compiler will do, not by spelling (issue 39, docs/deploy.md "Platforms").

`--no-warnings` is GCC's own spelling of `-w`: a platform adding it once made the compile check
pass code that fails `-Wall -Wextra -Werror` (`pass codegen.platform`, exit 0), and `--machine-fma`
(= `-mfma`) got through the FMA rule. Flags are now an allow-list judged on the option GCC sees;
forwards and response files are refused; and the build asks the compiler itself what the flags do.
"""

from __future__ import annotations

import platform as host
import shutil
import subprocess
from pathlib import Path

import pytest

from pipeline.diagnostics import PipelineError
from pipeline.project.deploy import DeployError, parse_deploy_text
from pipeline.toolchain import cc
from pipeline.toolchain.flags import flag_problem, resolved
from tests.platforms.test_platforms import ORIN, _spec

UNUSED = "int main(void) { int unused; return 0; }\n"


def _refused(flag: str, key: str = "flags") -> list[tuple[str, str, str]]:
    declared = ORIN.replace("flags: [-mcpu=cortex-a78ae]", f"flags: [-mcpu=cortex-a78ae, '{flag}']") if key == "flags" \
        else ORIN.replace("link_flags: [-static]", f"link_flags: [-static, '{flag}']")
    with pytest.raises(DeployError) as error:
        parse_deploy_text(_spec(declared=declared), "deploy.yaml")
    return [(p.code, p.path, p.message) for p in error.value.problems]


@pytest.mark.parametrize("flag, seen", [("--no-warnings", "-w"), ("--machine-fma", "-mfma"), ("--optimize=0", "-O0"),
                                        ("--std=gnu11", "-std=gnu11"), ("--warn-no-error", "-Wno-error"),
                                        ("--define-macro=NNEF_VL=16", "-DNNEF_VL=16")])
def test_gcc_aliases_are_judged_as_the_option_gcc_sees(flag: str, seen: str) -> None:
    assert resolved(flag) == seen
    problems = _refused(flag)
    assert [p for p in problems if p[:2] == ("DEPLOY-E014", "platforms.orin.flags[1]")], problems


@pytest.mark.parametrize("flag", ["-Wp,-w", "-Xpreprocessor", "-Wa,--noexecstack", "-Xcompiler", "@flags.rsp",
                                  "-mdaz-ftz", "-mfpmath=387", "-mrecip", "-march=znver3", "-march=sapphirerapids",
                                  "-specs=evil.specs", "-include", "-Dfloat=double", "-D__FAST_MATH__", "-UNDEBUG",
                                  "-fno-finite-math-only", "--sysroot=/elsewhere", "-I-", "-fplugin=x.so", "-B/tmp"])
def test_forwards_response_files_and_unlisted_options_are_refused(flag: str) -> None:
    assert flag_problem(flag) is not None
    assert [p for p in _refused(flag) if p[:2] == ("DEPLOY-E014", "platforms.orin.flags[1]")]


@pytest.mark.parametrize("flag", ["-lm", "-l:libm.a", "-Wl,-lm", "-Wl,--wrap=sqrtf", "-Wl,--defsym=expf=0",
                                  "-Wl,@more", "@link.rsp", "--gc-sections", "-Xlinker"])
def test_link_flags_that_bring_libm_back_or_replace_symbols_are_refused(flag: str) -> None:
    assert flag_problem(flag, link=True) is not None
    assert [p for p in _refused(flag, "link_flags") if p[:2] == ("DEPLOY-E014", "platforms.orin.link_flags[1]")]


@pytest.mark.parametrize("flag", ["-mcpu=cortex-a78ae", "-march=armv8.2-a+fp16", "-mtune=cortex-a78", "-mavx2",
                                  "-march=x86-64-v2", "-mno-fma", "--machine-avx2", "-fno-strict-aliasing", "-fPIC",
                                  "-g", "-DBOARD=1", "-I/opt/x", "-mbranch-protection=standard"])
def test_the_options_a_platform_needs_are_accepted(flag: str) -> None:
    assert flag_problem(flag) is None


@pytest.mark.parametrize("flag", ["-static", "-pthread", "-L/opt/lib", "-lpthread", "-Wl,--gc-sections",
                                  "-Wl,-z,relro,-z,now", "-Wl,-rpath,/opt/lib", "-no-pie"])
def test_the_link_options_a_platform_needs_are_accepted(flag: str) -> None:
    assert flag_problem(flag, link=True) is None


@pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")
def test_the_alias_does_switch_the_warnings_off(tmp_path: Path) -> None:
    """The defect the refusal exists for, planted: with --no-warnings gcc passes what -Werror fails."""
    source = tmp_path / "unused.c"
    source.write_text(UNUSED)
    qualified = ["gcc", *cc.QUALIFIED_FLAGS, "-c", str(source), "-o", str(tmp_path / "a.o")]
    assert subprocess.run(qualified, capture_output=True).returncode != 0
    silenced = subprocess.run(["gcc", "--no-warnings", *cc.QUALIFIED_FLAGS, "-c", str(source), "-o",
                               str(tmp_path / "b.o")], capture_output=True)
    assert silenced.returncode == 0 and not silenced.stderr        # what the loader now refuses


@pytest.mark.skipif(shutil.which("gcc") is None or host.machine() not in ("x86_64", "AMD64"),
                    reason="the FMA macros are x86's")
@pytest.mark.parametrize("flags", [["-march=haswell"], ["-march=tigerlake"], ["-mfma"], ["-ffast-math"],
                                   ["-std=gnu11"], ["-O0"], ["-Os"]])
def test_the_compiler_says_what_the_flags_do(flags: list[str]) -> None:
    """Whatever slips past the spelling rules, the compiler's predefined macros show: RUN-E002 at the build."""
    qualified_after = [*flags, *cc.QUALIFIED_FLAGS, *cc.EXTRA_FLAGS] if flags[0].startswith("-m") else \
        [*cc.QUALIFIED_FLAGS, *flags]      # a language or optimisation flag only counts after the qualified ones
    with pytest.raises(PipelineError) as error:
        cc.checked_flags("gcc", qualified_after)
    assert error.value.code == "RUN-E002"
    cc.checked_flags("gcc", [*cc.QUALIFIED_FLAGS, *cc.EXTRA_FLAGS, "-mavx2", "-mno-fma"])   # the host build's

"""Named platforms: the built-in ones, deploy.yaml's own, the refusal rules, the missing-tool reasons.

A platform only adds flags to the qualified set (tests here plant the flags a platform must not
add and see each refused with its key path), a deployment's cpu items share one platform, and
a platform whose compiler or runner is not installed makes the checks and runs that need it
`not run`, naming the Debian package.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.codegen import checks
from pipeline.project.deploy import DeployError, parse_deploy_text
from pipeline.diagnostics import PipelineError
from pipeline.ledger.checks import Verdict
from pipeline.toolchain import cc, platforms as P

SPEC = Path(__file__).resolve().parents[2] / "models" / "lenet5" / "deploy.yaml"


def _spec(deployment: str = "", declared: str = "") -> str:
    """lenet5's spec with `deployment` (YAML under `deployments:`) and `declared` (under `platforms:`)."""
    text = SPEC.read_text(encoding="utf-8")
    start = text.index("deployments:\n") + len("deployments:\n")
    text = text[:start] + deployment + text[start:]
    return text + ("platforms:\n" + declared if declared else "")


def _problems(text: str) -> list[tuple[str, str]]:
    with pytest.raises(DeployError) as error:
        parse_deploy_text(text, "deploy.yaml")
    return [(p.code, p.path) for p in error.value.problems]


ORIN = """  orin:
    architecture: aarch64
    compiler: aarch64-linux-gnu-gcc
    flags: [-mcpu=cortex-a78ae]
    link_flags: [-static]
    lanes: 4
    timing: true
    runner: {kind: ssh, host: orin.lab, user: nvidia, identity: keys/orin, known_hosts: keys/known_hosts}
"""


def test_builtin_platforms():
    host = P.resolve(None)
    assert host.name == "host" and host.is_host and host.runner.kind == P.LOCAL and not host.flags
    assert host.lanes == P.HOST_LANES.get(P.host_isa(), 8 if P.host_architecture() == "x86_64" else 4)
    arm = P.resolve("aarch64_qemu")
    assert arm.architecture == "aarch64" and arm.lanes == 4 and arm.compiler == "aarch64-linux-gnu-gcc"
    assert arm.flags == ("-mcpu=cortex-a78ae",) and arm.link_flags == ("-static",)
    assert arm.runner.command == ("qemu-aarch64",) and arm.runner.where == "emulation" and not arm.timing
    assert arm.compiler_package == "gcc-aarch64-linux-gnu" and arm.runner.package == "qemu-user"


def test_flags_add_to_the_qualified_set_and_never_remove_one():
    arm = P.resolve("aarch64_qemu")
    flags, _ = cc.build_flags(4, platform=arm)
    assert flags[0] == "-mcpu=cortex-a78ae"
    assert all(f in flags for f in cc.QUALIFIED_FLAGS) and "-ffp-contract=off" in flags
    assert flags.index("-mcpu=cortex-a78ae") < flags.index("-ffp-contract=off")   # the qualified flags come last
    assert "-mavx2" not in cc.build_flags(8, platform=arm)[0]                     # no host ISA flags on a target


def test_a_shipped_spec_names_its_platform_per_deployment():
    spec = parse_deploy_text(SPEC.read_text(encoding="utf-8"), str(SPEC))
    assert spec.platform_of("single").name == "host"
    assert spec.platform_of("aarch64").name == "aarch64_qemu"


def test_declared_platform_is_read_with_paths_relative_to_the_spec(tmp_path):
    text = _spec("  board:\n    platform: orin\n    items: [{name: CPU0, target: cpu}]\n    default_item: CPU0\n"
                 "    sync: event\n", ORIN)
    spec = parse_deploy_text(text, str(tmp_path / "deploy.yaml"))
    orin = spec.platform_of("board")
    assert orin.runner.kind == P.SSH and orin.runner.where == "target" and orin.timing
    assert orin.runner.ssh is not None and orin.runner.ssh.identity == str(tmp_path / "keys" / "orin")
    assert orin.runner.ssh.port == 22 and orin.runner.ssh.workdir == "/tmp"


def test_item_level_platform_and_one_platform_per_program():
    ok = _spec("  a:\n    items: [{name: CPU0, target: cpu, platform: aarch64_qemu}, {name: CPU1, target: cpu}]\n"
               "    default_item: CPU0\n    allocation: {CPU1: [prob]}\n    sync: event\n")
    assert parse_deploy_text(ok).deployments["a"].platform == "aarch64_qemu"
    two = _spec("  a:\n    platform: host\n    items: [{name: CPU0, target: cpu, platform: aarch64_qemu}]\n"
                "    default_item: CPU0\n    sync: event\n")
    assert ("DEPLOY-E013", "deployments.a") in _problems(two)


@pytest.mark.parametrize("deployment, where", [
    ("  a:\n    platform: sparc_board\n    items: [{name: CPU0, target: cpu}]\n    default_item: CPU0\n    sync: event\n",
     "deployments.a.platform"),
    ("  a:\n    items: [{name: GPU0, target: cuda, platform: aarch64_qemu}]\n    default_item: GPU0\n    sync: event\n",
     "deployments.a.items[0].platform"),
    ("  a:\n    platform: aarch64_qemu\n    items: [{name: GPU0, target: cuda}, {name: CPU1, target: cpu}]\n"
     "    default_item: GPU0\n    allocation: {CPU1: [prob]}\n    sync: event\n", "deployments.a.platform"),
])
def test_platform_references_are_checked(deployment, where):
    problems = _problems(_spec(deployment))
    assert ("DEPLOY-E013", where) in problems, problems


def test_unknown_platform_names_the_known_ones():
    with pytest.raises(DeployError) as error:
        parse_deploy_text(_spec("  a:\n    platform: sparc\n    items: [{name: CPU0, target: cpu}]\n"
                                "    default_item: CPU0\n    sync: event\n"))
    assert error.value.code == "DEPLOY-E013" and "aarch64_qemu, host" in error.value.message
    with pytest.raises(PipelineError) as runtime:
        P.resolve("sparc")
    assert runtime.value.code == "RUN-E005"


@pytest.mark.parametrize("flag", ["-O3", "-Ofast", "-ffast-math", "-ffp-contract=fast", "-ffp-contract=on", "-Wno-error",
                                  "-w", "-std=gnu11", "-march=native", "-mcpu=native", "-mfma", "-mavx512f",
                                  "-march=haswell", "-fdelete-null-pointer-checks", "-fno-trapping-math",
                                  "-funsafe-math-optimizations", "-fno-signed-zeros", "not-a-flag"])
def test_a_platform_cannot_weaken_the_qualified_flags(flag):
    declared = ORIN.replace("flags: [-mcpu=cortex-a78ae]", f"flags: [-mcpu=cortex-a78ae, '{flag}']")
    assert ("DEPLOY-E014", "platforms.orin.flags[1]") in _problems(_spec(declared=declared))


@pytest.mark.parametrize("flag", ["-mcpu=cortex-a78ae", "-march=armv8.2-a+fp16", "-mtune=cortex-a78", "-mavx2",
                                  "-fno-strict-aliasing", "-DBOARD=1", "-I/opt/x"])
def test_harmless_flags_are_accepted(flag):
    assert P.flag_problem(flag) is None


def test_link_flags_and_runner_keys():
    bad = ORIN.replace("link_flags: [-static]", "link_flags: [-static, -Ofast, --gc-sections]")
    problems = _problems(_spec(declared=bad))
    assert ("DEPLOY-E014", "platforms.orin.link_flags[1]") in problems
    assert ("DEPLOY-E014", "platforms.orin.link_flags[2]") in problems
    missing = ORIN.replace("user: nvidia, ", "")
    assert ("DEPLOY-E002", "platforms.orin.runner.user") in _problems(_spec(declared=missing))
    emulated = ORIN.replace("runner: {kind: ssh, host: orin.lab, user: nvidia, identity: keys/orin, "
                            "known_hosts: keys/known_hosts}", "runner: {kind: emulator, command: [qemu-aarch64], "
                            "host: orin.lab}")
    problems = _problems(_spec(declared=emulated))
    assert ("DEPLOY-E004", "platforms.orin.timing") in problems          # an emulator is never a timing platform
    assert ("DEPLOY-E005", "platforms.orin.runner.host") in problems
    redefined = ORIN.replace("  orin:", "  host:")
    assert ("DEPLOY-E013", "platforms.host") in _problems(_spec(declared=redefined))
    hostile = ORIN.replace("host: orin.lab", "host: '-oProxyCommand=x'")
    assert ("DEPLOY-E004", "platforms.orin.runner.host") in _problems(_spec(declared=hostile))


GHOST = P.Platform("ghost", "aarch64", "no-such-cross-gcc", "gcc-ghost-linux-gnu", flags=("-mcpu=cortex-a78ae",),
                   link_flags=("-static",), lanes=4, runner=P.Runner(P.EMULATOR, ("no-such-qemu",), "qemu-ghost"))


def test_missing_tools_name_their_debian_packages():
    missing = P.missing_tools(GHOST)
    assert missing == [("no-such-cross-gcc", "gcc-ghost-linux-gnu"), ("no-such-qemu", "qemu-ghost")]
    reason = P.missing_reason(GHOST, missing)
    assert "Debian package gcc-ghost-linux-gnu" in reason and "apt-get install gcc-ghost-linux-gnu qemu-ghost" in reason
    with pytest.raises(PipelineError) as error:
        cc.compiler_path(platform=GHOST)
    assert error.value.code == "RUN-E001" and "gcc-ghost-linux-gnu" in error.value.message


def test_codegen_checks_without_the_compiler_say_not_run_naming_the_package(conv_code, tmp_path):
    root, code = conv_code
    results = {r.check_id: r for r in checks.evaluate("t/u", code, root, tmp_path, platform=GHOST)}
    assert set(results) == {checks.STATIC, checks.TRACE, checks.PLATFORM, checks.STANDARDS}
    assert results[checks.PLATFORM].verdict is Verdict.NOT_RUN
    assert "gcc-ghost-linux-gnu" in results[checks.PLATFORM].reason
    assert results[checks.STATIC].verdict is Verdict.NOT_RUN and "gcc-ghost-linux-gnu" in results[checks.STATIC].reason
    assert results[checks.TRACE].verdict is Verdict.PASS       # reading the files needs no compiler
    # the coding standard is judged in the configuration the platform's compiler builds (its __GNUC__)
    assert results[checks.STANDARDS].verdict is Verdict.NOT_RUN
    assert "gcc-ghost-linux-gnu" in results[checks.STANDARDS].reason


def test_execute_without_the_platform_tools_is_not_run(conv_code, tmp_path, monkeypatch):
    from pipeline.execute import step

    root, code = conv_code
    monkeypatch.setattr(step, "code_folder", lambda *a: code)
    monkeypatch.setattr(step, "run_folder", lambda *a: tmp_path / "run")
    doc = step.run_deployment("t", "u", root, tmp_path / "in", 5, 10, platform=GHOST)
    assert doc["status"] == "not run" and "qemu-ghost" in doc["reason"] and "gcc-ghost-linux-gnu" in doc["reason"]
    assert json.loads((tmp_path / "run" / "run.json").read_text())["status"] == "not run"

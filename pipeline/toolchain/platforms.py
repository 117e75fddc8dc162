"""Named platforms: what the code of a cpu item is built for and where it runs (docs/execute.md "Platforms").

A platform is an architecture, a compiler command, flags added to the qualified set (never
one removed: a flag that is forbidden, or that would override a qualified one, is refused),
link flags, the lane count the code is generated for, a runner (the build host itself, an
emulator such as qemu-aarch64, or a board reached over SSH) and whether the execution times
measured there are judged (a timing platform). Two are built in:

    host          the build host: $CC or gcc, the lanes of its widest vector ISA (16 with AVX-512F,
                  8 on other x86-64, 4 elsewhere), run here
    aarch64_qemu  Debian's gcc-aarch64-linux-gnu, -mcpu=cortex-a78ae (Jetson Orin's cores),
                  -static, 4 lanes (NEON), run under qemu-aarch64 (Debian qemu-user): emulation

Users declare their own in deploy.yaml under `platforms:` (docs/deploy.md "Platforms"); a
deployment or a cpu item names its platform with `platform:` (default `host`). Every step that
builds or runs generated code takes the platform from here: the codegen step's compile check,
the compiler-defect programs and the math check, the execute step's harness runs.

This module holds the definitions, the refusal rules and what a platform needs installed; the
SSH runner itself is pipeline/toolchain/ssh.py.
"""

from __future__ import annotations

import os
import platform as _platform
import re
import shutil
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping

# The programs it runs, none for a verdict (the runner's version, recorded) (pipeline/ledger/dependencies.py).
TOOLS: tuple[str, ...] = ()

HOST = "host"
AARCH64_QEMU = "aarch64_qemu"
BUILTIN_NAMES = (HOST, AARCH64_QEMU)

LOCAL, EMULATOR, SSH = "local", "emulator", "ssh"
RUNNER_KINDS = (LOCAL, EMULATOR, SSH)
# Where the results of a run on a platform are obtained (the closed set of pipeline.ledger.checks.Where).
WHERE = {LOCAL: "host", EMULATOR: "emulation", SSH: "target"}

# The architectures the static scans know (pipeline/codegen/static.py); another one is `not run` there.
ARCHITECTURE_ALIASES = {"x86_64": "x86_64", "amd64": "x86_64", "x64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}

# Debian packages of the tools the built-in platforms and the runners use (named in every
# `not run` and RUN-E001/E005 message).
PACKAGES = {"gcc": "gcc", "aarch64-linux-gnu-gcc": "gcc-aarch64-linux-gnu", "qemu-aarch64": "qemu-user",
            "ssh": "openssh-client", "valgrind": "valgrind"}


@dataclass(frozen=True)
class SshTarget:
    """A board reached over SSH (docs/execute.md "Boards over SSH"): host key checking always on."""

    host: str
    user: str
    identity: str                     # the private key (a user-given file; no agent, no password)
    known_hosts: str | None = None    # None: ssh's own known_hosts files
    port: int = 22
    workdir: str = "/tmp"             # remote folder under which each session makes its own
    connect_timeout_s: int = 10
    timeout_s: int = 600              # per remote command


@dataclass(frozen=True)
class Runner:
    """How a built program runs: here (`local`), under an emulator command, or on a board over SSH."""

    kind: str = LOCAL
    command: tuple[str, ...] = ()     # the emulator and its options (kind emulator)
    package: str = ""                 # the Debian package of the emulator
    ssh: SshTarget | None = None

    @property
    def where(self) -> str:
        return WHERE[self.kind]


@dataclass(frozen=True)
class Platform:
    """Where a cpu item's code is built for and run (module docstring)."""

    name: str
    architecture: str
    compiler: str | None = None       # None: $CC, else gcc (the host platform)
    compiler_package: str = "gcc"
    flags: tuple[str, ...] = ()       # added to the qualified flags (cc.build_flags)
    link_flags: tuple[str, ...] = ()
    lanes: int = 8
    runner: Runner = field(default_factory=Runner)
    timing: bool = False
    sysroot: str | None = None
    vectors: int | None = None        # at most this many validation vectors per run (None: all)
    met_runs: int | None = None       # at most this many timed inferences (None: met.runs)
    builtin: bool = False

    @property
    def is_host(self) -> bool:
        return self.name == HOST

    def cc(self) -> str:
        """The compiler command: the platform's, else $CC, else gcc."""
        return self.compiler or os.environ.get("CC") or "gcc"

    def compile_flags(self) -> tuple[str, ...]:
        """The flags this platform adds when compiling (its sysroot first)."""
        return ((f"--sysroot={self.sysroot}",) if self.sysroot else ()) + self.flags

    def to_json(self) -> dict[str, Any]:
        runner: dict[str, Any] = {"kind": self.runner.kind, "where": self.runner.where}
        if self.runner.command:
            runner["command"] = list(self.runner.command)
        if self.runner.ssh is not None:
            s = self.runner.ssh
            runner.update({"host": s.host, "port": s.port, "user": s.user, "workdir": s.workdir,
                           "connect_timeout_s": s.connect_timeout_s, "timeout_s": s.timeout_s})
        return {"name": self.name, "architecture": self.architecture, "compiler": self.cc(),
                "flags": list(self.compile_flags()), "link_flags": list(self.link_flags), "lanes": self.lanes,
                "runner": runner, "timing": self.timing, "vectors": self.vectors, "met_runs": self.met_runs}


def normalize_architecture(name: str) -> str:
    return ARCHITECTURE_ALIASES.get(name.lower(), name.lower())


def host_architecture() -> str:
    """The build host's architecture, normalised (x86_64, aarch64, ...)."""
    return normalize_architecture(_platform.machine() or "unknown")


@lru_cache(maxsize=1)
def host_isa() -> str:
    """The widest vector ISA the build host's CPU reports: 'avx512' (AVX-512F), 'avx2' or 'baseline'
    (not x86-64, or neither); read once per process from /proc/cpuinfo."""
    if host_architecture() != "x86_64":
        return "baseline"
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "baseline"
    for line in text.splitlines():
        if line.startswith("flags"):
            flags = set(line.split(":", 1)[-1].split())
            return "avx512" if "avx512f" in flags else "avx2" if "avx2" in flags else "baseline"
    return "baseline"


# float32 lanes of the host's vector registers: what the host platform's code is generated for.
HOST_LANES = {"avx512": 16, "avx2": 8}


def host_platform() -> Platform:
    """The built-in `host` platform: this machine, $CC or gcc, the lanes of its widest vector ISA
    (16 with AVX-512F, 8 with AVX2: cc.isa_for adds its flags; 8 on another x86-64, 4 elsewhere:
    NEON on AArch64), run here."""
    arch = host_architecture()
    lanes = HOST_LANES.get(host_isa(), 8 if arch == "x86_64" else 4)
    return Platform(HOST, arch, None, "gcc", lanes=lanes, builtin=True)


# qemu-aarch64 costs 36x to 970x per inference on the shipped models (resnet8: 0.23 s against 0.37 ms
# here): 20 vectors and 20 timed inferences keep their AArch64 runs within seconds each
# (docs/execute.md "How many vectors an emulated run takes").
EMULATED_VECTORS = 20
EMULATED_MET_RUNS = 20

AARCH64 = Platform(AARCH64_QEMU, "aarch64", "aarch64-linux-gnu-gcc", "gcc-aarch64-linux-gnu",
                   flags=("-mcpu=cortex-a78ae",), link_flags=("-static",), lanes=4,
                   runner=Runner(EMULATOR, ("qemu-aarch64",), "qemu-user"), timing=False,
                   vectors=EMULATED_VECTORS, met_runs=EMULATED_MET_RUNS, builtin=True)


def builtin(name: str) -> Platform | None:
    """The built-in platform `name`, or None."""
    if name == HOST:
        return host_platform()
    return AARCH64 if name == AARCH64_QEMU else None


def resolve(name: str | None, declared: Mapping[str, Platform] | None = None) -> Platform:
    """The platform `name` (None: host): a built-in or one `declared` in deploy.yaml; RUN-E005 otherwise
    (deploy.yaml's loader reports an unknown name first, DEPLOY-E013, with its key path)."""
    from pipeline.diagnostics import PipelineError

    key = name or HOST
    found = builtin(key) or (declared or {}).get(key)
    if found is None:
        known = sorted(set(BUILTIN_NAMES) | set(declared or {}))
        raise PipelineError("RUN-E005", f"unknown platform '{key}' (known: {', '.join(known)})")
    return found


# ---------------------------------------------------------------------- refusal rules

def flag_problem(flag: Any, link: bool = False) -> str | None:
    """Why a platform may not add `flag` (a sentence), or None: the allow-list of
    pipeline/toolchain/flags.py, judged on the option the compiler sees (GCC's long aliases
    resolved; forwards and response files refused)."""
    from pipeline.toolchain.flags import flag_problem as judged

    return judged(flag, link)


# ---------------------------------------------------------------------- what a platform needs

def _package(tool: str, declared: str = "") -> str:
    return declared or PACKAGES.get(Path(tool).name, "")


def missing_tools(p: Platform) -> list[tuple[str, str]]:
    """(tool, Debian package) of every tool `p` needs that is not installed: its compiler, its
    emulator, ssh for a board."""
    needed = [(p.cc(), p.compiler_package or _package(p.cc()))]
    if p.runner.kind == EMULATOR and p.runner.command:
        needed.append((p.runner.command[0], _package(p.runner.command[0], p.runner.package)))
    if p.runner.kind == SSH:
        needed.append(("ssh", "openssh-client"))
    return [(tool, package) for tool, package in needed if shutil.which(tool) is None]


def missing_reason(p: Platform, missing: list[tuple[str, str]]) -> str:
    """The `not run` reason naming each missing tool and its Debian package."""
    tools = ", ".join(f"{tool} (Debian package {package})" if package else tool for tool, package in missing)
    packages = " ".join(sorted({package for _, package in missing if package}))
    install = f"; install with: apt-get install {packages}" if packages else ""
    return f"platform {p.name} needs {tools}, not installed here{install}"


@lru_cache(maxsize=16)
def _first_line(command: tuple[str, ...]) -> str:
    from pipeline.diagnostics import PipelineError
    from pipeline.toolchain import process

    try:
        proc = process.run(list(command), timeout=30)
    except PipelineError:
        return ""
    return ((proc.out or proc.err).strip().splitlines() or [""])[0].strip()


def runner_version(runner: Runner) -> str:
    """What the runner is, with its version: `qemu-aarch64 7.2.22`, `OpenSSH_9.2p1`, `local`."""
    if runner.kind == EMULATOR and runner.command:
        line = _first_line((runner.command[0], "--version"))
        match = re.search(r"version\s+(\S+)", line)
        return f"{Path(runner.command[0]).name} {match.group(1) if match else line or 'version unknown'}"
    if runner.kind == SSH:
        return (_first_line(("ssh", "-V")).split(",")[0] or "ssh") + f" to {runner.ssh.host if runner.ssh else '?'}"
    return "local"


def described(p: Platform) -> str:
    """Where the results of a run on `p` come from, in words (the `obtained` detail of its checks)."""
    if p.runner.kind == EMULATOR:
        return f"{runner_version(p.runner)} running {p.architecture} code for platform {p.name}"
    if p.runner.kind == SSH:
        return p.name
    return f"{p.architecture} host"


# ---------------------------------------------------------------------- deploy.yaml `platforms:`

def declared_problems(platforms: Any) -> list[tuple[str, str, str]]:
    """(code, key path, message) of what the schema cannot say about deploy.yaml's `platforms:`:
    a name of the name grammar that is not a built-in's, refused flags, an emulator with a timing
    verdict, the keys each runner kind needs."""
    from pipeline.files.names import name_problem

    problems: list[tuple[str, str, str]] = []
    for name, body in (platforms.items() if isinstance(platforms, dict) else ()):
        path = f"platforms.{name}"
        problem = name_problem(name, "platform name")
        if problem is not None:
            problems.append(("DEPLOY-E010", path, problem))
        elif name in BUILTIN_NAMES:
            problems.append(("DEPLOY-E013", path, f"platform '{name}' is built in and cannot be redefined "
                             f"(built in: {', '.join(BUILTIN_NAMES)})"))
        if not isinstance(body, dict):
            continue
        for key, link in (("flags", False), ("link_flags", True)):
            for index, flag in enumerate(body.get(key) or [] if isinstance(body.get(key), list) else []):
                why = flag_problem(flag, link)
                if why is not None:
                    problems.append(("DEPLOY-E014", f"{path}.{key}[{index}]", why))
        runner = body.get("runner")
        if not isinstance(runner, dict):
            continue
        kind = runner.get("kind") if isinstance(runner.get("kind"), str) else None   # else the schema's
        needs = {EMULATOR: ("command",), SSH: ("host", "user", "identity")}.get(kind, ())
        for key in needs:
            if key not in runner:
                problems.append(("DEPLOY-E002", f"{path}.runner.{key}", f"a runner of kind {kind} needs '{key}'"))
        foreign = {LOCAL: ("command", "package", "host", "port", "user", "identity", "known_hosts", "workdir",
                           "connect_timeout_s", "timeout_s"),
                   EMULATOR: ("host", "port", "user", "identity", "known_hosts", "workdir", "connect_timeout_s"),
                   SSH: ("command", "package")}.get(kind, ())
        for key in foreign:
            if key in runner:
                problems.append(("DEPLOY-E005", f"{path}.runner.{key}", f"'{key}' means nothing to a runner of kind {kind}"))
        if kind == EMULATOR and body.get("timing") is True:
            problems.append(("DEPLOY-E004", f"{path}.timing", "an emulator's timings are reported, never judged: "
                             "a platform run by an emulator cannot be a timing platform"))
    return problems


def _local_path(value: str, base: Path) -> str:
    path = Path(os.path.expanduser(value))
    return str(path if path.is_absolute() else (base / path).resolve())


def declared_platform(name: str, body: Mapping[str, Any], base: Path) -> Platform:
    """The Platform of one validated entry of deploy.yaml's `platforms:` (paths relative to `base`,
    the spec's folder, or `~`)."""
    runner_body = body["runner"]
    kind = runner_body["kind"]
    ssh = None
    if kind == SSH:
        ssh = SshTarget(str(runner_body["host"]), str(runner_body["user"]), _local_path(runner_body["identity"], base),
                        _local_path(runner_body["known_hosts"], base) if runner_body.get("known_hosts") else None,
                        int(runner_body.get("port", 22)), str(runner_body.get("workdir", "/tmp")),
                        int(runner_body.get("connect_timeout_s", 10)), int(runner_body.get("timeout_s", 600)))
    runner = Runner(kind, tuple(str(c) for c in runner_body.get("command", ())), str(runner_body.get("package", "")),
                    ssh)
    compiler = str(body["compiler"])
    return Platform(name, normalize_architecture(str(body["architecture"])), compiler,
                    str(body.get("compiler_package", "")) or _package(compiler),
                    tuple(str(f) for f in body.get("flags", ())), tuple(str(f) for f in body.get("link_flags", ())),
                    int(body["lanes"]), runner, bool(body.get("timing", False)),
                    _local_path(body["sysroot"], base) if body.get("sysroot") else None,
                    body.get("vectors"), body.get("met_runs"))

"""Runs on a board over SSH: copy the program and inputs there, run, bring the results back, clean up.

One session per deployment run (pipeline/toolchain/runners.py): on entry a fresh work folder is
made under the platform's `workdir` on the board (`mktemp -d <workdir>/nnef-run.XXXXXXXX`); each
harness run first sends what it needs and has not sent yet (the program, the inputs) as one tar
stream, runs the command line there under `timeout` (where the board has it) and brings the
folders and files it wrote back as one tar stream, unpacked here with tarfile's `data` filter
(no absolute path, no `..`, no link out of the folder, at most MAX_DOWNLOAD bytes: the stream is
stopped there, not measured after it is on disk); on exit the work folder is removed. Every ssh
runs bounded (pipeline/toolchain/process.py): its own process group, killed whole at the wall-clock
limit (a board that accepts the connection and never answers ends in RUN-E060 at that limit),
its output streamed to bounded files (a board printing without end: RUN-E023).

ssh runs with host key checking on (`StrictHostKeyChecking=yes`, the platform's known_hosts
file or ssh's own), the user-given key only (`IdentitiesOnly=yes`, no agent, no password:
`BatchMode=yes`), a connection time limit and keep-alives; every command has a time limit.
A failure is a coded error: RUN-E060 the board does not answer (name not resolved, no route,
connection timed out), RUN-E061 the board refuses (the connection, the key or the host key),
RUN-E062 a remote failure (making, filling or removing the work folder, or an answer that is too
large or not a tar stream), RUN-E063 a local file the runner needs is missing (the key, the
known_hosts file, the program or inputs to send). A program that runs
and exits non-zero is the harness's RUN-E021, one that outlives its limit RUN-E022.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

from pipeline.diagnostics import Location, PipelineError
from pipeline.toolchain import process
from pipeline.toolchain.runners import Completed
from pipeline.toolchain.platforms import SshTarget

# The programs it runs, the OpenSSH client (pipeline/ledger/dependencies.py).
TOOLS: tuple[str, ...] = ("ssh",)

MAX_DOWNLOAD = 1 << 30        # bytes one run may send back (outputs and traces of 100 vectors: a few MB)
KEEPALIVE_S = 10
UNREACHABLE = ("could not resolve hostname", "no route to host", "network is unreachable", "connection timed out",
               "operation timed out", "name or service not known", "temporary failure in name resolution")
REFUSED = ("connection refused", "permission denied", "host key verification failed", "no matching",
           "remote host identification has changed", "too many authentication failures", "connection closed",
           "connection reset")
TIMED_OUT = 124               # exit status of coreutils/busybox `timeout`


def ssh_options(target: SshTarget) -> list[str]:
    """The ssh options of every connection (module docstring)."""
    options = ["-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes", "-o", "IdentitiesOnly=yes",
               "-o", f"ConnectTimeout={target.connect_timeout_s}", "-o", f"ServerAliveInterval={KEEPALIVE_S}",
               "-o", "ServerAliveCountMax=3", "-o", "LogLevel=ERROR", "-i", target.identity, "-p", str(target.port)]
    if target.known_hosts:
        options += ["-o", f"UserKnownHostsFile={target.known_hosts}", "-o", "GlobalKnownHostsFile=/dev/null"]
    return options


def classify(stderr: str, target: SshTarget) -> PipelineError:
    """The coded error of an ssh failure (exit 255), from what ssh said."""
    said = stderr.strip()[-1500:]
    text = said.lower()
    where = f"{target.user}@{target.host}:{target.port}"
    if any(m in text for m in UNREACHABLE):
        return PipelineError("RUN-E060", f"board {where} unreachable: {said}")
    if any(m in text for m in REFUSED):
        return PipelineError("RUN-E061", f"board {where} refused the connection, the key or the host key (host "
                             f"key checking is on: the board's key must be in {target.known_hosts or 'known_hosts'}): "
                             f"{said}")
    return PipelineError("RUN-E062", f"ssh to {where} failed: {said or 'exit 255 without a message'}")


def _plain_members(tar: tarfile.TarFile) -> list[tarfile.TarInfo]:
    """The members of a results stream, each a regular file or folder at a relative path without `..`;
    ValueError for anything else (a link, a device, an absolute path)."""
    members = tar.getmembers()
    for member in members:
        parts = Path(member.name).parts
        if not (member.isfile() or member.isdir()) or Path(member.name).is_absolute() or ".." in parts:
            raise ValueError(f"member {member.name!r} is not a plain file or folder inside the work folder")
    return members


class SshSession:
    """A work folder on a board for the runs of one deployment (module docstring)."""

    def __init__(self, target: SshTarget, scratch: Path) -> None:
        self.target = target
        self.scratch = Path(scratch)
        self.remote = ""
        self.sent: dict[str, str] = {}                  # local path -> remote path
        self.pending: list[tuple[Path, str]] = []       # (local, path relative to the work folder) to send
        self.wanted: list[tuple[str, Path, bool]] = []  # (relative remote path, local destination, is a folder)
        self.counter = 0

    # ------------------------------------------------------------------ connection

    def _ssh(self, remote_command: str, *, timeout: float, stdin: Any = None,
             stdout_file: Path | None = None) -> process.Finished:
        """ssh running `remote_command`, bounded (pipeline/toolchain/process.py): its own process group
        killed at `timeout` (RUN-E060: a board that never answers, or answers and then stalls), output
        streamed to bounded files (RUN-E023; past MAX_DOWNLOAD into `stdout_file`, RUN-E062)."""
        command = ["ssh", *ssh_options(self.target), f"{self.target.user}@{self.target.host}", "--", remote_command]
        try:
            proc = process.run(command, timeout=timeout, stdin=b"" if stdin is None else stdin,
                               stdout_file=stdout_file, max_output=MAX_DOWNLOAD if stdout_file else process.MAX_OUTPUT)
        except process.TimedOut:
            raise PipelineError("RUN-E060", f"board {self.target.host}:{self.target.port} did not answer within "
                                f"{timeout:.0f} s ({remote_command[:200]}; ssh's process group was killed)") from None
        except process.OutputTooLarge as error:
            if stdout_file is not None and error.stream == "stdout":
                raise PipelineError("RUN-E062", f"board {self.target.host} sent more than {MAX_DOWNLOAD} bytes of "
                                    "results (the transfer was stopped there)") from None
            raise PipelineError(error.code, f"board {self.target.host}: {remote_command[:200]} printed more than "
                                f"{error.limit} bytes on {error.stream} (ssh's process group was killed)") from None
        except process.NotStarted as error:
            raise PipelineError("RUN-E001", f"ssh cannot start: {error.error} (Debian package openssh-client)") from None
        if proc.returncode == 255:
            raise classify(proc.err, self.target)
        return proc

    def _checked(self, remote_command: str, what: str, **options: Any) -> process.Finished:
        proc = self._ssh(remote_command, timeout=self.target.timeout_s, **options)
        if proc.returncode != 0:
            raise PipelineError("RUN-E062", f"on board {self.target.host}: {what} failed (exit {proc.returncode}): "
                                f"{proc.err.strip()[-1500:]}")
        return proc

    def __enter__(self) -> "SshSession":
        for label, path in (("key", self.target.identity), ("known_hosts file", self.target.known_hosts)):
            if path is not None and not Path(path).is_file():
                raise PipelineError("RUN-E063", f"the SSH {label} {path} does not exist or is not a file",
                                    Location.in_file(path))
        shutil.which("ssh") or self._missing()
        self.scratch.mkdir(parents=True, exist_ok=True)
        base = self.target.workdir.rstrip("/") or "/"
        made = self._checked(f"mkdir -p {shlex.quote(base)} && mktemp -d {shlex.quote(base + '/nnef-run.XXXXXXXX')}",
                             "making the work folder").out.strip()
        if not re.fullmatch(re.escape(base.rstrip("/")) + r"/nnef-run\.[A-Za-z0-9]{8}", made):
            raise PipelineError("RUN-E062", f"on board {self.target.host}: mktemp answered {made[:200]!r}, not a work "
                                f"folder under {base}")
        self.remote = made
        return self

    def __exit__(self, kind: Any, error: Any, trace: Any) -> None:
        if not self.remote:
            return
        try:
            self._checked(f"rm -rf -- {shlex.quote(self.remote)}", "removing the work folder")
        except PipelineError:
            if kind is None:    # an earlier failure is the one to report
                raise

    @staticmethod
    def _missing() -> None:
        raise PipelineError("RUN-E001", "ssh is not installed (Debian package openssh-client)")

    # ------------------------------------------------------------------ the paths the program sees

    def _name(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def _send(self, local: Path, relative: str) -> str:
        key = str(Path(local).resolve())
        if not Path(local).exists():
            raise PipelineError("RUN-E063", f"{local} is to be copied to board {self.target.host} but does not exist",
                                Location.in_file(local))
        if key not in self.sent:
            self.pending.append((Path(local), relative))
            self.sent[key] = f"{self.remote}/{relative}"
        return self.sent[key]

    def program(self, binary: str | os.PathLike[str]) -> str:
        return self._send(Path(binary), f"{self._name('bin')}/{Path(binary).name}")

    def inputs(self, folder: str | os.PathLike[str]) -> str:
        return self._send(Path(folder), self._name("in"))

    def output_folder(self, local: str | os.PathLike[str]) -> str:
        relative = self._name("out")
        self.wanted.append((relative, Path(local), True))
        return f"{self.remote}/{relative}"

    def output_file(self, local: str | os.PathLike[str]) -> str:
        relative = f"{self._name('out')}/{Path(local).name}"
        self.wanted.append((relative, Path(local), False))
        return f"{self.remote}/{relative}"

    # ------------------------------------------------------------------ transfers and runs

    def _upload(self) -> None:
        if not self.pending:
            return
        with tempfile.TemporaryFile(dir=self.scratch) as bundle:
            with tarfile.open(fileobj=bundle, mode="w") as tar:
                for local, relative in self.pending:
                    tar.add(str(local), arcname=relative, recursive=True)
            bundle.seek(0)
            self._checked(f"cd {shlex.quote(self.remote)} && tar -xf -", "unpacking the program and inputs",
                          stdin=bundle)
        self.pending = []

    def _download(self) -> None:
        if not self.wanted:
            return
        names = sorted({relative.split("/")[0] for relative, _, _ in self.wanted})
        self.scratch.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=self.scratch) as tmp:
            bundle = Path(tmp) / "results.tar"
            self._checked(f"cd {shlex.quote(self.remote)} && tar -cf - {' '.join(shlex.quote(n) for n in names)}",
                          "packing the results", stdout_file=bundle)      # stopped past MAX_DOWNLOAD
            unpacked = Path(tmp) / "results"
            try:
                with tarfile.open(bundle) as tar:
                    members = _plain_members(tar)
                    if hasattr(tarfile, "data_filter"):     # Python >= 3.11.4: the library's own rules as well
                        tar.extractall(unpacked, members=members, filter="data")
                    else:
                        tar.extractall(unpacked, members=members)
            except (tarfile.TarError, OSError, ValueError) as error:
                raise PipelineError("RUN-E062", f"the results from board {self.target.host} are not a tar stream of "
                                    f"files inside the work folder: {error}") from None
            for relative, local, folder in self.wanted:
                source = unpacked / relative
                if folder:
                    local.mkdir(parents=True, exist_ok=True)
                    for item in sorted(source.rglob("*")) if source.is_dir() else []:
                        if item.is_file() and not item.is_symlink():
                            target = local / item.relative_to(source)
                            target.parent.mkdir(parents=True, exist_ok=True)
                            shutil.copyfile(item, target)
                elif source.is_file() and not source.is_symlink():
                    local.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(source, local)
        self.wanted = []

    def run(self, argv: Sequence[str], *, timeout: float, env: Mapping[str, str] | None = None,
            stdin: bytes | None = None) -> Completed:
        """Send what is missing, run `argv` in the work folder with a time limit, bring the results back."""
        self._upload()
        folders = sorted({f"{self.remote}/{relative.split('/')[0]}" for relative, _, _ in self.wanted})
        program = " ".join(shlex.quote(a) for a in argv)
        if env:
            program = "env " + " ".join(shlex.quote(f"{k}={v}") for k, v in sorted(env.items())) + " " + program
        limit = max(1, int(timeout))
        script = (f"cd {shlex.quote(self.remote)} && chmod +x {shlex.quote(argv[0])} && "
                  + (f"mkdir -p {' '.join(shlex.quote(f) for f in folders)} && " if folders else "")
                  + f"if command -v timeout >/dev/null 2>&1; then exec timeout {limit} {program}; else exec {program}; fi")
        shown = ["ssh", f"{self.target.user}@{self.target.host}", *argv]
        started = time.perf_counter()
        proc = self._ssh(script, timeout=timeout + self.target.connect_timeout_s + 30,
                         stdin=stdin if stdin is not None else b"")
        seconds = time.perf_counter() - started
        stderr = proc.err
        if proc.returncode == TIMED_OUT:
            raise PipelineError("RUN-E022", f"the run on board {self.target.host} did not finish within {limit} s: "
                                f"{' '.join(argv)}")
        if proc.returncode == 0:
            self._download()
        else:
            self.wanted = []
        return Completed(shown, proc.returncode, stderr, seconds, proc.stdout)

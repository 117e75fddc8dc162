"""Where a built program runs: a session per deployment run on its platform's runner (docs/execute.md "Runners").

A session hands the harness the paths its program sees (the program, the inputs folder, the
folders and files it writes) and runs a command line there; outputs come back into the local
folders they were asked for. Three kinds (pipeline/toolchain/platforms.py):

    local     the program runs here, paths are local paths
    emulator  the same, under the platform's emulator command (qemu-aarch64 ./nnef_run ...): the
              emulator passes the environment and the file system through
    ssh       a board: the program and inputs are copied to a fresh work folder there, run, the
              outputs brought back, the folder removed (pipeline/toolchain/ssh.py)

A session runs its command with a time limit (and `stdin` bytes when given) and returns the exit
status, stdout and stderr, bounded by pipeline/toolchain/process.py (own process group killed whole
at the limit, output streamed to bounded files); judging them is the caller's (pipeline/execute/harness.py for the
harness, pipeline/codegen/compilerdefects.py and pipeline/codegen/c/mathcheck.py for the small
programs the codegen checks run on the platform). The runners live below every step because both
the codegen and the execute step run programs on the platform.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Mapping, Sequence

from pipeline.diagnostics import Location, PipelineError
from pipeline.toolchain import process
from pipeline.toolchain.platforms import EMULATOR, SSH, Platform

# The programs it runs, the emulators of aarch64_qemu and a spec's platforms (pipeline/ledger/dependencies.py).
TOOLS: tuple[str, ...] = ("qemu-aarch64", "@platforms")


@dataclass
class Completed:
    """How a command ran in a session."""

    command: list[str]
    returncode: int
    stderr: str
    seconds: float
    stdout: bytes = b""


class LocalSession:
    """The program runs on this machine, under `prefix` (an emulator command) when given."""

    def __init__(self, prefix: Sequence[str] = ()) -> None:
        self.prefix = list(prefix)

    def program(self, binary: str | os.PathLike[str]) -> str:
        return str(binary)

    def inputs(self, folder: str | os.PathLike[str]) -> str:
        return str(folder)

    def output_folder(self, local: str | os.PathLike[str]) -> str:
        Path(local).mkdir(parents=True, exist_ok=True)
        return str(local)

    def output_file(self, local: str | os.PathLike[str]) -> str:
        Path(local).parent.mkdir(parents=True, exist_ok=True)
        return str(local)

    def run(self, argv: Sequence[str], *, timeout: float, env: Mapping[str, str] | None = None,
            stdin: bytes | None = None) -> Completed:
        """`argv` (under the prefix) bounded by pipeline/toolchain/process.py: RUN-E022 past `timeout`
        (the whole process group killed, a sleeping child included), RUN-E023 past the output bounds,
        RUN-E021 when it cannot start."""
        command = [*self.prefix, *argv]
        try:
            done = process.run(command, timeout=timeout, stdin=stdin,
                               env=None if env is None else {**os.environ, **env})
        except process.TimedOut:
            raise PipelineError("RUN-E022", f"the run did not finish within {timeout:.0f} s (its process group was "
                                f"killed): {process.shown(command)}", Location.in_file(argv[0])) from None
        except (process.OutputTooLarge, process.NotStarted) as error:
            raise PipelineError(error.code, error.message, Location.in_file(argv[0])) from None
        return Completed(command, done.returncode, done.err, done.seconds, done.stdout)


LOCAL = LocalSession()


@contextmanager
def session(platform: Platform | None, scratch: str | os.PathLike[str]) -> Iterator[LocalSession]:
    """A session on `platform`'s runner (None: here); `scratch` is a local folder for the transfers."""
    if platform is None or platform.runner.kind not in (EMULATOR, SSH):
        yield LOCAL
        return
    if platform.runner.kind == EMULATOR:
        yield LocalSession(platform.runner.command)
        return
    from pipeline.toolchain.ssh import SshSession

    assert platform.runner.ssh is not None
    with SshSession(platform.runner.ssh, Path(scratch)) as remote:
        yield remote  # type: ignore[misc]

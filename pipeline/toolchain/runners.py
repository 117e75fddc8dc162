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
status, stdout and stderr; judging them is the caller's (pipeline/execute/harness.py for the
harness, pipeline/codegen/compilerdefects.py and pipeline/codegen/c/mathcheck.py for the small
programs the codegen checks run on the platform). The runners live below every step because both
the codegen and the execute step run programs on the platform.
"""

from __future__ import annotations

import os
import subprocess
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Mapping, Sequence

from pipeline.diagnostics import Location, PipelineError
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
        command = [*self.prefix, *argv]
        started = time.perf_counter()
        try:
            proc = subprocess.run(command, capture_output=True, input=stdin, timeout=timeout, check=False,
                                  env=None if env is None else {**os.environ, **env})
        except subprocess.TimeoutExpired:
            raise PipelineError("RUN-E022", f"the run did not finish within {timeout:.0f} s: {' '.join(command)}",
                                Location.in_file(argv[0])) from None
        except OSError as error:
            raise PipelineError("RUN-E021", f"{' '.join(command)} could not start: {error}",
                                Location.in_file(argv[0])) from None
        return Completed(command, proc.returncode, proc.stderr.decode("utf-8", "replace"),
                         time.perf_counter() - started, proc.stdout)


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

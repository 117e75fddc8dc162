"""Every external program runs bounded: its own process group, a wall-clock limit, output bounded on disk.

A compiler, an emulator, ssh, valgrind, nvcc, Graphviz or git started by the pipeline is hostile in
the ways a program can be: it may print without end (an emulator running a program that loops on
`printf`, a board running `yes`), hang, or leave a sleeping child behind that keeps its output
pipes open. `subprocess.run(..., capture_output=True, timeout=...)` holds the whole output in
memory, and on a timeout kills only the direct child and then waits for the pipes, which a
sleeping grandchild holds open forever. `run` here instead

- starts the program in a new session (so its own process group, which holds every child it
  starts unless one makes a session of its own),
- streams stdout and stderr in chunks to files (a temporary file, or the file the caller names
  for a stream it wants on disk: a tar stream from a board), each with a byte bound; past the
  bound the whole group is killed and the caller gets `OutputTooLarge` (RUN-E023),
- kills the whole group (SIGKILL) when the wall-clock limit passes (`TimedOut`, RUN-E022) or when
  the direct child has exited (a child left sleeping with the pipes open is no reason to wait);
  the group is killed while the exited leader is still a zombie, so its id cannot have been
  reused by an unrelated group,
- gives the program its standard input from a file (bytes are written to a temporary file first),
  so a program that never reads it cannot block the caller,
- and on any exception in the caller (Ctrl-C included) kills the group before returning.

What comes back (`Finished.stdout`, `.stderr`) is what the bounded files hold, read back once.
A program that cannot start is `NotStarted` (RUN-E021). The three are PipelineErrors whose
message names the program; callers that report another code (the SSH runner's RUN-E060 for a
board that does not answer) catch them by type.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from typing import IO, Any, Mapping, Sequence

from pipeline.diagnostics import Location, PipelineError

MAX_OUTPUT = 64 * 1024 * 1024     # bytes of stdout one program may print (the math driver: a few MB)
MAX_ERRORS = 16 * 1024 * 1024     # bytes of stderr (a compiler's diagnostics of a broken file: kilobytes)
CHUNK = 64 * 1024
DRAIN_S = 2.0                     # how long the pipes are read after the group is killed (a child that left it)
E_TIMEOUT, E_FLOOD, E_START = "RUN-E022", "RUN-E023", "RUN-E021"


@dataclass
class Finished:
    """How a program ended: its exit status and what it printed (each stream within its bound)."""

    command: list[str]
    returncode: int
    stdout: bytes
    stderr: bytes
    seconds: float

    @property
    def out(self) -> str:
        return self.stdout.decode("utf-8", "replace")

    @property
    def err(self) -> str:
        return self.stderr.decode("utf-8", "replace")

    @property
    def said(self) -> str:
        """stdout then stderr, decoded: a compiler's diagnostics."""
        return self.out + self.err


class TimedOut(PipelineError):
    """The program (and its process group) was killed at the wall-clock limit."""

    def __init__(self, command: Sequence[str], limit: float) -> None:
        super().__init__(E_TIMEOUT, f"{shown(command)} did not finish within {limit:.0f} s (its process group "
                         "was killed)", Location.in_file(command[0]))
        self.limit = limit


class OutputTooLarge(PipelineError):
    """The program printed more than its bound on one stream (its process group was killed)."""

    def __init__(self, command: Sequence[str], stream: str, limit: int) -> None:
        super().__init__(E_FLOOD, f"{shown(command)} printed more than {limit} bytes on {stream} (its process "
                         "group was killed)", Location.in_file(command[0]))
        self.stream = stream
        self.limit = limit


class NotStarted(PipelineError):
    """The program could not be started (not found, not executable)."""

    def __init__(self, command: Sequence[str], error: OSError) -> None:
        super().__init__(E_START, f"{shown(command)} could not start: {error.strerror or error}",
                         Location.in_file(command[0]))
        self.error = error


def shown(command: Sequence[str], limit: int = 300) -> str:
    """A command line for a message, cut to `limit` characters."""
    text = " ".join(str(c) for c in command)
    return text if len(text) <= limit else text[:limit] + "..."


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _exited(pid: int) -> bool:
    """Whether the child `pid` has exited, without reaping it (its id stays the group's)."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


class _Stream:
    """One output pipe copied to a file, at most `limit` bytes."""

    def __init__(self, pipe: IO[bytes], sink: IO[bytes], limit: int, name: str) -> None:
        self.fd = pipe.fileno()
        os.set_blocking(self.fd, False)
        self.pipe, self.sink, self.limit, self.name = pipe, sink, limit, name
        self.count = 0
        self.open = True

    def pump(self) -> bool:
        """Copy what is ready; False once past the bound."""
        try:
            data = os.read(self.fd, CHUNK)
        except BlockingIOError:
            return True
        if not data:
            self.open = False
            return True
        self.count += len(data)
        if self.count > self.limit:
            return False
        self.sink.write(data)
        return True


def _stdin(data: bytes | IO[bytes] | int | None, stack: list[IO[bytes]]) -> Any:
    if data is None:
        return subprocess.DEVNULL
    if isinstance(data, (bytes, bytearray, memoryview)):
        handle = tempfile.TemporaryFile()
        stack.append(handle)
        handle.write(data)
        handle.flush()
        handle.seek(0)
        return handle
    return data


def run(argv: Sequence[str | os.PathLike[str]], *, timeout: float, cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None, stdin: bytes | IO[bytes] | int | None = None,
        stdout_file: str | os.PathLike[str] | None = None, max_output: int = MAX_OUTPUT,
        max_errors: int = MAX_ERRORS) -> Finished:
    """Run `argv` bounded (module docstring): TimedOut past `timeout` seconds, OutputTooLarge past
    `max_output` bytes of stdout or `max_errors` of stderr, NotStarted when it cannot start. With
    `stdout_file`, stdout goes to that file (and `Finished.stdout` is empty). `env` is the whole
    environment (None: this process's)."""
    command = [os.fspath(a) for a in argv]
    opened: list[IO[bytes]] = []
    try:
        out_sink: IO[bytes] = open(stdout_file, "wb") if stdout_file is not None else tempfile.TemporaryFile()
        opened.append(out_sink)
        err_sink: IO[bytes] = tempfile.TemporaryFile()
        opened.append(err_sink)
        started = time.perf_counter()
        try:
            proc = subprocess.Popen(command, stdin=_stdin(stdin, opened), stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, cwd=cwd, env=None if env is None else dict(env),
                                    start_new_session=True)
        except OSError as error:
            raise NotStarted(command, error) from None
        assert proc.stdout is not None and proc.stderr is not None
        try:
            _follow(proc, command, [_Stream(proc.stdout, out_sink, max_output, "stdout"),
                                    _Stream(proc.stderr, err_sink, max_errors, "stderr")], started + timeout, timeout)
        finally:
            _kill_group(proc.pid)
            proc.stdout.close()
            proc.stderr.close()
            proc.wait()
        seconds = time.perf_counter() - started
        out = b""
        if stdout_file is None:
            out_sink.seek(0)
            out = out_sink.read()
        else:
            out_sink.flush()
        err_sink.seek(0)
        return Finished(command, proc.returncode, out, err_sink.read(), seconds)
    finally:
        for handle in opened:
            handle.close()


def _follow(proc: subprocess.Popen[bytes], command: list[str], streams: list[_Stream], deadline: float,
            timeout: float) -> None:
    """Copy the streams until the program has exited and its pipes are closed (or drained after the
    group is killed); raises TimedOut or OutputTooLarge (the caller kills the group)."""
    selector = selectors.DefaultSelector()
    for stream in streams:
        selector.register(stream.fd, selectors.EVENT_READ, stream)
    drain_until: float | None = None
    try:
        while any(s.open for s in streams):
            now = time.perf_counter()
            if drain_until is None and now >= deadline:
                raise TimedOut(command, timeout)
            if drain_until is not None and now >= drain_until:
                return          # a process outside the group holds a pipe: what it prints later is not ours
            until = drain_until if drain_until is not None else deadline
            for key, _ in selector.select(min(max(until - now, 0.0), 0.2)):
                stream = key.data
                if not stream.pump():
                    raise OutputTooLarge(command, stream.name, stream.limit)
                if not stream.open:
                    selector.unregister(stream.fd)
            if drain_until is None and _exited(proc.pid):
                _kill_group(proc.pid)       # children left behind die with it; what they printed is read
                drain_until = time.perf_counter() + DRAIN_S
        if drain_until is None:
            remaining, pause = deadline - time.perf_counter(), 0.0005
            while not _exited(proc.pid):       # pipes closed, program still running (or just exiting)
                if remaining <= 0:
                    raise TimedOut(command, timeout)
                time.sleep(min(remaining, pause))
                pause = min(pause * 2, 0.05)
                remaining = deadline - time.perf_counter()
    finally:
        selector.close()


def text(argv: Sequence[str | os.PathLike[str]], *, timeout: float = 60.0, **options: Any) -> str:
    """stdout of a short query (`cc --version`, `cc -print-prog-name=nm`), '' when it cannot run or
    does not finish."""
    try:
        return run(argv, timeout=timeout, **options).out
    except PipelineError:
        return ""


__all__ = ["E_FLOOD", "E_START", "E_TIMEOUT", "Finished", "MAX_ERRORS", "MAX_OUTPUT", "NotStarted", "OutputTooLarge",
           "TimedOut", "run", "shown", "text"]

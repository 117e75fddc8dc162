"""Runner faults (issue 39): an emulator that floods or hangs with a sleeping child, a board that never answers.

Every external program runs in its own process group with a wall-clock limit that kills the whole
group, its output streamed to bounded files (pipeline/toolchain/process.py). Before: an emulator
printing 4 GB ended in an uncoded `[Errno 12] Cannot allocate memory` at 1.89 GB; a board running
`yes` the same or PIPE-E900 MemoryError; an emulator whose child sleeps was never stopped
(`subprocess.run` waited for the pipes the sleeping grandchild held after killing the direct child).
The SSH cases use a throwaway OpenSSH server of their own whose key is bound to a forced command
(authorized_keys `command="..."`), so the shared server of tests/platforms/test_ssh.py is not touched.
"""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from pipeline.diagnostics import PipelineError
from pipeline.toolchain import process
from pipeline.toolchain.platforms import SshTarget
from pipeline.toolchain.runners import LocalSession
from pipeline.toolchain.ssh import SshSession
from tests.platforms import sshd

REPO = Path(__file__).resolve().parents[2]


def _script(folder: Path, name: str, body: str) -> Path:
    path = folder / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def _alive(pid: int) -> bool:
    """Whether `pid` still runs (a zombie waiting for init to reap it does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def _gone(pid_file: Path, within: float = 10.0) -> bool:
    """Whether the process whose pid the script wrote is gone (reaped by init once killed)."""
    pid = int(pid_file.read_text().split()[0])
    deadline = time.monotonic() + within
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not _alive(pid)


# ---------------------------------------------------------------- an emulator that floods

def test_an_emulator_printing_without_end_is_stopped_at_the_bound(tmp_path: Path) -> None:
    emulator = _script(tmp_path, "qemu-flood", "exec head -c 4294967296 /dev/zero\n")   # 4 GB on stdout
    started = time.perf_counter()
    with pytest.raises(PipelineError) as error:
        LocalSession([str(emulator)]).run(["./nnef_run"], timeout=600)
    assert error.value.code == "RUN-E023" and "stdout" in error.value.message
    assert time.perf_counter() - started < 60


def test_a_flood_under_a_2_gb_address_space_is_still_coded(tmp_path: Path) -> None:
    """The runner holds none of the flood: under the limit that ended it at 1.89 GB, still RUN-E023."""
    emulator = _script(tmp_path, "qemu-yes", "exec yes 'a line the emulator prints again and again'\n")
    code = ("import resource\nresource.setrlimit(resource.RLIMIT_AS, (2_000_000_000, 2_000_000_000))\n"
            "from pipeline.toolchain.runners import LocalSession\nfrom pipeline.diagnostics import PipelineError\n"
            f"try:\n    LocalSession([{str(emulator)!r}]).run(['x'], timeout=600)\n"
            "except PipelineError as e:\n    print(e.code)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=REPO)
    assert done.stdout.strip() == "RUN-E023", done.stderr[-2000:]


def test_stderr_is_bounded_too(tmp_path: Path) -> None:
    with pytest.raises(process.OutputTooLarge) as error:
        process.run(["sh", "-c", "yes >&2"], timeout=60, max_errors=1 << 20)
    assert error.value.stream == "stderr" and error.value.code == "RUN-E023"


# ---------------------------------------------------------------- an emulator that hangs

def test_an_emulator_whose_child_sleeps_is_stopped_at_its_limit(tmp_path: Path) -> None:
    pid = tmp_path / "child.pid"
    emulator = _script(tmp_path, "qemu-hang", f"sleep 300 &\necho $! > {pid}\nwait\n")
    started = time.perf_counter()
    with pytest.raises(PipelineError) as error:
        LocalSession([str(emulator)]).run(["./nnef_run"], timeout=2)
    assert error.value.code == "RUN-E022"
    assert time.perf_counter() - started < 30, "the limit did not fire"
    assert _gone(pid), "the sleeping child outlived the limit"


def test_a_child_left_sleeping_with_the_pipes_open_is_not_waited_for(tmp_path: Path) -> None:
    pid = tmp_path / "child.pid"
    emulator = _script(tmp_path, "qemu-leaves", f"sleep 300 &\necho $! > {pid}\necho done\nexit 0\n")
    started = time.perf_counter()
    done = LocalSession([str(emulator)]).run(["./nnef_run"], timeout=600)
    assert done.returncode == 0 and done.stdout == b"done\n"
    assert time.perf_counter() - started < 30 and _gone(pid)


def test_a_compiler_that_hangs_is_stopped(tmp_path: Path) -> None:
    from pipeline.toolchain.platforms import Platform

    compiler = _script(tmp_path, "cc-hang", "sleep 300 & wait\n")
    (tmp_path / "a.c").write_text("int main(void) { return 0; }\n")
    target = Platform("stuck", "x86_64", str(compiler), lanes=4)
    from pipeline.toolchain.cc import compile_and_link

    started = time.perf_counter()
    with pytest.raises(PipelineError) as error:
        compile_and_link(tmp_path, ["a.c"], tmp_path / "a.out", 4, platform=target, timeout=2)
    assert error.value.code == "RUN-E022" and time.perf_counter() - started < 60
    assert not (tmp_path / "a.out").exists()


# ---------------------------------------------------------------- boards

@pytest.fixture
def silent_board() -> tuple[int, threading.Event]:
    """A TCP server on 127.0.0.1 that accepts connections and never says a word."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    stop = threading.Event()
    held: list[socket.socket] = []

    def serve() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield listener.getsockname()[1], stop
    stop.set()
    thread.join(5)
    for connection in held:
        connection.close()
    listener.close()


def test_a_board_that_never_answers_is_given_up_at_the_limit(silent_board: tuple[int, threading.Event],
                                                              tmp_path: Path) -> None:
    if sshd.missing():
        pytest.skip(sshd.missing())
    port, _ = silent_board
    key = tmp_path / "key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    (tmp_path / "known_hosts").write_text("")
    target = SshTarget("127.0.0.1", "nobody", str(key), str(tmp_path / "known_hosts"), port, "/tmp", 2, 3)
    started = time.perf_counter()
    with pytest.raises(PipelineError) as error:
        with SshSession(target, tmp_path / "scratch"):
            pass
    assert error.value.code == "RUN-E060", error.value
    assert time.perf_counter() - started < 40


@pytest.fixture(scope="module")
def forced_server(tmp_path_factory: pytest.TempPathFactory):
    why = sshd.missing()
    if why:
        pytest.skip(why)
    try:
        server = sshd.start(tmp_path_factory.mktemp("forced-sshd"))
    except (RuntimeError, OSError) as error:
        pytest.skip(f"the OpenSSH server could not start here: {error}")
    yield server
    sshd.stop(server)


def _force(server: sshd.Server, command: str) -> None:
    """Bind the server's user key to `command`: every ssh to the board runs it, whatever was asked."""
    keys = server.identity.with_name("authorized_keys")
    key = server.identity.with_name("user_key.pub").read_text().strip()
    keys.write_text(f'command="{command}" {key}\n')


def _board(server: sshd.Server, **changes: object) -> SshTarget:
    fields = {"host": "127.0.0.1", "user": server.user, "identity": str(server.identity),
              "known_hosts": str(server.known_hosts), "port": server.port, "workdir": str(server.workdir),
              "connect_timeout_s": 5, "timeout_s": 4, **changes}
    return SshTarget(**fields)  # type: ignore[arg-type]


def test_a_board_that_hangs_with_a_sleeping_child_is_given_up_at_the_limit(forced_server: sshd.Server,
                                                                            tmp_path: Path) -> None:
    pid = tmp_path / "board-child.pid"
    _force(forced_server, f"sleep 300 & echo $! > {pid}; wait")
    started = time.perf_counter()
    with pytest.raises(PipelineError) as error:
        with SshSession(_board(forced_server), tmp_path / "scratch"):
            pass
    assert error.value.code == "RUN-E060" and "did not answer within 4 s" in error.value.message
    assert time.perf_counter() - started < 40
    if pid.is_file() and _alive(int(pid.read_text().split()[0])):   # the board's own sleeper: ours to end
        os.kill(int(pid.read_text().split()[0]), 9)


def test_a_board_printing_without_end_is_stopped_at_the_bound(forced_server: sshd.Server, tmp_path: Path) -> None:
    _force(forced_server, "yes")
    started = time.perf_counter()
    with pytest.raises(PipelineError) as error:
        with SshSession(_board(forced_server, timeout_s=120), tmp_path / "scratch"):
            pass
    assert error.value.code == "RUN-E023", error.value
    assert time.perf_counter() - started < 60

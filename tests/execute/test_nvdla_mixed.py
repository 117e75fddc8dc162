"""NVDLA items next to CPU items, execute: the C program runs with one emulator server per nvdla item
(pipeline/execute/nvdla/server.py), status `emulated`, no MET campaign; a server that dies, answers short or
never answers (or is absent) is a coded error (RUN-E053/E054/E055) within bounded time, not a hang.
The project: tests/execute/dlamixed.py.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import threading
import time
from pathlib import Path

import pytest

from tests.execute.dlamixed import MODEL

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")


@pytest.mark.parametrize("deployment", ["convdla", "dla2", "dlaonly2"])
def test_the_deployment_runs_with_emulator_servers_status_emulated(dla_mixed, deployment):
    root, _, documents, _ = dla_mixed
    doc = documents[deployment]
    assert doc["status"] == "emulated" and doc["target"] == "mixed" and doc["mode"] == "ideal", doc
    assert doc["nvdla_items"] == (["DLA0"] if deployment == "convdla" else ["DLA0", "DLA1"])   # no RUN-E051
    assert all(r["outputs_identical_to_plain"] for r in doc["traced_runs"]) and len(doc["traced_runs"]) >= 2
    run_dir = root / "artifacts" / MODEL / "execute" / deployment
    assert not (run_dir / "timing.json").exists() and not (run_dir / "step-timing.json").exists()
    assert json.loads((run_dir / "instructions.json").read_text())["status"] == "not run"
    assert [p.name for p in sorted(run_dir.glob("trace-*.json"))] == ["trace-noise-1.json", "trace-noise-2.json",
                                                                      "trace-plain.json"]


def _harness(root: Path, env: dict[str, str], timeout: float = 60.0):
    from pipeline.execute.harness import run_harness

    run_dir = root / "artifacts" / MODEL / "execute" / "convdla"
    return run_harness(run_dir / "bin" / "nnef_run", root / "artifacts" / MODEL / "execute" / "inputs",
                       run_dir / "fault-out", 2, env={"NNEF_DLA_TIMEOUT_MS": "500", **env}, check=False,
                       timeout=timeout)


def _fake_server(request: Path, reply: Path, behaviour: str) -> threading.Thread:
    """A server that reads one request, then: 'die' closes, 'short' answers half an output and closes, 'size'
    announces and sends the wrong size, 'error' reports an emulation error, 'mute' says nothing."""

    def run() -> None:
        with open(request, "rb", buffering=0) as ins, open(reply, "wb", buffering=0) as outs:
            want, got = 16 + 4 * 32 * 32, b""     # the header and the 1x1x32x32 input
            while len(got) < want and (chunk := ins.read(want - len(got))):
                got += chunk
            epoch = struct.unpack("<4sIII", got[:16])[2]   # answered, so that only the fault under test is one
            if behaviour == "short":
                outs.write(struct.pack("<4sIII", b"NVDR", 0, epoch, 1600) + b"\0" * 800)
            elif behaviour == "size":
                outs.write(struct.pack("<4sIII", b"NVDR", 0, epoch, 1596) + b"\0" * 1596)
            elif behaviour == "error":
                outs.write(struct.pack("<4sIII", b"NVDR", 2, epoch, 0))
            elif behaviour == "mute":
                time.sleep(1.0)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize("behaviour,code", [("die", "RUN-E053"), ("short", "RUN-E054"), ("size", "RUN-E054"),
                                            ("error", "RUN-E056"), ("mute", "RUN-E055"), ("absent", "RUN-E055")])
def test_a_server_that_dies_answers_short_or_never_is_a_coded_error(dla_mixed, tmp_path, behaviour, code):
    root, _, _, _ = dla_mixed
    request, reply = tmp_path / "req", tmp_path / "rep"
    os.mkfifo(request)
    os.mkfifo(reply)
    thread = None if behaviour == "absent" else _fake_server(request, reply, behaviour)
    started = time.monotonic()
    result = _harness(root, {"NNEF_DLA_DLA0_REQUEST": str(request), "NNEF_DLA_DLA0_REPLY": str(reply)}, timeout=30)
    assert time.monotonic() - started < 20
    assert result.returncode != 0 and code in result.stderr, (result.returncode, result.stderr)
    meaning = {"short": "after 800 of 1600 bytes", "size": "announces 1596 bytes", "error": "reports an error",
               "die": "gone", "mute": "no answer within 500 ms", "absent": "no emulator server opened"}[behaviour]
    assert meaning in result.stderr, result.stderr
    if thread is not None:
        thread.join(5)


def test_without_the_channel_the_proxy_refuses_to_start(dla_mixed):
    result = _harness(dla_mixed[0], {})
    assert result.returncode == 2 and "RUN-E053" in result.stderr and "NNEF_DLA_DLA0_REQUEST" in result.stderr




def test_the_server_answers_a_request_and_refuses_a_malformed_one(dla_mixed, tmp_path):
    """The real server (serve, in a thread) on the convdla loadable: a well-formed request gets the loadable's
    output (pool2, 1600 bytes); a request of the wrong size gets status 1 and ends the service."""
    from pipeline.execute.nvdla.server import load, serve
    from tests.execute.dlamixed import nvdla_folder

    loadable = load(nvdla_folder(dla_mixed[0], "convdla") / "build.json", "DLA0")
    request, reply = tmp_path / "req", tmp_path / "rep"
    os.mkfifo(request)
    os.mkfifo(reply)
    served: list[int] = []
    thread = threading.Thread(target=lambda: served.append(serve(loadable, request, reply)), daemon=True)
    thread.start()
    with open(request, "wb", buffering=0) as outs, open(reply, "rb", buffering=0) as ins:
        outs.write(struct.pack("<4sIII", b"NVDQ", 1, 7, 4096) + b"\0" * 4096)
        magic, status, epoch, size = struct.unpack("<4sIII", ins.read(16))
        assert (magic, status, epoch, size) == (b"NVDR", 0, 7, 1600)
        body = b""
        while len(body) < size:
            body += ins.read(size - len(body))
        outs.write(struct.pack("<4sIII", b"NVDQ", 1, 8, 100) + b"\0" * 100)
        assert struct.unpack("<4sIII", ins.read(16))[:2] == (b"NVDR", 1)
    thread.join(10)
    assert served == [2]

"""The emulator server of an nvdla item of a C deployment program: stands where UMD/KMD submit would on a board.

The C proxy of the item (pipeline/codegen/nvdla/proxy.py, which documents the messages) writes one
request per inference into the request FIFO: every input of the loadable as float32, in the order
the loadable's build.json lists them. The server binds them to the loadable's input surfaces, runs
the loadable on the emulator (pipeline.execute.nvdla.emulator.emulate, the public entry point, mode
given), and writes the reply: every output surface widened to float32, in build.json's order.
It serves until the proxy closes the channel (end of file), then exits 0. A malformed request or
an emulation error is answered with a non-zero status (the proxy stops with RUN-E056) and logged.

    python -m pipeline.execute.nvdla.server --build BUILD.json --item ITEM --request FIFO --reply FIFO [--mode M]

`serve` runs in a thread too (the tests, and `servers` in this module for the execute step's runs).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import math
import os
import struct
import subprocess
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Iterator

import numpy as np

log = logging.getLogger(__name__)

REQUEST_MAGIC, REPLY_MAGIC = b"NVDQ", b"NVDR"
VERSION = 1
HEADER = struct.Struct("<4sIII")


@dataclass
class Loadable:
    """One item's loadable and its bindings, from the codegen step's nvdla build.json."""

    name: str
    data: bytes
    inputs: list[tuple[str, list[int]]]
    outputs: list[tuple[str, list[int]]]
    decoded: dict | None = None      # reader.read_loadable(data), once per server (answer)

    @property
    def request_bytes(self) -> int:
        return 4 * sum(math.prod(s) for _, s in self.inputs)


def load(build: Path, item: str) -> Loadable:
    """The loadable of `item` in an nvdla build.json; RUN-E052 when its bytes are not the recorded ones."""
    from pipeline.diagnostics import Location, PipelineError

    manifest = json.loads(build.read_text(encoding="utf-8"))
    record = next((i for i in manifest["items"] if i["name"] == item), None)
    if record is None:
        raise PipelineError("RUN-E050", f"no loadable of item {item} in {build.name}", Location.in_file(build))
    data = (build.parent / record["loadable"]).read_bytes()
    if hashlib.sha256(data).hexdigest() != record["loadable_sha256"]:
        raise PipelineError("RUN-E052", f"{record['loadable']} differs from the loadable the codegen step recorded",
                            Location.in_file(build.parent / record["loadable"]))
    return Loadable(item, data, [(i["name"], list(i["shape"])) for i in record["inputs"]],
                    [(o["name"], list(o["shape"])) for o in record["outputs"]])


def _read_exactly(stream: BinaryIO, count: int) -> bytes:
    chunks, got = [], 0
    while got < count:
        chunk = stream.read(count - got)
        if not chunk:
            break
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def answer(loadable: Loadable, payload: bytes, mode: str) -> bytes:
    """The reply payload for one request payload (float32 inputs in order -> float32 outputs in order)."""
    from pipeline.codegen.nvdla.reader import read_loadable
    from pipeline.execute.nvdla.emulator import emulate_read

    values = np.frombuffer(payload, "<f4")
    feed, at = {}, 0
    for name, shape in loadable.inputs:
        count = math.prod(shape)
        feed[name] = values[at:at + count].reshape(shape)
        at += count
    if loadable.decoded is None:
        loadable.decoded = read_loadable(loadable.data)
    got = emulate_read(loadable.decoded, feed, mode)
    return b"".join(np.ascontiguousarray(np.asarray(got[name], np.float32).reshape(shape), "<f4").tobytes()
                    for name, shape in loadable.outputs)


def serve(loadable: Loadable, request: Path, reply: Path, mode: str = "ideal") -> int:
    """Answer requests until the proxy closes the channel; returns the number answered."""
    served = 0
    with open(request, "rb", buffering=0) as ins, open(reply, "wb", buffering=0) as outs:
        while True:
            header = _read_exactly(ins, HEADER.size)
            if not header:
                return served
            status, body = 0, b""
            magic, version, epoch, size = HEADER.unpack(header) if len(header) == HEADER.size else (b"", 0, 0, 0)
            payload = _read_exactly(ins, size) if magic == REQUEST_MAGIC else b""
            if magic != REQUEST_MAGIC or version != VERSION or size != loadable.request_bytes or len(payload) != size:
                log.error("item %s: malformed request (magic %r, version %d, %d bytes, %d expected)", loadable.name,
                          magic, version, size, loadable.request_bytes)
                status = 1
            else:
                try:
                    body = answer(loadable, payload, mode)
                except Exception as error:  # noqa: BLE001 - any emulation failure is answered, not a hang
                    log.error("item %s, epoch %d: emulation failed: %s", loadable.name, epoch, error)
                    status = 2
            outs.write(HEADER.pack(REPLY_MAGIC, status, epoch, len(body)) + body)
            served += 1
            if status == 1:
                return served


@contextmanager
def servers(build: Path, items: list[str], scratch: Path, mode: str = "ideal", timeout: float = 10.0
            ) -> Iterator[dict[str, str]]:
    """One server process per nvdla item for one run of the C program: the FIFOs, the processes, and the
    environment the harness needs (NNEF_DLA_<X>_REQUEST/_REPLY). Servers still alive at the end are killed.

    A server's log (its stderr) is kept in scratch/<ITEM>.server.log."""
    from pipeline.codegen.nvdla.proxy import reply_variable, request_variable

    scratch.mkdir(parents=True, exist_ok=True)
    env: dict[str, str] = {}
    processes: list[subprocess.Popen[bytes]] = []
    logs = []
    try:
        for item in items:
            request, reply = scratch / f"{item}.request", scratch / f"{item}.reply"
            for fifo in (request, reply):
                if fifo.exists():
                    fifo.unlink()
                os.mkfifo(fifo)
            handle = open(scratch / f"{item}.server.log", "wb")
            logs.append(handle)
            processes.append(subprocess.Popen(
                [sys.executable, "-m", "pipeline.execute.nvdla.server", "--build", str(build), "--item", item,
                 "--request", str(request), "--reply", str(reply), "--mode", mode],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=handle))
            env[request_variable(item)], env[reply_variable(item)] = str(request), str(reply)
        yield env
    finally:
        for process in processes:
            try:
                process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        for handle in logs:
            handle.close()


def server_logs(scratch: Path) -> str:
    """What the servers of a run logged (for an error message)."""
    return " | ".join(f"{p.stem}: {p.read_text(encoding='utf-8', errors='replace').strip()[-800:]}"
                      for p in sorted(scratch.glob("*.server.log")) if p.stat().st_size)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pipeline.execute.nvdla.server", description=__doc__.split("\n")[0])
    parser.add_argument("--build", type=Path, required=True, help="the codegen step's nvdla build.json")
    parser.add_argument("--item", required=True)
    parser.add_argument("--request", type=Path, required=True)
    parser.add_argument("--reply", type=Path, required=True)
    parser.add_argument("--mode", default="ideal")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s", stream=sys.stderr)
    from pipeline.diagnostics import PipelineError

    try:
        loadable = load(args.build, args.item)
    except (PipelineError, OSError, KeyError, ValueError) as error:
        log.error("%s: %s", getattr(error, "code", "RUN-E050"), getattr(error, "message", error))
        with open(args.request, "rb"), open(args.reply, "wb"):
            pass   # open and close: the proxy sees the server gone (RUN-E053) at once rather than waiting
        return 2
    served = serve(loadable, args.request, args.reply, args.mode)
    log.info("item %s: %d requests answered", args.item, served)
    return 0


if __name__ == "__main__":
    sys.exit(main())


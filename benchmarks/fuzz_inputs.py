"""Seeded mutation fuzzing of the three readers that take files from other hands.

    python benchmarks/fuzz_inputs.py [--kind nnef|tensor|onnx|all] [--mutants N] [--seed S]

Mutates valid inputs (the NNEF corpus of tests/nnef, tensor files, small ONNX models
built with onnx.helper) and feeds every mutant, in this process, to the reader that would
receive it: the NNEF checker (`check_text`), the tensor decoder (`decode_tensor`) and the
ONNX exporter (`convert`, nothing written). A reader may refuse a mutant only with a coded
error (a PipelineError or coded findings); anything else is an uncaught exception, counted
by type with its first seed so that it can be replayed (`--replay KIND:SEED`).

Prints one line per kind: mutants, refused, accepted, uncaught (by type), seconds; exit 1
when any exception escaped. The test suite runs a short, time-bounded version of the same
mutators (tests/nnef/test_nnef_hostile.py, tests/export/test_export_hostile.py).
"""

from __future__ import annotations

import argparse
import collections
import logging
import random
import struct
import sys
import time
from pathlib import Path
from typing import Callable

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # a script run from anywhere; tests import the package normally
    sys.path.insert(0, str(ROOT))

from pipeline.diagnostics import PipelineError  # noqa: E402

HOSTILE_PIECES = ("(", "[", "9" * 40, "1.0e400", "-1", "0", " + x", "x, x", "y, y", "send_var([A], x)", ",", ";",
                  "}", "{", "graph", "fragment", "<scalar>", "'", "#", "\x00", "\u00e9", "= [", "shape = [", "2147483648")


def mutate_text(rng: random.Random, text: str) -> str:
    """One to four edits: insert a hostile piece (repeated up to 3,000 times), delete, duplicate or flip."""
    for _ in range(rng.randint(1, 4)):
        at = rng.randrange(len(text) + 1)
        kind = rng.random()
        if kind < 0.45:
            piece = rng.choice(HOSTILE_PIECES) * (rng.randint(1, 3000) if rng.random() < 0.2 else 1)
            text = text[:at] + piece + text[at + rng.randint(0, 5):]
        elif kind < 0.65:
            text = text[:at] + text[at + rng.randint(1, 40):]
        elif kind < 0.85 and text:
            start = rng.randrange(len(text))
            text = text[:at] + text[start:start + rng.randint(1, 80)] + text[at:]
        elif text:
            at = min(at, len(text) - 1)
            text = text[:at] + chr(rng.randrange(32, 127)) + text[at + 1:]
    return text


def mutate_bytes(rng: random.Random, blob: bytes, header: int = 128) -> bytes:
    """Byte flips, 32-bit header fields set to edge values, truncation or extension."""
    data = bytearray(blob)
    for _ in range(rng.randint(1, 4)):
        kind = rng.random()
        if kind < 0.4 and data:
            data[rng.randrange(len(data))] = rng.randrange(256)
        elif kind < 0.7 and len(data) >= header:
            struct.pack_into("<I", data, 4 * rng.randrange(header // 4),
                             rng.choice([0, 1, 3, 8, 9, 2**16, 2**31 - 1, 2**31, 2**32 - 1]))
        elif kind < 0.85 and data:
            del data[rng.randrange(len(data)):]
        else:
            data += bytes(rng.randrange(256) for _ in range(rng.randint(1, 64)))
    return bytes(data)


def _nnef_cases() -> list[str]:
    from tests.nnef.nnef_corpus import valid_cases

    return [case.text for case in valid_cases()]


def run_nnef() -> Callable[[random.Random], str]:
    from pipeline.nnef.checker import check_text
    from pipeline.nnef.findings import CODES

    cases = _nnef_cases()

    def one(rng: random.Random) -> str:
        report = check_text(mutate_text(rng, rng.choice(cases)), "fuzz.nnef")
        unknown = [f.code for f in report.findings if f.code not in CODES]
        if unknown:
            raise AssertionError(f"uncoded finding {unknown[0]}")
        return "refused" if any(f.is_error for f in report.findings) else "accepted"
    return one


def run_tensor() -> Callable[[random.Random], str]:
    from pipeline.nnef.tensorfile import decode_tensor, encode_tensor

    seeds = [encode_tensor(np.arange(24, dtype=np.float32).reshape(2, 3, 4)),
             encode_tensor(np.ones((1,), dtype=np.float32)),
             encode_tensor(np.array([[True, False]])),
             encode_tensor(np.arange(6, dtype=np.int32))]

    def one(rng: random.Random) -> str:
        try:
            decode_tensor(mutate_bytes(rng, rng.choice(seeds)), "fuzz.dat")
        except PipelineError:
            return "refused"
        return "accepted"
    return one


def onnx_seeds() -> list[bytes]:
    """Three small valid models (Gemm+Relu, Conv+MaxPool, Add of an initializer), serialized."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    def model(nodes: list, inputs: list, outputs: list, inits: list) -> bytes:
        graph = helper.make_graph(nodes, "fuzz", inputs, outputs, inits)
        proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
        proto.ir_version = 8
        onnx.checker.check_model(proto)
        return proto.SerializeToString()

    f32 = TensorProto.FLOAT
    w = numpy_helper.from_array(np.arange(12, dtype=np.float32).reshape(3, 4) / 10, "w")
    b = numpy_helper.from_array(np.ones(3, dtype=np.float32), "b")
    gemm = model([helper.make_node("Gemm", ["x", "w", "b"], ["h"], transB=1), helper.make_node("Relu", ["h"], ["y"])],
                 [helper.make_tensor_value_info("x", f32, [1, 4])], [helper.make_tensor_value_info("y", f32, [1, 3])],
                 [w, b])
    k = numpy_helper.from_array(np.ones((2, 1, 3, 3), dtype=np.float32), "k")
    conv = model([helper.make_node("Conv", ["x", "k"], ["c"], pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
                  helper.make_node("MaxPool", ["c"], ["y"], kernel_shape=[2, 2], strides=[2, 2])],
                 [helper.make_tensor_value_info("x", f32, [1, 1, 4, 4])],
                 [helper.make_tensor_value_info("y", f32, [1, 2, 2, 2])], [k])
    c = numpy_helper.from_array(np.full((2, 2), 0.5, dtype=np.float32), "c")
    add = model([helper.make_node("Add", ["x", "c"], ["y"])], [helper.make_tensor_value_info("x", f32, [2, 2])],
                [helper.make_tensor_value_info("y", f32, [2, 2])], [c])
    return [gemm, conv, add]


def mutate_onnx(rng: random.Random, blob: bytes) -> bytes:
    """Either raw byte mutation of the protobuf, or a structural edit of the decoded model."""
    import onnx

    if rng.random() < 0.5:
        return mutate_bytes(rng, blob, header=len(blob) // 4 * 4)
    proto = onnx.load_model_from_string(blob)
    graph = proto.graph
    kind = rng.randrange(7)
    if kind == 0 and graph.initializer:
        init = rng.choice(graph.initializer)
        init.dims[rng.randrange(len(init.dims))] = rng.choice([0, 1, 2, 7, 2**31, 2**40, -1])
    elif kind == 1 and graph.initializer:
        init = rng.choice(graph.initializer)
        values = np.frombuffer(init.raw_data, dtype=np.float32).copy() if init.raw_data else np.zeros(1, np.float32)
        if values.size:
            values[rng.randrange(values.size)] = rng.choice([np.nan, np.inf, -np.inf])
        init.raw_data = values.tobytes()
    elif kind == 2 and graph.initializer:
        init = rng.choice(graph.initializer)
        init.raw_data = init.raw_data[: rng.randrange(len(init.raw_data) + 1)] + b"\0" * rng.choice([0, 4, 5])
    elif kind == 3:
        graph.output.append(graph.output[0])
    elif kind == 4 and graph.input:
        dim = graph.input[0].type.tensor_type.shape.dim
        if dim:
            dim[rng.randrange(len(dim))].dim_value = rng.choice([0, 3, 2**31, 2**62])
    elif kind == 5 and graph.node:
        node = rng.choice(graph.node)
        node.op_type = rng.choice(["Relu", "Foo", "Conv", "Gemm", "Add", ""])
    else:
        proto.opset_import[0].version = rng.choice([1, 6, 13, 99])
    return proto.SerializeToString()


def run_onnx() -> Callable[[random.Random], str]:
    from pipeline.export.exporter import convert

    seeds = onnx_seeds()

    def one(rng: random.Random) -> str:
        try:
            convert(mutate_onnx(rng, rng.choice(seeds)))
        except PipelineError:
            return "refused"
        return "accepted"
    return one


RUNNERS = {"nnef": run_nnef, "tensor": run_tensor, "onnx": run_onnx}


def fuzz(kind: str, mutants: int, seed: int, seconds: float | None = None) -> dict:
    """Run `mutants` mutants (or until `seconds`); outcome counts and uncaught exceptions by type."""
    counts: collections.Counter[str] = collections.Counter()
    uncaught: dict[str, list] = {}
    one = RUNNERS[kind]()
    started = time.perf_counter()
    for index in range(mutants):
        if seconds is not None and time.perf_counter() - started > seconds:
            break
        rng = random.Random(f"{seed}:{index}")
        try:
            counts[one(rng)] += 1
        except Exception as exc:  # noqa: BLE001 - what this script counts
            counts["uncaught"] += 1
            entry = uncaught.setdefault(type(exc).__name__, [0, index, str(exc)[:160]])
            entry[0] += 1
    return {"kind": kind, "counts": dict(counts), "uncaught": uncaught, "seconds": time.perf_counter() - started}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kind", choices=[*RUNNERS, "all"], default="all")
    parser.add_argument("--mutants", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--replay", metavar="KIND:INDEX", help="re-run one mutant and show its traceback")
    args = parser.parse_args(argv)
    logging.disable(logging.CRITICAL)
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 1000))
    if args.replay:
        kind, index = args.replay.split(":")
        RUNNERS[kind]()(random.Random(f"{args.seed}:{index}"))
        return 0
    failed = False
    for kind in (RUNNERS if args.kind == "all" else [args.kind]):
        outcome = fuzz(kind, args.mutants, args.seed)
        failed |= bool(outcome["uncaught"])
        counts = outcome["counts"]
        print(f"{kind}: {sum(counts.values())} mutants, {counts.get('refused', 0)} refused, "
              f"{counts.get('accepted', 0)} accepted, {counts.get('uncaught', 0)} uncaught in "
              f"{outcome['seconds']:.1f} s", flush=True)
        for name, (count, first, message) in sorted(outcome["uncaught"].items()):
            print(f"  {name}: {count} (first: --replay {kind}:{first}): {message}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

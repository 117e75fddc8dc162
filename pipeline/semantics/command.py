"""`python -m pipeline interpret NNEF_DIR [--input name=file.dat ...] [--seed N] [--out DIR]`.

Checks the description (pipeline.nnef.checker), runs the reference interpreter on the
given inputs (`.dat` files) or on seeded standard-normal float32 inputs, prints one line
per output (shape, SHA-256 of the raw little-endian data, first values) and, with
`--out`, writes `inputs/<name>.dat`, `outputs/<name>.dat` and `summary.json` there.
Exit status: 0 success, 2 bad usage or bad input (findings, unreadable tensors, an
operation without semantics).
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.files.atomic import write_json
from pipeline.diagnostics import PipelineError
from pipeline.terminal import EXIT_OK, fail_usage, format_finding, report_error, say

SCHEMA_VERSION = 1



def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "interpret",
        help="run the reference semantics on an NNEF description",
        description="Run the float32 reference interpreter on an NNEF description (a directory holding "
                    "graph.nnef and the variables' .dat files, or the .nnef file itself).",
    )
    parser.add_argument("path", metavar="NNEF_DIR", help="directory with graph.nnef (or the .nnef file)")
    parser.add_argument("--input", action="append", default=[], metavar="NAME=FILE.dat",
                        help="value of external NAME from a tensor file (repeatable); others are random")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default 0)")
    parser.add_argument("--out", metavar="DIR", help="write inputs, outputs and summary.json to DIR")
    parser.add_argument("--graph", metavar="NAME", help="which graph (or graphitem) to run when there are several")
    parser.add_argument("--profile", choices=("standard", "certification"), default="standard",
                        help="checker profile (default standard: defaulted attributes are warnings)")
    parser.set_defaults(func=run)


def digest(array: np.ndarray) -> str:
    """SHA-256 of the array's row-major little-endian bytes."""
    data = np.ascontiguousarray(array)
    if data.dtype.byteorder == ">":
        data = data.byteswap().view(data.dtype.newbyteorder("<"))
    return hashlib.sha256(data.tobytes()).hexdigest()


def _random_input(rng: np.random.Generator, dtype: str | None, shape: list[int]) -> np.ndarray:
    if dtype == "logical":
        return rng.random(shape) < 0.5
    if dtype == "integer":
        return np.zeros(shape, dtype=np.int64)
    return rng.standard_normal(shape).astype(np.float32)


def run(args: argparse.Namespace) -> int:
    from pipeline.nnef.checker import check_paths, resolve_path
    from pipeline.nnef.tensorfile import read_tensor, write_tensor
    from pipeline.semantics.interpreter import interpret, load_variables

    source = resolve_path(args.path)
    if not source.exists():
        return fail_usage(f"no NNEF description at '{args.path}' (a file, or a directory holding graph.nnef)")
    report = check_paths([args.path], profile=args.profile)
    for finding in report.findings:
        say(format_finding(finding, report.texts), file=sys.stderr)
    if not report.ok:
        return fail_usage(f"{source} does not check; nothing run")
    graphs = [g for g in report.graphs if args.graph in (None, g.name, g.item)]
    if len(graphs) != 1:
        names = ", ".join(g.item or g.name for g in report.graphs)
        return fail_usage(f"choose one graph with --graph (available: {names})")
    graph = graphs[0]

    externals = {op.outputs["output"].name: op for op in graph.operations if op.name == "external"}
    given: dict[str, np.ndarray] = {}
    try:
        for item in args.input:
            name, sep, file = item.partition("=")
            if not sep or name not in externals:
                return fail_usage(f"--input {item!r}: expected NAME=FILE with NAME one of {', '.join(externals)}")
            given[name] = read_tensor(file)
        rng = np.random.default_rng(args.seed)
        inputs = {
            name: given[name] if name in given
            else _random_input(rng, op.dtype, [int(s) for s in op.attribs.get("shape", [])])
            for name, op in externals.items()
        }
        variables = load_variables(graph, source.parent)
        start = time.perf_counter()
        outputs = interpret(graph, inputs, variables)
        elapsed = time.perf_counter() - start
    except PipelineError as exc:
        return report_error(exc)

    for name, value in outputs.items():
        head = np.ravel(value)[:4].tolist()
        say(f"{name}: {value.dtype} {list(value.shape)} sha256 {digest(value)[:16]} first {head}")
    say(f"{graph.name}: {len(graph.operations)} operation(s) interpreted in {elapsed * 1e3:.2f} ms")

    if args.out:
        out = Path(args.out)
        for name, value in inputs.items():
            write_tensor(out / "inputs" / f"{name}.dat", value)
        for name, value in outputs.items():
            write_tensor(out / "outputs" / f"{name}.dat", value)

        def entry(value: np.ndarray) -> dict[str, Any]:
            return {"dtype": str(value.dtype), "shape": list(value.shape), "sha256": digest(value)}

        write_json(out / "summary.json", {
            "schema_version": SCHEMA_VERSION,
            "graph": graph.name,
            "seed": args.seed,
            "given_inputs": sorted(given),
            "inputs": {name: entry(v) for name, v in sorted(inputs.items())},
            "outputs": {name: entry(v) for name, v in sorted(outputs.items())},
        })
    return EXIT_OK

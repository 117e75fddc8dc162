"""`python -m pipeline check PATH...`: NNEF findings like a compiler, or JSON.

Text output, one block per finding:

    path/graph.nnef:12:9: error NNEF-E012: unknown operation 'conv2'
        y = conv2(x, w);
            ^~~~~

then a summary line. Exit status: 0 no error, 1 errors found, 2 a path does not exist.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, TextIO

from pipeline.diagnostics import Severity
from pipeline.nnef.checker import PROFILES, CheckReport, check_paths, resolve_path
from pipeline.terminal import EXIT_BAD_INPUT, EXIT_FAILED, EXIT_OK, fail_usage, format_finding, say

SCHEMA_VERSION = 1
SEVERITIES = (Severity.ERROR, Severity.WARNING, Severity.NOTE)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "check",
        help="check NNEF descriptions (syntax, semantics, shapes, explicitness, tensor files, multi-item rules)",
        description="Check NNEF files, or directories holding graph.nnef. All graphitems given together form "
                    "one multi-item description.",
    )
    parser.add_argument("paths", nargs="+", metavar="PATH", help="NNEF file or directory with graph.nnef")
    parser.add_argument("--json", action="store_true", help="print a JSON report instead of text")
    parser.add_argument("--profile", choices=PROFILES, default="certification",
                        help="certification (default): explicitness violations are errors; standard: warnings")
    parser.add_argument("--no-tensors", action="store_true", help="do not check the variables' tensor files")
    parser.add_argument("--tensor-dir", metavar="DIR", help="look for tensor files in DIR (default: beside each file)")
    parser.set_defaults(func=run)


def report_json(report: CheckReport, files: list[str]) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "ok": report.ok,
        "files": files,
        "findings": [f.to_json() for f in report.findings],
        "graphs": [
            {
                "name": g.name,
                "item": g.item,
                "source": g.source,
                "inputs": g.inputs,
                "outputs": g.outputs,
                "operations": len(g.operations),
                "tensors": len(g.tensors),
            }
            for g in report.graphs
        ],
        "counts": {s.value: report.count(s) for s in SEVERITIES},
    }


def print_text(report: CheckReport, files: list[str], out: TextIO) -> None:
    for finding in report.findings:
        say(format_finding(finding, report.texts), file=out)
    errors, warnings, notes = (report.count(s) for s in SEVERITIES)
    operations = sum(len(g.operations) for g in report.graphs)
    say(f"{len(files)} file(s), {len(report.graphs)} graph(s), {operations} operation(s): "
          f"{errors} error(s), {warnings} warning(s), {notes} note(s)", file=out)


def run(args: argparse.Namespace) -> int:
    missing = [p for p in args.paths if not resolve_path(p).exists()]
    if missing:
        for path in missing:
            fail_usage(f"no NNEF description at '{path}' (a file, or a directory holding graph.nnef)")
        return EXIT_BAD_INPUT
    report = check_paths(args.paths, profile=args.profile, tensors=not args.no_tensors, tensor_dir=args.tensor_dir,
                         finite=True)
    files = [str(resolve_path(p)) for p in args.paths]
    if args.json:
        json.dump(report_json(report, files), sys.stdout, indent=2, sort_keys=True)
        sys.stdout.write("\n")
    else:
        print_text(report, files, sys.stdout)
    return EXIT_OK if report.ok else EXIT_FAILED

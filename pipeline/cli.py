"""`python -m pipeline <command> ...`: every step outside doit.

Each step provides a module with `register(subparsers)` that adds its sub-command and
sets `func` (a callable taking the parsed namespace and returning the exit code).
Exit codes: 0 success, 1 a check failed, 2 bad usage or bad input.

No traceback reaches the user: a PipelineError a command did not handle is rendered like
any bad input, an OSError as PIPE-E901 with its path, anything else as PIPE-E900
`internal error` with the exception's type and first line (exit 2); `--debug` or
NNCERT_DEBUG=1 adds the traceback (pipeline.terminal.report_unexpected).
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from typing import Sequence

from pipeline import __version__
from pipeline.diagnostics import PipelineError
from pipeline.terminal import EXIT_BAD_INPUT, report_error, report_unexpected

# Modules providing sub-commands, in the order they appear in --help.
COMMAND_MODULES: tuple[str, ...] = (
    "pipeline.nnef.command",
    "pipeline.semantics.command",
    "pipeline.evidence.command",
    "pipeline.petri.command",
    "pipeline.export.command",
    "pipeline.split.command",
    "pipeline.codegen.command",
    "pipeline.execute.command",
    "pipeline.compare.command",
    "pipeline.compare.nvdla_command",
)



def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m pipeline",
        description="Certification pipeline for trained neural networks.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more log output (repeatable)")
    parser.add_argument("--debug", action="store_true",
                        help="show the Python traceback of an internal error (also: NNCERT_DEBUG=1)")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    debug = argv is not None and "--debug" in argv or argv is None and "--debug" in sys.argv[1:]
    try:
        return _main(argv)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except PipelineError as exc:
        return report_error(exc)
    except Exception as exc:  # noqa: BLE001 - the one place no exception may pass
        return report_unexpected(exc, debug)


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on bad usage, 0 on --help
        return int(exc.code or 0)
    logging.basicConfig(
        level=logging.WARNING - 10 * min(args.verbose, 2),
        format="%(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return EXIT_BAD_INPUT
    return int(args.func(args))

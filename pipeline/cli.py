"""`python -m pipeline <command> ...` (installed as `nncert` too): every step outside doit.

Each step provides a module with `register(subparsers)` that adds its sub-command and
sets `func` (a callable taking the parsed namespace and returning the exit code).
Exit codes: 0 success, 1 a check failed, 2 bad usage or bad input. A misspelt command or
option gets a "did you mean" (`SuggestingParser`).

No traceback reaches the user: a PipelineError a command did not handle is rendered like
any bad input, an OSError as PIPE-E901 with its path, anything else as PIPE-E900
`internal error` with the exception's type and first line (exit 2); `--debug` or
NNCERT_DEBUG=1 adds the traceback (pipeline.terminal.report_unexpected).
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import logging
import re
import sys
from pathlib import Path
from typing import Any, Sequence

from pipeline import __version__
from pipeline.diagnostics import PipelineError
from pipeline.terminal import EXIT_BAD_INPUT, report_error, report_unexpected, say

# Modules providing sub-commands, in the order they appear in --help: the data path, then the tools.
COMMAND_MODULES: tuple[str, ...] = (
    "pipeline.export.command",
    "pipeline.nnef.command",
    "pipeline.semantics.command",
    "pipeline.split.command",
    "pipeline.petri.command",
    "pipeline.codegen.command",
    "pipeline.execute.command",
    "pipeline.prove.command",
    "pipeline.compare.command",
    "pipeline.evidence.command",
    "pipeline.execute.nvdla.command",
    "pipeline.operations",
)

# The command each module registers: `python -m pipeline check ...` imports only the module of
# `check` (the others pull in ONNX, Petri, codegen: about 0.4 s of a command's start); --help, no
# command or a misspelt one imports them all. tests/test_cli.py keeps this table equal to what the
# modules register.
COMMAND_OF: dict[str, str] = {
    "export": "pipeline.export.command",
    "check": "pipeline.nnef.command",
    "interpret": "pipeline.semantics.command",
    "split": "pipeline.split.command",
    "petri": "pipeline.petri.command",
    "codegen": "pipeline.codegen.command",
    "execute": "pipeline.execute.command",
    "prove": "pipeline.prove.command",
    "compare": "pipeline.compare.command",
    "evidence": "pipeline.evidence.command",
    "nvdla": "pipeline.execute.nvdla.command",
    "operations": "pipeline.operations",
}

DESCRIPTION = """Certification pipeline for trained neural networks.

The main job is `doit verify`: every model under models/ through the whole chain (export,
check, split, petri, codegen, execute, compare, evidence), the auditor's report under
reports/, a summary, and exit 1 when a requirement is not met (docs/evidence.md). The
commands below run one step, or one tool, outside doit."""

EPILOG = """`python -m pipeline COMMAND --help` for a command's options. Installed as `nncert`
too (the same commands). Exit status: 0 success, 1 a check failed, 2 bad usage or input."""


class SuggestingParser(argparse.ArgumentParser):
    """argparse with "did you mean" for a misspelt command, choice or option."""

    def error(self, message: str) -> Any:
        choice = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
        if choice:
            close = difflib.get_close_matches(choice.group(1), re.findall(r"'([^']*)'", choice.group(2)), n=1)
            if close:
                message += f"; did you mean '{close[0]}'?"
        unknown = re.search(r"unrecognized arguments: (.*)", message)
        if unknown:
            options = sorted(_option_strings(self))
            hints = [f"'{close[0]}' for '{token}'" for token in unknown.group(1).split() if token.startswith("-")
                     for close in [difflib.get_close_matches(token.split("=")[0], options, n=1)] if close]
            if hints:
                message += f"; did you mean {', '.join(hints)}?"
        super().error(message)


def _option_strings(parser: argparse.ArgumentParser) -> set[str]:
    """Every option string of `parser` and of its sub-commands."""
    found = set(parser._option_string_actions)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found |= _option_strings(sub)
    return found


def program_name() -> str:
    """`nncert` when run as the console script, else `python -m pipeline`."""
    return "nncert" if Path(sys.argv[0]).name == "nncert" else "python -m pipeline"


def _command_modules(argv: Sequence[str] | None) -> tuple[str, ...]:
    """The module of the command `argv` names, or every command module when it names none we know."""
    words = [a for a in (sys.argv[1:] if argv is None else argv) if not a.startswith("-")]
    module = COMMAND_OF.get(words[0]) if words else None
    return (module,) if module in COMMAND_MODULES else COMMAND_MODULES


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser of `argv`'s command (of every command when argv names none we know)."""
    parser = SuggestingParser(prog=program_name(), description=DESCRIPTION, epilog=EPILOG,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more log output (repeatable)")
    parser.add_argument("--debug", action="store_true",
                        help="show the Python traceback of an internal error (also: NNCERT_DEBUG=1)")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in _command_modules(argv):
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    debug = argv is not None and "--debug" in argv or argv is None and "--debug" in sys.argv[1:]
    try:
        return _main(argv)
    except KeyboardInterrupt:
        say("interrupted", file=sys.stderr)
        return 130
    except PipelineError as exc:
        return report_error(exc)
    except Exception as exc:  # noqa: BLE001 - the one place no exception may pass
        return report_unexpected(exc, debug)


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser(argv)
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

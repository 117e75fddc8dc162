"""`python -m pipeline petri FILE...`: verify the execution model of a description or a split.

FILE... is one description, or every item file of a split (one graphitem per file or
several per file). With `--original` (or a plain graph among the files), the split is
also checked equivalent to it. Prints one line per analysis and the counterexample of
each failure, or the JSON report with --json. Exit status: 0 every check holds, 1 a check
failed (counterexample printed), 2 bad usage or bad input.
"""

from __future__ import annotations

import argparse
import json
import sys
from functools import partial
from typing import Any, Callable, Sequence, TextIO

from pipeline.diagnostics import Finding, PipelineError
from pipeline.terminal import EXIT_BAD_INPUT, fail_usage, report_error, say
from pipeline.ledger.checks import Verdict
from pipeline.nnef.checker import resolve_path
from pipeline.nnef.graph import Graph
from pipeline.petri.dot import render_svg, write_dot
from pipeline.petri.load import load_graphs
from pipeline.petri.plan import load_plan
from pipeline.petri.pnml import write_pnml
from pipeline.petri.schedule import SYNC_MODES, load_schedule
from pipeline.petri.trace import load_trace
from pipeline.petri.translate import ENCODINGS
from pipeline.petri.verify import ORDER, Verification, verify

SCHEMA_VERSION = 1


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "petri",
        help="verify the execution model (Petri nets) of a description or of a split",
        description="Translate NNEF descriptions to Petri nets and check reachability of the final marking, "
                    "deadlock, leftover tokens, fire-once, valid paths, equivalence with the original, static "
                    "schedules, traces and the pipelined net.",
    )
    parser.add_argument("files", nargs="+", metavar="FILE", help="one description, or all item files of a split")
    parser.add_argument("--original", metavar="FILE", help="the single-item description the items were split from")
    parser.add_argument("--schedule", metavar="JSON", help="schedule.json (default: each item's program order)")
    parser.add_argument("--trace", metavar="JSON", action="append", default=[], help="a trace to replay (repeatable)")
    parser.add_argument("--plan", metavar="JSON",
                        help="plan.json: takes the sync mode, the pipeline depth and its 'original' (if any) from it")
    parser.add_argument("--sync", choices=SYNC_MODES, help="sync implementation when no schedule/plan says it")
    parser.add_argument("--depth", type=int, metavar="N", help="pipeline depth (default: the plan's, else 1)")
    parser.add_argument("--encoding", choices=ENCODINGS, default="ours",
                        help="net encoding for the behavioural analyses and outputs (default: ours)")
    parser.add_argument("--json", action="store_true", help="print the JSON report instead of text")
    parser.add_argument("--pnml", metavar="OUT", help="write the net as PNML")
    parser.add_argument("--dot", metavar="OUT", help="write the net as DOT")
    parser.add_argument("--svg", metavar="OUT", help="render the net as SVG (needs Graphviz's dot)")
    parser.set_defaults(func=run)


def _counterexample_lines(data: Any, indent: str = "    ") -> list[str]:
    text = json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False)
    lines = text.splitlines()
    if len(lines) > 40:
        lines = lines[:40] + [f"... ({len(lines) - 40} more lines; --json prints everything)"]
    return [indent + line for line in lines]


def print_text(verification: Verification, out: TextIO) -> None:
    counts = verification.counts
    for encoding, c in counts.items():
        say(f"{verification.label}: {encoding} encoding: {c['places']} places, {c['transitions']} transitions, "
              f"{c['initial_tokens']} initial tokens, {c['arcs']} arcs"
              + (f", {c['sync_transitions']} sync transitions, {c['colours']} items" if c["colours"] > 1 else ""),
              file=out)
    for name in ORDER:
        outcome = verification.analyses.get(name)
        if outcome is None:
            continue
        word = {Verdict.PASS: "PASS", Verdict.FAIL: "FAIL", Verdict.NOT_RUN: "NOT RUN", Verdict.EMULATED: "EMULATED"}[outcome.verdict]
        detail = outcome.reason
        if outcome.verdict is Verdict.PASS and name == "valid_paths":
            detail = f"{outcome.measured.get('valid_paths')} valid path(s)"
        code = f" {outcome.code}" if outcome.code else ""
        say(f"{word:8} {name}{code}" + (f": {detail}" if detail else ""), file=out)
        if outcome.verdict is Verdict.FAIL and outcome.counterexample:
            say("  counterexample:", file=out)
            for line in _counterexample_lines(outcome.counterexample):
                say(line, file=out)
    failures = sum(1 for o in verification.analyses.values() if o.verdict is Verdict.FAIL)
    say(f"{'ok' if not failures else f'{failures} check(s) failed'}", file=out)


def _handed(holder: list[Sequence[Graph]], findings: list[Finding]) -> Callable[[], tuple[Sequence[Graph], list[Finding]]]:
    """A loader of graphs already read: it hands them over once and keeps no reference to them."""
    return lambda: (holder.pop(), findings)


def run(args: argparse.Namespace) -> int:
    paths = list(args.files) + ([args.original] if args.original else [])
    missing = [p for p in paths if not resolve_path(p).exists()]
    if missing:
        for path in missing:
            fail_usage(f"no NNEF description at '{path}'")
        return EXIT_BAD_INPUT
    try:
        # Loaders, as the step hands them (pipeline.petri.step): `verify` drops each description's graphs once
        # translated, so the original's graphs are read after the items' are gone. Without --original the
        # files are read first, since whether they hold an original beside the items decides the rest.
        original: Any = partial(load_graphs, [args.original]) if args.original else None
        items: Any = partial(load_graphs, args.files)
        plan = load_plan(args.plan) if args.plan else None
        if original is None:
            graphs, findings = load_graphs(args.files)
            plain = [g for g in graphs if g.item is None]
            inside = [g for g in graphs if g.item is not None]
            if inside and len(plain) == 1:
                original, graphs = _handed([plain], []), inside
            elif plan is not None and plan.original is not None and plan.original.is_file():
                original = partial(load_graphs, [plan.original])
            items = _handed([graphs], findings)
            del graphs, plain, inside
        schedule = load_schedule(args.schedule) if args.schedule else None
        sync = args.sync or (schedule.sync if schedule else None) or (plan.sync if plan else None) or "event"
        depth = args.depth if args.depth is not None else (plan.pipeline_depth if plan else 1)
        if depth < 0:
            raise PipelineError("PETRI-E011", f"--depth must be >= 0, found {depth}")
        verification = verify(items, label=", ".join(args.files), encoding=args.encoding, original=original,
                              schedule=schedule, traces=lambda: [load_trace(t) for t in args.trace], depth=depth,
                              sync=sync, sources=list(args.files))
    except PipelineError as exc:
        return report_error(exc)
    if args.pnml:
        write_pnml(verification.net, args.pnml)
    if args.dot or args.svg:
        dot_path = args.dot or (args.svg + ".dot")
        write_dot(verification.net, dot_path)
        if args.svg:
            note = render_svg(verification.net, dot_path, args.svg)
            if note:
                say(f"note: {note}", file=sys.stderr)
    if args.json:
        json.dump({"schema_version": SCHEMA_VERSION, **verification.to_json()}, sys.stdout, indent=2, sort_keys=True)
        sys.stdout.write("\n")
    else:
        print_text(verification, sys.stdout)
    return 0 if verification.ok else 1

"""`python -m pipeline execute MODEL [--vectors N] [--runs R] [--deployment NAME]... [--no-valgrind]`.

Builds and runs the generated code of every deployment of MODEL (a name or models/<m>): outputs
on the seeded vectors, instrumented runs with and without noise (traces), the MET campaign and
instruction counts; writes artifacts/<m>/execute/. Prints what ran.
Exit status: 0 every deployment ran (or did not apply), 1 a run failed, 2 bad input.
"""

from __future__ import annotations

import argparse
from typing import Any

from pipeline.diagnostics import PipelineError
from pipeline.terminal import EXIT_FAILED, EXIT_OK, fail_usage, model_and_root, report_error, say


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "execute", help="build and run a model's generated code (outputs, traces, timings, instruction counts)",
        description="Build the generated C code with the qualified flags, run it on the model's seeded input "
                    "vectors, capture instrumented traces (also under seeded temporal noise), time met.runs "
                    "inferences and count the instructions of one inference per input under valgrind.")
    parser.add_argument("model", metavar="MODEL", help="model name or models/<m> folder")
    parser.add_argument("--vectors", type=int, metavar="N", help="input vectors (default: validation.vectors)")
    parser.add_argument("--runs", type=int, metavar="R", help="timed inferences (default: met.runs)")
    parser.add_argument("--deployment", action="append", metavar="NAME", help="only this deployment (repeatable)")
    parser.add_argument("--no-valgrind", action="store_true", help="skip the instruction counts")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pipeline.execute.step import run_execute_step

    try:
        model, root = model_and_root(args.model)
        documents = run_execute_step(model, root, vectors=args.vectors, runs=args.runs,
                                 instructions=not args.no_valgrind, deployments=args.deployment)
    except PipelineError as error:
        return report_error(error)
    except (OSError, KeyError) as error:
        return fail_usage(str(error))
    failed = False
    for name, doc in documents.items():
        status = doc.get("status")
        failed |= status == "failed"
        say(f"{status:8} {model}/{name}" + (f": {doc.get('reason')}" if doc.get("reason") else ""))
    return EXIT_FAILED if failed else EXIT_OK

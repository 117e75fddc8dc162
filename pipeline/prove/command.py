"""`python -m pipeline prove MODEL [--deployment D ...] [--item-limit S] [--budget S] [--strict] [--json]`.

Runs the prove step (Frama-C EVA on the generated C of MODEL, docs/prove.md) outside `doit verify`,
with CPU limits of the user's choosing: `doit verify` keeps pipeline/prove/step.py's limits, which
a model as large as resnet8 does not fit (docs/prove.md "Time"); a longer run here writes the same
artifacts (eva.json, checks.json, record.json with the limits it ran under).
Exit status: 0 no check failed, 1 a check failed (with --strict: a check that did not pass or apply,
such as a proof that did not finish), 2 bad input.
"""

from __future__ import annotations

import argparse
from typing import Any

from pipeline.diagnostics import PipelineError
from pipeline.ledger.checks import Verdict
from pipeline.terminal import EXIT_FAILED, fail_usage, model_and_root, print_results, report_error


def _seconds(text: str) -> float:
    value = float(text)
    if not 1.0 <= value <= 86400.0:
        raise argparse.ArgumentTypeError("give CPU seconds between 1 and 86400")
    return value


def register(subparsers: Any) -> None:
    from pipeline.prove.step import ITEM_LIMIT_S, MODEL_BUDGET_S

    parser = subparsers.add_parser(
        "prove", help="prove a model's generated C free of run-time errors (Frama-C EVA), with chosen CPU limits",
        description="Run Frama-C's EVA on every C deployment of MODEL (after its codegen step): no run-time error "
                    "for any input in the deploy.yaml range, outputs finite. Writes artifacts/<m>/prove/.")
    parser.add_argument("model", metavar="MODEL", help="model name or models/<m> folder")
    parser.add_argument("--deployment", action="append", metavar="D", help="only this deployment (repeatable)")
    parser.add_argument("--item-limit", type=_seconds, default=ITEM_LIMIT_S, metavar="S",
                        help=f"CPU seconds of one item's analysis (default {ITEM_LIMIT_S:.0f})")
    parser.add_argument("--budget", type=_seconds, default=MODEL_BUDGET_S, metavar="S",
                        help=f"CPU seconds of the model's analyses together (default {MODEL_BUDGET_S:.0f})")
    parser.add_argument("--strict", action="store_true",
                        help="exit 1 unless every check passed or did not apply (a proof that did not finish counts)")
    parser.add_argument("--json", action="store_true", help="print the check results as JSON")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pipeline.prove.step import run_prove_step

    try:
        model, root = model_and_root(args.model)
        results = run_prove_step(model, root, deployments=args.deployment, item_limit=args.item_limit,
                                 budget=args.budget)
        status = print_results(results, args.json)
        if args.strict and any(r.verdict not in (Verdict.PASS, Verdict.NOT_APPLICABLE) for r in results):
            return EXIT_FAILED
        return status
    except PipelineError as error:
        return report_error(error)
    except (OSError, KeyError, ValueError) as error:
        return fail_usage(str(error))

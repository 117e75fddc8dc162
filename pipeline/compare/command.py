"""`python -m pipeline compare MODEL [--json]` and `python -m pipeline compare accept-met MODEL`.

The first judges the execute step's measurements of MODEL (a name or models/<m>): numbers against
the reference semantics and onnxruntime, traces on the Petri net, MET against the budget and
the accepted baseline, instruction counts; writes artifacts/<m>/compare/.
`accept-met` writes models/<m>/met-baseline.json from the last comparison's met.json files:
the accepted MET baseline the drift check compares with (review, then commit it).
Exit status: 0 every check passed or did not apply, 1 a check failed, 2 bad input.
"""

from __future__ import annotations

import argparse
from typing import Any

from pipeline.diagnostics import PipelineError
from pipeline.terminal import EXIT_OK, fail_usage, model_and_root, print_results, report_error, say


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "compare", help="judge a model's executed code: bit-exactness, onnxruntime tolerance, traces, MET",
        description="Compare the outputs of the generated code with the reference semantics (0 ULP) and "
                    "onnxruntime (deployment tolerance), replay its traces on the Petri net, and evaluate its "
                    "measured execution time (budget, jitter, drift) and instruction counts. "
                    "`compare accept-met MODEL` accepts the current MET as the baseline.")
    parser.add_argument("words", nargs="+", metavar="[accept-met] MODEL", help="model name or models/<m> folder")
    parser.add_argument("--json", action="store_true", help="print the check results as JSON")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pipeline.compare.met import accept_baseline
    from pipeline.compare.step import current_met_documents, run_compare_step

    words = list(args.words)
    accept = words[0] == "accept-met"
    if accept:
        words = words[1:]
    if len(words) != 1:
        return fail_usage("give one model")
    try:
        model, root = model_and_root(words[0])
        if accept:
            documents = current_met_documents(model, root)
            if not documents:
                return report_error(PipelineError("COMPARE-E004", f"no met.json under artifacts/{model}/compare/: "
                                                  "run the compare step first"))
            path = accept_baseline(model, documents, root)
            for name, doc in documents.items():
                whole = doc["whole_network"]
                say(f"accepted {model}/{name}: median {whole['median_us']} us, p99 {whole['p99_us']} us")
            say(f"wrote {path}; review and commit it")
            return EXIT_OK
        return print_results(run_compare_step(model, root), args.json)
    except PipelineError as error:
        return report_error(error)
    except (OSError, KeyError, ValueError) as error:
        return fail_usage(str(error))

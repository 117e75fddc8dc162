"""`python -m pipeline codegen MODEL [--lanes 4|8] [--json]` and
`python -m pipeline codegen --split DIR --export DIR --out DIR [--lanes 4|8]`.

MODEL is a model name or its folder models/<m>: runs the codegen step (artifacts/<m>/codegen/,
checks.json, record.json) for every all-cpu deployment. With --split, generates the C code of
one split deployment folder into --out without the checks.
Exit status: 0 every check passed or did not apply, 1 a check failed, 2 bad input.
"""

from __future__ import annotations

import argparse
from typing import Any

from pipeline.diagnostics import PipelineError
from pipeline.terminal import EXIT_OK, fail_usage, model_and_root, print_results, report_error, say

def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "codegen", help="generate the code of a model's deployments (C, CUDA, NVDLA loadables) and check it",
        description="Generate the code of every deployment of MODEL: C99 for cpu items (one file per item, static "
                    "memory, one function per NNEF instruction), with a mixed deployment's cuda items as .cu items "
                    "and its nvdla items as C proxies; CUDA for a deployment of one cuda item; an NVDLA loadable "
                    "for each nvdla item. Then check it: static properties, trace to the NNEF instructions and "
                    "weights, compilation under the qualified flags, the CUDA PTX/SASS gate, the loadable "
                    "validator (docs/codegen.md, codegen-cuda.md, codegen-nvdla.md). With --split: the C code of "
                    "one split deployment folder, written to --out, without the checks.")
    parser.add_argument("model", nargs="?", metavar="MODEL", help="model name or models/<m> folder")
    parser.add_argument("--lanes", type=int, choices=(4, 8), default=None,
                        help="float32 lanes of the generated vectors (default: each deployment's platform's, "
                             "docs/execute.md \"Platforms\"; 8 on x86-64 hosts, 4 for NEON)")
    parser.add_argument("--split", metavar="DIR", help="a split deployment folder (plan.json, schedule.json, items)")
    parser.add_argument("--export", metavar="DIR", help="the export folder holding the tensor files (with --split)")
    parser.add_argument("--out", metavar="DIR", help="output folder (with --split)")
    parser.add_argument("--json", action="store_true", help="print the check results as JSON")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pipeline.codegen.program.generate import DEFAULT_LANES, generate_deployment
    from pipeline.codegen.shared.deployment import load_deployment
    from pipeline.codegen.step import run_codegen_step

    lanes = args.lanes or DEFAULT_LANES
    try:
        if args.split:
            if not (args.export and args.out):
                return fail_usage("--split needs --export and --out")
            generated = generate_deployment(load_deployment(args.split, args.export, "."), args.out, lanes=lanes)
            say(f"{len(generated.files)} files written to {args.out}")
            return EXIT_OK
        if not args.model:
            return fail_usage("give a model (or --split)")
        model, root = model_and_root(args.model)
        return print_results(run_codegen_step(model, root, lanes=args.lanes), args.json)
    except PipelineError as error:
        return report_error(error)
    except (OSError, KeyError) as error:
        return fail_usage(str(error))

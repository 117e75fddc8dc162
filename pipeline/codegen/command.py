"""`python -m pipeline codegen MODEL [--lanes 4|8] [--json]` and
`python -m pipeline codegen --split DIR --export DIR --out DIR [--lanes 4|8]`.

MODEL is a model name or its folder models/<m>: runs the codegen step (artifacts/<m>/codegen/,
checks.json, record.json) for every all-cpu deployment. With --split, generates the C code of
one split deployment folder into --out without the checks.
Exit status: 0 every check passed or did not apply, 1 a check failed, 2 bad input.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from pipeline.diagnostics import PipelineError
from pipeline.evidence.checks import Verdict, results_document

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2


def model_and_root(text: str) -> tuple[str, Path]:
    """A model name or models/<m> folder -> (model, project root)."""
    path = Path(text)
    if path.is_dir() and (path / "deploy.yaml").is_file():
        return path.resolve().name, path.resolve().parents[1]
    return text, Path(".")


def print_results(results: list[Any], as_json: bool) -> int:
    if as_json:
        print(json.dumps(results_document(results), indent=2, sort_keys=True))
    else:
        for r in results:
            line = f"{r.verdict.value:8} {r.check_id:20} {r.subject}"
            print(line + (f": {r.reason}" if r.reason else ""))
    return EXIT_FAILED if any(r.verdict is Verdict.FAIL for r in results) else EXIT_OK


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "codegen", help="generate C code for the CPU items of a model's deployments and check it",
        description="Generate C99 code (one file per item, static memory, one function per NNEF instruction) "
                    "for every deployment whose items are all cpu, then check it: static properties, trace to the "
                    "NNEF instructions and weights, compilation under the qualified flags.")
    parser.add_argument("model", nargs="?", metavar="MODEL", help="model name or models/<m> folder")
    parser.add_argument("--lanes", type=int, choices=(4, 8), default=None,
                        help="float32 lanes of the generated vectors (default 8: AVX2 hosts; 4: SSE2/NEON)")
    parser.add_argument("--split", metavar="DIR", help="a split deployment folder (plan.json, schedule.json, items)")
    parser.add_argument("--export", metavar="DIR", help="the export folder holding the tensor files (with --split)")
    parser.add_argument("--out", metavar="DIR", help="output folder (with --split)")
    parser.add_argument("--json", action="store_true", help="print the check results as JSON")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pipeline.codegen.c.generate import DEFAULT_LANES, generate_deployment
    from pipeline.codegen.deployment import load_deployment
    from pipeline.codegen.step import run_codegen_step

    lanes = args.lanes or DEFAULT_LANES
    try:
        if args.split:
            if not (args.export and args.out):
                print("error: --split needs --export and --out", file=sys.stderr)
                return EXIT_BAD_INPUT
            generated = generate_deployment(load_deployment(args.split, args.export, "."), args.out, lanes=lanes)
            print(f"{len(generated.files)} files written to {args.out}")
            return EXIT_OK
        if not args.model:
            print("error: give a model (or --split)", file=sys.stderr)
            return EXIT_BAD_INPUT
        model, root = model_and_root(args.model)
        return print_results(run_codegen_step(model, root, lanes=lanes), args.json)
    except (PipelineError, OSError, KeyError) as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT

"""`python -m pipeline split PATH [--deploy deploy.yaml] [--deployment NAME]... [--out DIR] [--execute N]`.

PATH is a model folder (models/<m>: its deploy.yaml, its export under
artifacts/<m>/export/), an export folder holding graph.nnef, or an NNEF file. With a model
folder and neither --out nor --deployment, it runs the `split:<m>` step of doit
(artifacts/<m>/split/, checks.json, record.json). Otherwise it writes DIR/<deployment>/
(item files, plan.json, schedule.json, trace-interpreter.json) and DIR/checks.json.

--execute N runs the executable split semantics on N seeded vectors (default: the spec's
validation.vectors; 0 skips it, the execution check is then `not run`).
Exit status: 0 every check passed or did not apply, 1 a check failed, 2 bad input (a
spec or allocation error with its YAML key path, a missing or failing description).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from pipeline.files.atomic import write_json
from pipeline.project.deploy import load_deploy
from pipeline.diagnostics import PipelineError
from pipeline.ledger.checks import Verdict, results_document
from pipeline.project.layout import step_dir
from pipeline.terminal import EXIT_FAILED, EXIT_OK, fail_usage, report_error, say


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "split",
        help="split a description over the items of its deployments (graphitem files, plan, schedule)",
        description="Split an NNEF description over hardware/software items as deploy.yaml says, write one "
                    "graphitem file per item with plan.json and schedule.json, and verify the split (checker, "
                    "union of instructions, Khronos reading, bit-identical execution as communicating threads).",
    )
    parser.add_argument("path", metavar="MODEL_DIR_OR_GRAPH",
                        help="models/<m> (uses artifacts/<m>/export), an export folder or an NNEF file")
    parser.add_argument("--deploy", metavar="deploy.yaml", help="deployment spec (default: <model folder>/deploy.yaml)")
    parser.add_argument("--deployment", metavar="NAME", action="append",
                        help="split only this deployment (repeatable; default: all)")
    parser.add_argument("--out", metavar="DIR", help="output folder (default for a model folder: artifacts/<m>/split)")
    parser.add_argument("--execute", type=int, metavar="N", help="input vectors for the split execution (0: skip)")
    parser.add_argument("--seed", type=int, metavar="S", help="seed of the vectors (default: the spec's)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.set_defaults(func=run)


def _print(results: list[Any], summaries: list[dict[str, Any]] | None, as_json: bool) -> None:
    if as_json:
        document = results_document(results)
        if summaries is not None:
            document["deployments"] = summaries
        json.dump(document, sys.stdout, indent=2, sort_keys=True)
        sys.stdout.write("\n")
        return
    for summary in summaries or []:
        say(f"{summary['deployment']}: {summary['items']} item(s), {summary['sync_variables']} sync variable(s), "
              f"{summary['bytes']} bytes exchanged per inference")
    for result in sorted(results, key=lambda r: (r.subject, r.check_id)):
        reason = f": {result.reason}" if result.reason else ""
        say(f"  {result.subject} {result.check_id}: {result.verdict.value}{reason}")


def run(args: argparse.Namespace) -> int:
    from pipeline.split.exported import load_exported
    from pipeline.split.step import run_split_step, split_to_directory, summary

    if args.execute is not None and args.execute < 0:
        return fail_usage("--execute must be >= 0")
    path = Path(args.path)
    model_folder = path.is_dir() and (path / "deploy.yaml").is_file() and not (path / "graph.nnef").is_file()
    try:
        if model_folder and args.out is None and args.deployment is None and args.deploy is None and args.seed is None:
            results = run_split_step(path.name, ".", vectors=args.execute)
            _print(results, None, args.json)
            return EXIT_FAILED if any(r.verdict is Verdict.FAIL for r in results) else EXIT_OK
        deploy = args.deploy or (str(path / "deploy.yaml") if model_folder else None)
        if deploy is None:
            return fail_usage("--deploy is required unless PATH is a model folder holding deploy.yaml")
        if args.out is None and not model_folder:
            return fail_usage("--out is required unless PATH is a model folder")
        spec = load_deploy(deploy)
        source = step_dir(path.name, "export") if model_folder else path
        out = Path(args.out) if args.out else step_dir(path.name, "split")
        exported = load_exported(source)
        if exported.model is None:   # outside a project nothing names the exported model: said, not assumed
            say(f"note: the spec's model '{spec.model}' is not compared with the export: "
                  f"{Path(source).as_posix()} holds no record.json naming its model (exported outside a project); "
                  "its inputs, shapes and types are compared", file=sys.stderr)
        outcomes = split_to_directory(exported, spec, out, deployments=args.deployment, vectors=args.execute,
                                      seed=args.seed)
    except PipelineError as exc:
        return report_error(exc)
    results = [r for outcome in outcomes for r in outcome.results]
    write_json(out / "checks.json", results_document(results))
    _print(results, summary(outcomes), args.json)
    return EXIT_FAILED if any(r.verdict is Verdict.FAIL for r in results) else EXIT_OK

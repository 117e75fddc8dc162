"""`python -m pipeline nvdla golden DIR...`: NVDLA golden cases through the whole NVDLA path.

One line per case: `exact`, `within <bound>` or `fail` with the first differing element.
Exit status: 0 no case failed, 1 a case failed, 2 bad input (no case found, unreadable case).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from pipeline.diagnostics import PipelineError
from pipeline.terminal import EXIT_FAILED, EXIT_OK, fail_usage, report_error

EMULATOR_MODES = ("ideal", "hw-approx")  # pipeline.execute.nvdla.emulator.MODES, without importing numpy here


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "nvdla", help="NVDLA loadables: run hardware-model golden cases through export, legalization, "
                      "mapping, loadable, validator and emulator",
        description="`nvdla golden DIR...`: every <id>_<Op>.onnx/.pgm/.dimg triple in DIR (or its sub-folders) "
                    "is exported, legalized for nv_full FP16, mapped, written as a loadable, validated and "
                    "emulated; the output is compared with the hardware-model dump. The verdicts are emulated: "
                    "no NVDLA hardware ran.")
    parser.add_argument("action", choices=["golden"])
    parser.add_argument("dirs", nargs="+", metavar="DIR")
    parser.add_argument("--mode", default="ideal", choices=EMULATOR_MODES,
                        help="emulator mode: ideal (float32 in every unit, FP16 at unit boundaries) or hw-approx "
                             "(the NVDLA C model's CMAC/CACC, SDP, PDP and CDP arithmetic); docs/codegen-nvdla.md")
    parser.add_argument("--out", type=Path, help="write each case's loadable (<case>.nvdla) and debug table "
                                                 "(<case>.debug.json) into this folder")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pipeline.execute.nvdla.golden import case_files, run_case

    folders = [Path(d) for d in args.dirs]
    missing = [str(f) for f in folders if not f.is_dir()]
    if missing:
        return fail_usage(f"not a folder: {', '.join(missing)}")
    cases = case_files(folders)
    if not cases:
        return fail_usage("no <id>_<Op>.onnx/.pgm/.dimg case in the given folders")
    failed = 0
    for path in cases:
        try:
            result = run_case(path, args.mode, args.out)
        except PipelineError as error:
            print(f"{path.stem} fail: refused: {error.code} {error.message}")
            failed += 1
            continue
        except (OSError, ValueError) as error:
            return report_error(PipelineError("COMPARE-E010", f"{path}: {error}"))
        print(result.line)
        failed += result.verdict == "fail"
    return EXIT_FAILED if failed else EXIT_OK

"""Timing of the evidence builder on a fake project of realistic size.

    .venv/bin/python benchmarks/evidence_bench.py [--models 4] [--weights-mb 12] [--files 30]

Builds a temporary tree (shipped requirement set; per model: every step of the chain with
`--files` artifacts and `--weights-mb` of tensor data under export/, checks.json and
record.json from the real APIs; ~6 registered checks per step), then times recording,
the trace matrix, each package, the reports and the package verification. Nothing is written
outside the temporary folder.
"""

from __future__ import annotations

import argparse
import random
import shutil
import tempfile
import time
from pathlib import Path

from pipeline.files.atomic import write_bytes, write_json, write_text
from pipeline.ledger import checks
from pipeline.evidence.build import build_model_package, build_reports
from pipeline.ledger.checks import CheckResult, Verdict, register_check, results_document
from pipeline.evidence.matrix import build_matrix
from pipeline.evidence.package import verify_package
from pipeline.ledger.records import record_step
from pipeline.ledger.requirements import load_requirements
from pipeline.project.layout import STEPS, checks_path

REPO = Path(__file__).resolve().parents[1]
CHECKS_PER_STEP = 6


def register(requirements: list[str]) -> None:
    checks.CHECK_MODULES = ("pipeline.evidence.selfchecks",)
    rng = random.Random(1)
    for step in STEPS:
        for index in range(CHECKS_PER_STEP):
            register_check(f"{step}.bench{index}", f"bench check {index}", step, rng.sample(requirements, 2))


def make_tree(root: Path, models: int, weights_mb: float, files: int) -> float:
    shutil.copytree(REPO / "requirements", root / "requirements", ignore=shutil.ignore_patterns("*.lock.json"))
    started = time.perf_counter()
    for m in range(models):
        model = f"model{m}"
        rng = random.Random(model)
        write_bytes(root / f"models/{model}/model.onnx", rng.randbytes(int(weights_mb * 2**20)))
        write_text(root / f"models/{model}/deploy.yaml", "items: [CPU, GPU]\n")
        previous = [f"models/{model}/model.onnx"]
        for step in STEPS:
            folder = root / f"artifacts/{model}/{step}"
            written = []
            for index in range(files):
                name = folder / f"out{index:03d}.txt"
                write_text(name, f"{model} {step} {index}\n" * 50)
                written.append(name.relative_to(root).as_posix())
            if step == "export":
                per = int(weights_mb * 2**20) // 8
                for index in range(8):
                    write_bytes(folder / f"weights/w{index}.dat", rng.randbytes(per))
            results = [
                CheckResult(f"{step}.bench{i}", model, Verdict.PASS if i else Verdict.NOT_RUN, "" if i else "no GPU", read=previous[:1], written=written[:3])
                for i in range(CHECKS_PER_STEP)
            ]
            write_json(checks_path(model, step, root), results_document(results))
            record_step(model, step, inputs=previous, command=["python", "-m", "pipeline", step], root=root)
            previous = written[:2]
    return time.perf_counter() - started


def timed(label: str, func, *args, **kwargs):  # type: ignore[no-untyped-def]
    started = time.perf_counter()
    value = func(*args, **kwargs)
    print(f"{label:<44} {time.perf_counter() - started:8.3f} s")
    return value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", type=int, default=4)
    parser.add_argument("--weights-mb", type=float, default=12.0)
    parser.add_argument("--files", type=int, default=30)
    args = parser.parse_args()
    requirements = [r.id for r in load_requirements(REPO) if r.level != "SYS"]
    register(requirements)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        seconds = make_tree(root, args.models, args.weights_mb, args.files)
        size = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
        count = sum(1 for p in root.rglob("*") if p.is_file())
        print(f"tree: {args.models} models, {count} files, {size / 2**20:.1f} MiB; {len(checks._REGISTRY)} checks")
        print(f"{'writing the tree incl. record_step (all steps)':<44} {seconds:8.3f} s")
        timed("trace matrix, all models (re-hashes all)", build_matrix, root)
        packages = []
        for m in range(args.models):
            packages.append(timed(f"package model{m} (build + write + verify)", build_model_package, f"model{m}", root))
        timed("reports (html, csv, md, json, junit)", build_reports, root)
        timed("rebuild package model0 (reproducibility)", build_model_package, "model0", root)
        report = timed("verify_package model0", verify_package, packages[0].path)
        assert report.ok and packages[0].result.verdict is Verdict.PASS
        zipped = sum(p.path.stat().st_size for p in packages)
        html = (root / "reports/trace-matrix.html").stat().st_size
        print(f"packages: {zipped / 2**20:.1f} MiB in total; trace-matrix.html {html / 1024:.0f} KiB")


if __name__ == "__main__":
    main()

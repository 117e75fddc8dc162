"""CPU time and peak memory of the export step on two 5 M-parameter networks (issue 29's goal:
under 30 s of CPU and under 1 GB), against onnxruntime running the same 100 validation vectors.

    .venv/bin/python benchmarks/big_export_bench.py [--models efficientnet_b0 regnet_x_400mf] [--onnx PATH ...]

Each network (benchmarks/big_models.py, 64x64, or an ONNX file given with --onnx, e.g. a torchvision
export) is written into a scratch project with a deploy.yaml of 100 validation vectors, and the
export step (pipeline.export.step: conversion, checks, validation against onnxruntime, the enclosure
of the exact result on 20 vectors, the error bounds on 3 while they discriminate) runs in a fresh process, whose
CPU time (user + system) and peak resident memory are read from getrusage. The peer, in another
fresh process of the same run: onnxruntime loading the model and running the 100 vectors. Prints a
table with the ratio and whether each goal is met; writes nothing outside its scratch folder.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CPU_GOAL_S = 30.0
MEMORY_GOAL_MB = 1024.0


USAGE = """
import json, resource
own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"cpu_s": own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime,
                  "maxrss_mb": max(own.ru_maxrss, kids.ru_maxrss) / 1024.0}))
"""


def _child_usage(code: str, cwd: Path) -> dict[str, object]:
    """Run `code` in a fresh Python: its own CPU seconds (and its children's) and peak resident MB,
    read by the child itself (getrusage of a parent's children keeps the largest child's peak)."""
    done = subprocess.run([sys.executable, "-c", code + USAGE], cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-2000:])
    lines = done.stdout.strip().splitlines()
    return {**json.loads(lines[-1]), "out": "\n".join(lines[:-1])}


EXPORT = """
import sys; sys.path.insert(0, {root!r})
from pipeline.export.step import run_export_step
results = run_export_step({name!r}, ".")
print(";".join(f"{{r.check_id}}={{r.verdict.value}}" for r in results))
"""

PEER = """
import sys; sys.path.insert(0, {root!r})
import onnx
from pipeline.project.deploy import load_deploy
from pipeline.numerics.onnx_runner import reference_runner
from pipeline.numerics.vectors import draw_vectors
spec = load_deploy("models/{name}/deploy.yaml")
runner = reference_runner(onnx.load("models/{name}/model.onnx"))
for vector in draw_vectors(spec.inputs, spec.validation.vectors, spec.validation.seed):
    runner.run(vector)
"""


def _project(folder: Path, name: str, onnx_path: Path | None) -> int:
    from benchmarks import big_models

    models = folder / "models" / name
    (folder / "requirements").symlink_to(ROOT / "requirements")
    if onnx_path is None:
        return big_models.write_model(name, models)
    import onnx

    models.mkdir(parents=True)
    shutil.copy(onnx_path, models / "model.onnx")
    model = onnx.load(str(onnx_path))
    side = model.graph.input[0].type.tensor_type.shape.dim[-1].dim_value
    (models / "deploy.yaml").write_text(big_models.DEPLOY.format(name=name, side=side).replace(
        "  input:\n", f"  {model.graph.input[0].name}:\n"))
    return sum(int(__import__("math").prod(t.dims)) for t in model.graph.initializer)


def bench(name: str, onnx_path: Path | None) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="big-export-") as scratch:
        folder = Path(scratch)
        parameters = _project(folder, name, onnx_path)
        export = _child_usage(EXPORT.format(root=str(ROOT), name=name), folder)
        peer = _child_usage(PEER.format(root=str(ROOT), name=name), folder)
    return {"parameters": parameters, "export": export, "peer": peer}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="*", default=["efficientnet_b0", "regnet_x_400mf"])
    parser.add_argument("--onnx", nargs="*", default=[], type=Path,
                        help="ONNX files ([1, 3, side, side] input) to bench too")
    parser.add_argument("--json", action="store_true", help="print the measures as JSON too")
    args = parser.parse_args(argv)
    rows = [["network", "parameters", "export CPU s", "peak MB", "onnxruntime CPU s", "ratio", "goals (30 s, 1 GB)"]]
    measures = {}
    for name, path in [(m, None) for m in args.models] + [(p.stem, p) for p in args.onnx]:
        r = bench(name, path)
        measures[name] = r
        e, p = r["export"], r["peer"]
        met = e["cpu_s"] < CPU_GOAL_S and e["maxrss_mb"] < MEMORY_GOAL_MB
        rows.append([name, f"{r['parameters']:,}", f"{e['cpu_s']:.1f}", f"{e['maxrss_mb']:.0f}", f"{p['cpu_s']:.1f}",
                     f"{e['cpu_s'] / p['cpu_s']:.1f}x", "met" if met else "NOT MET"])
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        sys.stdout.write("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() + "\n")
    if args.json:
        sys.stdout.write(json.dumps(measures, indent=2, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""tools/gpu-check: every shipped model's GPU verdict in one call (docs/execute.md "GPU runs").

For each model under models/ (in parallel, one process per model, in a scratch project whose
models/ and requirements/ are links to this checkout): export, split, codegen and execute of the
deployments with cuda items only, then compare; each deployment's program runs on the GPU that
answers (pipeline/execute/gpu.py). One line per model:

    lenet5     pass  gpu: 0 ULP (100 vectors), traces 3/3 valid, MET median 41.2 us p99 44.0 us max 60.1 us; ...
               obtained target:gpu (NVIDIA H100 80GB HBM3, sm_90, driver 550.54.15)

`pass` only where compare.cuda_reference (and compare.traces) say pass on the GPU; `fail` on any
failure; `not run` where no GPU answers or the model did not finish within the limit.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor, wait
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

LIMIT_S = 450          # the whole call stays under 8 minutes


def _check_model(model: str, project: str) -> dict[str, Any]:
    """One model through the chain, its cuda deployments on the GPU; its line's facts."""
    from pipeline.codegen.step import run_codegen_step
    from pipeline.compare.step import run_compare_step
    from pipeline.project.deploy import load_deploy
    from pipeline.execute.step import run_execute_step
    from pipeline.export.step import run_export_step
    from pipeline.split.step import run_split_step

    started = time.monotonic()
    root = Path(project)
    spec = load_deploy(root / "models" / model / "deploy.yaml")
    cuda = [n for n, d in spec.deployments.items() if any(i.target == "cuda" for i in d.items)
            and not any(i.target == "nvdla" for i in d.items)]
    if not cuda:
        return {"model": model, "verdict": "not run", "reason": "no deployment with cuda items", "deployments": {}}
    os.chdir(root)
    run_export_step(model, ".")
    run_split_step(model, ".")
    run_codegen_step(model, ".", deployments=cuda)
    documents = run_execute_step(model, ".", deployments=cuda, instructions=False)
    results = {(r.subject, r.check_id): r for r in run_compare_step(model, ".")}
    facts: dict[str, Any] = {}
    for name in cuda:
        doc = documents.get(name, {})
        numbers = results.get((f"{model}/{name}", "compare.cuda_reference"))
        traces = results.get((f"{model}/{name}", "compare.traces"))
        met_path = root / "artifacts" / model / "compare" / name / "gpu" / "met.json"
        met = json.loads(met_path.read_text())["whole_network"] if met_path.is_file() else None
        facts[name] = {
            "gpu": (doc.get("gpu") or {}).get("run", doc.get("reason", "did not run")),
            "reference": numbers.verdict.value if numbers else "missing",
            "reference_reason": numbers.reason if numbers else "",
            "max_ulp": numbers.measured.get("gpu_max_ulp") if numbers else None,
            "vectors": numbers.measured.get("gpu_vectors") if numbers else None,
            "obtained": numbers.obtained.label() if numbers and numbers.obtained else "",
            "traces": traces.verdict.value if traces else "missing",
            "traces_valid": f"{traces.measured.get('valid')}/{traces.measured.get('traces')}" if traces else "",
            "met": met}
    verdicts = {f["reference"] for f in facts.values()} | {f["traces"] for f in facts.values()}
    verdict = "fail" if "fail" in verdicts else "pass" if verdicts == {"pass"} else "not run"
    return {"model": model, "verdict": verdict, "deployments": facts, "seconds": round(time.monotonic() - started, 1)}


def _line(result: dict[str, Any]) -> str:
    parts = []
    for name, f in sorted(result.get("deployments", {}).items()):
        if f["reference"] != "pass":
            parts.append(f"{name}: compare.cuda_reference {f['reference']}: {f['reference_reason'][:300]} ({f['gpu']})")
            continue
        met = f["met"]
        figures = (f"MET median {met['median_us']} us p99 {met['p99_us']} us max {met['max_us']} us" if met
                   else "no MET figures")
        parts.append(f"{name}: {f['max_ulp']} ULP ({f['vectors']} vectors), traces {f['traces_valid']} valid "
                     f"({f['traces']}), {figures}, obtained {f['obtained']}")
    said = "; ".join(parts) or result.get("reason", "")
    return f"{result['model']:<10} {result['verdict']:<8} {said}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tools/gpu-check", description=__doc__.splitlines()[0])
    parser.add_argument("--models", help="comma-separated models (default: every model under models/)")
    parser.add_argument("--keep", metavar="DIR", help="work in DIR and keep it (default: a temporary folder)")
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    parser.add_argument("--limit", type=float, default=LIMIT_S, help=f"seconds for all models (default {LIMIT_S})")
    args = parser.parse_args(argv)
    from pipeline.project.layout import model_names
    from pipeline.toolchain.nvcc import gpu_device, gpu_label, gpu_query

    models = args.models.split(",") if args.models else model_names(ROOT)
    unknown = sorted(set(models) - set(model_names(ROOT)))
    if unknown:
        print(f"unknown models: {', '.join(unknown)}", file=sys.stderr)
        return 2
    device = gpu_device()
    if device is None:
        answer = gpu_query()[1]
        for model in models:
            print(f"{model:<10} not run  no GPU answers here ({answer[:300]})")
        return 3
    print(f"GPU: {gpu_label(device)}")
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="gpu-check-"))
    work.mkdir(parents=True, exist_ok=True)
    for name in ("models", "requirements"):
        if not (work / name).exists():
            (work / name).symlink_to(ROOT / name)
    results: dict[str, dict[str, Any]] = {}
    with ProcessPoolExecutor(max_workers=max(1, min(len(models), os.cpu_count() or 1))) as pool:
        futures = {pool.submit(_check_model, m, str(work)): m for m in models}
        done, pending = wait(futures, timeout=args.limit)
        for future in done:
            model = futures[future]
            try:
                results[model] = future.result()
            except Exception as error:  # a step's coded error or a defect: this model fails, the others report
                results[model] = {"model": model, "verdict": "fail", "reason": f"{type(error).__name__}: {error}"[:600]}
        for future in pending:
            future.cancel()
            results[futures[future]] = {"model": futures[future], "verdict": "not run",
                                        "reason": f"did not finish within {args.limit:.0f} s"}
        if pending:
            for process in list(getattr(pool, "_processes", {}).values()):
                process.terminate()
    for model in models:
        print(_line(results[model]))
    if args.json:
        Path(args.json).write_text(json.dumps({"device": device, "results": [results[m] for m in models]}, indent=1,
                                              sort_keys=True))
    return 0 if {r["verdict"] for r in results.values()} == {"pass"} else 1


if __name__ == "__main__":
    sys.exit(main())

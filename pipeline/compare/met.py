"""Measured execution time (MET): statistics, the paper's table, budget, jitter, drift, baseline.

Method (docs/compare.md, LLR-MET-001): the execute step times met.runs inferences of the
uninstrumented build after 10 warm-up inferences, cycling through the validation vectors,
with CLOCK_MONOTONIC around each inference; the per-instruction times come from the
instrumented build's start/end events over the same campaign. Here:
    mean, min, max, std (population), median, p99 (nearest rank) in microseconds;
    budget    (HLR-MET-001)  max <= deploy.yaml met.budget_us
    jitter    (HLR-MET-002)  (p99 - median) / median <= max_jitter_ratio of HLR-MET-002
    drift     (HLR-MET-002)  median <= accepted median * (1 + max_drift_ratio); the accepted
                             values live in models/<m>/met-baseline.json, written only by
                             `python -m pipeline compare accept-met MODEL` (then committed)
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Mapping, Sequence

from pipeline.files.atomic import write_json
from pipeline.diagnostics import Location, PipelineError
from pipeline.files.readguard import InputRefused, read_input
from pipeline.project.layout import MET_BASELINE_FILE, model_dir
from pipeline.files.schema import require

BASELINE_FILE = MET_BASELINE_FILE


def stats_us(ns: Sequence[int]) -> dict[str, float]:
    """mean, min, max, std, median, p99 (microseconds) of nanosecond samples."""
    values = sorted(int(v) for v in ns)
    n = len(values)
    if n == 0:
        return {"runs": 0}
    mean = sum(values) / n
    std = math.sqrt(sum((v - mean) ** 2 for v in values) / n)
    median = values[n // 2] if n % 2 else (values[n // 2 - 1] + values[n // 2]) / 2
    p99 = values[max(0, math.ceil(0.99 * n) - 1)]
    return {"runs": n, "mean_us": round(mean / 1e3, 3), "min_us": round(values[0] / 1e3, 3),
            "max_us": round(values[-1] / 1e3, 3), "std_us": round(std / 1e3, 3),
            "median_us": round(median / 1e3, 3), "p99_us": round(p99 / 1e3, 3)}


def step_rows(step_timing: Mapping[str, Any], schedule: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per item step: the instruction it runs and its statistics."""
    rows = []
    for item, steps in sorted(step_timing["items"].items()):
        item_steps = schedule.get("items", {}).get(item, [])
        functions = {f["step"]: f for f in step_timing.get("functions", {}).get(item, []) if f.get("step") is not None}
        for entry in steps:
            k = entry["step"]
            step = item_steps[k] if k < len(item_steps) else {}
            kind = step.get("kind", "?")
            if kind == "compute":
                layer = f"{step.get('result')} ({step.get('op')})"
            elif kind == "send":
                layer = f"send {step.get('var')} ({step.get('value')})"
            elif kind == "get":
                layer = f"get {step.get('var')} ({step.get('result')})"
            else:
                layer = f"barrier {step.get('id')}"
            row = {"item": item, "step": k, "layer": layer, **stats_us(entry["ns"])}
            if k in functions:
                row["nnef_line"] = functions[k].get("nnef_line")
            rows.append(row)
    return rows


def markdown_table(model: str, deployment: str, whole: Mapping[str, Any], rows: Sequence[Mapping[str, Any]],
                   budget_us: float) -> str:
    """The paper's MET table layout: layer | mean | min | max, then the whole network."""
    items = sorted({r["item"] for r in rows})
    lines = [f"# MET {model}/{deployment}", "",
             f"{whole.get('runs', 0)} runs; whole network from the uninstrumented build, layers from the "
             "instrumented build (start/end events around each step).", ""]
    multi = len(items) > 1
    header = "| item | layer | mean (us) | min (us) | max (us) |" if multi else "| layer | mean (us) | min (us) | max (us) |"
    rule = "|---|---|---:|---:|---:|" if multi else "|---|---:|---:|---:|"
    lines += [header, rule]
    for r in rows:
        cells = [r["layer"], f"{r.get('mean_us', 0):.2f}", f"{r.get('min_us', 0):.2f}", f"{r.get('max_us', 0):.2f}"]
        lines.append("| " + " | ".join(([r["item"]] if multi else []) + cells) + " |")
    total = ["**whole network**", f"**{whole.get('mean_us', 0):.2f}**", f"**{whole.get('min_us', 0):.2f}**",
             f"**{whole.get('max_us', 0):.2f}**"]
    lines.append("| " + " | ".join(([""] if multi else []) + total) + " |")
    lines += ["", f"median {whole.get('median_us', 0):.2f} us, p99 {whole.get('p99_us', 0):.2f} us, "
              f"std {whole.get('std_us', 0):.2f} us; budget {budget_us:g} us.", ""]
    return "\n".join(lines)


def jitter_ratio(whole: Mapping[str, Any]) -> float:
    median = float(whole.get("median_us", 0.0))
    return (float(whole.get("p99_us", 0.0)) - median) / median if median > 0 else math.inf


MAX_BASELINE_BYTES = 16 * 1024 * 1024   # a reviewed baseline is a few KiB

def baseline_path(model: str, root: str | Path = ".") -> Path:
    return model_dir(model, root) / BASELINE_FILE


def load_baseline(model: str, root: str | Path = ".") -> dict[str, Any] | None:
    path = baseline_path(model, root)
    if not path.is_file():
        return None
    try:   # a user's file: not through a link, a regular file, bounded (pipeline/files/readguard.py)
        data = json.loads(read_input(path, max_bytes=MAX_BASELINE_BYTES).decode("utf-8"))
    except InputRefused as refused:
        raise PipelineError("COMPARE-E003", f"MET baseline refused: {refused.reason}", Location.in_file(path)) from None
    except ValueError as error:
        raise PipelineError("COMPARE-E003", f"MET baseline unreadable: {error}", Location.in_file(path)) from None
    return require(data, "met-baseline-1", "COMPARE-E003", path)


def accept_baseline(model: str, met_documents: Mapping[str, Mapping[str, Any]], root: str | Path = ".") -> Path:
    """Write models/<m>/met-baseline.json from the current met.json documents (the accept step)."""
    deployments = {}
    for name, doc in sorted(met_documents.items()):
        whole = doc["whole_network"]
        deployments[name] = {key: whole[key] for key in ("runs", "mean_us", "median_us", "p99_us", "max_us", "min_us")}
        deployments[name].update({"compiler": doc.get("compiler", ""), "flags": doc.get("flags", []),
                                  "host_isa": doc.get("host_isa", "")})
    return write_json(baseline_path(model, root), {"schema_version": 1, "model": model, "deployments": deployments})

"""The MET part of the compare step: a run's timing campaign judged on the timing platform, and its
instruction counts (one path for every input).

Figures measured anywhere else (the host when it is not the timing platform, an emulator, the GPU when
another platform is named) are reported with where they come from, never judged.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from pipeline.compare import checks
from pipeline.compare.checks import result
from pipeline.compare.context import Run
from pipeline.compare.met import jitter_ratio, load_baseline, markdown_table, step_rows, stats_us
from pipeline.compare.svg import histogram_svg
from pipeline.files.atomic import write_json, write_text
from pipeline.ledger.checks import CheckResult, Obtained, Verdict
from pipeline.project.deploy import DeploySpec
from pipeline.project.layout import model_dir, project_relative

PLATFORM_VARIABLE = "NNCERT_PLATFORM"  # the name of the timing platform this machine is (docs/compare.md)


def judge_met(run: Run, judged_on: tuple[Obtained | None, str] | None = None, measured_on: Obtained | None = None, *,
              run_dir: Path | None = None, run_doc: dict[str, Any] | None = None, folder: Path | None = None
              ) -> list[CheckResult]:
    """MET figures of one run, judged where they were measured on the timing platform: `judged_on`
    (where, and why not) for a run on a named platform, else the host rule (timing_platform).
    `measured_on`: where the figures come from (default the host), said by a `not run` too.
    `run_dir`, `run_doc`, `folder`: another campaign of the same deployment (the GPU's), else the run's."""
    model, deployment, subject, spec, params, root = run.model, run.name, run.subject, run.spec, run.params, run.root
    split_dir = run.split_dir
    run_dir, run_doc, folder = run_dir or run.run_dir, run.doc if run_doc is None else run_doc, folder or run.folder
    timing_path, steps_path = run_dir / "timing.json", run_dir / "step-timing.json"
    read = [project_relative(p, root) for p in (timing_path, steps_path) if p.is_file()]
    if not timing_path.is_file():
        reason = "the execute step measured no execution time"
        return [result(c, subject, Verdict.NOT_RUN, reason, read=read) for c in (checks.BUDGET, checks.STABILITY)]
    timing = json.loads(timing_path.read_text(encoding="utf-8"))
    whole = stats_us(timing["ns"])
    schedule = json.loads((split_dir / "schedule.json").read_text(encoding="utf-8"))
    rows = step_rows(json.loads(steps_path.read_text(encoding="utf-8")), schedule) if steps_path.is_file() else []
    budget = spec.met.budget_us
    jitter = jitter_ratio(whole)
    build = (run_doc.get("builds") or [{}])[0]
    baseline = load_baseline(model, root)
    base = (baseline or {}).get("deployments", {}).get(deployment)
    drift = None if not base else whole["median_us"] / base["median_us"] - 1.0
    document = {"schema_version": 1, "model": model, "deployment": deployment, "whole_network": whole,
                "steps": rows, "budget_us": budget, "jitter_ratio": round(jitter, 4),
                "max_jitter_ratio": params["max_jitter_ratio"], "drift_ratio": None if drift is None else round(drift, 4),
                "max_drift_ratio": params["max_drift_ratio"], "baseline": base,
                "compiler": run_doc.get("compiler", ""), "flags": build.get("flags", []),
                "host_isa": run_doc.get("host_isa", ""), "method": {
                    "warmup": timing.get("warmup"), "runs": timing.get("runs"), "clock": "CLOCK_MONOTONIC",
                    "whole_network": "uninstrumented build, start to end barrier of each inference",
                    "steps": "instrumented build, start/end events of each schedule step"}}
    written = [write_json(folder / "met.json", document),
               write_text(folder / "met.md", markdown_table(model, deployment, whole, rows, budget)),
               write_text(folder / "met-histogram.svg", histogram_svg(
                   [n / 1e3 for n in timing["ns"]], f"{model}/{deployment}: time per inference ({whole['runs']} runs)",
                   marks=[("median", whole["median_us"]), ("p99", whole["p99_us"]), ("budget", budget)]))]
    written_rel = [project_relative(p, root) for p in written]
    measured = {key: whole[key] for key in ("runs", "mean_us", "min_us", "max_us", "std_us", "median_us", "p99_us")}
    platform, why = judged_on or timing_platform(spec)
    if platform is None:
        figures = (f"measured here: max {whole['max_us']} us (budget {budget} us), median {whole['median_us']} us, "
                   f"jitter {jitter:.3f} (bound {params['max_jitter_ratio']})")
        reason = (f"{why}; figures: {figures.removeprefix('measured here: ')}" if judged_on
                  else f"host is not the timing platform ({why}); {figures}")
        return [result(checks.BUDGET, subject, Verdict.NOT_RUN, reason, {**measured, "budget_us": budget}, read,
                       written_rel, measured_on),
                result(checks.STABILITY, subject, Verdict.NOT_RUN, reason,
                       {**measured, "jitter_ratio": round(jitter, 4), "max_jitter_ratio": params["max_jitter_ratio"]},
                       read, written_rel, measured_on)]
    return _verdicts(model, deployment, subject, whole, budget, jitter, drift, base, params, read, written_rel,
                         measured, root, platform)


def timing_platform(spec: DeploySpec) -> tuple[Obtained | None, str]:
    """The target platform this run measures on, or None and why this host is not it.

    A machine is the timing platform of a model when deploy.yaml names one (`met.platform`)
    and the environment variable NNCERT_PLATFORM carries the same name: set it on the
    target, on the isolated core the inference is pinned to (docs/compare.md).
    """
    declared = spec.met.platform
    here = os.environ.get(PLATFORM_VARIABLE, "")
    if not declared:
        return None, "deploy.yaml declares no met.platform"
    if here != declared:
        return None, f"{PLATFORM_VARIABLE}={here or '(unset)'}, deploy.yaml met.platform={declared}"
    return Obtained.target(declared), ""


def _verdicts(model: str, deployment: str, subject: str, whole: dict[str, Any], budget: float, jitter: float,
              drift: float | None, base: dict[str, Any] | None, params: dict[str, float], read: list[str],
              written_rel: list[str], measured: dict[str, Any], root: Path, obtained: Obtained) -> list[CheckResult]:
    """Budget and stability verdicts of a campaign measured on the timing platform (`obtained`)."""
    out = []
    if whole["max_us"] <= budget:
        out.append(result(checks.BUDGET, subject, Verdict.PASS, "", {**measured, "budget_us": budget}, read, written_rel, obtained))
    else:
        out.append(result(checks.BUDGET, subject, Verdict.FAIL, f"max {whole['max_us']} us exceeds the budget {budget} us "
                          f"(median {whole['median_us']} us)", {**measured, "budget_us": budget}, read, written_rel, obtained))
    stability = {**measured, "jitter_ratio": round(jitter, 4), "max_jitter_ratio": params["max_jitter_ratio"],
                 "drift_ratio": None if drift is None else round(drift, 4), "max_drift_ratio": params["max_drift_ratio"]}
    jitter_ok = jitter <= params["max_jitter_ratio"]
    baseline_rel = project_relative(model_dir(model, root) / "met-baseline.json", root)
    if not jitter_ok:
        out.append(result(checks.STABILITY, subject, Verdict.FAIL, f"jitter (p99 - median) / median = {jitter:.3f} exceeds "
                          f"{params['max_jitter_ratio']} (median {whole['median_us']} us, p99 {whole['p99_us']} us)",
                          stability, read, written_rel, obtained))
    elif drift is None:
        out.append(result(checks.STABILITY, subject, Verdict.NOT_RUN,
                          f"jitter {jitter:.3f} <= {params['max_jitter_ratio']} passed, but the drift check did not run: "
                          f"no accepted baseline for {deployment} in {baseline_rel} (accept with "
                          f"`python -m pipeline compare accept-met {model}`)", stability, read, written_rel, obtained))
    elif drift > params["max_drift_ratio"]:
        out.append(result(checks.STABILITY, subject, Verdict.FAIL, f"median {whole['median_us']} us drifted by "
                          f"{drift:+.1%} from the accepted {base['median_us']} us (bound {params['max_drift_ratio']:.0%})",
                          stability, read + [baseline_rel], written_rel, obtained))
    else:
        out.append(result(checks.STABILITY, subject, Verdict.PASS, "", stability, read + [baseline_rel], written_rel, obtained))
    return out


def judge_path(subject: str, run_dir: Path, folder: Path, root: Path, check_id: str = checks.PATH) -> CheckResult:
    """met.path (or its platform twin): the same instruction count on every input the execute step counted."""
    path = run_dir / "instructions.json"
    if not path.is_file():
        return result(check_id, subject, Verdict.NOT_RUN, "the execute step counted no instructions")
    data = json.loads(path.read_text(encoding="utf-8"))
    read = [project_relative(path, root)]
    if data.get("status") != "ran":
        return result(check_id, subject, Verdict.NOT_RUN, data.get("reason", "instruction counting did not run"),
                      read=read)
    counts = {e["input"]: e["instructions"] for e in data["inputs"]}
    written = [project_relative(write_json(folder / "path.json", {"schema_version": 1, "tool": data.get("tool"),
                                                                  "counts": counts}), root)]
    measured = {"inputs": len(counts), "instructions": sorted(set(counts.values())), "tool": data.get("tool")}
    if len(counts) < 2:
        return result(check_id, subject, Verdict.NOT_RUN, "fewer than two inputs counted", measured, read, written)
    if len(set(counts.values())) != 1:
        first = next(iter(counts.items()))
        other = next((k, v) for k, v in counts.items() if v != first[1])
        return result(check_id, subject, Verdict.FAIL, f"instruction counts differ: {first[0]} {first[1]}, "
                      f"{other[0]} {other[1]}", measured, read, written)
    return result(check_id, subject, Verdict.PASS, "", measured, read, written)

"""The prove step: Frama-C's EVA on the C items of every deployment of a model (docs/prove.md).

artifacts/<m>/prove/<deployment>/eva.json   per item: the mode, the command, the alarms (file, line,
                                            property), the assertions' statuses, red statuses, CPU time
artifacts/<m>/prove/checks.json             prove.eva per deployment (pipeline/prove/checks.py)
artifacts/<m>/prove/record.json

An item holding the whole model (a one-item deployment) is analysed in `values` mode: its inputs
take every float32 of their deploy.yaml range, every float operation is checked for NaN, and the
outputs are asserted finite. Every other C item (an item of a split, and the cpu items of a
deployment with cuda or nvdla items, which receive what those compute) is analysed in `memory`
mode (any finite float in and received): memory safety and integer errors only
(pipeline/prove/driver.py). The cuda and nvdla items themselves are not C run by the host: a
deployment of one of them alone is `n/a`.

Time: each analysis is bounded by ITEM_LIMIT_S CPU seconds and a model by MODEL_BUDGET_S CPU seconds
(CPU time: the same bound on a loaded machine as on an idle one); an analysis that does not fit
says `not run` with the limit it reached, never pass.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from pipeline.diagnostics import Location, PipelineError
from pipeline.files.atomic import write_json
from pipeline.files.names import confined
from pipeline.ledger.checks import CheckResult, results_document
from pipeline.ledger.records import record_step
from pipeline.project.deploy import load_deploy
from pipeline.project.layout import checks_path, model_dir, project_relative, step_data, step_dir
from pipeline.project.targets import code_kind
from pipeline.prove import checks, eva
from pipeline.prove.driver import MEMORY, VALUES, Range, driver_source
from pipeline.toolchain import process

STEP = "prove"
EVA_FILE = "eva.json"
ITEM_LIMIT_S = 300.0       # CPU seconds of one item's analysis
MODEL_BUDGET_S = 480.0     # CPU seconds of a model's analyses together
MIN_LIMIT_S = 30.0


def _ranges(spec: Any) -> dict[str, Range]:
    return {name: Range.of(i.distribution.low, i.distribution.high) for name, i in spec.inputs.items()}


def _deployment(model: str, name: str, folder: Path, base: Path, ranges: dict[str, Range], item_limit: float,
                budget: float, spent: float) -> tuple[CheckResult, float]:
    """prove.eva of one generated C deployment (eva.json beside) and the CPU seconds spent on the model
    after it (`spent` before)."""
    subject = f"{model}/{name}"
    manifest = json.loads((folder / "build.json").read_text(encoding="utf-8"))
    items = [i for i in manifest["items"] if i.get("language", "c") == "c" and i.get("target", "cpu") == "cpu"]
    mode = VALUES if len(manifest["items"]) == 1 else MEMORY
    out = confined(step_dir(model, STEP, base), name)
    out.mkdir(parents=True, exist_ok=True)
    analyses = []
    read = [project_relative(folder / "build.json", base)] + [project_relative(folder / i["source"], base) for i in items]
    with tempfile.TemporaryDirectory(prefix="nnef-prove-") as tmp:
        for item in items:
            limit = min(item_limit, budget - spent)
            if limit < MIN_LIMIT_S:
                return checks.not_run(subject, f"the prove step's CPU budget for {model} was spent before item "
                                      f"{item['name']} ({spent:.0f} of {budget:.0f} CPU s: docs/prove.md \"Time\")"), spent
            try:
                analysis = eva.analyse(folder, manifest, item, mode, ranges, Path(tmp) / item["name"], limit)
            except PipelineError as error:
                reason = (f"EVA on item {item['name']} ran past {eva.WALL_FACTOR * limit:.0f} s of wall-clock time: "
                          "not proven" if isinstance(error, process.TimedOut)
                          else f"Frama-C on item {item['name']}: {error.code}: {error.message}")
                return checks.not_run(subject, reason[:2000], {"mode": mode, "cpu_limit_s": round(limit)}), budget
            spent += analysis.seconds
            if analysis.cpu_limited:
                return checks.not_run(subject, f"EVA on item {item['name']} stopped at its CPU limit of {limit:.0f} s: "
                                      "not proven (docs/prove.md \"Time\")", {"mode": mode, "cpu_limit_s": round(limit)}), spent
            source = (Path(tmp) / item["name"] / item["source"]).read_text(encoding="utf-8")
            driver = driver_source(manifest, item, mode, ranges)
            analyses.append((analysis, checks.expected_assertions([source, driver])))
    write_json(out / EVA_FILE, {"schema_version": 1, "model": model, "deployment": name, "mode": mode,
                                "frama_c": eva.version(),
                                "items": [dict(a.to_json(), command=a.command, assertions_expected=n)
                                          for a, n in analyses]})
    return checks.judge(subject, analyses, read, [project_relative(out / EVA_FILE, base)]), spent


def run_prove_step(model: str, root: str | os.PathLike[str] = ".", *, deployments: list[str] | None = None,
                   item_limit: float = ITEM_LIMIT_S, budget: float = MODEL_BUDGET_S) -> list[CheckResult]:
    """EVA on every C deployment of `model` (or those named); writes eva.json, checks.json, record.json."""
    base = Path(root)
    deploy_path = model_dir(model, base) / "deploy.yaml"
    spec = load_deploy(deploy_path)
    unknown = sorted(set(deployments or []) - set(spec.deployments))
    if unknown:
        raise PipelineError("PROVE-E001", f"no deployment {', '.join(unknown)} in {project_relative(deploy_path, base)} "
                            f"(it has {', '.join(spec.deployments)})",
                            Location.in_file(project_relative(deploy_path, base), "deployments"))
    out = step_dir(model, STEP, base)
    out.mkdir(parents=True, exist_ok=True)
    for child in out.iterdir():
        if child.is_dir() and child.name not in spec.deployments:
            shutil.rmtree(child)
    ranges = _ranges(spec)
    spent = 0.0
    results: list[CheckResult] = []
    codegen = step_dir(model, "codegen", base)
    for name, deployment in spec.deployments.items():
        if deployments is not None and name not in deployments:
            continue
        subject = f"{model}/{name}"
        kind = code_kind([i.target for i in deployment.items])
        if kind in ("cuda", "nvdla"):
            results.append(checks.no_c_items(subject, kind))
            continue
        folder = confined(codegen, "c", name)
        if not (folder / "build.json").is_file():
            results.append(checks.not_run(subject, "no generated C code (the codegen step did not produce build.json)"))
            continue
        if not eva.available():
            results.append(checks.not_run(subject, f"{eva.FRAMAC} is not installed (Debian package {eva.PACKAGE}: "
                                          "`bash tools/setup verify`, docs/setup.md)"))
            continue
        result, spent = _deployment(model, name, folder, base, ranges, item_limit, budget, spent)
        results.append(result)
    write_json(checks_path(model, STEP, base), results_document(results))
    record_step(model, STEP, inputs=[p for p in [deploy_path] if p.exists()] + step_data(codegen),
                command=["doit", f"prove:{model}"], root=base,
                parameters={"item_limit_s": item_limit, "budget_s": budget},
                extra_tools={"frama-c": eva.version()})
    return results

"""The split step: every deployment of a model -> item files, plan, schedule, checks.

For models/<m>/deploy.yaml and the checked export artifacts/<m>/export/, each deployment
D gets artifacts/<m>/split/D/ with <ITEM>.nnef (one graphitem each), plan.json,
schedule.json, trace-interpreter.json and, when it has rewrites, rewritten.nnef. Then
the validators run on the files written: the checker on all items together (zero
findings, multi-item rules), the union check, the Khronos reading of each item, the
executable split semantics against the unsplit interpreter on seeded vectors (the
shared rule of pipeline.numerics.vectors with the spec's seed), and the rewrite check. The results
go to artifacts/<m>/split/checks.json, then record.json.

`split_to_directory` is the same for one description and one spec outside the artifact
layout (the CLI).
"""

from __future__ import annotations

import logging
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from pipeline.files.atomic import write_json, write_text
from pipeline.project.deploy import DeploySpec, load_deploy
from pipeline.ledger.checks import CheckResult, not_applicable, results_document
from pipeline.ledger.records import record_step
from pipeline.project.layout import checks_path, export_data, model_dir, project_relative, step_dir
from pipeline.files.names import check_name, confined
from pipeline.diagnostics import Location, PipelineError
from pipeline.nnef import checks as nnef_checks
from pipeline.nnef.checker import check_paths
from pipeline.nnef.graph import Graph
from pipeline.semantics import interpret, interpret_batch
from pipeline.split import checks
from pipeline.split.allocation import Deployment, resolve_deployment
from pipeline.split.errors import SplitError
from pipeline.split.workers import compare_with_reference, trace_document
from pipeline.split.exported import Exported, check_spec_matches, load_exported, vectors_for
from pipeline.nnef.khronos import khronos_available
from pipeline.split.plain_nnef import compare_with_khronos, strip_extension
from pipeline.split.plan import (PLAN_FILE, REWRITTEN_FILE, SCHEDULE_FILE, TRACE_FILE, load_schedule,
                                 plan_document, schedule_document)
from pipeline.split.outputs import WHOLE_DLA_FILE
from pipeline.split.splitter import Split, split_deployment
from pipeline.split.union import check_union

log = logging.getLogger(__name__)

STEP = "split"


@dataclass
class DeploymentOutcome:
    """One deployment split and verified: the split, its folder, files written, results."""

    name: str
    split: Split
    directory: Path
    files: list[Path] = field(default_factory=list)
    results: list[CheckResult] = field(default_factory=list)


def write_split(split: Split, directory: Path, original: str) -> list[Path]:
    """Write the item files, plan.json, schedule.json (and rewritten.nnef); remove stale items."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    texts = split.texts()
    for stale in directory.glob("*.nnef"):
        if stale.stem not in texts and stale.name != REWRITTEN_FILE:
            stale.unlink()
    for item in split.items:
        written.append(write_text(confined(directory, item.file), texts[item.name]))
    rewritten = directory / REWRITTEN_FILE
    if split.deployment.rewrites:
        written.append(write_text(rewritten, split.deployment.text))
    elif rewritten.exists():
        rewritten.unlink()
    written.append(write_json(directory / PLAN_FILE, plan_document(split, original)))
    written.append(write_json(directory / SCHEDULE_FILE, schedule_document(split)))
    return written


def verify_split(subject: str, split: Split, directory: Path, exported: Exported,
                 vectors: Sequence[Mapping[str, np.ndarray]], reference: Callable[[int], Mapping[str, np.ndarray]],
                 variables: Mapping[str, np.ndarray], root: Path) -> tuple[list[CheckResult], Path | None]:
    """Run every split check on the files in `directory`; also write the interpreter trace."""
    deployment = split.deployment
    item_files = [directory / item.file for item in split.items]
    rel = lambda p: project_relative(p, root)  # noqa: E731
    read = [rel(p) for p in item_files]
    export_graph = rel(exported.file)
    report = check_paths(item_files, profile="certification", tensors=True, tensor_dir=exported.directory)
    results = [checks.items_checked_result(subject, report.findings, len(item_files), read + [export_graph])]
    results += nnef_checks.verdicts(report.findings, subject, [nnef_checks.MULTI_ITEM], read, [])
    items_ok = report.ok and len(report.graphs) == len(item_files)
    source = _source_graph(deployment, directory, exported)  # the description split, re-read from its file
    source_read = [rel(directory / REWRITTEN_FILE)] if deployment.rewrites else [export_graph]
    if not items_ok:
        results.append(checks.not_run(checks.UNION, subject, "the item files do not check", read))
    elif source is None:
        results.append(checks.not_run(checks.UNION, subject, f"{source_read[0]} does not check", read + source_read))
    else:
        results.append(checks.union_result(subject, check_union(source, report.graphs), read + source_read))
    if khronos_available():
        differences = {}
        for item, path in zip(split.items, item_files):
            differences[item.name] = compare_with_khronos(strip_extension(path.read_text(encoding="utf-8"), str(path)))
        results.append(checks.khronos_result(subject, differences, read))
    else:
        results.append(checks.khronos_result(subject, None, read))
    trace_path: Path | None = None
    schedule_path = directory / SCHEDULE_FILE
    exec_read = read + [rel(schedule_path), rel(exported.directory)]
    if not items_ok:
        results.append(checks.not_run(checks.EXECUTION, subject, "the item files do not check", exec_read))
    elif not vectors:
        results.append(checks.not_run(checks.EXECUTION, subject, "no input vectors requested (0)", exec_read))
    else:
        try:
            schedule = load_schedule(schedule_path)
            by_item = {g.item: g for g in report.graphs}
            graphs = [by_item[item.name] for item in split.items]
            comparison = compare_with_reference(graphs, schedule, reference, vectors, variables)
            trace_path = write_json(directory / TRACE_FILE, trace_document(comparison.traces[0]))
            results.append(checks.execution_result(subject, comparison, schedule.sync, exec_read, [rel(trace_path)]))
        except Exception as error:  # noqa: BLE001 - any failure of the split execution is a verdict
            log.warning("%s: split execution failed: %s", subject, error)
            results.append(checks.execution_error(subject, error, exec_read))
    if deployment.rewrites and vectors and source is not None:
        results.append(checks.rewrite_result(
            subject, source, reference, lambda g, i: interpret(g, vectors[i], variables), len(vectors),
            len(deployment.rewrites), [rel(directory / REWRITTEN_FILE), export_graph]))
    elif deployment.rewrites:
        reason = "no input vectors requested (0)" if not vectors else f"{source_read[0]} does not check"
        results.append(checks.not_run(checks.REWRITE, subject, reason, source_read))
    return results, trace_path


def _source_graph(deployment: Deployment, directory: Path, exported: Exported) -> Graph | None:
    """The description the items were split from, as the checker reads it from its file."""
    if not deployment.rewrites:
        return exported.graph
    report = check_paths([directory / REWRITTEN_FILE], profile="certification", tensors=True,
                         tensor_dir=exported.directory)
    return report.graphs[0] if report.ok and len(report.graphs) == 1 else None


class _References:
    """Unsplit interpreter outputs per vector, computed once and shared by all deployments."""

    def __init__(self, exported: Exported, vectors: Sequence[Mapping[str, np.ndarray]],
                 variables: Mapping[str, np.ndarray]) -> None:
        self.exported, self.vectors, self.variables = exported, vectors, variables
        self.cache: dict[int, Mapping[str, np.ndarray]] = {}

    def __call__(self, index: int) -> Mapping[str, np.ndarray]:
        if not self.cache:   # all vectors at once: interpret_batch gives interpret's bits, stacked
            self.cache = dict(enumerate(interpret_batch(self.exported.graph, self.vectors, self.variables)))
        return self.cache[index]


def split_to_directory(exported: Exported, spec: DeploySpec, out: Path, *, deployments: Sequence[str] | None = None,
                       vectors: int | None = None, seed: int | None = None, root: Path | None = None,
                       subject_prefix: str | None = None) -> list[DeploymentOutcome]:
    """Split `exported` for each deployment of `spec` (all, or those named) into out/<deployment>/.

    `vectors` (default: the spec's validation.vectors) seeded vectors by the shared rule, seed
    `seed` (default: the spec's validation.seed). Raises DeployError / SplitError for bad
    input (an allocation naming an unknown result, a rewrite that does not apply); check
    failures are results, not exceptions.
    """
    base = root or Path(".")
    check_spec_matches(spec, exported)   # before anything is written
    vectors = spec.validation.vectors if vectors is None else vectors
    names = list(deployments) if deployments is not None else list(spec.deployments)
    resolved: list[Deployment] = []
    for name in names:
        resolved.append(resolve_deployment(spec, name, exported.graph, followers=exported.followers))
    variables = exported.variables()
    inputs = vectors_for(spec, exported.graph, exported.input_names, vectors,
                         spec.validation.seed if seed is None else seed) if vectors else []
    reference = _References(exported, inputs, variables)
    legalized = {deployment.name: legalize_nvdla_items(deployment, variables, inputs[0] if inputs else None)
                 for deployment in resolved}  # refuse before writing anything
    prefix = subject_prefix if subject_prefix is not None else spec.model
    outcomes = []
    for deployment in resolved:
        directory = confined(out, deployment.name)
        split = split_deployment(deployment)
        original = REWRITTEN_FILE if deployment.rewrites else \
            Path(os.path.relpath(exported.file.resolve(), directory.resolve())).as_posix()
        files = write_split(split, directory, original)
        for item, legal in legalized[deployment.name].items():
            files.append(write_json(confined(directory, f"{item}.nvdla-legalization.json"), legalization_document(legal)))
        results, trace = verify_split(f"{prefix}/{deployment.name}", split, directory, exported, inputs, reference,
                                      variables, base)
        if trace is not None:
            files.append(trace)
        elif (directory / TRACE_FILE).exists():
            (directory / TRACE_FILE).unlink()
        outcomes.append(DeploymentOutcome(deployment.name, split, directory, files, results))
        log.info("split %s/%s: %d item(s), %d sync variable(s): %s", prefix, deployment.name, len(split.items),
                 len(split.sync_variables), ", ".join(f"{r.check_id} {r.verdict.value}" for r in results))
    return outcomes


def legalize_nvdla_items(deployment: Deployment, variables: Mapping[str, np.ndarray],
                         vector: Mapping[str, np.ndarray] | None) -> dict[str, Any]:
    """Legalize each nvdla item of `deployment` (SPLIT-E101 on what NVDLA cannot run) and, given one input
    vector, check every rewrite against the reference's tensors on it (SPLIT-E103). Item name -> Legalized."""
    from pipeline.split.allocation import computing
    from pipeline.split.nvdla_legalize import check_legalized, legalize

    found = {}
    for item in deployment.items:
        if item.target != "nvdla":
            continue
        ids = {id(op) for op in computing(deployment.graph) if deployment.item_of(op) == item.name}
        if not ids:
            continue
        legal = legalize(deployment.graph, dict(variables), "nv_full", only=ids, text=deployment.text)
        if vector is not None:
            check_legalized(legal, interpret(deployment.graph, vector, variables, keep=True))
        found[item.name] = legal
    return found


def whole_dla_fit(graph: Graph, variables: dict[str, np.ndarray], text: str) -> dict[str, Any]:
    """Whether the whole network would fit one DLA item (asked when no deployment has an nvdla item): the
    compare step explains its `n/a` with it; compare judges what split recorded, it does not legalize."""
    from pipeline.split.nvdla_legalize import legalize

    try:
        legalize(graph, variables, text=text)
    except PipelineError as error:
        return {"schema_version": 1, "evaluated": True, "fits": False, "code": error.code, "message": error.message}
    except Exception as error:  # noqa: BLE001 - a legalization defect must not stop the split it annotates
        return {"schema_version": 1, "evaluated": False, "why": f"{type(error).__name__}: {error}"}
    return {"schema_version": 1, "evaluated": True, "fits": True}


def legalization_document(legal: Any) -> dict[str, Any]:
    """What the legalization of one nvdla item did: every rewrite and every legalized operation, by NNEF line."""
    return {"schema_version": 1, "configuration": legal.config,
            "rewrites": [{"rule": r.rule, "before": r.before, "after": r.after, "nnef_line": r.line}
                         for r in legal.rewrites],
            "operations": [{"kind": op.kind, "output": op.output, "nnef_line": op.line, "rules": list(op.rules)}
                           for op in legal.ops]}


def run_split_step(model: str, root: str | os.PathLike[str] = ".", vectors: int | None = None) -> list[CheckResult]:
    """Split every deployment of `model`; write checks.json and record.json; return the results.

    `vectors`: input vectors per deployment for the execution checks (default: the spec's
    validation.vectors, with its seed)."""
    base = Path(root)
    check_name(model, "model folder name", Location.in_file(model_dir(model, base)))
    deploy_path = model_dir(model, base) / "deploy.yaml"
    export = step_dir(model, "export", base)
    out = step_dir(model, STEP, base)
    spec = load_deploy(deploy_path)
    inputs = [deploy_path]
    try:
        exported = load_exported(export)
    except SplitError as error:
        reason = f"{error.code}: {error.message}"
        results = [checks.not_run(check, f"{model}/{name}", reason) for name in spec.deployments for check in checks.ALL]
        results += [checks.not_run(nnef_checks.MULTI_ITEM.check_id, f"{model}/{name}", reason) for name in spec.deployments]
        out.mkdir(parents=True, exist_ok=True)
        write_json(checks_path(model, STEP, base), results_document(results))
        record_step(model, STEP, inputs=[d for d in [deploy_path] if d.exists()] + export_data(model, base),
                    command=["python", "-m", "pipeline", "split", project_relative(model_dir(model, base), base)], root=base)
        return results
    inputs += export_data(model, base)
    check_spec_matches(spec, exported)   # before a stale deployment folder is removed
    current = set(spec.deployments)
    if out.is_dir():
        for child in out.iterdir():
            if child.is_dir() and child.name not in current and (child / PLAN_FILE).exists():
                shutil.rmtree(child)
    count = spec.validation.vectors if vectors is None else vectors
    outcomes = split_to_directory(exported, spec, out, vectors=count, root=base)
    results = [r for outcome in outcomes for r in outcome.results]
    if any(item.target == "nvdla" for d in spec.deployments.values() for item in d.items):
        fit = {"schema_version": 1, "evaluated": False, "why": "a deployment of this model has an nvdla item"}
    else:
        fit = whole_dla_fit(exported.graph, exported.variables(), exported.file.read_text(encoding="utf-8"))
    write_json(out / WHOLE_DLA_FILE, fit)
    if not any(r.check_id == checks.REWRITE for r in results):  # the check applies to rewrites only
        results.append(not_applicable(checks.REWRITE, model, "no deployment of this model has a layer-parallel rewrite"))
    write_json(checks_path(model, STEP, base), results_document(results))
    command = ["python", "-m", "pipeline", "split", project_relative(model_dir(model, base), base)]
    record_step(model, STEP, inputs=inputs, command=command + ([] if vectors is None else ["--execute", str(count)]),
                parameters={"vectors": count, "seed": spec.validation.seed, "profile": "certification"}, root=base)
    return results


def summary(outcomes: Sequence[DeploymentOutcome]) -> list[dict[str, Any]]:
    """Counts per deployment (items, sync variables, bytes exchanged) for people."""
    return [{"deployment": o.name, "items": len(o.split.items), "sync_variables": len(o.split.sync_variables),
             "bytes": sum(s.bytes for s in o.split.sync_variables),
             "verdicts": {r.check_id: r.verdict.value for r in o.results}} for o in outcomes]

"""The `petri` step: verify the execution model of a model's description and of each split.

Reads artifacts/<m>/export/graph.nnef, and for each deployment of models/<m>/deploy.yaml
the splitter's artifacts/<m>/split/<deployment>/ (plan.json, schedule.json, the item
files) and the trace of the split step's executable semantics (trace-interpreter.json).
Writes artifacts/<m>/petri/: `<net>.pnml`, `<net>.dot` (and `<net>.svg` when Graphviz is
installed) for the original and each split, report.json (every analysis, its verdict,
counts and counterexample), checks.json, then the step's record. Missing upstream outputs
make the checks `not run` with the reason; unusable ones (a malformed plan, an item that
does not check) make them `fail`: the step itself never crashes on its inputs.
"""

from __future__ import annotations

import logging
from functools import partial
from pathlib import Path
from typing import Any

from pipeline.files.atomic import write_json
from pipeline.files.names import confined
from pipeline.project.deploy import DeployError, load_deploy
from pipeline.diagnostics import Location, PipelineError
from pipeline.ledger.checks import CheckResult, Verdict, results_document
from pipeline.ledger.records import record_step
from pipeline.project.layout import checks_path, model_dir, step_dir
from pipeline.petri import checks
from pipeline.petri.dot import dot_version, render_svg, write_dot
from pipeline.petri.load import load_graphs
from pipeline.petri.net import Net
from pipeline.petri.outcome import not_run
from pipeline.petri.plan import load_plan
from pipeline.petri.pnml import write_pnml
from pipeline.petri.schedule import Schedule, load_schedule
from pipeline.petri.trace import load_trace
from pipeline.split.plan import TRACE_FILE as SPLIT_TRACE_FILE
from pipeline.petri.verify import Loader, Verification, verify

log = logging.getLogger(__name__)

SCHEMA_VERSION = 1
REPORT_FILE = "report.json"  # also spelled in pipeline.petri.tasks (no step import when listing tasks)
GRAPH_FILE = "graph.nnef"
NET_SUFFIXES = (".pnml", ".dot", ".svg")
ORIGINAL = "original"


def _rel(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def deployments(model: str, root: Path) -> tuple[list[str], str]:
    """Deployment names from models/<m>/deploy.yaml, and a note when it cannot be read."""
    path = model_dir(model, root) / "deploy.yaml"
    if not path.is_file():
        return [], f"no {_rel(path, root)}"
    try:
        return list(load_deploy(path).deployments), ""
    except DeployError as exc:
        return [], f"{_rel(path, root)} is invalid: {exc}"


def trace_files(model: str, deployment: str, root: Path) -> list[Path]:
    """The traces of the executable split semantics (the split step's interpreter run).

    Traces of the generated code are replayed by the compare step (check compare.traces),
    which runs after the code; this step verifies the split before any code exists.
    """
    path = step_dir(model, "split", root) / deployment / SPLIT_TRACE_FILE
    return [path] if path.is_file() else []


def _write_net(verification: Verification, name: str, out: Path, root: Path) -> dict[str, Any]:
    pnml, dot, svg = (confined(out, f"{name}.{suffix}") for suffix in ("pnml", "dot", "svg"))
    write_pnml(verification.net, pnml)
    write_dot(verification.net, dot)
    note = render_svg(verification.net, dot, svg)
    files = {"pnml": _rel(pnml, root), "dot": _rel(dot, root), "svg": None if note else _rel(svg, root)}
    if note:
        files["svg_note"] = note
        log.info("%s: %s", name, note)
    return files


def verify_split(model: str, deployment: str, base: Path, original_net: Net | Loader | None
                 ) -> tuple[Verification, list[str]]:
    """The split's verification and the files it read; `original_net` is the exported description
    (its net, or a loader of it; None when it did not translate), unless plan.json names another.

    The items, the schedule, the traces and a plan's own original are handed to `verify` as
    loaders: it reads the items first and drops their graphs once translated, then reads the
    rest into the memory the graphs had (no graph is held beside the nets).
    (benchmarks/petri_bench.py measures this function.)
    """
    export = step_dir(model, "export", base) / GRAPH_FILE
    split = step_dir(model, "split", base) / deployment
    plan = load_plan(split / "plan.json")
    graphs = partial(load_graphs, plan.item_files, base)
    read = [_rel(split / "plan.json", base)] + [_rel(p, base) for p in plan.item_files]
    schedule_path = split / "schedule.json"
    if schedule_path.is_file():
        read.append(_rel(schedule_path, base))
    original: Any = original_net
    if plan.original is not None:
        original = partial(load_graphs, [plan.original], base) if plan.original.is_file() else None
        if plan.original.is_file():
            read.append(_rel(plan.original, base))
    elif original is not None:
        read.append(_rel(export, base))
    traced = trace_files(model, deployment, base)
    read.extend(_rel(path, base) for path in traced)

    def schedule_of_plan() -> Schedule | None:
        if not schedule_path.is_file():
            return None
        schedule = load_schedule(schedule_path)
        if schedule.sync != plan.sync:
            raise PipelineError("PETRI-E010", f"schedule.json says sync {schedule.sync!r}, plan.json says {plan.sync!r}",
                                Location.in_file(_rel(schedule_path, base)))
        return schedule

    verification = verify(graphs, label=deployment, original=original, schedule=schedule_of_plan,
                          traces=lambda: [load_trace(path) for path in traced], depth=plan.pipeline_depth, sync=plan.sync,
                          sources=[_rel(p, base) for p in plan.item_files], net_name=f"{model}.{deployment}")
    if not schedule_path.is_file():
        verification.analyses["schedule"] = not_run("schedule", f"no {_rel(schedule_path, base)} from the splitter")
    if original is None:
        missing = plan.original if plan.original is not None else export
        verification.analyses["equivalence"] = not_run("equivalence", f"no original description {_rel(missing, base)}")
    return verification, read


def run_petri_step(model: str, root: Path | str = ".") -> list[CheckResult]:
    """Verify the original and every split of `model`; write nets, report, results and the record."""
    base = Path(root)
    out = step_dir(model, "petri", base)
    out.mkdir(parents=True, exist_ok=True)
    export = step_dir(model, "export", base) / GRAPH_FILE
    results: list[CheckResult] = []
    nets: dict[str, Any] = {}
    inputs: list[Path] = []
    written_nets: set[str] = set()

    original_net: Net | None = None   # the exported description's net, for the splits' equivalence
    if not export.is_file():
        reason = f"no exported description {_rel(export, base)} (run export:{model})"
        results += checks.unavailable(model, reason, Verdict.NOT_RUN, split=False)
        nets[ORIGINAL] = {"not_run": reason}
    else:
        inputs.append(export)
        try:
            verification = verify(partial(load_graphs, [export], base), label=ORIGINAL, sources=[_rel(export, base)],
                                  net_name=f"{model}.{ORIGINAL}")
        except PipelineError as exc:
            results += checks.unavailable(model, f"bad input: {exc}", Verdict.FAIL, split=False, read=[_rel(export, base)])
            nets[ORIGINAL] = {"error": {"code": exc.code, "message": exc.message, "location": str(exc.location)}}
        else:
            files = _write_net(verification, ORIGINAL, out, base)
            written_nets.update(Path(f).name for f in (files["pnml"], files["dot"], files["svg"]) if f)
            nets[ORIGINAL] = {**verification.to_json(), "files": files}
            results += checks.results_for(verification, model, [_rel(export, base)],
                                          [files["pnml"], files["dot"]], split=False)
            original_net = verification.net
            original_net.memo.clear()   # what the original's own analyses kept
            del verification

    names, note = deployments(model, base)
    deploy_file = model_dir(model, base) / "deploy.yaml"
    if deploy_file.is_file():
        inputs.append(deploy_file)
    for deployment in names:
        subject = f"{model}/{deployment}"
        split = step_dir(model, "split", base) / deployment
        if not (split / "plan.json").is_file():
            reason = f"no split outputs {_rel(split / 'plan.json', base)} (run split:{model})"
            results += checks.unavailable(subject, reason, Verdict.NOT_RUN, split=True)
            nets[deployment] = {"not_run": reason}
            continue
        inputs.append(split)
        try:
            verification, read = verify_split(model, deployment, base, original_net)
        except PipelineError as exc:
            results += checks.unavailable(subject, f"bad input: {exc}", Verdict.FAIL, split=True,
                                          read=[_rel(split, base)])
            nets[deployment] = {"error": {"code": exc.code, "message": exc.message, "location": str(exc.location)}}
            continue
        inputs.extend(trace_files(model, deployment, base))
        files = _write_net(verification, deployment, out, base)
        written_nets.update(Path(f).name for f in (files["pnml"], files["dot"], files["svg"]) if f)
        nets[deployment] = {**verification.to_json(), "files": files}
        results += checks.results_for(verification, subject, read, [files["pnml"], files["dot"]], split=True)
        del verification   # its nets are written: not held while the next deployment is verified

    for stale in out.iterdir():
        if stale.suffix in NET_SUFFIXES and stale.name not in written_nets:
            stale.unlink()
    report_file = out / REPORT_FILE
    report = {"schema_version": SCHEMA_VERSION, "model": model, "nets": nets}
    if note:
        report["deployments_note"] = note
    write_json(report_file, report)
    for result in results:
        result.written.append(_rel(report_file, base))
    write_json(checks_path(model, "petri", base), results_document(results))
    graphviz = dot_version()
    record_step(model, "petri", inputs=inputs, command=["python", "-m", "doit", f"petri:{model}"],
                extra_tools={"graphviz": graphviz} if graphviz else None, root=base)
    log.info("petri %s: %d result(s), %d failing", model, len(results),
             sum(1 for r in results if r.verdict is Verdict.FAIL))
    return results

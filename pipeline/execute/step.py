"""The execute step: build and run every generated deployment of a model (docs/execute.md).

artifacts/<m>/execute/
    inputs/<input>.dat                 the N validation vectors ([N, *shape], pipeline.numerics.vectors rule)
    <deployment>/run.json              what ran: builds (compiler, flags), runs, status
    <deployment>/bin/nnef_run[_trace]  the executables that were run
    <deployment>/outputs/<output>.dat  outputs of the uninstrumented build on the N vectors
    <deployment>/trace-*.json          instrumented runs (trace-plain, trace-noise-<seed>), Petri format
    <deployment>/timing.json           MET campaign: ns of each of met.runs inferences (uninstrumented)
    <deployment>/step-timing.json      per step: ns of each inference of the campaign (instrumented)
    <deployment>/instructions.json     callgrind instruction counts of one inference per input
    <deployment>/coverage/             execute.coverage: robustness/<input>.dat, coverage.json (gcov's counts)
    checks.json, record.json

The step measures and records; pipeline/compare judges. A deployment of cuda items is run on
the host emulation (pipeline/execute/cuda.py: run.json status "emulated"). A mixed deployment
(cpu and cuda items: one C program whose cuda items are .cu files) runs through the same C path
with its cuda items built by g++ as the host emulation (nnef_cuda_emulate.h), once with blocks
and threads in order and once shuffled: run.json status "emulated" as well, never "ran";
instruction counts are not taken (an emulated launch loop says nothing about a GPU). A
deployment of one nvdla item alone runs on the NVDLA emulator (pipeline/execute/nvdla/run.py:
status "emulated", mode `ideal`); nvdla items next to other items (or several) are C proxies of
the program, each run of it served by one emulator server per nvdla item
(pipeline/execute/nvdla/server.py): status "emulated", no MET campaign, no instruction counts.
A deployment without generated code gets run.json with status "not run" and the reason.

A C deployment is built for its platform and run by its runner (pipeline/toolchain/platforms.py,
docs/execute.md "Platforms"): the host here, an emulator (status "emulated"), a board over SSH;
at most the platform's `vectors` and `met_runs`; without the platform's tools, status "not run"
naming the Debian packages. Where a GPU answers, deployments with cuda items also run on it
(pipeline/execute/gpu.py, run.json's `gpu` block).
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any, Callable, Mapping

from pipeline.files.atomic import write_json
from pipeline.files.names import confined
from pipeline.project.deploy import load_deploy
from pipeline.project.targets import code_kind
from pipeline.diagnostics import Location, PipelineError
from pipeline.ledger.checks import CheckResult, results_document
from pipeline.ledger.records import record_step
from pipeline.project.layout import BUILD_FILE, checks_path, model_dir, project_relative, step_data, step_dir
from pipeline.ledger.hashing import sha256_file
from pipeline.toolchain.cc import build_flags, compile_and_link, compiler_version, host_isa, isa_for
from pipeline.toolchain.platforms import (Platform, described, host_platform, missing_reason, missing_tools,
                                          resolve, runner_version)
from pipeline.toolchain.runners import session
from pipeline.codegen.program.items import NO_GENERATOR, emitter_for
from pipeline.execute.cuda import EMULATION, SHUFFLE_SEED, run_cuda_deployment
from pipeline.toolchain.nvcc import emulation_objects
from pipeline.execute.gpu import run_on_gpu
from pipeline.execute.nvdla.run import run_nvdla_deployment
from pipeline.execute.harness import run_harness, write_input_vectors
from pipeline.execute.instructions import UNDECODED_ISAS, valgrind_version
from pipeline.execute import sanitizers
from pipeline.execute import coverage as structural

from pipeline.execute.outputs import NOISE_SEEDS, RUN_FILE, STEP  # noqa: F401 (re-exported)
from pipeline.execute.campaign import (INSTRUCTIONS_FILE, NVDLA_NOT_MEASURED, PATH_VECTORS, SEED_VARIABLE,  # noqa: F401
                                       STEP_TIMING_FILE, TIMING_FILE, WARMUP, run_campaign, step_durations)

log = logging.getLogger(__name__)

DLA_TIMEOUT_VARIABLE, DLA_TIMEOUT_MS = "NNEF_DLA_TIMEOUT_MS", 30000   # per submission (pipeline/codegen/nvdla/proxy.py)


def code_folder(model: str, deployment: str, root: str | os.PathLike[str] = ".") -> Path:
    return confined(step_dir(model, "codegen", root), "c", deployment)


def run_folder(model: str, deployment: str, root: str | os.PathLike[str] = ".") -> Path:
    return confined(step_dir(model, STEP, root), deployment)


def codegen_objects(model: str, deployment: str, root: Path, lanes: int, sources: list[str],
                    platform: Platform | None = None) -> list[Path] | None:
    """The objects the codegen step compiled and judged (codegen.compile) for `deployment`, for the
    uninstrumented build to link, or None (compile from the sources) when it kept none or built
    them with another compiler or other flags. RUN-E004 when one is missing or its sha256 differs
    from status.json's: a stale or edited object is never linked."""
    status_path = step_dir(model, "codegen", root) / "status.json"
    if not status_path.is_file():
        return None
    entry = json.loads(status_path.read_text(encoding="utf-8")).get("deployments", {}).get(deployment) or {}
    record = entry.get("objects")
    if not isinstance(record, dict) or record.get("compiler") != compiler_version(platform=platform) \
            or record.get("flags") != build_flags(lanes, platform=platform)[0]:
        return None
    recorded = record.get("sources")
    if not isinstance(recorded, dict) or sorted(recorded) != sorted(sources):
        raise PipelineError("RUN-E004", f"status.json records objects of {sorted(recorded or [])}, build.json lists "
                            f"{sorted(sources)}: run the codegen step again",
                            Location.in_file(status_path, key_path=f"deployments.{deployment}.objects.sources"))
    objects = []
    for source in sources:      # build.json's order, the link order of a build from the sources
        item = recorded[source] if isinstance(recorded[source], dict) else {}
        path = confined(Path(root), *Path(str(item.get("object", ""))).parts)
        if not path.is_file() or sha256_file(path) != item.get("sha256"):
            raise PipelineError("RUN-E004", f"the object of {source} ({item.get('object')}) is missing or differs from "
                                "the one the codegen step recorded (status.json): run the codegen step again",
                                Location.in_file(status_path, key_path=f"deployments.{deployment}.objects.sources.{source}"))
        objects.append(path)
    return objects


def _not_runnable(model: str, deployment: str, target: Platform, code: Path, out: Path, root: Path
                  ) -> dict[str, Any] | None:
    """run.json of a deployment that cannot run here (written), or None: the platform's tools are missing,
    or the codegen step produced no C code (its reason, from codegen/status.json)."""
    manifest_path = code / BUILD_FILE
    absent = missing_tools(target)
    if absent and manifest_path.is_file():
        document = {"schema_version": 1, "model": model, "deployment": deployment, "status": "not run",
                    "reason": missing_reason(target, absent), "platform": target.to_json()}
        if out.is_dir():
            shutil.rmtree(out)
        write_json(out / RUN_FILE, document)
        return document
    if not manifest_path.is_file():
        reason = "no generated C code (codegen did not produce build.json)"
        codegen_status = step_dir(model, "codegen", root) / "status.json"
        if codegen_status.is_file():
            status = json.loads(codegen_status.read_text(encoding="utf-8")).get("deployments", {}).get(deployment)
            if status:
                reason = status.get("reason", reason)
        document = {"schema_version": 1, "model": model, "deployment": deployment, "status": "not run",
                    "reason": reason}
        write_json(out / RUN_FILE, document)
        return document
    return None


def _harness(inputs_dir: Path, vectors: int, nvdla_build: Path, dla_items: list[str]) -> Callable[..., Any]:
    """run_harness on the deployment's vectors, with an emulator server per nvdla item for each run
    (pipeline/execute/nvdla/server.py); the session, where the program runs, comes in the options."""

    def harness(binary: Path, outs: Path, **options: Any) -> Any:
        if not dla_items:
            return run_harness(binary, inputs_dir, outs, vectors, **options)
        from pipeline.execute.nvdla.server import server_logs, servers

        env = {**options.pop("env", {}), DLA_TIMEOUT_VARIABLE: str(DLA_TIMEOUT_MS)}
        with tempfile.TemporaryDirectory(prefix="nnef-dla-") as tmp:
            try:
                with servers(nvdla_build, dla_items, Path(tmp)) as channels:
                    return run_harness(binary, inputs_dir, outs, vectors, env={**env, **channels}, **options)
            except PipelineError as error:
                code = re.search(r"RUN-E05[3-6]", error.message)
                raise PipelineError(code.group(0) if code else error.code,
                                    f"{error.message}; emulator server log: {server_logs(Path(tmp))}"[:4000],
                                    error.location) from None

    return harness


def _builder(code: Path, out: Path, manifest: dict[str, Any], judged: list[Path] | None, target: Platform,
             emulated: list[Any]) -> Callable[..., Any]:
    """build(binary, trace, defines, sanitize=False, coverage=False): the deployment's program, linking
    codegen.compile's objects (`judged`) for the plain build; a mixed deployment's cuda items compiled for
    the host emulation (their objects appended to `emulated`)."""
    lanes, sources, cuda = int(manifest["lanes"]), list(manifest["sources"]), manifest.get("cuda")

    def build(binary: Path, trace: bool, defines: list[str], sanitize: bool = False, coverage: bool = False) -> Any:
        c_sources: list[str] = sources
        linked: list[str] = []
        checked = sanitize or coverage            # a check's own build (execute.sanitizers, execute.coverage)
        if judged is not None and not trace and not defines and not checked:
            c_sources, linked = [], [os.path.relpath(p, code) for p in judged]
        if not cuda:
            return compile_and_link(code, c_sources, binary, lanes, trace=trace, defines=defines, objects=linked,
                                    platform=target, sanitize=sanitize, coverage=coverage)
        objects = emulation_objects(code, cuda["sources"], binary.parent / "obj" / binary.name if checked
                                    else out / "obj" / binary.name, (["NNEF_TRACE"] if trace else []) + defines)
        if not checked:                           # a check's build is the check's, not run.json's
            emulated.append(objects)
        return compile_and_link(code, c_sources, binary, lanes, trace=trace, defines=defines, sanitize=sanitize,
                                coverage=coverage,
                                objects=linked + [os.path.relpath(p, code) for p in objects.outputs.values()],
                                libraries=["-lstdc++"])   # relative: no checkout path in run.json

    return build


def _build_programs(code: Path, out: Path, root: Path, manifest: dict[str, Any], judged: list[Path] | None,
                    target: Platform, capacity: int) -> tuple[Any, Any, list[dict[str, Any]]]:
    """The uninstrumented program (linking codegen.compile's objects when `judged` holds them) and the
    instrumented one (from the sources, tracing `capacity` inferences); a mixed deployment's cuda items
    are compiled for the host emulation; where valgrind cannot decode the host build's vector ISA, the
    program it counts (UNDECODED_ISAS). Returns the builds (the counted one or None) and run.json's `builds`."""
    lanes, sources, cuda = int(manifest["lanes"]), list(manifest["sources"]), manifest.get("cuda")
    emulated: list[Any] = []

    build = _builder(code, out, manifest, judged, target, emulated)
    plain = build(out / "bin" / "nnef_run", False, [])
    traced = build(out / "bin" / "nnef_run_trace", True, [f"NNEF_TRACE_INFERENCES={capacity}"])
    counted = None   # the program valgrind counts, where it cannot decode the plain one's vector ISA
    if target.is_host and not cuda and isa_for(lanes) in UNDECODED_ISAS:
        counted = compile_and_link(code, sources, out / "bin" / "nnef_run_count", lanes, platform=target,
                                   isa=UNDECODED_ISAS[isa_for(lanes)])
    builds = [{"binary": project_relative(b.binary, root), "command": b.command, "flags": b.flags, "defines": b.defines,
               "diagnostics": b.diagnostics} for b in (plain, traced) + ((counted,) if counted else ())]
    if counted is not None:
        builds[-1]["purpose"] = (f"instruction counts: valgrind decodes no {isa_for(lanes)} instruction; the same "
                                 f"sources built with the {UNDECODED_ISAS[isa_for(lanes)]} flags")
    if judged is not None:
        builds[0]["objects"] = {"compiled_by": "the codegen step's codegen.compile check (same compiler and flags; "
                                               "sha256 checked against artifacts/<m>/codegen/status.json)",
                                "files": [project_relative(p, root) for p in judged]}
    for objects in emulated:
        builds.append({"cuda_objects": [project_relative(p, root) for p in objects.outputs.values()],
                       "commands": [[Path(a).name if a.startswith("/") else a for a in c] for c in objects.commands],
                       "compiler": objects.version})
    return plain, traced, counted, builds


def _cuda_record(model: str, deployment: str, root: Path, inputs_dir: Path, vectors: int, runs: int, code: Path,
                 manifest: dict[str, Any], shuffled_dir: Path, output_names: list[str], dla_items: list[str]
                 ) -> dict[str, Any]:
    """run.json's part for a program with cuda items: the host emulation, and the GPU run where one is found."""
    return {"status": "emulated", "target": "mixed", "emulation": EMULATION, "shuffle_seed": SHUFFLE_SEED,
            "cuda_items": [i["name"] for i in manifest["items"] if i.get("language") == "cuda"],
            "outputs_shuffled": {n: project_relative(shuffled_dir / f"{n}.dat", root) for n in output_names},
            "gpu": run_on_gpu(model, deployment, root, inputs_dir, vectors, runs, code) if not dla_items else
            {"found": False, "status": "not run", "run": "not run: a deployment with nvdla items runs its cuda items "
                                                         "on the host emulation only"}}


def _nvdla_record(root: Path, nvdla_build: Path, dla_items: list[str], cuda: Any) -> dict[str, Any]:
    """run.json's part for a program with nvdla items: the emulator server's mode and the loadables submitted."""
    from pipeline.execute.nvdla.run import MODE, MODE_MEANING

    nvdla = json.loads(nvdla_build.read_text(encoding="utf-8"))
    return {"status": "emulated", "target": "mixed", "nvdla_items": dla_items,
            "emulation": f"C program with its nvdla items ({', '.join(dla_items)}) submitting their loadables to the "
                         f"NVDLA emulator server (pipeline/execute/nvdla/server.py, mode {MODE})"
                         + (f" and its cuda items on the {EMULATION}" if cuda else ""),
            "mode": MODE, "mode_meaning": MODE_MEANING, "configuration": nvdla["configuration"],
            "precision": nvdla["precision"], "met_runs": 0, "met": NVDLA_NOT_MEASURED,
            "loadables": {i["name"]: {"file": project_relative(nvdla_build.parent / i["loadable"], root),
                                      "sha256": i["loadable_sha256"]} for i in nvdla["items"]}}


def run_deployment(model: str, deployment: str, root: Path, inputs_dir: Path, vectors: int, runs: int,
                   *, instructions: bool = True, noise_seeds: tuple[int, ...] = NOISE_SEEDS,
                   platform: Platform | None = None, sanitize: bool = True, coverage: bool = True,
                   ranges: Mapping[str, tuple[float, float]] | None = None) -> dict[str, Any]:
    """Build and run one deployment on `platform` (default host: its compiler, flags and runner;
    pipeline/toolchain/platforms.py); returns its run.json document: the builds, the campaign
    (pipeline/execute/campaign.py), what ran where, and (`sanitize`) the execute.sanitizers result of
    the sanitized build run on the same vectors (pipeline/execute/sanitizers.py), (`coverage`) the
    execute.coverage result of the gcov build (pipeline/execute/coverage.py; `ranges`: each input's
    deploy.yaml range, for the robustness vectors at its ends)."""
    target = platform or host_platform()
    code = code_folder(model, deployment, root)
    out = run_folder(model, deployment, root)
    unrunnable = _not_runnable(model, deployment, target, code, out, root)
    if unrunnable is not None:
        return unrunnable
    vectors = min(vectors, target.vectors or vectors)
    runs = min(runs, target.met_runs or runs)
    if out.is_dir():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    manifest = json.loads((code / BUILD_FILE).read_text(encoding="utf-8"))
    lanes = int(manifest["lanes"])
    output_names = [o["name"] for o in manifest["outputs"]]
    cuda = manifest.get("cuda")
    dla_items = [i["name"] for i in manifest["items"] if i.get("target") == "nvdla"]
    nvdla_build = confined(step_dir(model, "codegen", root), "nvdla", deployment) / BUILD_FILE
    harness = _harness(inputs_dir, vectors, nvdla_build, dla_items)
    judged = codegen_objects(model, deployment, root, lanes, list(manifest["sources"]), target)
    plain, traced, counted, builds = _build_programs(code, out, root, manifest, judged, target, vectors + runs + WARMUP)
    outputs_dir = out / "outputs"
    shuffled_dir = out / "outputs-shuffled"
    with tempfile.TemporaryDirectory(prefix="nnef-runner-") as transfers, session(target, Path(transfers)) as where:
        traced_runs = run_campaign(harness, where, plain, traced, out, outputs_dir, output_names, cuda, vectors, runs,
                                   noise_seeds, dla_items, inputs_dir, manifest, instructions, root, target, counted)
        subject = f"{model}/{deployment}"
        sanitized = covered = None
        # on the host: the sanitizers' runtimes and gcov are the host's (another platform's sources built here)
        build = _builder(code, out, manifest, None, target if target.is_host else host_platform(), [])
        if sanitize:
            sanitized = sanitizers.sanitizer_result(subject, lambda binary: build(binary, False, [], sanitize=True),
                                                    harness, where if target.is_host else None, outputs_dir,
                                                    output_names, vectors, root, target.name)
        if coverage:
            covered = structural.coverage_result(
                subject, host_platform().cc(), lambda binary: build(binary, False, [], coverage=True), harness,
                lambda folder, count: _harness(folder, count, nvdla_build, dla_items), where if target.is_host else None,
                inputs_dir, outputs_dir, output_names, vectors, out / structural.FOLDER, code, root, ranges or {},
                target.name)
    document = {
        "schema_version": 1,
        "model": model,
        "deployment": deployment,
        "status": "emulated" if target.runner.where == "emulation" else "ran",
        "compiler": compiler_version(platform=target),
        "host_isa": host_isa() if target.is_host else "",
        "isa_flags": isa_for(lanes) if target.is_host else "platform flags",
        "lanes": lanes,
        "platform": {**target.to_json(), "runner_version": runner_version(target.runner),
                     "obtained": {"where": target.runner.where, "detail": described(target)}},
        "builds": builds,
        "vectors": vectors,
        "outputs": {n: project_relative(outputs_dir / f"{n}.dat", root) for n in output_names},
        "traced_runs": traced_runs,
        "met_runs": runs,
        "warmup": WARMUP,
    }
    if sanitized is not None:
        document["sanitizers"] = sanitized.to_json()
    if covered is not None:
        document["coverage"] = covered.to_json()
    if cuda:
        document.update(_cuda_record(model, deployment, root, inputs_dir, vectors, runs, code, manifest, shuffled_dir,
                                     output_names, dla_items))
    if dla_items:
        document.update(_nvdla_record(root, nvdla_build, dla_items, cuda))
    write_json(out / RUN_FILE, document)
    return document


def _sanitizer_results(model: str, spec: Any, documents: dict[str, dict[str, Any]]) -> list[CheckResult]:
    """execute.sanitizers and execute.coverage of every deployment: its run's result, n/a without a C program,
    not run (with the run's reason) where the program did not run."""
    results = []
    for key, check in (("sanitizers", sanitizers), ("coverage", structural)):
        for name, document in documents.items():
            subject = f"{model}/{name}"
            kind = code_kind([item.target for item in spec.deployments[name].items])
            if key in document:
                results.append(CheckResult.from_json(document[key]))
            elif kind in ("cuda", "nvdla"):
                results.append(check.no_program(subject, kind))
            else:
                results.append(check.not_run(subject, f"the program did not run: {document.get('reason', '')}"[:2000]))
    return results


def _platform_tools(spec: Any) -> dict[str, str]:
    """The compiler and runner of every platform other than the host the spec's deployments use
    (recorded with the step), or "not installed"."""
    found: dict[str, str] = {}
    for name in sorted({d.platform for d in spec.deployments.values()} - {"host"}):
        platform = resolve(name, spec.platforms)
        missing = {tool for tool, _ in missing_tools(platform)}
        found[f"cc ({name})"] = "not installed" if platform.cc() in missing else compiler_version(platform=platform)
        found[f"runner ({name})"] = ("not installed" if platform.runner.command and platform.runner.command[0] in missing
                                     else runner_version(platform.runner))
    return found


def run_execute_step(model: str, root: str | os.PathLike[str] = ".", *, vectors: int | None = None,
                 runs: int | None = None, instructions: bool = True,
                 deployments: list[str] | None = None) -> dict[str, dict[str, Any]]:
    """Build and run every deployment of `model`; writes run artifacts, checks.json and record.json."""
    base = Path(root)
    deploy_path = model_dir(model, base) / "deploy.yaml"
    spec = load_deploy(deploy_path)
    count = vectors or spec.validation.vectors
    campaign = runs or spec.met.runs
    out = step_dir(model, STEP, base)
    out.mkdir(parents=True, exist_ok=True)
    inputs_dir = out / "inputs"
    write_input_vectors(spec.inputs, count, spec.validation.seed, inputs_dir)
    documents: dict[str, dict[str, Any]] = {}
    ranges = {n: (i.distribution.low, i.distribution.high) for n, i in spec.inputs.items()}
    names = deployments or list(spec.deployments)
    for child in out.iterdir():
        if child.is_dir() and child.name not in ("inputs",) and child.name not in spec.deployments:
            shutil.rmtree(child)
    for name in names:
        deployment = spec.deployments[name]
        emulated = {"cuda": lambda *a: run_cuda_deployment(*a, runs=campaign), "nvdla": run_nvdla_deployment}
        kind = code_kind([item.target for item in deployment.items])
        if kind in emulated:
            try:
                documents[name] = emulated[kind](model, name, base, inputs_dir, count)
            except PipelineError as error:
                document = {"schema_version": 1, "model": model, "deployment": name, "status": "failed",
                            "reason": f"{error.code}: {error.message}"[:4000]}
                write_json(run_folder(model, name, base) / RUN_FILE, document)
                documents[name] = document
                log.error("run %s/%s: %s", model, name, error)
            continue
        if any(emitter_for(item.target) is None for item in deployment.items):
            others = ", ".join(f"{i.name} ({i.target})" for i in deployment.items if emitter_for(i.target) is None)
            document = {"schema_version": 1, "model": model, "deployment": name, "status": "not run",
                        "reason": f"{NO_GENERATOR}: items {others}"}
            write_json(run_folder(model, name, base) / RUN_FILE, document)
            documents[name] = document
            continue
        try:
            documents[name] = run_deployment(model, name, base, inputs_dir, count, campaign, instructions=instructions,
                                             platform=spec.platform_of(name), ranges=ranges)
        except PipelineError as error:
            document = {"schema_version": 1, "model": model, "deployment": name, "status": "failed",
                        "reason": f"{error.code}: {error.message}"[:4000]}
            write_json(run_folder(model, name, base) / RUN_FILE, document)
            documents[name] = document
            log.error("run %s/%s: %s", model, name, error)
    write_json(checks_path(model, STEP, base), results_document(_sanitizer_results(model, spec, documents)))
    codegen = step_dir(model, "codegen", base)
    record_step(model, STEP, inputs=[p for p in [deploy_path] if p.exists()] + step_data(codegen),
                command=["doit", f"execute:{model}"], root=base,
                parameters={"vectors": count, "seed": spec.validation.seed, "met_runs": campaign,
                            "noise_seeds": list(NOISE_SEEDS), "warmup": WARMUP},
                extra_tools={"gcc": compiler_version(), **({"valgrind": v} if (v := valgrind_version()) else {}),
                             **({"gcov": g} if (g := structural.gcov_version()) else {}),
                             **_platform_tools(spec)})
    return documents

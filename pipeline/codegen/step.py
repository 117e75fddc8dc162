"""The codegen step: C code for every deployment of a model whose items mix `cpu`, `cuda` and
`nvdla` (a mixed deployment's cuda items are .cu items of the C program, its nvdla items C
proxies submitting their loadables, pipeline.codegen.program.items), CUDA code for every deployment of one
`cuda` item alone (docs/codegen-cuda.md), NVDLA loadables for every deployment with an `nvdla`
item (docs/codegen-nvdla.md).

artifacts/<m>/codegen/c/<deployment>/...   the generated code (pipeline.codegen.program.generate)
artifacts/<m>/codegen/cuda/<deployment>/... the generated CUDA code (pipeline.codegen.cuda.generate)
artifacts/<m>/codegen/nvdla/<deployment>/... the loadables, debug tables, traces (pipeline.codegen.nvdla.generate)
artifacts/<m>/codegen/obj/<deployment>/*.o  the objects codegen.compile compiled (qualified flags), which
                                           the execute step links into its uninstrumented build
artifacts/<m>/codegen/status.json          per deployment: generated, or why not (and the objects' sha256)
artifacts/<m>/codegen/checks.json          codegen.static, codegen.trace, codegen.compile (codegen.platform for a
                                           deployment on another platform than the host), ...

Each C deployment is generated for its platform's lanes and compiled by its platform's compiler
with its flags (pipeline/toolchain/platforms.py; `host` unless deploy.yaml names another).
artifacts/<m>/codegen/record.json

The checks are validators that read the written files only (pipeline.codegen.checks).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from pipeline.files.atomic import write_json
from pipeline.files.names import confined
from pipeline.codegen import checks
from pipeline.codegen.program.generate import generate_deployment
from pipeline.codegen.shared.errors import CodegenError
from pipeline.codegen.program.items import NO_GENERATOR, emitter_for
from pipeline.codegen.shared.deployment import load_deployment, sha256_of
from pipeline.project.deploy import load_deploy
from pipeline.project.targets import code_kind
from pipeline.diagnostics import PipelineError
from pipeline.ledger.checks import CheckResult, results_document
from pipeline.ledger.records import record_step
from pipeline.project.layout import checks_path, export_data, model_dir, project_relative, step_data, step_dir
from pipeline.toolchain.cc import build_flags, compiler_version
from pipeline.toolchain.platforms import Platform, host_platform

log = logging.getLogger(__name__)

STEP = "codegen"
STATUS_FILE = "status.json"


def c_folder(model: str, deployment: str, root: str | os.PathLike[str] = ".") -> Path:
    return confined(step_dir(model, STEP, root), "c", deployment)


def objects_folder(model: str, deployment: str, root: str | os.PathLike[str] = ".") -> Path:
    """Where codegen.compile leaves a C deployment's objects (linked by the execute step)."""
    return confined(step_dir(model, STEP, root), "obj", deployment)


def _objects_status(folder: Path, objects: Path, lanes: int, base: Path, platform: Platform | None = None
                    ) -> dict[str, Any]:
    """status.json's record of the objects codegen.compile left in `objects`: compiler, flags and,
    per source of build.json, its object and sha256 (the execute step links them after checking)."""
    manifest = json.loads((folder / "build.json").read_text(encoding="utf-8"))
    by_source = {}
    for source in manifest["sources"]:
        obj = objects / (Path(source).name.rsplit(".", 1)[0] + ".o")
        by_source[source] = {"object": project_relative(obj, base), "sha256": sha256_of(obj)}
    return {"compiler": compiler_version(platform=platform), "flags": build_flags(lanes, platform=platform)[0],
            "sources": by_source}


def _compiled_cleanly(result: CheckResult, sources: int) -> bool:
    """Whether the compile check (codegen.compile, or codegen.platform) found its objects clean: it passed,
    was emulated, or could not run the platform's programs after a clean compile."""
    if result.verdict.value in ("pass", "emulated"):
        return True
    return (result.verdict.value == "not run" and result.measured.get("objects") == sources
            and result.measured.get("diagnostics_chars") == 0)


def _platform_compilers(used: dict[str, Platform]) -> dict[str, str]:
    """`cc --version` of each platform other than the host that built code (recorded with the step)."""
    found = {}
    for name, platform in sorted(used.items()):
        if not platform.is_host:
            try:
                found[f"cc ({name})"] = compiler_version(platform=platform)
            except PipelineError:
                found[f"cc ({name})"] = "not installed"
    return found


def cuda_folder(model: str, deployment: str, root: str | os.PathLike[str] = ".") -> Path:
    return confined(step_dir(model, STEP, root), "cuda", deployment)


def nvdla_folder(model: str, deployment: str, root: str | os.PathLike[str] = ".") -> Path:
    return confined(step_dir(model, STEP, root), "nvdla", deployment)


def _is_nvdla(deployment: Any) -> bool:
    """A deployment the NVDLA generator handles alone: one nvdla item (several are C proxies of a program)."""
    return code_kind([i.target for i in deployment.items]) == "nvdla"


def _has_nvdla(deployment: Any) -> bool:
    """A deployment with loadables: every nvdla item has one, alone or next to other items (a C proxy then)."""
    return any(i.target == "nvdla" for i in deployment.items)


def _nvdla_deployment(model: str, name: str, base: Path, split: Path, export: Path
                      ) -> tuple[dict[str, Any], CheckResult]:
    """Write the loadables of one deployment and judge them (codegen.accelerators)."""
    from pipeline.codegen.nvdla.generate import generate_nvdla

    subject = f"{model}/{name}"
    folder = nvdla_folder(model, name, base)
    if folder.is_dir():
        shutil.rmtree(folder)
    try:
        generated = generate_nvdla(load_deployment(split, export, base), folder)
    except (CodegenError, PipelineError) as error:
        reason = f"{error.code}: {error.message}" + (f" ({error.location})" if error.location else "")
        log.error("codegen %s: %s", subject, reason)
        if folder.is_dir():
            shutil.rmtree(folder)
        return {"status": "failed", "reason": reason, "target": "nvdla"}, \
            checks.failed_generation(checks.ACCELERATORS, subject, reason)
    status = {"status": "generated", "target": "nvdla", "folder": project_relative(folder, base),
              "files": {project_relative(p, base): sha256_of(p) for p in sorted(generated.files)}}
    return status, checks.accelerators_result(subject, folder, base)


def _is_cuda(deployment: Any) -> bool:
    """A deployment the CUDA generator handles with its own harness: one cuda item alone.

    Several cuda items (with or without cpu items) are items of the C deployment program.
    """
    return code_kind([i.target for i in deployment.items]) == "cuda"


def _cuda_deployment(model: str, name: str, base: Path, split: Path, export: Path, architectures: tuple[str, ...]
                     ) -> tuple[dict[str, Any], list[CheckResult]]:
    """Generate the CUDA code of one deployment and check its builds (codegen.cuda)."""
    from pipeline.codegen.cuda.generate import generate_cuda

    subject = f"{model}/{name}"
    folder = cuda_folder(model, name, base)
    if folder.is_dir():
        shutil.rmtree(folder)
    try:
        generate_cuda(load_deployment(split, export, base), folder, architectures)
    except (CodegenError, PipelineError) as error:
        reason = f"{error.code}: {error.message}" + (f" ({error.location})" if error.location else "")
        log.error("codegen %s: %s", subject, reason)
        if folder.is_dir():
            shutil.rmtree(folder)
        return {"status": "failed", "reason": reason, "target": "cuda"}, \
            [checks.failed_generation(checks.CUDA, subject, reason)]
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    status = {"status": "generated", "target": "cuda", "folder": project_relative(folder, base),
              "files": {project_relative(p, base): sha256_of(p) for p in files}}
    with tempfile.TemporaryDirectory(prefix="nnef-cuda-") as tmp:
        return status, [checks.cuda_result(subject, folder, base, Path(tmp)), checks.cuda_trace_result(subject, folder, base)]


def run_codegen_step(model: str, root: str | os.PathLike[str] = ".", lanes: int | None = None,
                     deployments: list[str] | None = None) -> list[CheckResult]:
    """Generate, compile-check and trace-check the C code of every deployment of `model` (or only those
    named in `deployments`: tools/gpu-check), each for its platform (its lanes, unless `lanes` forces
    one width for all)."""
    base = Path(root)
    deploy_path = model_dir(model, base) / "deploy.yaml"
    spec = load_deploy(deploy_path)
    out = step_dir(model, STEP, base)
    split = step_dir(model, "split", base)
    export = step_dir(model, "export", base)
    (out / "c").mkdir(parents=True, exist_ok=True)
    for child in (out / "c").iterdir():
        if child.is_dir() and child.name not in spec.deployments:
            shutil.rmtree(child)
    status: dict[str, Any] = {}
    results: list[CheckResult] = []
    (out / "cuda").mkdir(parents=True, exist_ok=True)
    for child in (out / "cuda").iterdir():
        if child.is_dir() and (child.name not in spec.deployments or not _is_cuda(spec.deployments[child.name])):
            shutil.rmtree(child)
    (out / "nvdla").mkdir(parents=True, exist_ok=True)
    for child in (out / "nvdla").iterdir():
        if child.is_dir() and (child.name not in spec.deployments or not _has_nvdla(spec.deployments[child.name])):
            shutil.rmtree(child)
    (out / "obj").mkdir(parents=True, exist_ok=True)
    for child in (out / "obj").iterdir():
        if child.is_dir() and child.name not in spec.deployments:
            shutil.rmtree(child)
    accelerated = []
    used: dict[str, Platform] = {}
    for name, deployment in spec.deployments.items():
        if deployments is not None and name not in deployments:
            continue
        subject = f"{model}/{name}"
        folder = c_folder(model, name, base)
        objects = objects_folder(model, name, base)
        if objects.is_dir():
            shutil.rmtree(objects)
        if _is_nvdla(deployment):
            status[name], verdict = _nvdla_deployment(model, name, base, split / name, export)
            results.append(verdict)
            accelerated.append(name)
            if folder.is_dir():
                shutil.rmtree(folder)
            continue
        if _is_cuda(deployment):
            status[name], more = _cuda_deployment(model, name, base, split / name, export, deployment.architectures)
            results += more
            if folder.is_dir():
                shutil.rmtree(folder)
            continue
        others = [f"{i.name} ({i.target})" for i in deployment.items if emitter_for(i.target) is None]
        if others:
            reason = f"{NO_GENERATOR}: items {', '.join(others)}"
            status[name] = {"status": "not run", "reason": reason}
            results += [checks.not_run(check, subject, reason) for check in checks.ALL]
            if folder.is_dir():
                shutil.rmtree(folder)
            continue
        try:
            platform = spec.platform_of(name)
            used.setdefault(platform.name, platform)
            loaded = load_deployment(split / name, export, base)
            if folder.is_dir():
                shutil.rmtree(folder)
            generated = generate_deployment(loaded, folder, lanes=lanes or platform.lanes,
                                            architectures=deployment.architectures)
        except (CodegenError, PipelineError) as error:
            reason = f"{error.code}: {error.message}" + (f" ({error.location})" if error.location else "")
            status[name] = {"status": "failed", "reason": reason}
            results += [checks.failed_generation(check, subject, reason) for check in checks.ALL]
            if folder.is_dir():
                shutil.rmtree(folder)
            log.error("codegen %s: %s", subject, reason)
            continue
        width = int(generated.manifest["lanes"])
        status[name] = {"status": "generated", "folder": project_relative(folder, base), "lanes": width,
                        "platform": platform.name,
                        "files": {project_relative(p, base): sha256_of(p) for p in sorted(generated.files)}}
        with tempfile.TemporaryDirectory(prefix="nnef-codegen-") as tmp:
            evaluated = checks.evaluate(subject, folder, base, Path(tmp), objects_dir=objects, platform=platform)
            results += evaluated
            if all(_compiled_cleanly(r, len(generated.manifest["sources"])) for r in evaluated
                   if r.check_id in (checks.COMPILE, checks.PLATFORM)):
                status[name]["objects"] = _objects_status(folder, objects, width, base, platform)
            else:                                  # the execute step compiles (and reports) from the sources
                shutil.rmtree(objects, ignore_errors=True)
            if "cuda" in generated.manifest:       # the .cu items of a mixed program: nvcc and the gate
                kept = status[name].get("objects")
                c_objects = ([(base / kept["sources"][s]["object"]).resolve() for s in generated.manifest["sources"]]
                             if kept else None)     # absolute: nvcc links in the code folder
                results.append(checks.cuda_result(subject, folder, base, Path(tmp) / "cuda", c_objects))
        if _has_nvdla(deployment):                 # the loadables the C proxies submit, judged as any loadable
            nvdla_status, verdict = _nvdla_deployment(model, name, base, split / name, export)
            status[name]["nvdla"] = nvdla_status
            results.append(verdict)
            accelerated.append(name)
            if nvdla_status["status"] != "generated":   # no program without the loadables its proxies submit
                status[name] = {"status": "failed", "reason": f"the loadables: {nvdla_status['reason']}"}
                shutil.rmtree(folder)
                shutil.rmtree(objects, ignore_errors=True)
    with tempfile.TemporaryDirectory(prefix="nnef-math-") as tmp:
        results.append(checks.transcendental_result(model, Path(tmp), lanes or host_platform().lanes))
    if not accelerated:
        results.append(checks.no_accelerators(model))
    if deployments is None:
        results += checks.not_applicable_rest(model, results, {
            "cuda": any(i.target == "cuda" for d in spec.deployments.values() for i in d.items),
            "platform": any(spec.platform_of(n).name != "host" for n in spec.deployments)})
    write_json(out / STATUS_FILE, {"schema_version": 1, "model": model, "deployments": status})
    write_json(checks_path(model, STEP, base), results_document(results))
    record_step(model, STEP, inputs=[p for p in [deploy_path] if p.exists()] + step_data(split) + export_data(model, base),
                command=["doit", f"codegen:{model}"], root=base,
                parameters={"lanes": lanes or {n: p.lanes for n, p in sorted(used.items())}},
                extra_tools={"gcc": compiler_version(), **_platform_compilers(used)})
    return results

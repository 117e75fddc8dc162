"""Runs on a GPU, where `gpu_query` finds one (docs/execute.md "GPU runs").

The deployment's C program with its cuda items as `.cu` items (a mixed deployment's own code;
for a deployment of one cuda item, the program form of the same split generated here, since
the one-item CUDA harness has neither traces nor timing) is built for the GPU that answered:
its C files by gcc with the host platform's qualified flags, its `.cu` files by nvcc for that
device's architecture with the pinned flags (pipeline/toolchain/nvcc.py `device_program`),
once plain and once instrumented (-DNNEF_TRACE). It then runs the same vectors as the host
emulation through the same harness runs as every C program (pipeline/execute/campaign.py):
outputs, traces plain and under noise, the MET campaign. Everything goes to
artifacts/<m>/execute/<D>/gpu/; run.json's `gpu` block says what ran on which device, and
compare judges it obtained `target:gpu (<device>, sm_XX, driver <version>)`.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from pipeline.diagnostics import PipelineError
from pipeline.execute.campaign import WARMUP, run_campaign
from pipeline.execute.harness import run_harness
from pipeline.execute.outputs import NOISE_SEEDS
from pipeline.project.layout import BUILD_FILE, project_relative, step_dir
from pipeline.files.names import confined
from pipeline.toolchain.cc import compile_objects
from pipeline.toolchain.nvcc import device_program, gpu_device, gpu_label
from pipeline.toolchain.platforms import host_platform
from pipeline.toolchain.runners import LOCAL

FOLDER = "gpu"


def device() -> dict[str, str] | None:
    """The GPU the runs go to, or None (tests replace it to exercise the path without a GPU)."""
    return gpu_device()


def build(code: Path, manifest: dict[str, Any], binary: Path, sm: str, defines: list[str]) -> Any:
    """The GPU build of the program in `code`: C objects (gcc, qualified flags) and the .cu items (nvcc,
    pinned flags, `sm`), linked by nvcc; `defines` for both (the instrumented build's)."""
    objects, _, diagnostics = compile_objects(code, manifest["sources"], binary.parent / f"{binary.name}.obj",
                                              int(manifest["lanes"]), defines=defines)
    if diagnostics:
        raise PipelineError("RUN-E003", f"the GPU program's C files: {diagnostics[:2000]}")
    return device_program(code, manifest["cuda"]["sources"], objects, binary, [sm], defines)


def program_form(model: str, deployment: str, root: Path, folder: Path, sm: str) -> Path:
    """The C-program form of a one-cuda-item deployment, generated from its split into `folder`."""
    from pipeline.codegen.program.generate import generate_deployment
    from pipeline.codegen.shared.deployment import load_deployment

    loaded = load_deployment(step_dir(model, "split", root) / deployment, step_dir(model, "export", root), root)
    generate_deployment(loaded, folder, lanes=host_platform().lanes, architectures=(sm,))
    return folder


def run_on_gpu(model: str, deployment: str, root: Path, inputs_dir: Path, vectors: int, runs: int,
               code: Path | None = None) -> dict[str, Any]:
    """run.json's `gpu` block: `not run` with the query's answer where no GPU answers, else the builds
    and runs on it (module docstring), or `failed` with the coded error."""
    from pipeline.toolchain.nvcc import gpu_query

    found = device()
    if found is None:
        _, answer = gpu_query()
        return {"found": False, "query": answer, "status": "not run", "run": f"not run: no GPU ({answer})"}
    label = gpu_label(found)
    out = confined(step_dir(model, "execute", root), deployment, FOLDER)
    if out.is_dir():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    block: dict[str, Any] = {"found": True, "device": found, "obtained": f"target:{label}"}
    try:
        if code is None:
            code = program_form(model, deployment, root, out / "code", found["sm"])
        manifest = json.loads((code / BUILD_FILE).read_text(encoding="utf-8"))
        capacity = vectors + runs + WARMUP
        plain = build(code, manifest, out / "bin" / "nnef_run_gpu", found["sm"], [])
        traced = build(code, manifest, out / "bin" / "nnef_run_gpu_trace", found["sm"],
                       ["NNEF_TRACE", f"NNEF_TRACE_INFERENCES={capacity}"])
        names = [o["name"] for o in manifest["outputs"]]

        def harness(binary: Path, outs: Path, **options: Any) -> Any:
            return run_harness(binary, inputs_dir, outs, vectors, **options)

        traced_runs = run_campaign(harness, LOCAL, plain, traced, out, out / "outputs", names, None, vectors, runs,
                                   NOISE_SEEDS, [], inputs_dir, manifest, False, root, host_platform())
    except PipelineError as error:
        return {**block, "status": "failed", "run": f"failed on {label}: {error.code}: {error.message}"[:4000]}
    block.update({
        "status": "ran", "run": f"ran on {label}", "vectors": vectors, "met_runs": runs, "warmup": WARMUP,
        "outputs": {n: project_relative(out / "outputs" / f"{n}.dat", root) for n in names},
        "traced_runs": traced_runs, "folder": project_relative(out, root),
        "builds": [{"binary": project_relative(b.binary, root),
                    "commands": [[os.path.basename(a) if a.startswith("/") else a for a in c] for c in b.commands],
                    "compiler": b.version} for b in (plain, traced)]})
    return block

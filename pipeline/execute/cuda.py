"""Run a generated CUDA deployment: the host emulation always, the GPU build where a GPU answers.

artifacts/<m>/execute/<deployment>/
    run.json                     status "emulated" (no GPU here) with the device query's answer
    outputs/<output>.dat         the emulation's outputs, blocks and threads in order
    outputs-shuffled/<output>.dat  the same, blocks and threads in a shuffled order (SHUFFLE_SEED)

The emulation is the same .cu built with g++ (pipeline.toolchain.nvcc.emulation_build,
docs/codegen-cuda.md). On a machine where `gpu_query` finds a GPU, the program form of the same
split also runs there (pipeline/execute/gpu.py: outputs, traces, MET under gpu/); run.json's `gpu`
block says what ran on which device, or why not.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.files.atomic import write_json
from pipeline.files.names import confined
from pipeline.diagnostics import PipelineError
from pipeline.execute.campaign import SHUFFLE_SEED
from pipeline.nnef.tensorfile import write_arrays
from pipeline.project.layout import project_relative, step_dir
from pipeline.nnef.tensorfile import read_tensor
from pipeline.execute.gpu import run_on_gpu
from pipeline.toolchain import process
from pipeline.toolchain.nvcc import EMULATION_FLAGS, emulation_build

# The programs it runs, none: the built program only (pipeline/ledger/dependencies.py).
TOOLS: tuple[str, ...] = ()

EMULATION = "host emulation: g++ " + " ".join(EMULATION_FLAGS) + " with nnef_cuda_emulate.h (launch = loop over " \
            "every block and thread)"


def _run(binary: Path, manifest: dict[str, Any], inputs: dict[str, np.ndarray], scratch: Path, seed: int
         ) -> dict[str, np.ndarray]:
    ins, outs = scratch / "in", scratch / f"out{seed}"
    ins.mkdir(parents=True, exist_ok=True)
    outs.mkdir(parents=True, exist_ok=True)
    count = 0
    for spec in manifest["inputs"]:
        array = inputs[spec["name"]]
        np.ascontiguousarray(array, "<f4").tofile(ins / f"{spec['name']}.f32")
        count = array.shape[0]
    proc = process.run([str(binary), str(ins), str(outs), str(count), str(seed)], timeout=3600)
    if proc.returncode != 0:
        raise PipelineError("RUN-E021", f"the emulated CUDA harness failed (exit {proc.returncode}): "
                            f"{proc.err.strip()[:2000]}")
    return {o["name"]: np.fromfile(outs / f"{o['name']}.f32", "<f4").reshape([count] + list(o["shape"]))
            for o in manifest["outputs"]}


def run_cuda_deployment(model: str, deployment: str, root: Path, inputs_dir: Path, vectors: int,
                        runs: int = 0) -> dict[str, Any]:
    """Emulate one generated CUDA deployment on the validation vectors, and run it on the GPU where one
    answers (`runs` timed inferences there; module docstring)."""
    folder = confined(step_dir(model, "codegen", root), "cuda", deployment)
    manifest_path = folder / "build.json"
    if not manifest_path.is_file():
        raise PipelineError("RUN-E040", "no generated CUDA code (run the codegen step)")
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    out = confined(step_dir(model, "execute", root), deployment)
    inputs = {p.stem: read_tensor(p)[:vectors] for p in sorted(inputs_dir.glob("*.dat"))}
    with tempfile.TemporaryDirectory(prefix="nnef-cuda-run-") as tmp:
        scratch = Path(tmp)
        build = emulation_build(folder, folder / manifest["main"], scratch / "nnef_cuda_emulated")
        in_order = _run(build.binary, manifest, inputs, scratch, 0)
        shuffled = _run(build.binary, manifest, inputs, scratch, SHUFFLE_SEED)
    written = write_arrays(in_order, out / "outputs")
    written_shuffled = write_arrays(shuffled, out / "outputs-shuffled")
    document = {
        "schema_version": 1, "model": model, "deployment": deployment, "status": "emulated",
        "target": "cuda", "emulation": EMULATION, "compiler": build.version,
        "vectors": vectors, "shuffle_seed": SHUFFLE_SEED,
        "outputs": {n: project_relative(p, root) for n, p in written.items()},
        "outputs_shuffled": {n: project_relative(p, root) for n, p in written_shuffled.items()},
        "gpu": run_on_gpu(model, deployment, root, inputs_dir, vectors, runs),
    }
    write_json(out / "run.json", document)
    return document

"""Run a generated NVDLA deployment: the emulator executes each loadable on every validation vector.

artifacts/<m>/execute/<deployment>/
    run.json                 status "emulated", mode, what the mode means, the loadables run (sha256)
    outputs/<output>.dat     the emulated FP16 outputs, widened to float32, [N, *shape]

There is no NVDLA here: pipeline.execute.nvdla.emulator decodes the loadable bytes written by
the codegen step (through the independent reader, not the NNEF and not the writer's data) and
executes its tasks. Only a deployment of one `nvdla` item alone runs here; nvdla items next to
other items, or several, are C proxies of the C program (pipeline/execute/nvdla/server.py).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.files.atomic import write_json
from pipeline.diagnostics import PipelineError
from pipeline.nnef.tensorfile import write_arrays
from pipeline.codegen.nvdla.reader import read_loadable
from pipeline.execute.nvdla.emulator import emulate_read
from pipeline.project.layout import project_relative, step_dir
from pipeline.files.names import confined
from pipeline.nnef.tensorfile import read_tensor

MODE = "ideal"
MODE_MEANING = ("ideal: every unit reads FP16 surfaces, computes in float32 (FP16 products exact, float32 "
                "accumulation) and rounds to nearest FP16 when it writes memory; the CONV -> SDP pipe is not "
                "rounded; no hardware block-floating-point accumulation, no SDP FP17 (docs/codegen-nvdla.md)")


def run_nvdla_deployment(model: str, deployment: str, root: Path, inputs_dir: Path, vectors: int) -> dict[str, Any]:
    """Emulate the loadable of one generated NVDLA deployment on the validation vectors."""
    folder = confined(step_dir(model, "codegen", root), "nvdla", deployment)
    manifest_path = folder / "build.json"
    if not manifest_path.is_file():
        raise PipelineError("RUN-E050", "no generated NVDLA loadable (run the codegen step)")
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    if len(manifest["items"]) != 1:
        raise PipelineError("RUN-E051", f"{len(manifest['items'])} nvdla items: only a deployment of one nvdla item "
                            "runs on the emulator today")
    item = manifest["items"][0]
    data = (folder / item["loadable"]).read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != item["loadable_sha256"]:
        raise PipelineError("RUN-E052", f"{item['loadable']} differs from the loadable the codegen step recorded")
    stacks = {spec["name"]: read_tensor(inputs_dir / f"{spec['name']}.dat")[:vectors] for spec in item["inputs"]}
    count = min(s.shape[0] for s in stacks.values())
    results: dict[str, list[np.ndarray]] = {o["name"]: [] for o in item["outputs"]}
    decoded = read_loadable(data)           # once, not per vector (pipeline/execute/nvdla/emulator.py emulate_read)
    for v in range(count):
        feed = {spec["name"]: stacks[spec["name"]][v].reshape(spec["shape"]) for spec in item["inputs"]}
        got = emulate_read(decoded, feed, MODE)
        for o in item["outputs"]:
            results[o["name"]].append(np.asarray(got[o["name"]], np.float32).reshape(o["shape"]))
    out = confined(step_dir(model, "execute", root), deployment)
    written = write_arrays({n: np.stack(arrays) for n, arrays in results.items()}, out / "outputs")
    document = {
        "schema_version": 1, "model": model, "deployment": deployment, "status": "emulated", "target": "nvdla",
        "emulation": f"NVDLA emulator (pipeline/execute/nvdla/emulator.py), mode {MODE}", "mode": MODE,
        "mode_meaning": MODE_MEANING, "configuration": manifest["configuration"], "precision": manifest["precision"],
        "vectors": count,
        "loadables": {item["name"]: {"file": project_relative(folder / item["loadable"], root), "sha256": digest}},
        "outputs": {n: project_relative(p, root) for n, p in written.items()},
    }
    write_json(out / "run.json", document)
    return document

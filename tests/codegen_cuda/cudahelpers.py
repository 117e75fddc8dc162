"""Helpers of the CUDA generator's tests: one-item cuda deployments, builds, runs, the reference.

`whole_model(export_dir, folder)` turns an exported model (graph.nnef + tensor files) into a
one-item deployment of target cuda (GPU0.nnef as a graphitem, plan.json, schedule.json in
program order), the shape the split step writes; `emulate` builds the host emulation and runs it.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from pipeline.codegen.cuda.generate import generate_cuda
from pipeline.codegen.shared.deployment import load_deployment
from pipeline.nnef.checker import check_paths
from pipeline.toolchain.nvcc import emulation_build

ITEM = "GPU0"


def one_item(folder: Path, text: str, item: str = ITEM) -> Path:
    """plan.json and schedule.json of a one-item cuda deployment of the graphitem text `text`."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{item}.nnef").write_text(text, encoding="utf-8")
    graph = check_paths([folder / f"{item}.nnef"], tensors=False).graphs[0]
    steps = [{"kind": "compute", "result": op.output_refs()[0].name, "op": op.name} for op in graph.operations
             if op.name not in ("external", "variable", "constant", "variablesync")]
    outputs = re.search(r"graphitem\s+\w+\s+\w+\s*\([^)]*\)\s*->\s*\(([^)]*)\)", text).group(1).replace(" ", "").split(",")
    plan = {"schema_version": 1, "model": "test", "deployment": "gpu", "sync": "event", "pipeline_depth": 1,
            "items": [{"name": item, "target": "cuda", "file": f"{item}.nnef"}], "sync_variables": [],
            "allocation": {s["result"]: item for s in steps}, "outputs": {o: item for o in outputs},
            "rewrites": [], "source": "", "unused_items": []}
    (folder / "plan.json").write_text(json.dumps(plan), encoding="utf-8")
    (folder / "schedule.json").write_text(json.dumps({"schema_version": 1, "sync": "event",
                                                      "items": {item: steps}}), encoding="utf-8")
    return folder


def whole_model(export: Path, folder: Path) -> Path:
    text = (export / "graph.nnef").read_text(encoding="utf-8")
    text = re.sub(r"^graph\s+\w+\s*\(", f"graphitem {ITEM} g_{ITEM}(", text, count=1, flags=re.M)
    return one_item(folder, text)


def generate(split: Path, export: Path, out: Path) -> dict:
    return generate_cuda(load_deployment(split, export, split.parent), out)


def run(binary: Path, manifest: dict, inputs: Mapping[str, np.ndarray], workdir: Path, seed: int = 0
        ) -> dict[str, np.ndarray]:
    """Run a built harness on stacked inputs; returns {output: [N, ...]}."""
    ins, outs = workdir / "in", workdir / "out"
    ins.mkdir(parents=True, exist_ok=True)
    outs.mkdir(parents=True, exist_ok=True)
    count = 0
    for name, value in inputs.items():
        np.ascontiguousarray(value, "<f4").tofile(ins / f"{name}.f32")
        count = value.shape[0]
    proc = subprocess.run([str(binary), str(ins), str(outs), str(count), str(seed)], capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr
    return {o["name"]: np.fromfile(outs / f"{o['name']}.f32", "<f4").reshape([count] + o["shape"])
            for o in manifest["outputs"]}


def emulate(code: Path, manifest: dict, inputs: Mapping[str, np.ndarray], workdir: Path,
            seeds: Sequence[int] = (0, 12345)) -> list[dict[str, np.ndarray]]:
    binary = emulation_build(code, code / manifest["main"], workdir / "nnef_cuda_emulated").binary
    return [run(binary, manifest, inputs, workdir / f"seed{s}", s) for s in seeds]

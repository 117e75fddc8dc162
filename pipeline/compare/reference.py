"""The two references executed code is compared with, on the run's own input vectors.

* The reference semantics: pipeline.semantics.interpret_batch on the exported description
  (artifacts/<m>/export/graph.nnef and its tensor files): interpret of each vector, bit for
  bit, with the convolutions of all vectors run together.
* onnxruntime on models/<m>/model.onnx (one thread; pipeline.numerics.onnx_runner, the same
  runner the export validation uses), with the ONNX names mapped to the NNEF names through
  the exporter's provenance.json.

The inputs are read back from the execute step's tensor files, so the comparison uses exactly
the vectors the executable consumed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import onnx

from pipeline.project.layout import model_dir, step_dir
from pipeline.nnef.checker import check_paths
from pipeline.nnef.tensorfile import read_tensor
from pipeline.semantics import interpret_batch, load_variables


def read_inputs(model: str, root: Path) -> dict[str, np.ndarray]:
    """The execute step's input vectors: name -> [N, *shape] float32."""
    folder = step_dir(model, "execute", root) / "inputs"
    return {path.stem: read_tensor(path) for path in sorted(folder.glob("*.dat"))}


def reference_outputs(model: str, root: Path, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The reference semantics of the exported description on every vector: name -> [N, ...]."""
    export = step_dir(model, "export", root)
    report = check_paths([export / "graph.nnef"], tensors=False)
    graph = report.graphs[0]
    variables = load_variables(graph, export)
    count = next(iter(inputs.values())).shape[0]
    vectors = [{name: array[v] for name, array in inputs.items()} for v in range(count)]
    results = interpret_batch(graph, vectors, variables)
    return {name: np.stack([outputs[name] for outputs in results]) for name in graph.outputs}


def onnx_names(model: str, root: Path) -> tuple[dict[str, str], dict[str, str]]:
    """(NNEF input -> ONNX input, ONNX output -> NNEF output) from the exporter's provenance."""
    provenance = json.loads((step_dir(model, "export", root) / "provenance.json").read_text(encoding="utf-8"))
    inputs = {e["nnef"]: e["onnx"] for e in provenance.get("inputs", [])}
    outputs = {e["onnx"]: e["nnef"] for e in provenance.get("outputs", [])}
    return inputs, outputs


def onnxruntime_outputs(model: str, root: Path, inputs: Mapping[str, np.ndarray]
                        ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """The ONNX model run by onnxruntime (one thread) on every vector, NNEF output names."""
    from pipeline.numerics.onnx_runner import reference_runner

    runner = reference_runner(onnx.load(str(model_dir(model, root) / "model.onnx")))
    to_onnx, to_nnef = onnx_names(model, root)
    count = next(iter(inputs.values())).shape[0]
    results: dict[str, list[np.ndarray]] = {}
    for v in range(count):
        outputs = runner.run({to_onnx.get(name, name): array[v] for name, array in inputs.items()})
        for name, value in outputs.items():
            results.setdefault(to_nnef.get(name, name), []).append(np.asarray(value, np.float32))
    return {name: np.stack(values) for name, values in results.items()}, runner.describe()

"""What the split step reads from the export: the checked graph, its tensors, provenance.

From provenance.json (pipeline.export.provenance) it takes two facts:

- followers: when the exporter turns one ONNX node into several NNEF instructions, the
  ones it invents (`<output>_<what>`) follow the item of the node's named result, so an
  allocation naming `conv1` takes the whole node (pipeline.split.allocation);
- input names: ONNX graph input -> NNEF external, to feed the vectors of deploy.yaml
  (drawn by the shared rule of pipeline.numerics.vectors, keyed by ONNX name).

From the export's record.json it takes the model name. `check_spec_matches` compares the
deployment spec with all of this before the split writes anything (SPLIT-E022).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from pipeline.project.deploy import DeployError, DeploySpec, check_inputs_match
from pipeline.nnef.checker import CheckReport, check_paths
from pipeline.nnef.graph import Graph
from pipeline.semantics import load_variables
from pipeline.diagnostics import Location
from pipeline.files.readguard import InputRefused, read_input
from pipeline.split.errors import SplitError
from pipeline.split.emit import BINDINGS
from pipeline.numerics.vectors import draw_vectors

GRAPH_FILE = "graph.nnef"
PROVENANCE_FILE = "provenance.json"
RECORD_FILE = "record.json"
MAX_JSON_BYTES = 1 << 24   # provenance.json, record.json: the shipped models' are below 200 KiB
SPEC_DTYPE = "scalar"   # deploy.yaml draws float32 vectors: every input it describes is an NNEF scalar tensor


@dataclass
class Exported:
    """A checked export: its folder, flat graph, findings, provenance (may be empty)."""

    directory: Path
    graph: Graph
    report: CheckReport
    provenance: dict[str, Any] = field(default_factory=dict)
    graph_file: Path | None = None
    model: str | None = None   # the model the export step recorded (record.json), when known

    @property
    def file(self) -> Path:
        return self.graph_file or self.directory / GRAPH_FILE

    @property
    def followers(self) -> dict[str, str]:
        return followers_from_provenance(self.provenance)

    @property
    def input_names(self) -> dict[str, str]:
        return input_names_from_provenance(self.provenance, self.graph)

    def variables(self) -> dict[str, np.ndarray]:
        return load_variables(self.graph, self.directory)


def load_exported(path: str | os.PathLike[str]) -> Exported:
    """Check a description (a graph.nnef file, or a folder holding one, its .dat files beside
    it) in the certification profile; SPLIT-E020 unless it is exactly one graph without errors."""
    given = Path(path)
    graph_file = given / GRAPH_FILE if given.is_dir() else given
    folder = graph_file.parent
    if not graph_file.is_file():
        raise SplitError("SPLIT-E020", f"no NNEF description at {graph_file} (has the export step run?)", Location.in_file(given))
    report = check_paths([graph_file], profile="certification", tensors=True)
    errors = [f for f in report.findings if f.is_error]
    if errors or len(report.graphs) != 1 or report.graphs[0].item is not None:
        first = f"{errors[0].span}: {errors[0].code}: {errors[0].message}" if errors else "not exactly one plain graph"
        raise SplitError("SPLIT-E020", f"the description does not check: {first}", Location.in_file(graph_file))
    provenance: dict[str, Any] = {}
    if os.path.lexists(folder / PROVENANCE_FILE):
        try:   # inside the export folder, no link followed (pipeline/files/readguard.py)
            provenance = json.loads(read_input(PROVENANCE_FILE, base=folder, max_bytes=MAX_JSON_BYTES).decode("utf-8"))
        except InputRefused as refused:
            raise SplitError("SPLIT-E020", f"{PROVENANCE_FILE} refused: {refused.reason}", Location.in_file(folder)) from None
        except (OSError, ValueError) as error:
            raise SplitError("SPLIT-E020", f"unreadable {PROVENANCE_FILE}: {error}", Location.in_file(folder)) from None
    return Exported(folder, report.graphs[0], report, provenance, graph_file, _recorded_model(folder))


def _recorded_model(folder: Path) -> str | None:
    """The model name in the export's record.json (None without a readable one)."""
    try:   # inside the export folder, no link followed (pipeline/files/readguard.py)
        model = json.loads(read_input(RECORD_FILE, base=folder, max_bytes=MAX_JSON_BYTES).decode("utf-8")).get("model")
    except (InputRefused, OSError, ValueError, AttributeError):
        return None
    return model if isinstance(model, str) else None


def _declared(entries: Any) -> dict[str, tuple[str, list[int] | None]] | None:
    """Provenance inputs/outputs: ONNX name -> (NNEF name, shape); None when absent or malformed."""
    if not isinstance(entries, list):
        return None
    found: dict[str, tuple[str, list[int] | None]] = {}
    for entry in entries:
        if not (isinstance(entry, Mapping) and isinstance(entry.get("onnx"), str) and isinstance(entry.get("nnef"), str)):
            return None
        shape = entry.get("shape")
        found[entry["onnx"]] = (entry["nnef"], list(shape) if isinstance(shape, list) else None)
    return found


def check_spec_matches(spec: DeploySpec, exported: Exported) -> None:
    """SPLIT-E022 unless `spec` describes the exported model: its name (record.json), its inputs'
    names and shapes (provenance.json, else graph.nnef's externals) and types (NNEF scalar);
    and the provenance's inputs and outputs are graph.nnef's. Every mismatch names both sides."""
    graph = exported.graph
    problems: list[tuple[str, str]] = []   # (key path in the spec, message)
    if exported.model is not None and exported.model != spec.model:
        problems.append(("model", f"the spec is for model '{spec.model}' but the export at "
                                  f"{exported.directory.as_posix()} is of model '{exported.model}' ({RECORD_FILE})"))
    inputs = _declared(exported.provenance.get("inputs")) if exported.provenance else None
    outputs = _declared(exported.provenance.get("outputs")) if exported.provenance else None
    if inputs is not None and sorted(n for n, _ in inputs.values()) != sorted(graph.inputs):
        problems.append(("inputs", f"{PROVENANCE_FILE} names inputs {sorted(n for n, _ in inputs.values())} but "
                                   f"{exported.file.name} has {sorted(graph.inputs)}"))
    if outputs is not None and sorted(n for n, _ in outputs.values()) != sorted(graph.outputs):
        problems.append(("", f"{PROVENANCE_FILE} names outputs {sorted(n for n, _ in outputs.values())} but "
                             f"{exported.file.name} has {sorted(graph.outputs)}"))
    if inputs is None:   # no provenance: the graph's externals, by their NNEF names
        inputs = {name: (name, graph.tensors[name].shape if name in graph.tensors else None) for name in graph.inputs}
    shapes = {onnx: shape if shape is not None else graph_shape(graph, nnef) for onnx, (nnef, shape) in inputs.items()}
    try:
        check_inputs_match(spec.inputs, {k: v for k, v in shapes.items() if v is not None}, spec.path)
    except DeployError as error:
        problems += [(p.path, f"{p.message} (the model: {exported.file.as_posix()})") for p in error.problems]
    for onnx, (nnef, _) in sorted(inputs.items()):
        info = graph.tensors.get(nnef)
        if onnx in spec.inputs and info is not None and info.dtype != SPEC_DTYPE:
            problems.append((f"inputs.{onnx}", f"the spec draws float32 values for input '{onnx}' but the model's "
                                               f"input '{nnef}' is of type {info.dtype}"))
    if problems:
        path, message = problems[0]
        more = f" (and {len(problems) - 1} more: " + "; ".join(m for _, m in problems[1:]) + ")" if len(problems) > 1 else ""
        raise SplitError("SPLIT-E022", message + more, spec.location(path))


def graph_shape(graph: Graph, name: str) -> list[int] | None:
    """The static shape of tensor `name` in `graph`, when known."""
    info = graph.tensors.get(name)
    return list(info.shape) if info is not None and info.shape is not None else None


def followers_from_provenance(provenance: Mapping[str, Any]) -> dict[str, str]:
    """Invented result -> the NNEF name of its ONNX node's first output."""
    tensors = provenance.get("tensors", {}) if isinstance(provenance, Mapping) else {}
    nodes = {n.get("index"): n for n in provenance.get("nodes", [])} if isinstance(provenance, Mapping) else {}
    result: dict[str, str] = {}
    for line in provenance.get("lines", []) if isinstance(provenance, Mapping) else []:
        node = line.get("node")
        if not node or line.get("operation") in BINDINGS:
            continue
        outputs = [o for o in nodes.get(node.get("index"), {}).get("outputs", []) if o]
        leaders = {tensors.get(o) for o in outputs} - {None}
        if not outputs or tensors.get(outputs[0]) is None:
            continue
        for name in line.get("assigns", []):
            if name not in leaders:
                result[name] = tensors[outputs[0]]
    return result


def input_names_from_provenance(provenance: Mapping[str, Any], graph: Graph) -> dict[str, str]:
    """ONNX input name -> NNEF external name (identity when provenance says nothing)."""
    names = {str(i["onnx"]): str(i["nnef"]) for i in provenance.get("inputs", [])
             if isinstance(i, Mapping) and "onnx" in i and "nnef" in i} if isinstance(provenance, Mapping) else {}
    return names or {name: name for name in graph.inputs}


def vectors_for(spec: DeploySpec, graph: Graph, input_names: Mapping[str, str], count: int,
                seed: int) -> list[dict[str, np.ndarray]]:
    """`count` vectors by the shared rule (pipeline.numerics.vectors), keyed by NNEF external name."""
    mapping = dict(input_names)
    missing = [name for name in spec.inputs if name not in mapping]
    if missing or sorted(mapping[n] for n in spec.inputs) != sorted(graph.inputs):
        raise SplitError("SPLIT-E021", f"the spec's inputs {sorted(spec.inputs)} do not map onto the graph's inputs "
                         f"{graph.inputs} (mapping {mapping})", Location.in_file(spec.path, key_path="inputs"))
    return [{mapping[name]: value for name, value in vector.items()}
            for vector in draw_vectors(spec.inputs, count, seed)]


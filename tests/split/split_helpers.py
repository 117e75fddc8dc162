"""Fixtures of the split tests: hand-written descriptions with generated tensors, specs,
and an independent plain-NNEF reading of item files for the Khronos parser.

`khronos_text` is deliberately a *line* transformation, written apart from
pipeline.split.plain_nnef (which works on the AST): the test compares what the Khronos
parser reads from it with what our checker reads from the item file.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.project.deploy import DeploySpec, parse_deploy_text
from pipeline.project.layout import model_names
from pipeline.nnef.checker import check_paths
from pipeline.nnef.graph import Graph, Ref
from pipeline.nnef.tensorfile import write_tensor

ROOT = Path(__file__).resolve().parents[2]
BRANCH3 = ROOT / "examples" / "nnef" / "branch3.nnef"
BRANCH3_ITEMS = ROOT / "examples" / "nnef" / "branch3_items.nnef"
MODELS = tuple(model_names(ROOT))   # every shipped model (models/), found, never listed

SPEC_HEAD = """schema_version: 1
model: {model}
inputs:
{inputs}
validation:
  vectors: 3
  seed: 7
  tolerance: {{max_abs_error: 1.0e-5}}
met: {{runs: 1, budget_us: 1000}}
deployments:
"""


def spec_text(model: str, inputs: dict[str, list[int]], deployments: str) -> str:
    """A deploy.yaml text; `deployments` is the YAML body under `deployments:` (indented 2)."""
    lines = "\n".join(f"  {name}:\n    shape: {list(shape)}\n    distribution: {{kind: uniform, low: -1.0, high: 1.0}}"
                      for name, shape in inputs.items())
    return SPEC_HEAD.format(model=model, inputs=lines) + deployments


def write_spec(folder: Path, text: str) -> DeploySpec:
    path = folder / "deploy.yaml"
    path.write_text(text, encoding="utf-8")
    return parse_deploy_text(text, str(path))


def with_tensors(text: str, folder: Path, seed: int = 3) -> Path:
    """Write `text` as folder/graph.nnef and a random .dat file for each of its variables."""
    folder.mkdir(parents=True, exist_ok=True)
    graph_file = folder / "graph.nnef"
    graph_file.write_text(text, encoding="utf-8")
    report = check_paths([graph_file], tensors=False)
    assert report.ok, [f"{f.code} {f.message}" for f in report.findings]
    rng = np.random.default_rng(seed)
    for op in report.graphs[0].operations:
        if op.name == "variable":
            shape = [int(s) for s in op.attribs["shape"]]
            write_tensor(folder / f"{op.attribs['label']}.dat", rng.uniform(-0.5, 0.5, shape).astype(np.float32))
    return graph_file


def branch3_export(folder: Path) -> Path:
    """The paper's three-branch network (examples/nnef/branch3.nnef) with random tensors."""
    return with_tensors(BRANCH3.read_text(encoding="utf-8"), folder)


BRANCH3_SPEC = """  single:
    items: [{name: CPU0, target: cpu}]
    default_item: CPU0
    sync: event
  paper3:
    items: [{name: ITEM1, target: cpu}, {name: ITEM2, target: cpu}, {name: ITEM3, target: cpu}]
    default_item: ITEM1
    allocation:
      ITEM2: [o2, o3]
      ITEM3: [o4, o5]
    sync: barrier
"""


def branch3_spec(folder: Path, deployments: str = BRANCH3_SPEC) -> DeploySpec:
    return write_spec(folder, spec_text("branch3", {"e1": [1, 1, 16, 16]}, deployments))


# ---------------------------------------------------------------------- Khronos reading

_HEADER = re.compile(r"^graphitem\s+(\w+)\s+(\w+)\s*\(([^)]*)\)\s*->\s*\(([^)]*)\)\s*$")
_SYNC = re.compile(r"^\s*(\w+)\s*=\s*variablesync<(\w+)>\(shape = (\[[^\]]*\])\);\s*$")
_SEND = re.compile(r"^\s*(\w+)\s*=\s*send_var\(\[[^\]]*\],\s*(\w+)\);\s*$")
_GET = re.compile(r"^\s*(\w+)\s*=\s*get_var\((\w+),\s*(\w+)\);\s*$")


def khronos_text(item_text: str) -> str:
    """The item file with the extension lines removed: graphitem header -> graph header,
    variablesync and send_var lines dropped, get_var -> external of the declared shape;
    in the header a sync variable read becomes the value received, one written the value sent."""
    lines = item_text.splitlines()
    syncs = {m.group(1): (m.group(2), m.group(3)) for m in map(_SYNC.match, lines) if m}
    sent = {m.group(1): m.group(2) for m in map(_SEND.match, lines) if m}
    received = {m.group(3): m.group(1) for m in map(_GET.match, lines) if m}
    out = []
    for line in lines:
        header = _HEADER.match(line)
        if header:
            params = [received.get(p.strip(), p.strip()) for p in header.group(3).split(",") if p.strip()]
            results: list[str] = []
            for r in (r.strip() for r in header.group(4).split(",") if r.strip()):
                value = sent.get(r, r)
                if value not in results:
                    results.append(value)
            out.append(f"graph {header.group(2)}( {', '.join(params)} ) -> ( {', '.join(results)} )")
        elif _SYNC.match(line) or _SEND.match(line):
            continue
        elif _GET.match(line):
            get = _GET.match(line)
            assert get is not None
            dtype, shape = syncs[get.group(3)]
            out.append(f"    {get.group(1)} = external<{dtype}>(shape = {shape});")
        else:
            out.append(line)
    return "\n".join(out) + "\n"


def _comparable(value: Any) -> Any:
    import nnef

    if isinstance(value, nnef.Identifier):
        return ("ref", str(value))
    if isinstance(value, Ref):
        return ("ref", value.name)
    if isinstance(value, (list, tuple)):
        return tuple(_comparable(v) for v in value)
    if isinstance(value, (float, np.floating)):
        return float(np.float32(value))
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    return value


def khronos_reading(text: str, tmp: Path) -> list[tuple[Any, ...]]:
    """Operations (name, attribs, inputs, outputs) and shapes as the Khronos parser reads `text`."""
    import nnef

    folder = tmp / "khronos"
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir()
    (folder / "graph.nnef").write_text(text, encoding="utf-8")
    graph = nnef.load_graph(str(folder), lowered=[], load_variables=False)
    nnef.infer_shapes(graph)
    ops = [(op.name, {k: _comparable(v) for k, v in op.attribs.items()}, {k: _comparable(v) for k, v in op.inputs.items()},
            {k: _comparable(v) for k, v in op.outputs.items()}) for op in graph.operations]
    shapes = {name: list(t.shape) for name, t in graph.tensors.items()}
    return [tuple(ops), tuple(sorted((k, tuple(v)) for k, v in shapes.items()))]


def our_reading(item: Graph) -> list[tuple[Any, ...]]:
    """The same view of an item graph as our checker built it, extension operations
    mapped as `khronos_text` maps them."""
    syncs = {op.output_refs()[0].name: op for op in item.operations if op.name == "variablesync"}
    ops = []
    for op in item.operations:
        if op.name in ("variablesync", "send_var"):
            continue
        if op.name == "get_var":
            declared = syncs[op.inputs["data"].name]
            ops.append(("external", {"shape": _comparable(declared.attribs["shape"])}, {},
                        {"output": _comparable(op.outputs["output"])}))
            continue
        ops.append((op.name, {k: _comparable(v) for k, v in op.attribs.items()},
                    {k: _comparable(v) for k, v in op.inputs.items()}, {k: _comparable(v) for k, v in op.outputs.items()}))
    shapes = {name: list(t.shape or []) for name, t in item.tensors.items() if name not in syncs}
    return [tuple(ops), tuple(sorted((k, tuple(v)) for k, v in shapes.items()))]

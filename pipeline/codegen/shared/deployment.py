"""What a code generator reads: a split deployment with its items, schedules and weights.

The split step leaves, per deployment, one graphitem file per item, plan.json (items and
targets, sync variables, which item holds each output) and schedule.json (each item's
steps in the order its code must run them). The item files are re-read here by the NNEF
checker (all items together, tensor files from the export folder), every schedule step is
matched with the instruction it names, and every variable's tensor file is read with its
SHA-256, so the generators work from checked files only.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.codegen.shared.errors import CodegenError
from pipeline.diagnostics import Location, PipelineError, Severity
from pipeline.project.layout import project_relative
from pipeline.nnef.checker import check_paths
from pipeline.nnef.graph import Graph, Operation
from pipeline.nnef.tensorfile import LABEL_CODE, TensorFileError, label_path, read_variable_file
from pipeline.split.plan import PLAN_FILE, SCHEDULE_FILE, load_plan, load_schedule
from pipeline.split.splitter import Step

DECLARATIONS = ("external", "variable", "variablesync", "constant")


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@dataclass(frozen=True)
class Weight:
    """A parameter tensor: its label, tensor file (absolute and project-relative), hash, data."""

    label: str
    path: Path
    rel: str
    sha256: str
    array: np.ndarray = field(repr=False, compare=False)


@dataclass
class ItemInput:
    """One item: its description (checked graph and source lines) and its schedule."""

    name: str
    target: str
    nnef_path: Path
    nnef_rel: str
    nnef_sha256: str
    graph: Graph
    lines: list[str]
    steps: list[Step]
    step_ops: list[Operation | None]   # the instruction of each compute/send/get step (None: barrier)

    def where(self, op: Operation) -> Location:
        """`op`'s place in the item file, for an error about it."""
        if op.span is None:
            return Location.in_file(self.nnef_rel)
        return Location(self.nnef_rel, op.span.line, op.span.column, op.span.end_line, op.span.end_column)

    def instruction(self, op: Operation) -> tuple[int, str]:
        """`op`'s line in the item file and its text (the operation's name when it has no line), as traces name it."""
        line = op.span.line if op.span else 0
        return line, self.lines[line - 1].strip() if 0 < line <= len(self.lines) else op.name

    def shape(self, tensor: str) -> tuple[int, ...]:
        """The checker's shape of `tensor`; CODEGEN-E008 when it inferred none."""
        info = self.graph.tensors.get(tensor)
        if info is None or info.shape is None:
            raise CodegenError("CODEGEN-E008", f"tensor {tensor} has no inferred shape", Location.in_file(self.nnef_rel))
        return tuple(int(s) for s in info.shape)

    def declaration(self, tensor: str) -> Operation | None:
        for op in self.graph.operations:
            if op.name in DECLARATIONS and any(r.name == tensor for r in op.output_refs()):
                return op
        return None


@dataclass
class DeploymentInput:
    """A deployment as the generators see it (see the module docstring)."""

    model: str
    deployment: str
    sync: str
    items: list[ItemInput]
    sync_variables: list[dict[str, Any]]
    outputs: dict[str, str]
    weights: dict[str, Weight]
    split_dir: Path
    export_dir: Path
    root: Path
    plan_rel: str
    schedule_rel: str

    def item(self, name: str) -> ItemInput:
        for item in self.items:
            if item.name == name:
                return item
        raise KeyError(name)


def _match_steps(item: str, graph: Graph, steps: list[Step], where: Location) -> list[Operation | None]:
    """The instruction of each step; CODEGEN-E004 if the schedule and the description disagree."""
    by_result: dict[str, Operation] = {}
    sends: dict[str, Operation] = {}
    computing = []
    for op in graph.operations:
        if op.name in DECLARATIONS:
            continue
        computing.append(op)
        if op.name == "send_var":
            sends[op.output_refs()[0].name] = op
        else:
            for ref in op.output_refs():
                by_result[ref.name] = op
    matched: list[Operation | None] = []
    for index, step in enumerate(steps):
        if step.kind == "barrier":
            matched.append(None)
            continue
        op = sends.get(step.var) if step.kind == "send" else by_result.get(step.result)
        expected = {"send": "send_var", "get": "get_var"}.get(step.kind)
        if op is None or (expected and op.name != expected) or (step.kind == "compute" and op.name != step.op):
            raise CodegenError("CODEGEN-E004", f"step {index} of item {item} ({step.to_json()}) names no matching "
                               "instruction of the item's description", where)
        matched.append(op)
    listed = [id(op) for op in matched if op is not None]
    if sorted(listed) != sorted(id(op) for op in computing) or len(set(listed)) != len(listed):
        missing = [op.name for op in computing if id(op) not in listed]
        raise CodegenError("CODEGEN-E004", f"the schedule of item {item} does not list every instruction exactly once"
                           + (f" (missing: {', '.join(missing)})" if missing else ""), where)
    return matched


def load_deployment(split_dir: str | os.PathLike[str], export_dir: str | os.PathLike[str],
                    root: str | os.PathLike[str] = ".") -> DeploymentInput:
    """Read and check a split deployment folder (plan.json, schedule.json, item files).

    Raises CodegenError: E003 missing/unreadable artifact, E004 description that does not
    check or schedule that does not match it, E005 tensor file disagreeing with its
    declaration.
    """
    base = Path(root)
    folder = Path(split_dir)
    export = Path(export_dir)
    plan_path, schedule_path = folder / PLAN_FILE, folder / SCHEDULE_FILE
    for path in (plan_path, schedule_path):
        if not path.is_file():
            raise CodegenError("CODEGEN-E003", "split artifact missing (run the split step first)", Location.in_file(path))
    try:
        plan = load_plan(plan_path)
        schedule = load_schedule(schedule_path)
    except PipelineError as error:
        raise CodegenError("CODEGEN-E003", f"{error.code}: {error.message}", error.location or Location.in_file(folder)) from None
    files = [folder / entry["file"] for entry in plan["items"]]
    for path in files:
        if not path.is_file():
            raise CodegenError("CODEGEN-E003", "item description missing", Location.in_file(path))
    report = check_paths(files, profile="certification", tensors=True, tensor_dir=export)
    errors = [f for f in report.findings if f.severity is Severity.ERROR]
    if errors:
        first = errors[0]
        raise CodegenError("CODEGEN-E004", f"{first.code}: {first.message}", Location.of_span(first.span) if first.span else Location.in_file(folder))
    graphs = {g.item or g.name: g for g in report.graphs}
    items: list[ItemInput] = []
    weights: dict[str, Weight] = {}
    for entry, path in zip(plan["items"], files):
        name = entry["name"]
        graph = graphs.get(name)
        if graph is None:
            raise CodegenError("CODEGEN-E004", f"no graphitem {name} in the item file", Location.in_file(path))
        steps = schedule.items.get(name, [])
        text = report.texts.get(str(path))
        lines = (text if text is not None else path.read_text(encoding="utf-8")).splitlines()
        matched = _match_steps(name, graph, steps, Location.in_file(schedule_path))
        items.append(ItemInput(name, entry["target"], path, project_relative(path, base), sha256_of(path), graph,
                               lines, steps, matched))
        for op in graph.operations:
            if op.name != "variable":
                continue
            label = str(op.attribs.get("label", ""))
            if label in weights:
                continue
            try:
                dat = label_path(export, label)
            except ValueError as error:
                raise PipelineError(LABEL_CODE, str(error), Location.of_span(op.span) if op.span
                                   else Location.in_file(path)) from None
            try:  # below the export folder, no link followed (pipeline.files.readguard)
                array = read_variable_file(export, label).data
            except TensorFileError as error:
                if error.missing:
                    raise CodegenError("CODEGEN-E003", f"tensor file of variable '{label}' missing",
                                       Location.in_file(dat)) from None
                raise CodegenError("CODEGEN-E005", error.message, Location.in_file(dat)) from None
            shape = [int(s) for s in op.attribs.get("shape", [])]
            declared = op.dtype or "scalar"  # a select's condition is a variable<logical> (shared/conditions.py)
            expected = np.dtype(bool) if declared == "logical" else np.dtype(np.float32)
            if array.dtype != expected or list(array.shape) != shape:
                raise CodegenError("CODEGEN-E005", f"'{label}' holds {array.dtype} {list(array.shape)}, declared "
                                   f"{declared} {shape}", Location.of_span(op.span) if op.span else Location.in_file(dat))
            weights[label] = Weight(label, dat, project_relative(dat, base), sha256_of(dat), array)
    return DeploymentInput(str(plan["model"]), str(plan["deployment"]), schedule.sync, items,
                           list(plan["sync_variables"]), dict(plan["outputs"]), weights, folder, export, base,
                           project_relative(plan_path, base), project_relative(schedule_path, base))

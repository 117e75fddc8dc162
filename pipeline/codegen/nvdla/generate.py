"""The NVDLA loadables of a deployment: one per `nvdla` item, with its debug table and code trace.

Output folder (artifacts/<m>/codegen/nvdla/<deployment>/):

    build.json              items (loadable, debug table, trace, sha256), their inputs and outputs
                            (NNEF name and shape), configuration and precision
    <ITEM>.nvdla            the loadable (flatbuffer of loadable.fbs, firmware interface 0.12.x)
    <ITEM>.debug.json       task / operation / unit -> NNEF instruction and line, legalization rules
    <ITEM>/trace.json       the code trace (docs/evidence.md shape): every NNEF line of the item ->
                            the lines of the debug table's operations implementing it

The item is legalized again here from its checked item file (the split step did the same to
refuse early and wrote <ITEM>.nvdla-legalization.json); lines are the item file's. Same split,
same bytes: nothing depends on time or paths.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.files.atomic import write_json
from pipeline.codegen.shared.errors import CodegenError
from pipeline.codegen.shared.deployment import DeploymentInput, ItemInput, sha256_of
from pipeline.codegen.nvdla.artifacts import write_loadable_files
from pipeline.codegen.nvdla.mapping import map_program
from pipeline.codegen.nvdla.writer import write_loadable
from pipeline.diagnostics import Location, PipelineError
from pipeline.project.layout import BUILD_FILE, project_relative
from pipeline.files.names import confined

TRACE_FILE = "trace.json"
CONFIGURATION = "nv_full"
PRECISION = "fp16"


@dataclass
class NvdlaGenerated:
    folder: Path
    files: list[Path]


def operation_lines(text: str) -> list[tuple[int, int]]:
    """[first, last] line (1-based) of each element of the top-level "operations" list of a debug
    table written as canonical JSON (2-space indent: elements open with 4 spaces and `{`)."""
    lines = text.splitlines()
    ranges: list[tuple[int, int]] = []
    inside = False
    start = 0
    for number, line in enumerate(lines, 1):
        if line == '  "operations": [':
            inside = True
        elif inside and line == "    {":
            start = number
        elif inside and line in ("    }", "    },"):
            ranges.append((start, number))
        elif inside and line.startswith("  ]"):
            break
    return ranges


def _item(loaded: DeploymentInput, item: ItemInput, folder: Path) -> tuple[list[Path], dict[str, Any]]:
    from pipeline.split.nvdla_legalize import legalize

    variables = {label: weight.array for label, weight in loaded.weights.items()}
    try:
        legal = legalize(item.graph, variables, CONFIGURATION, text="\n".join(item.lines))
    except PipelineError as error:   # the split step refused this already; a changed item file lands here
        raise CodegenError("CODEGEN-E009", f"{item.name}: {error.code}: {error.message}",
                           error.location or Location.in_file(item.nnef_path)) from None
    data, _content, debug = write_loadable(map_program(legal))
    files = write_loadable_files(folder, item.name, data, debug, legal.rewrites, legal.config)
    debug_path = files[1]
    ranges = operation_lines(debug_path.read_text(encoding="utf-8"))
    if len(ranges) != len(debug):
        raise CodegenError("CODEGEN-E009", f"{item.name}: the debug table's operations could not be located "
                           f"({len(ranges)} ranges for {len(debug)} operations)", Location.in_file(debug_path))
    debug_rel = project_relative(debug_path, loaded.root)
    entries = [{"nnef_line": int(op["nnef_line"]), "instruction": str(op["nnef"]), "code_file": debug_rel,
                "code_lines": [first, last]} for op, (first, last) in zip(debug, ranges)]
    entries.sort(key=lambda e: (e["nnef_line"], e["code_lines"][0]))
    trace = write_json(confined(folder, item.name, TRACE_FILE), {
        "schema_version": 1, "item": item.name, "target": "nvdla", "nnef_file": item.nnef_rel,
        "nnef_sha256": item.nnef_sha256, "entries": entries})
    shapes = legal.shapes
    record = {"name": item.name, "loadable": f"{item.name}.nvdla", "debug": f"{item.name}.debug.json",
              "trace": f"{item.name}/{TRACE_FILE}", "nnef_file": item.nnef_rel, "nnef_sha256": item.nnef_sha256,
              "loadable_sha256": sha256_of(files[0]), "bytes": len(data),
              "tasks": len({op["task"] for op in debug if op["task"] >= 0}),
              "operations": sum(1 for op in debug if op["task"] >= 0),
              "inputs": [{"name": n, "shape": list(s)} for n, s in sorted(legal.inputs.items())],
              "outputs": [{"name": n, "shape": list(shapes.get(n, []))} for n in legal.outputs]}
    return [*files, trace], record


def generate_nvdla(loaded: DeploymentInput, folder: Path) -> NvdlaGenerated:
    """Write the loadable, debug table and trace of every nvdla item of `loaded` into `folder`."""
    written: list[Path] = []
    records = []
    for item in loaded.items:
        if item.target != "nvdla":
            continue
        files, record = _item(loaded, item, folder)
        written += files
        records.append(record)
    if not records:
        raise CodegenError("CODEGEN-E009", "the deployment has no nvdla item", Location.in_file(loaded.split_dir))
    written.append(write_json(folder / BUILD_FILE, {
        "schema_version": 1, "model": loaded.model, "deployment": loaded.deployment, "target": "nvdla",
        "configuration": CONFIGURATION, "precision": PRECISION, "items": records,
        "outputs": dict(sorted(loaded.outputs.items()))}))
    return NvdlaGenerated(folder, written)

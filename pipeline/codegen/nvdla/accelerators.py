"""`codegen.accelerators` for one generated NVDLA deployment folder, from the files alone.

What it judges (structural; the numbers are compare.nvdla_reference's):
- every loadable still has the SHA-256 build.json recorded, and the independent validator
  (validate.py, reading the bytes through reader.py, never the writer) finds nothing;
- the loadable's task list, read back, has the tasks the debug table names;
- the code trace: every computing instruction of the item file, as the NNEF checker reads it
  (not as the generator saw it), has a trace entry, and each entry's lines of the debug table
  name that NNEF line.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from pipeline.codegen.nvdla import reader as R
from pipeline.codegen.nvdla.validate import validate_loadable
from pipeline.nnef.checker import check_paths

DECLARATIONS = ("external", "variable", "variablesync", "constant")
# An nvdla item next to other items receives and sends in its C proxy (pipeline/codegen/nvdla/proxy.py): those
# instructions are traced in the C program's trace.json (codegen.trace), not in the loadable's debug table.
SYNC_INSTRUCTIONS = ("get_var", "send_var")


def _rel(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def _trace_problems(item: dict[str, Any], folder: Path, root: Path) -> tuple[list[str], int]:
    """Problems of one item's trace.json against its item file and debug table; traced instruction count."""
    trace = json.loads((folder / item["trace"]).read_text(encoding="utf-8"))
    nnef = root / trace["nnef_file"]
    if not nnef.is_file():
        return [f"NNEF file {trace['nnef_file']} does not exist"], 0
    problems = []
    if hashlib.sha256(nnef.read_bytes()).hexdigest() != trace["nnef_sha256"]:
        problems.append(f"{trace['nnef_file']} changed since the loadable was generated")
    graph = next((g for g in check_paths([nnef], tensors=False).graphs if (g.item or g.name) == item["name"]), None)
    if graph is None:
        return problems + [f"{trace['nnef_file']} has no graph for item {item['name']}"], 0
    computing = sorted({op.span.line for op in graph.operations
                        if op.span and op.name not in DECLARATIONS + SYNC_INSTRUCTIONS})
    covered = {e["nnef_line"] for e in trace["entries"]}
    problems += [f"NNEF line {line} of {trace['nnef_file']} has no entry in the debug table" for line in computing
                 if line not in covered]
    texts: dict[str, list[str]] = {}
    for e in trace["entries"]:
        path = root / e["code_file"]
        if e["code_file"] not in texts:
            texts[e["code_file"]] = path.read_text(encoding="utf-8").splitlines() if path.is_file() else []
        lines = texts[e["code_file"]]
        first, last = e["code_lines"]
        block = "\n".join(lines[first - 1:last]) if 1 <= first <= last <= len(lines) else ""
        if not re.search(rf'"nnef_line": {e["nnef_line"]}\b', block):
            problems.append(f"entry for NNEF line {e['nnef_line']}: {e['code_file']}:{first}-{last} does not name it")
    return problems, len(computing)


def check_folder(folder: Path, root: Path) -> tuple[list[str], dict[str, Any], list[str]]:
    """(problems, measured, files read) of a generated NVDLA deployment folder."""
    manifest = json.loads((folder / "build.json").read_text(encoding="utf-8"))
    problems: list[str] = []
    read = [_rel(folder / "build.json", root)]
    measured: dict[str, Any] = {"configuration": manifest["configuration"], "precision": manifest["precision"],
                                "validator": "pipeline/codegen/nvdla/validate.py (reader.py, flatbuffers Table)"}
    for item in manifest["items"]:
        name = item["name"]
        loadable, debug_path = folder / item["loadable"], folder / item["debug"]
        read += [_rel(p, root) for p in (loadable, debug_path, folder / item["trace"])]
        data = loadable.read_bytes()
        if hashlib.sha256(data).hexdigest() != item["loadable_sha256"]:
            problems.append(f"{name}: {item['loadable']} differs from the loadable build.json recorded")
        findings = [str(f) for f in validate_loadable(data)]
        problems += [f"{name}: {f}" for f in findings]
        tasks = None
        if not findings:
            tasks = len(R.read_loadable(data)["task_list"])
            debug = json.loads(debug_path.read_text(encoding="utf-8"))
            named = len({op["task"] for op in debug["operations"] if op["task"] >= 0})  # -1: an alias, no task
            if tasks != named:
                problems.append(f"{name}: the loadable has {tasks} tasks, its debug table names {named}")
        trace_problems, traced = _trace_problems(item, folder, root)
        problems += [f"{name}: {p}" for p in trace_problems]
        measured[name] = {"bytes": len(data), "tasks": tasks, "findings": len(findings),
                          "traced_instructions": traced}
    return problems, measured, read

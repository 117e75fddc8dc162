"""Trace and weight checks of generated code (HLR-COD-002, LLR-COD-001), from the files alone.

Trace: every instruction of the item's NNEF file (as the checker reads it) has an entry in
trace.json whose code lines exist and carry a comment naming that NNEF line; in the other
direction every generated kernel function and every weight array lies inside an entry's
range, and every other line of code the deployment compiles inside a named infrastructure part
(`check_coverage`: trace.json `parts`); the NNEF file still has the hash the trace recorded.

Weights: every array weights.json lists is re-derived here from its tensor file (whose
SHA-256 must still be the recorded one) by this module's own implementation of the layout,
and compared bit for bit with the values parsed back from the generated header. So a weight
in the executable is traced to the trained parameter, not merely to a comment. Large items
keep their parameters in a binary file the assembler links (`.incbin`); then the values are
read from the file the header's assembler directive names, at the offset each array's
`#define` gives (the very expressions the compiler uses), and compared the same way.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.nnef.checker import check_paths
from pipeline.nnef.tensorfile import read_tensor

ARRAY = re.compile(r"static const float (\w+)\[(\d+)\][^=]*=\s*\{(.*?)\};", re.S)
BLOB = re.compile(r'^__asm__\("\.pushsection \.rodata\\n\\t\.balign (\d+)\\n(\w+):\\n\\t\.incbin \\"([\w/.]+)\\"'
                  r'\\n\\t\.popsection"\);$', re.M)
BLOB_ARRAY = re.compile(r"^#define (\w+) \((\w+) \+ (\d+)\)", re.M)
DECLARATIONS = ("external", "variable", "variablesync", "constant")


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def parse_arrays(text: str) -> dict[str, np.ndarray]:
    """Every `static const float NAME[n] = {...};` of a generated header, as float32 arrays."""
    result = {}
    for match in ARRAY.finditer(text):
        items = [t.strip() for t in match.group(3).replace("\n", " ").split(",") if t.strip()]
        values = []
        special = {"INFINITY": np.inf, "(-INFINITY)": -np.inf, "NAN": np.nan, "(-NAN)": -np.nan}
        for item in items:
            if item in special:
                values.append(np.float32(special[item]) if item != "(-NAN)" else -np.float32(np.nan))
            else:
                values.append(np.float32(float.fromhex(item.rstrip("fF"))))
        array = np.asarray(values, np.float32)
        if array.size != int(match.group(2)):
            raise ValueError(f"array {match.group(1)} declares {match.group(2)} values, holds {array.size}")
        result[match.group(1)] = array
    return result


def blob_arrays(text: str, deployment_dir: Path, sizes: dict[str, int]) -> tuple[dict[str, np.ndarray], list[str]]:
    """The arrays a header defines into its linked binary file, `sizes[name]` floats each."""
    blobs = BLOB.findall(text)
    if not blobs:
        return {}, []
    if len(blobs) != 1:
        return {}, [f"{len(blobs)} linked binary files in one weights header (expected one)"]
    alignment, symbol, rel = blobs[0]
    path = deployment_dir / rel
    if ".." in Path(rel).parts or not path.is_file():
        return {}, [f"the linked binary file {rel} does not exist in the deployment folder"]
    if f"extern const float {symbol}[];" not in text:
        return {}, [f"the linked binary file's symbol {symbol} is not declared"]
    data = np.frombuffer(path.read_bytes(), dtype="<f4") if path.stat().st_size % 4 == 0 else None
    if data is None:
        return {}, [f"{rel}: size {path.stat().st_size} is not a whole number of floats"]
    arrays, problems = {}, []
    for name, base, first in BLOB_ARRAY.findall(text):
        start, count = int(first), sizes.get(name)
        if base != symbol or count is None:
            continue
        if (start * 4) % int(alignment):
            problems.append(f"{name}: offset {start * 4} bytes is not {alignment}-byte aligned")
        if start + count > data.size:
            problems.append(f"{name}: floats [{start}, {start + count}) lie beyond the end of {rel} ({data.size} floats)")
            continue
        arrays[name] = data[start:start + count].astype(np.float32)
    return arrays, problems


def expected_layout(data: np.ndarray, layout: dict[str, Any]) -> np.ndarray:
    """The array a layout description promises, built from the tensor file's data."""
    kind = layout.get("kind")
    data = np.asarray(data, np.float32)
    if kind == "identity":
        return data.reshape(-1)
    if kind == "transpose2d":
        return np.ascontiguousarray(data.reshape(data.shape[0], -1).T).reshape(-1)
    if kind == "conv_blocks":
        groups, og, cg, kh, kw, block = (int(layout[k]) for k in ("groups", "og", "cg", "kh", "kw", "block"))
        nblocks = -(-og // block)
        out = np.zeros((groups, nblocks, cg, kh, kw, block), np.float32)
        w = data.reshape(groups, og, cg, kh, kw)
        for g in range(groups):
            for o in range(og):
                out[g, o // block, :, :, :, o % block] = w[g, o]
        return out.reshape(-1)
    if kind == "bias_blocks":
        groups, og, block = int(layout["groups"]), int(layout["og"]), int(layout["block"])
        nblocks = -(-og // block)
        flat = data.reshape(-1)
        per_channel = np.full(groups * og, flat[0], np.float32) if flat.size == 1 else flat
        out = np.zeros((groups, nblocks, block), np.float32)
        for o in range(groups * og):
            g, local = divmod(o, og)
            out[g, local // block, local % block] = per_channel[o]
        return out.reshape(-1)
    if kind == "bias_channels":
        flat = data.reshape(-1)
        outs = int(layout["outs"])
        return np.full(outs, flat[0], np.float32) if flat.size == 1 else flat.copy()
    if kind == "linear_blocks":
        outs, depth, block = int(layout["outs"]), int(layout["depth"]), int(layout["block"])
        w = data.reshape(outs, depth)
        nblocks = -(-outs // block)
        out = np.zeros((nblocks, depth, block), np.float32)
        for o in range(outs):
            out[o // block, :, o % block] = w[o]
        if "last_block" not in layout:  # every block padded with zeros to `block` outputs
            return out.reshape(-1)
        last = int(layout["last_block"])
        if last != outs - (nblocks - 1) * block:
            raise ValueError(f"last block of {last} outputs; {outs} outputs in blocks of {block} leave "
                             f"{outs - (nblocks - 1) * block}")
        return np.concatenate([out[:-1].reshape(-1), out[-1, :, :last].reshape(-1)])
    raise ValueError(f"unknown layout {kind!r}")


def check_weights(item_dir: Path, root: Path) -> tuple[list[str], dict[str, Any]]:
    """Problems with the item's weight arrays and (arrays, floats) checked."""
    problems: list[str] = []
    record = json.loads((item_dir / "weights.json").read_text(encoding="utf-8"))
    headers = list(item_dir.glob("nnef_weights_*.h"))
    if len(headers) != 1:
        return [f"{item_dir}: expected one weights header, found {len(headers)}"], {}
    text = headers[0].read_text(encoding="utf-8")
    arrays = parse_arrays(text)
    expected_arrays: dict[str, np.ndarray] = {}
    floats = 0
    for entry in record["arrays"]:
        name = entry["array"]
        dat = root / entry["file"]
        if not dat.is_file():
            problems.append(f"{name}: tensor file {entry['file']} does not exist")
            continue
        if _sha256(dat) != entry["sha256"]:
            problems.append(f"{name}: {entry['file']} changed since the code was generated (sha256 differs)")
        if entry["sha256"] not in text or entry["file"] not in text:
            problems.append(f"{name}: the header does not name {entry['file']} and its sha256")
        try:
            expected_arrays[name] = expected_layout(read_tensor(dat), entry["layout"])
        except (ValueError, KeyError) as error:
            problems.append(f"{name}: {error}")
    linked, blob_problems = blob_arrays(text, item_dir.parent, {n: a.size for n, a in expected_arrays.items()})
    problems += blob_problems
    arrays.update(linked)
    for entry in record["arrays"]:
        name = entry["array"]
        if name not in expected_arrays:
            continue
        if name not in arrays:
            problems.append(f"{name}: listed in weights.json but not defined in {headers[0].name}")
            continue
        expected = expected_arrays[name]
        got = arrays[name]
        if expected.shape != got.shape or expected.view(np.uint32).tobytes() != got.view(np.uint32).tobytes():
            diff = int(np.argmax(expected.view(np.uint32) != got.view(np.uint32))) if expected.shape == got.shape else -1
            problems.append(f"{name}: values differ from {entry['file']} in layout {entry['layout'].get('kind')}"
                            + (f" (first at element {diff})" if diff >= 0 else f" (sizes {got.size} vs {expected.size})"))
        floats += got.size
    return problems, {"weight_arrays": len(record["arrays"]), "weight_floats": floats}


def _functions(item_dir: Path) -> list[dict[str, Any]]:
    """The item's functions as build.json lists them (function, lines, nnef_line)."""
    manifest = item_dir.parent / "build.json"
    if not manifest.is_file():
        return []
    data = json.loads(manifest.read_text(encoding="utf-8"))
    return next((i.get("functions", []) for i in data.get("items", []) if i.get("dir") == item_dir.name), [])


def check_trace(item_dir: Path, root: Path) -> tuple[list[str], dict[str, Any]]:
    """Problems with the item's trace.json against its NNEF file and the generated code."""
    problems: list[str] = []
    trace = json.loads((item_dir / "trace.json").read_text(encoding="utf-8"))
    nnef = root / trace["nnef_file"]
    if not nnef.is_file():
        return [f"NNEF file {trace['nnef_file']} does not exist"], {}
    if _sha256(nnef) != trace["nnef_sha256"]:
        problems.append(f"{trace['nnef_file']} changed since the code was generated")
    report = check_paths([nnef], tensors=False)
    graph = next((g for g in report.graphs if (g.item or g.name) == trace["item"]), None)
    if graph is None:
        return [f"{trace['nnef_file']} has no graph for item {trace['item']}"], {}
    instruction_lines = sorted({op.span.line for op in graph.operations if op.span})
    entries = trace["entries"]
    covered = {e["nnef_line"] for e in entries}
    for line in instruction_lines:
        if line not in covered:
            problems.append(f"NNEF line {line} of {trace['nnef_file']} has no trace entry")
    files: dict[str, list[str]] = {}
    for e in entries:
        path = root / e["code_file"]
        if e["code_file"] not in files:
            if not path.is_file():
                problems.append(f"code file {e['code_file']} does not exist")
                files[e["code_file"]] = []
                continue
            files[e["code_file"]] = path.read_text(encoding="utf-8").splitlines()
        lines = files[e["code_file"]]
        first, last = e["code_lines"]
        if not 1 <= first <= last <= len(lines):
            problems.append(f"entry for NNEF line {e['nnef_line']}: lines {first}-{last} outside {e['code_file']}")
            continue
        block = "\n".join(lines[first - 1:last])
        name = Path(trace["nnef_file"]).name
        mentions = re.search(rf"{re.escape(name)}:{e['nnef_line']}\b", block) is not None
        declared = e["code_file"].endswith("nnef_deployment.c") and "variablesync" in block
        is_tensor_decl = re.search(r"static float \*const T_\w+", block) is not None
        functions = {f["function"] for f in _functions(item_dir) if f.get("nnef_line") == e["nnef_line"]}
        is_index_table = any(re.search(rf"\b(IX|B|D)_{re.escape(fn)}(_\w+)?\b", block) for fn in functions)
        if not (mentions or declared or is_tensor_decl or is_index_table):
            problems.append(f"entry for NNEF line {e['nnef_line']}: {e['code_file']}:{first}-{last} does not name "
                            f"{name}:{e['nnef_line']}")
    # back: every kernel function and weight array lies inside an entry's range
    for code_file, lines in files.items():
        ranges = [(e["code_lines"][0], e["code_lines"][1]) for e in entries if e["code_file"] == code_file]
        for number, text in enumerate(lines, start=1):
            defined = (re.match(r"static (?:void (nnef_op_\w+)\(|const float (\w+)\[)", text)
                       or re.match(r"#define ()(\w+) \(nnef_weights_\w+ \+ \d+\)", text))
            if defined and not any(a <= number <= b for a, b in ranges):
                what = defined.group(1) or defined.group(2)
                if what.startswith(("D_", "B_nnef_op")):
                    continue  # derived generation-time constants (divisors, literal biases)
                problems.append(f"{code_file}:{number}: {what} is not inside any trace entry")
    return problems, {"instructions": len(instruction_lines), "trace_entries": len(entries)}


def check_coverage(folder: Path, files: list[str], root: Path) -> tuple[list[str], dict[str, Any]]:
    """Every non-blank line of the deployment's `files` (paths inside `folder`: the sources and headers its
    program compiles) lies in an instruction's entry or a named part of some item's trace.json
    (pipeline/codegen/shared/parts.py): the trace is two-way. Problems name the first lines left out."""
    from pipeline.codegen.shared.parts import uncovered

    ranges: dict[str, list[tuple[int, int]]] = {}
    for path in sorted(folder.glob("*/trace.json")):
        trace = json.loads(path.read_text(encoding="utf-8"))
        for e in trace["entries"] + trace.get("parts", []):
            ranges.setdefault(e["code_file"], []).append((e["code_lines"][0], e["code_lines"][1]))
    problems: list[str] = []
    lines = outside = 0
    for name in files:
        path = folder / name
        rel = path.relative_to(root).as_posix() if path.is_relative_to(root) else path.as_posix()
        text = path.read_text(encoding="utf-8")
        lines += sum(1 for line in text.split("\n") if line.strip())
        for first, last in uncovered(text, ranges.get(rel, [])):
            outside += last - first + 1
            if len(problems) < 20:
                shown = text.split("\n")[first - 1].strip()[:60]
                problems.append(f"{rel}:{first}-{last}: in no instruction's entry and no named part ({shown})")
    return problems, {"code_lines": lines, "code_lines_outside_the_trace": outside}


def code_to_nnef(trace: dict[str, Any], code_file: str, line: int) -> list[int]:
    """The NNEF lines whose trace entries cover `code_file`:`line` (the backward direction)."""
    return sorted({e["nnef_line"] for e in trace["entries"]
                   if e["code_file"] == code_file and e["code_lines"][0] <= line <= e["code_lines"][1]})

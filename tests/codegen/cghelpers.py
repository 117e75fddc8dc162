"""Helpers shared by tests/codegen, tests/execute and tests/compare.

`single_item(folder, text, variables)` writes a one-item deployment by hand (graphitem file,
plan.json, schedule.json in program order, tensor files) so that kernels can be tested on
small graphs without the exporter or the splitter; `build_and_run` generates, compiles and
runs it; `reference` interprets the same description; `tests.projects` makes scratch projects
with the shipped models and requirements linked in.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from pipeline.codegen.program.generate import generate_deployment
from pipeline.codegen.shared.deployment import load_deployment
from pipeline.nnef.checker import check_paths
from pipeline.nnef.tensorfile import read_tensor, write_tensor
from pipeline.semantics import interpret
from pipeline.toolchain.cc import compile_and_link, host_isa

ROOT = Path(__file__).resolve().parents[2]
ITEM = "CPU0"


def lanes_available() -> list[int]:
    """Vector widths to test here: 4 always, 8 when the host runs AVX2, 16 when it runs AVX-512F."""
    return {"avx512": [4, 8, 16], "avx2": [4, 8]}.get(host_isa(), [4])


def single_item(folder: Path, body: str, variables: Mapping[str, np.ndarray] | None = None,
                inputs: Sequence[str] = ("x",), outputs: Sequence[str] = ("y",)) -> Path:
    """A one-item split deployment in `folder`: CPU0.nnef (graphitem), plan.json, schedule.json,
    and `<label>.dat` for each variable (the folder is also the export folder)."""
    folder.mkdir(parents=True, exist_ok=True)
    text = (f"version 1.0;\n\ngraphitem {ITEM} g_{ITEM}( {', '.join(inputs)} ) -> ( {', '.join(outputs)} )\n{{\n"
            + "\n".join(f"    {line.strip()}" for line in body.strip().splitlines()) + "\n}\n")
    (folder / f"{ITEM}.nnef").write_text(text, encoding="utf-8")
    for label, value in (variables or {}).items():
        write_tensor(folder / f"{label}.dat", value if np.asarray(value).dtype == bool else np.asarray(value, np.float32))
    report = check_paths([folder / f"{ITEM}.nnef"], tensors=False)
    errors = [f for f in report.findings if f.is_error]
    assert not errors, [str(e) for e in errors]
    graph = report.graphs[0]
    steps = []
    for op in graph.operations:
        if op.name in ("external", "variable", "constant", "variablesync"):
            continue
        steps.append({"kind": "compute", "result": op.output_refs()[0].name, "op": op.name})
    plan = {"schema_version": 1, "model": "test", "deployment": "unit", "sync": "event", "pipeline_depth": 1,
            "items": [{"name": ITEM, "target": "cpu", "file": f"{ITEM}.nnef"}], "sync_variables": [],
            "allocation": {s["result"]: ITEM for s in steps}, "outputs": {o: ITEM for o in outputs},
            "rewrites": [], "source": "", "unused_items": []}
    (folder / "plan.json").write_text(json.dumps(plan), encoding="utf-8")
    (folder / "schedule.json").write_text(json.dumps({"schema_version": 1, "sync": "event",
                                                      "items": {ITEM: steps}}), encoding="utf-8")
    return folder


def generate(split: Path, export: Path, out: Path, lanes: int, root: Path | None = None):
    return generate_deployment(load_deployment(split, export, root or split.parent), out, lanes=lanes)


def generated_code(root: Path, body: str, variables: Mapping[str, np.ndarray] | None = None, lanes: int = 4,
                   **single: Sequence[str]) -> tuple[Path, Path]:
    """`single_item` in root/split, its code generated into root/code at `lanes`: (split, code)."""
    split = single_item(root / "split", body, variables, **single)
    generate(split, split, root / "code", lanes, root)
    return split, root / "code"


def build(code: Path, lanes: int, name: str = "nnef_run", **kwargs) -> Path:
    manifest = json.loads((code / "build.json").read_text(encoding="utf-8"))
    return compile_and_link(code, manifest["sources"], code / name, lanes, **kwargs).binary


def run(binary: Path, inputs: Mapping[str, np.ndarray], workdir: Path, outputs: Sequence[str],
        extra: Sequence[str] = (), env: Mapping[str, str] | None = None) -> dict[str, np.ndarray]:
    """Run the harness on stacked inputs ({name: [N, ...]}); returns {output: [N, ...]}."""
    ins, outs = workdir / "in", workdir / "out"
    ins.mkdir(parents=True, exist_ok=True)
    outs.mkdir(parents=True, exist_ok=True)
    count = 0
    for name, value in inputs.items():
        write_tensor(ins / f"{name}.dat", np.ascontiguousarray(value, np.float32))
        count = value.shape[0]
    proc = subprocess.run([str(binary), "--inputs", str(ins), "--outputs", str(outs), "--vectors", str(count), *extra],
                          capture_output=True, text=True, timeout=300, env={**os.environ, **(env or {})})
    assert proc.returncode == 0, proc.stderr
    return {name: read_tensor(outs / f"{name}.dat") for name in outputs}


def reference(nnef: Path, inputs: Mapping[str, np.ndarray], variables: Mapping[str, np.ndarray],
              outputs: Sequence[str]) -> dict[str, np.ndarray]:
    """The reference semantics of a graphitem file on stacked inputs."""
    graph = check_paths([nnef], tensors=False).graphs[0]
    count = next(iter(inputs.values())).shape[0]
    results: dict[str, list[np.ndarray]] = {o: [] for o in outputs}
    labels = {op.output_refs()[0].name: str(op.attribs.get("label")) for op in graph.operations if op.name == "variable"}
    bound = {name: variables[label] if np.asarray(variables[label]).dtype == bool else
             np.asarray(variables[label], np.float32) for name, label in labels.items()}
    for v in range(count):
        got = interpret(graph, {k: a[v] for k, a in inputs.items()}, bound, keep=True)
        for o in outputs:
            results[o].append(got[o])
    return {o: np.stack(v) for o, v in results.items()}


def assert_bit_identical(actual: Mapping[str, np.ndarray], expected: Mapping[str, np.ndarray], what: str = "") -> None:
    for name, e in expected.items():
        a = actual[name]
        assert a.shape == e.shape, (name, a.shape, e.shape)
        same = (a.view(np.uint32) == e.view(np.uint32)) | (np.isnan(a) & np.isnan(e))
        if not same.all():
            flat = int(np.argmax(~same.reshape(-1)))
            raise AssertionError(f"{what} {name}: {int((~same).sum())} element(s) differ, first at flat {flat}: "
                                 f"{a.reshape(-1)[flat]!r} vs reference {e.reshape(-1)[flat]!r}")


def exported_c_bit_exact(model, operation: str, x: np.ndarray, folder: Path, what: str) -> np.ndarray:
    """Export an ONNX model with input `x` and output `y`, put its graph on one CPU item, run the generated C
    on the vectors `x` ([N, *shape]) and require it bit-identical to the reference; returns the reference's
    `y` ([N, ...]) for the caller's comparison with onnxruntime / onnx.reference. `operation` must appear in
    the exported text (the case exercises what it means to)."""
    from pipeline.export import export_model

    export = export_model(model, folder / "export")
    assert f"{operation}(" in export.text
    body = re.search(r"\{\n(.*)\n\}", export.text, re.S).group(1)
    x_name, y_name = export.inputs["x"], export.outputs["y"]
    split = single_item(folder / "split", body, export.variables, inputs=[x_name], outputs=[y_name])
    expected = reference(split / f"{ITEM}.nnef", {x_name: x}, export.variables, [y_name])
    lanes = max(lanes_available())
    code = folder / "code"
    generate(split, split, code, lanes, folder)
    got = run(build(code, lanes), {x_name: x}, folder / "run", [y_name])
    assert_bit_identical(got, expected, what)
    return expected[y_name]


def strip_comments(text: str) -> str:
    return re.sub(r"/\*.*?\*/", "", text, flags=re.S)


def copy_tree(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst

"""Networks built here (onnx.helper) through the chain: export, the C of one CPU item and the
CUDA host emulation of one GPU item, each required bit-identical to the reference semantics,
and the export validated against onnxruntime by the project's own tolerance rule.

`through_chain(model, folder, inputs)` is the one call a regression test makes; it returns what
it measured so that the test can add its own assertions (a kernel's text, a static finding)."""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
import onnx

from pipeline.export import export_model
from pipeline.export.validate import default_settings, validate_export
from tests.codegen import cghelpers as H
from tests.codegen_cuda import cudahelpers as C

VECTORS = 8


def save(model: onnx.ModelProto, folder: Path, name: str = "model.onnx") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    onnx.checker.check_model(model, full_check=True)
    path = folder / name
    onnx.save(model, str(path))
    return path


def vectors(model: onnx.ModelProto, count: int = VECTORS, seed: int = 29, low: float = -1.0,
            high: float = 1.0) -> dict[str, np.ndarray]:
    """Seeded uniform vectors [count, *shape] for every graph input."""
    rng = np.random.default_rng(seed)
    weights = {t.name for t in model.graph.initializer}
    return {v.name: rng.uniform(low, high, [count] + [d.dim_value for d in v.type.tensor_type.shape.dim])
            .astype(np.float32) for v in model.graph.input if v.name not in weights}


@dataclass
class ChainRun:
    export_dir: Path
    text: str
    reference: dict[str, np.ndarray]      # by ONNX output name, [N, ...]
    c_code: Path | None
    cuda_code: Path | None
    validation: object


def through_chain(model: onnx.ModelProto, folder: Path, inputs: Mapping[str, np.ndarray],
                  targets: Sequence[str] = ("c", "cuda"), lanes: int | None = None) -> ChainRun:
    """Export `model`, require the export validation (reference vs onnxruntime) to pass, then run
    the whole graph as one CPU item (C) and as one GPU item (CUDA host emulation, blocks in order and
    shuffled), each bit-identical to the reference semantics on `inputs`."""
    path = save(model, folder)
    export_dir = folder / "export"
    result = export_model(path, export_dir)
    shapes = {name: list(value.shape[1:]) for name, value in inputs.items()}
    report = validate_export(path, export_dir, default_settings(shapes, vectors=20))
    assert report.passed, [o.reason for o in report.outputs if not o.passed]
    names_in = {onnx_name: nnef for onnx_name, nnef in result.inputs.items()}
    names_out = dict(result.outputs)
    nnef_inputs = {names_in[k]: v for k, v in inputs.items()}
    body = re.search(r"\{\n(.*)\n\}", result.text, re.S).group(1)
    weights = dict(result.variables)
    expected = None
    c_code = cuda_code = None
    if "c" in targets:
        if shutil.which("gcc") is None:
            raise AssertionError("gcc is needed")  # the callers skip first
        split = H.single_item(folder / "c_split", body, weights, inputs=list(nnef_inputs), outputs=list(names_out.values()))
        expected = H.reference(split / f"{H.ITEM}.nnef", nnef_inputs, weights, list(names_out.values()))
        lanes = lanes or max(H.lanes_available())
        c_code = folder / "c_code"
        H.generate(split, split, c_code, lanes, folder)
        got = H.run(H.build(c_code, lanes), nnef_inputs, folder / "c_run", list(names_out.values()))
        H.assert_bit_identical(got, expected, "C")
    if "cuda" in targets:
        split = C.whole_model(export_dir, folder / "cuda_split")
        manifest = C.generate(split, export_dir, folder / "cuda_code")
        cuda_code = folder / "cuda_code"
        if expected is None:
            expected = H.reference(split / f"{C.ITEM}.nnef", nnef_inputs, weights, list(names_out.values()))
        for got in C.emulate(cuda_code, manifest, nnef_inputs, folder / "cuda_run"):
            H.assert_bit_identical(got, expected, "CUDA emulation")
    reference = {onnx_name: expected[nnef] for onnx_name, nnef in names_out.items()} if expected else {}
    return ChainRun(export_dir, result.text, reference, c_code, cuda_code, report)


def onnxruntime_outputs(model: onnx.ModelProto, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """onnxruntime (one thread) on each vector, stacked: the comparison the tests add to the validation's."""
    from pipeline.numerics.onnx_runner import reference_runner

    runner = reference_runner(model)
    count = next(iter(inputs.values())).shape[0]
    runs = [runner.run({k: v[i] for k, v in inputs.items()}) for i in range(count)]
    return {name: np.stack([np.asarray(r[name], np.float32) for r in runs]) for name in runs[0]}

"""Shared helpers of the export tests: build small ONNX models, run them both ways.

The reference for every number is onnxruntime (one thread), never our own code:
`check_against_ort` exports a model, checks the NNEF with the certification profile
(no finding at all), reads it back with the Khronos parser, runs the reference
interpreter and compares with onnxruntime.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from pipeline.export import ExportResult, export_model
from pipeline.export.readback import compare_with_khronos
from pipeline.nnef.checker import check_paths
from pipeline.semantics import interpret, load_variables

ort = pytest.importorskip("onnxruntime")

FLOAT = TensorProto.FLOAT


def value_info(name: str, shape: Sequence[Any] | None, elem_type: int = FLOAT) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem_type, shape)


def make_model(nodes: Sequence[onnx.NodeProto], inputs: dict[str, Sequence[int]], outputs: dict[str, Sequence[int] | None],
               initializers: dict[str, np.ndarray] | None = None, opset: int = 13, name: str = "test") -> onnx.ModelProto:
    """A model of `nodes` with float32 inputs/outputs (output shapes may be None: inferred by onnx)."""
    graph = helper.make_graph(
        list(nodes), name,
        [value_info(n, s) for n, s in inputs.items()],
        [value_info(n, s) if s is not None else helper.make_empty_tensor_value_info(n) for n, s in outputs.items()],
        [numpy_helper.from_array(np.asarray(v), k) for k, v in (initializers or {}).items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10 if opset <= 21 else 11)
    if any(s is None for s in outputs.values()):
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True, data_prop=True)
        known = {v.name: v for v in list(inferred.graph.value_info) + list(inferred.graph.output)}
        for output in model.graph.output:
            if outputs[output.name] is None:
                output.CopyFrom(known[output.name])
    return model


def random_inputs(model: onnx.ModelProto, seed: int = 0, low: float = -2.0, high: float = 2.0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    init = {t.name for t in model.graph.initializer}
    feeds = {}
    for v in model.graph.input:
        if v.name in init:
            continue
        shape = [d.dim_value for d in v.type.tensor_type.shape.dim]
        feeds[v.name] = rng.uniform(low, high, shape).astype(np.float32)
    return feeds


def run_ort(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(names, feeds)))


def run_reference(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """onnx's own reference evaluator (for what onnxruntime does not implement)."""
    from onnx.reference import ReferenceEvaluator

    evaluator = ReferenceEvaluator(model)
    return dict(zip(evaluator.output_names, evaluator.run(None, feeds)))


def run_nnef(export: ExportResult, directory: Path, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    report = check_paths([directory], profile="certification")
    assert report.findings == [], [f"{f.code}: {f.message}" for f in report.findings]
    graph = report.graphs[0]
    outputs = interpret(graph, {export.inputs[k]: v for k, v in feeds.items()}, load_variables(graph, directory))
    return {onnx_name: outputs[nnef_name] for onnx_name, nnef_name in export.outputs.items()}


def check_against_ort(model: onnx.ModelProto, directory: Path, feeds: dict[str, np.ndarray] | None = None,
                      atol: float = 1e-6, rtol: float = 1e-5, khronos: bool = True,
                      reference: bool = False) -> ExportResult:
    """Export `model`, run it both ways, assert the outputs agree; returns the export.

    The other side is onnxruntime, or onnx.reference with `reference` (for attribute
    combinations onnxruntime refuses).
    """
    feeds = feeds if feeds is not None else random_inputs(model)
    export = export_model(model, directory)
    if khronos:
        comparison = compare_with_khronos(directory)
        assert comparison.verdict in ("pass", "not run"), comparison.reason
    ours = run_nnef(export, directory, feeds)
    theirs = run_reference(model, feeds) if reference else run_ort(model, feeds)
    for name, expected in theirs.items():
        np.testing.assert_allclose(ours[name], expected, rtol=rtol, atol=atol, err_msg=f"output {name}")
        assert ours[name].shape == expected.shape
    return export


def operations(export: ExportResult) -> list[str]:
    """The NNEF operations of an export, in order, without external/variable."""
    return [op.name for op in export.graph.operations if op.name not in ("external", "variable")]


def node(op_type: str, inputs: Sequence[str], outputs: Sequence[str], **attrs: Any) -> onnx.NodeProto:
    return helper.make_node(op_type, list(inputs), list(outputs), name=outputs[0] if outputs else op_type, **attrs)

"""Reading an ONNX model for export: validity, opset, static shapes and element types.

`load_onnx` checks what holds for the whole model before any conversion starts: it is a
valid ONNX model, its default-domain opset is one the exporter knows (7 .. the newest of
the installed onnx), shape inference (strict, with data propagation) succeeds, and every
graph input is a float32 tensor of static positive shape. Per-node restrictions are the
converters' business (pipeline.export.converters).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from pipeline.diagnostics import Location
from pipeline.export.errors import ExportError
from pipeline.export.guard import (MAX_ONNX_BYTES, check_activation_bytes, check_counts, check_finite, check_outputs,
                                   check_shapes, check_strings, check_tensor_data, read_model_file)

MIN_OPSET = 7
DEFAULT_DOMAINS = ("", "ai.onnx")


def max_opset() -> int:
    """The newest default-domain opset the installed onnx package defines."""
    return onnx.defs.onnx_opset_version()


NOT_A_TENSOR = -1  # the "element type" of sequences, maps and optionals


def elem_type_name(elem_type: int) -> str:
    if elem_type == NOT_A_TENSOR:
        return "not a tensor (sequence, map or optional)"
    try:
        return TensorProto.DataType.Name(elem_type).lower()
    except ValueError:
        return f"type {elem_type}"


@dataclass(frozen=True)
class TensorInfo:
    """What ONNX (after shape inference) says about a tensor: element type and shape.

    `shape` is None when the rank is unknown; a dimension is None when it is symbolic or
    unknown.
    """

    name: str
    elem_type: int
    shape: tuple[int | None, ...] | None

    @property
    def static(self) -> bool:
        return self.shape is not None and all(d is not None for d in self.shape)


@dataclass
class Node:
    """One ONNX node as the converters see it."""

    index: int
    name: str
    op_type: str
    domain: str
    inputs: list[str]
    outputs: list[str]
    attrs: dict[str, Any]
    opset: int
    since_version: int | None

    @property
    def label(self) -> str:
        """The node's name, or `#<index> (<op type>)` when it has none."""
        return self.name or f"#{self.index} ({self.op_type})"

    def attr(self, name: str, default: Any = None) -> Any:
        """An attribute value (strings decoded), or `default` when absent."""
        value = self.attrs.get(name, default)
        if isinstance(value, bytes):
            return value.decode("utf-8")
        return value

    def has_input(self, index: int) -> bool:
        return index < len(self.inputs) and self.inputs[index] != ""

    def has_output(self, index: int) -> bool:
        return index < len(self.outputs) and self.outputs[index] != ""


@dataclass
class OnnxModel:
    """A model ready for conversion: inferred, with its nodes, tensors and constants."""

    proto: onnx.ModelProto
    opset: int
    nodes: list[Node]
    inputs: list[str]
    outputs: list[str]
    initializers: dict[str, np.ndarray]
    tensors: dict[str, TensorInfo]
    sha256: str
    file_name: str
    graph_name: str
    producer: str = ""
    initializer_order: list[str] = field(default_factory=list)


def _shape_of(type_proto: onnx.TypeProto) -> tuple[int, tuple[int | None, ...] | None]:
    if not type_proto.HasField("tensor_type"):
        return NOT_A_TENSOR, None
    tensor = type_proto.tensor_type
    if not tensor.HasField("shape"):
        return tensor.elem_type, None
    dims: list[int | None] = []
    for dim in tensor.shape.dim:
        dims.append(dim.dim_value if dim.HasField("dim_value") else None)
    return tensor.elem_type, tuple(dims)


def _read(source: str | os.PathLike[str] | bytes | onnx.ModelProto) -> tuple[onnx.ModelProto, bytes, str]:
    if isinstance(source, onnx.ModelProto):
        data = source.SerializeToString(deterministic=True)
        return source, data, "<memory>"
    if isinstance(source, (bytes, bytearray)):
        data, where, shown = bytes(source), "<memory>", "<memory>"
        if len(data) > MAX_ONNX_BYTES:
            raise ExportError("EXPORT-E016", f"the ONNX model is {len(data)} bytes; the limit is {MAX_ONNX_BYTES}",
                              Location.in_file(where))
    else:
        path = Path(source)
        data = read_model_file(path)
        where, shown = path.name, str(path)
    try:  # from the bytes read: external data (a path in the model) is never followed
        return onnx.load_model_from_string(data), data, where
    except Exception as exc:  # noqa: BLE001 - protobuf raises DecodeError, RuntimeWarning, ValueError
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ExportError("EXPORT-E001", f"not an ONNX model (protobuf decoding failed: {message})",
                          Location.in_file(shown)) from None


def _default_opset(model: onnx.ModelProto, where: str) -> int:
    versions = [o.version for o in model.opset_import if o.domain in DEFAULT_DOMAINS]
    if not versions:
        raise ExportError("EXPORT-E002", "the model imports no default-domain (ai.onnx) opset", Location.in_file(where))
    opset = max(versions)
    if not MIN_OPSET <= opset <= max_opset():
        raise ExportError("EXPORT-E002", f"opset {opset} is not supported; supported opsets are {MIN_OPSET} to "
                          f"{max_opset()} (the newest the installed onnx {onnx.__version__} defines)", Location.in_file(where))
    return opset


def _since_version(op_type: str, domain: str, opset: int) -> int | None:
    if domain not in DEFAULT_DOMAINS:
        return None
    try:
        return onnx.defs.get_schema(op_type, opset, "").since_version
    except onnx.defs.SchemaError:
        return None


def load_onnx(source: str | os.PathLike[str] | bytes | onnx.ModelProto) -> OnnxModel:
    """Read, check and shape-infer a model; ExportError (E001/E002/E005/E006/E007/E009, E013-E018) otherwise.

    The file's size, every constant tensor's data length and every shape are judged
    (pipeline.export.guard) before onnx.checker, shape inference or NumPy see them.
    """
    model, data, where = _read(source)
    check_strings(model)
    check_counts(model.graph)
    opset = _default_opset(model, where)
    check_outputs(model.graph)
    check_tensor_data(model.graph)
    check_finite(model.graph)
    check_shapes(model.graph.input, "graph input")
    declared_initializers = {t.name for t in model.graph.initializer}
    for value in model.graph.input:
        if value.name not in declared_initializers:
            elem_type, shape = _shape_of(value.type)
            _check_graph_input(TensorInfo(value.name, elem_type, shape))
    try:
        onnx.checker.check_model(model)
    except Exception as exc:  # noqa: BLE001 - ValidationError, and ValueError for oversized protos
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else "invalid model"
        raise ExportError("EXPORT-E001", f"not a valid ONNX model: {first}", Location.in_file(where)) from None
    try:
        inferred = onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True, data_prop=True)
    except Exception as exc:  # noqa: BLE001 - InferenceError and friends
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ExportError("EXPORT-E009", f"ONNX shape inference failed: {message}", Location.in_file(where)) from None
    graph = inferred.graph
    check_shapes(graph.value_info, "tensor")
    check_shapes(graph.output, "graph output")
    initializer_names = {t.name for t in graph.initializer}
    check_activation_bytes(v for v in list(graph.input) + list(graph.value_info) + list(graph.output)
                           if v.name not in initializer_names)
    try:
        initializers = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    except Exception as exc:  # noqa: BLE001 - a data layout onnx cannot decode, after our length checks
        raise ExportError("EXPORT-E013", f"an initializer cannot be decoded: {exc}", Location.in_file(where)) from None
    tensors: dict[str, TensorInfo] = {}
    for value in list(graph.input) + list(graph.value_info) + list(graph.output):
        elem_type, shape = _shape_of(value.type)
        tensors[value.name] = TensorInfo(value.name, elem_type, shape)
    for tensor in graph.initializer:
        tensors[tensor.name] = TensorInfo(tensor.name, tensor.data_type, tuple(int(d) for d in tensor.dims))
    inputs = [v.name for v in graph.input if v.name not in initializers]
    nodes = []
    for index, proto in enumerate(graph.node):
        attrs = {a.name: helper.get_attribute_value(a) for a in proto.attribute}
        nodes.append(Node(index, proto.name, proto.op_type, proto.domain, list(proto.input), list(proto.output),
                          attrs, opset, _since_version(proto.op_type, proto.domain, opset)))
    return OnnxModel(
        proto=inferred,
        opset=opset,
        nodes=nodes,
        inputs=inputs,
        outputs=[v.name for v in graph.output],
        initializers=initializers,
        tensors=tensors,
        sha256=hashlib.sha256(data).hexdigest(),
        file_name=where,
        graph_name=graph.name,
        producer=f"{model.producer_name} {model.producer_version}".strip(),
        initializer_order=[t.name for t in graph.initializer],
    )


def _check_graph_input(info: TensorInfo) -> None:
    location = Location(element=f"graph input '{info.name}'")
    if info.elem_type != TensorProto.FLOAT:
        raise ExportError("EXPORT-E006", f"graph input '{info.name}' is {elem_type_name(info.elem_type)}; "
                          "only float32 tensors are supported", location)
    if not info.static:
        shape = "unknown rank" if info.shape is None else "[" + ", ".join("?" if d is None else str(d) for d in info.shape) + "]"
        raise ExportError("EXPORT-E005", f"graph input '{info.name}' has a dynamic shape ({shape}); "
                          "only static shapes are supported (fix the batch size and every dimension)", location)
    if any(d == 0 for d in info.shape or ()):
        raise ExportError("EXPORT-E007", f"graph input '{info.name}' has a zero extent {list(info.shape or ())}", location)

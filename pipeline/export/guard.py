"""What an ONNX model must satisfy before any of it is trusted: sizes, shapes, data lengths.

An ONNX file comes from another tool, possibly a hostile or broken one. Before the
exporter converts anything (and so before anything is written), `load_onnx` calls:

* `check_file_size`: the file is a regular file of at most MAX_ONNX_BYTES (judged with
  stat before it is read; protobuf cannot hold more than 2 GiB anyway);
* `check_tensor_data`: every initializer (and every tensor held by a Constant node) has
  dimensions in 0 .. MAX_EXTENT, at most MAX_ELEMENTS elements, its data inside the model
  (no external data: a location could name any file, /dev/zero included), and exactly as
  many values as its declared shape says, raw or typed (EXPORT-E013 names the tensor);
* `check_shapes`: every shape ONNX declares or infers (inputs, intermediate values,
  outputs) is within the same bounds (EXPORT-E014 names the tensor), so that no later step
  sizes an allocation from an unchecked product;
* `check_outputs`: no graph output is listed twice (EXPORT-E015).

The bounds are those of the NNEF front end (pipeline.nnef.limits), which checks the
exported description again; products are computed in Python integers and compared as
they grow, never wrapped. docs/export.md, "Limits", lists them.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Iterable, Iterator, Sequence

import numpy as np
import onnx
from onnx import TensorProto, helper

from pipeline.diagnostics import Location
from pipeline.export.errors import ExportError
from pipeline.nnef.limits import MAX_ELEMENTS, MAX_EXTENT

MAX_ONNX_BYTES = 2**31 - 1  # the protobuf limit
# The bytes of every graph input, intermediate value and output of one inference, added up
# (element counts times element sizes). The reference interpreter and the validation hold
# them all; the shipped models need at most 1.1 MB (resnet8). Raise it here for a bigger network.
MAX_ACTIVATION_BYTES = 256 * 1024 * 1024

# Typed-data fields holding two numbers per element.
_PAIRED = {TensorProto.COMPLEX64, TensorProto.COMPLEX128}
# Sub-byte types: elements per byte (raw data; the typed field packs them the same way).
_PER_BYTE = {"INT4": 2, "UINT4": 2, "FLOAT4E2M1": 2, "INT2": 4, "UINT2": 4}


def check_file_size(path: Path) -> int:
    """The size of the regular file at `path`; EXPORT-E016 when it is not one or is too large."""
    try:
        info = os.stat(path)
    except OSError as exc:
        raise ExportError("EXPORT-E001", f"cannot read the ONNX model: {exc.strerror or exc}", Location.in_file(path)) from None
    if not stat.S_ISREG(info.st_mode):
        raise ExportError("EXPORT-E016", "the ONNX model is not a regular file (a FIFO, device or directory is never read)",
                          Location.in_file(path))
    if info.st_size > MAX_ONNX_BYTES:
        raise ExportError("EXPORT-E016", f"the ONNX model is {info.st_size} bytes; the limit is {MAX_ONNX_BYTES} "
                          "(pipeline/export/guard.py)", Location.in_file(path))
    return info.st_size


def element_count(dims: Sequence[int], what: str, code: str) -> int:
    """The product of `dims`, each in 0 .. MAX_EXTENT, the product at most MAX_ELEMENTS; ExportError otherwise."""
    count = 1
    for dim in dims:
        if dim < 0 or dim > MAX_EXTENT:
            raise ExportError(code, f"{what}: extent {dim} in shape {list(dims)} is outside 0 .. {MAX_EXTENT} "
                              "(docs/export.md, Limits)", Location(element=what))
        count *= dim
        if count > MAX_ELEMENTS:
            raise ExportError(code, f"{what}: shape {list(dims)} has more than {MAX_ELEMENTS} elements "
                              "(docs/export.md, Limits)", Location(element=what))
    return count


def _constant_tensors(graph: onnx.GraphProto) -> Iterator[tuple[str, TensorProto]]:
    for tensor in graph.initializer:
        yield f"initializer '{tensor.name}'", tensor
    for index, node in enumerate(graph.node):
        for attribute in node.attribute:
            if attribute.type == onnx.AttributeProto.TENSOR:
                label = node.name or f"#{index} ({node.op_type})"
                yield f"tensor attribute '{attribute.name}' of node '{label}'", attribute.t


def _check_one(what: str, tensor: TensorProto) -> None:
    if tensor.data_location == TensorProto.EXTERNAL or tensor.external_data:
        raise ExportError("EXPORT-E013", f"{what} keeps its data outside the model (external data is not read; "
                          "save the model with its data inside)", Location(element=what))
    count = element_count(list(tensor.dims), what, "EXPORT-E013")
    if tensor.data_type in (TensorProto.UNDEFINED, TensorProto.STRING):
        return  # onnx.checker refuses an undefined type; strings have no fixed width (never converted)
    try:
        dtype = helper.tensor_dtype_to_np_dtype(tensor.data_type)
        field = helper.tensor_dtype_to_field(tensor.data_type)
    except (KeyError, ValueError):
        raise ExportError("EXPORT-E013", f"{what} has the unknown element type {tensor.data_type}",
                          Location(element=what)) from None
    per_byte = _PER_BYTE.get(TensorProto.DataType.Name(tensor.data_type), 0)
    packed = -(-count // per_byte) if per_byte else 0
    if tensor.HasField("raw_data"):
        expected = packed if per_byte else count * np.dtype(dtype).itemsize
        actual, unit = len(tensor.raw_data), "bytes of raw data"
    else:
        expected = packed if per_byte else count * (2 if tensor.data_type in _PAIRED else 1)
        actual, unit = len(getattr(tensor, field)), f"values in {field}"
    if actual != expected:
        side = "more" if actual > expected else "fewer"
        raise ExportError("EXPORT-E013", f"{what} holds {actual} {unit}, {side} than the {expected} its shape "
                          f"{list(tensor.dims)} declares", Location(element=what))


def check_tensor_data(graph: onnx.GraphProto) -> None:
    """Every constant tensor of `graph` holds exactly the data its shape declares (EXPORT-E013)."""
    for what, tensor in _constant_tensors(graph):
        _check_one(what, tensor)


def check_shapes(values: Iterable[onnx.ValueInfoProto], kind: str) -> None:
    """Every static dimension ONNX knows for `values` is within the bounds (EXPORT-E014)."""
    for value in values:
        if not value.type.HasField("tensor_type") or not value.type.tensor_type.HasField("shape"):
            continue
        dims = [d.dim_value for d in value.type.tensor_type.shape.dim if d.HasField("dim_value")]
        element_count(dims, f"{kind} '{value.name}'", "EXPORT-E014")


def _strings(model: onnx.ModelProto) -> Iterator[tuple[str, object]]:
    graph = model.graph
    yield "graph name", graph.name
    yield "producer name", model.producer_name
    for value in list(graph.input) + list(graph.output) + list(graph.value_info):
        yield "value name", value.name
    for tensor in graph.initializer:
        yield "initializer name", tensor.name
    for node in graph.node:
        for what, text in (("node name", node.name), ("op type", node.op_type), ("domain", node.domain)):
            yield what, text
        for name in list(node.input) + list(node.output):
            yield f"tensor name of node '{node.name!r}'", name
        for attribute in node.attribute:
            yield "attribute name", attribute.name
            if attribute.type == onnx.AttributeProto.STRING:
                yield "string attribute", attribute.s  # bytes by definition: must still decode


def check_strings(model: onnx.ModelProto) -> None:
    """Every name is valid UTF-8 (protobuf hands undecodable strings over as bytes), EXPORT-E001."""
    for what, value in _strings(model):
        if isinstance(value, bytes):
            try:
                value.decode("utf-8")
            except UnicodeDecodeError:
                raise ExportError("EXPORT-E001", f"a {what} is not valid UTF-8: {value[:40]!r}") from None
            if what != "string attribute":
                raise ExportError("EXPORT-E001", f"a {what} is not valid UTF-8: {value[:40]!r}")


def check_activation_bytes(values: Iterable[onnx.ValueInfoProto]) -> int:
    """The bytes one inference holds (inputs, intermediates, outputs); EXPORT-E014 beyond MAX_ACTIVATION_BYTES."""
    total = 0
    for value in values:
        if not value.type.HasField("tensor_type") or not value.type.tensor_type.HasField("shape"):
            continue
        dims = [d.dim_value for d in value.type.tensor_type.shape.dim if d.HasField("dim_value")]
        try:
            width = np.dtype(helper.tensor_dtype_to_np_dtype(value.type.tensor_type.elem_type)).itemsize
        except (KeyError, ValueError, TypeError):
            width = 8
        total += element_count(dims, f"tensor '{value.name}'", "EXPORT-E014") * width
        if total > MAX_ACTIVATION_BYTES:
            raise ExportError("EXPORT-E014", f"one inference would hold more than {MAX_ACTIVATION_BYTES} bytes of "
                              f"tensors (reached at tensor '{value.name}'; docs/export.md, Limits)",
                              Location(element=f"tensor '{value.name}'"))
    return total


def check_outputs(graph: onnx.GraphProto) -> None:
    """Each graph output is listed once (an NNEF graph's results are distinct), EXPORT-E015."""
    seen: set[str] = set()
    for value in graph.output:
        if value.name in seen:
            raise ExportError("EXPORT-E015", f"graph output '{value.name}' is listed twice; NNEF graph results are "
                              "distinct (list it once, or add an Identity node for the copy)",
                              Location(element=f"graph output '{value.name}'"))
        seen.add(value.name)

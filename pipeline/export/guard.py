"""What an ONNX model must satisfy before any of it is trusted: sizes, shapes, data lengths.

An ONNX file comes from another tool, possibly a hostile or broken one. Before the
exporter converts anything (and so before anything is written), `load_onnx` calls:

* `read_model_file`: the file is a regular file (not a symbolic link: pipeline.files.readguard)
  of at most MAX_ONNX_BYTES (judged with fstat of the opened file before it is read;
  protobuf cannot hold more than 2 GiB anyway);
* `check_counts`: at most MAX_NODES nodes (subgraphs included) and MAX_INITIALIZERS
  initializers (EXPORT-E018), before onnx.checker, shape inference or any per-node pass,
  whose cost grows with them; both can be raised by an environment variable;
* `check_tensor_data`: every initializer (and every tensor held by a Constant node) has
  dimensions in 0 .. MAX_EXTENT, at most MAX_ELEMENTS elements, its data inside the model
  (no external data: a location could name any file, /dev/zero included), and exactly as
  many values as its declared shape says, raw or typed (EXPORT-E013 names the tensor);
* `check_shapes`: every shape ONNX declares or infers (inputs, intermediate values,
  outputs) is within the same bounds (EXPORT-E014 names the tensor), so that no later step
  sizes an allocation from an unchecked product;
* `check_outputs`: no graph output is listed twice (EXPORT-E015);
* `check_finite`: every float initializer and Constant value is a finite number or -inf; a
  NaN or a +inf is refused (EXPORT-E017) naming the tensor and the index of the first one.
  A -inf is what PyTorch writes for attention masks: it is judged once the NNEF is written
  (pipeline.nnef.masks, in the exporter): a -inf that reaches anything but a softmax as a
  mask is refused there with the same code, so that no inf reaches validation, the bounds
  or a JSON document except a mask's, whose meaning is defined.

The bounds are those of the NNEF front end (pipeline.nnef.limits), which checks the
exported description again; products are computed in Python integers and compared as
they grow, never wrapped. docs/export.md, "Limits", lists them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

import numpy as np
import onnx
from onnx import TensorProto, helper

from pipeline.diagnostics import Location
from pipeline.export.errors import ExportError
from pipeline.nnef.limits import MAX_ELEMENTS, MAX_EXTENT
from pipeline.files.readguard import TOO_LARGE, InputRefused, read_input
from pipeline.files.yamlguard import limit_from_env

MAX_ONNX_BYTES = 2**31 - 1  # the protobuf limit
# Nodes (subgraphs included) and initializers: every pass of the export, the validation and the
# error bound walks them (the shipped models have at most 83 nodes and 47 initializers; 2,000 Relu
# nodes take 5 s to export and 35 s with validation here). Raise them for a bigger network with
# PIPELINE_MAX_ONNX_NODES / PIPELINE_MAX_ONNX_INITIALIZERS (docs/export.md, Limits).
MAX_NODES = 10_000
MAX_INITIALIZERS = 10_000
NODES_VARIABLE = "PIPELINE_MAX_ONNX_NODES"
INITIALIZERS_VARIABLE = "PIPELINE_MAX_ONNX_INITIALIZERS"
# The bytes of every graph input, intermediate value and output of one inference, added up
# (element counts times element sizes). The reference interpreter and the validation hold
# them all; the shipped models need at most 1.1 MB (resnet8). Raise it here for a bigger network.
MAX_ACTIVATION_BYTES = 256 * 1024 * 1024

_FLOAT_TYPES = {TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16, TensorProto.BFLOAT16}
# Typed-data fields holding two numbers per element.
_PAIRED = {TensorProto.COMPLEX64, TensorProto.COMPLEX128}
# Sub-byte types: elements per byte (raw data; the typed field packs them the same way).
_PER_BYTE = {"INT4": 2, "UINT4": 2, "FLOAT4E2M1": 2, "INT2": 4, "UINT2": 4}


def read_model_file(path: Path) -> bytes:
    """The bytes of the ONNX file at `path`: a regular file, not a link, at most MAX_ONNX_BYTES (EXPORT-E016)."""
    try:
        return read_input(path, max_bytes=MAX_ONNX_BYTES)
    except InputRefused as refused:
        if refused.unreadable:
            raise ExportError("EXPORT-E001", f"cannot read the ONNX model: {refused.reason}", Location.in_file(path)) from None
        if refused.kind == TOO_LARGE:
            raise ExportError("EXPORT-E016", f"the ONNX model is {refused.size} bytes; the limit is {MAX_ONNX_BYTES} "
                              "(pipeline/export/guard.py)", Location.in_file(path)) from None
        raise ExportError("EXPORT-E016", f"the ONNX model is refused: {refused.reason}", Location.in_file(path)) from None
    except OSError as exc:
        raise ExportError("EXPORT-E001", f"cannot read the ONNX model: {exc.strerror or exc}",
                          Location.in_file(path)) from None


def _subgraphs(graph: onnx.GraphProto) -> Iterator[onnx.GraphProto]:
    for node in graph.node:
        for attribute in node.attribute:
            if attribute.type == onnx.AttributeProto.GRAPH:
                yield attribute.g
            elif attribute.type == onnx.AttributeProto.GRAPHS:
                yield from attribute.graphs


def check_counts(graph: onnx.GraphProto) -> None:
    """At most MAX_NODES nodes (every subgraph's counted, iteratively) and MAX_INITIALIZERS initializers."""
    max_nodes = limit_from_env(NODES_VARIABLE, MAX_NODES)
    max_initializers = limit_from_env(INITIALIZERS_VARIABLE, MAX_INITIALIZERS)
    nodes = initializers = 0
    pending = [graph]
    while pending:
        current = pending.pop()
        nodes += len(current.node)
        initializers += len(current.initializer) + len(current.sparse_initializer)
        if nodes > max_nodes:
            raise ExportError("EXPORT-E018", f"the model has more than {max_nodes} nodes (subgraphs included); raise "
                              f"the limit with the environment variable {NODES_VARIABLE} (docs/export.md, Limits)",
                              Location(element="graph"))
        if initializers > max_initializers:
            raise ExportError("EXPORT-E018", f"the model has more than {max_initializers} initializers; raise the "
                              f"limit with the environment variable {INITIALIZERS_VARIABLE} (docs/export.md, Limits)",
                              Location(element="graph"))
        pending.extend(_subgraphs(current))


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


def _constant_floats(graph: onnx.GraphProto) -> Iterator[tuple[str, Any]]:
    """(what, values) of every float constant: tensor data (initializers, tensor attributes) and
    Constant nodes' value_float / value_floats."""
    for what, tensor in _constant_tensors(graph):
        if tensor.data_type in _FLOAT_TYPES:
            yield what, tensor
    for index, node in enumerate(graph.node):
        if node.op_type != "Constant" or node.domain not in ("", "ai.onnx"):
            continue
        for attribute in node.attribute:
            if attribute.name == "value_float":
                yield f"value_float of node '{node.name or f'#{index} (Constant)'}'", np.array([attribute.f])
            elif attribute.name == "value_floats":
                yield f"value_floats of node '{node.name or f'#{index} (Constant)'}'", np.array(attribute.floats)


def check_finite(graph: onnx.GraphProto) -> None:
    """Every float constant is a finite number or -inf; EXPORT-E017 names the first NaN or +inf and its index.

    A NaN or an infinity among the trained numbers makes the model's outputs, the validation
    figures and every error bound meaningless (and an infinity cannot be written as JSON);
    such a model is not exported. A -inf passes here: it may be an attention mask, which the
    exporter judges on the NNEF it wrote (pipeline.nnef.masks; anything else is EXPORT-E017
    there). Run after check_tensor_data (the lengths are checked).
    """
    from onnx import numpy_helper

    for what, value in _constant_floats(graph):
        data = numpy_helper.to_array(value) if isinstance(value, TensorProto) else value
        bad = np.isnan(data) | (data == np.inf)
        if bad.any():
            index = [int(i) for i in np.unravel_index(int(np.argmax(bad)), data.shape)]
            raise ExportError("EXPORT-E017", f"{what} holds {data[tuple(index)].item()} at index {index}; every "
                              "trained number must be finite, a -inf is accepted only as an attention mask (fix or "
                              "retrain the model; docs/export.md, Limits)", Location(element=what))

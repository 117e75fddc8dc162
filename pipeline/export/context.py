"""What a converter works with: the ONNX model, the NNEF being written, names and provenance.

The context owns every decision shared by the converters:

- names (pipeline.export.names): each ONNX tensor keeps its sanitised name;
- constants: initializers and Constant outputs are read as attribute values where an
  ONNX input is really a parameter (`ctx.ints`), and become NNEF `variable`s, one `.dat`
  file each, where they are data (`ctx.input`). A variable stored with another shape
  (a [C] bias written as [1, C]) holds the same bytes in the same row-major order;
- broadcasting: ONNX aligns shapes on the right, NNEF on the left, so `ctx.aligned`
  gives every operand the output's rank (leading unit axes: an `unsqueeze`, or the
  variable stored with the longer shape) before an element-wise operation;
- provenance: every statement records the ONNX node it comes from and, for variables,
  the initializer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
from onnx import TensorProto

from pipeline.diagnostics import Location
from pipeline.export.errors import ExportError, node_error
from pipeline.export.names import NameTable
from pipeline.export.onnx_model import Node, OnnxModel, elem_type_name
from pipeline.nnef import ast
from pipeline.nnef import build
from pipeline.nnef.graph import Ref


class TensorName(str):
    """An NNEF tensor name: written as a reference (`x`), never as a string literal (`'x'`)."""


def _argument(value: Any) -> Any:
    if isinstance(value, TensorName):
        return Ref(str(value))
    if isinstance(value, list):
        return [_argument(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_argument(v) for v in value)
    return value


@dataclass(frozen=True)
class Origin:
    """Where one NNEF statement comes from: a node (by index), or a graph input."""

    node: int | None
    graph_input: str | None = None
    initializer: str | None = None


@dataclass
class VariableRecord:
    """An NNEF variable made from an ONNX constant (initializer or Constant output)."""

    name: str
    onnx_name: str
    onnx_shape: tuple[int, ...]
    shape: tuple[int, ...]
    data: np.ndarray
    node: int | None


@dataclass
class NodeRecord:
    """What a node became: statement indices, constants it read as parameters, dropped outputs."""

    statements: list[int] = field(default_factory=list)
    parameters: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    folded: bool = False  # evaluated at export (pipeline.export.fold): its outputs are constants
    unused: bool = False  # dead: read only by folded nodes, never converted (pipeline.export.fold.dead_nodes)


class ExportContext:
    """Conversion state; converters call the methods below for the node being converted."""

    def __init__(self, model: OnnxModel, supported: Sequence[str]) -> None:
        self.model = model
        self.supported = list(supported)
        self.names = NameTable()
        self.body: list[ast.Assignment] = []
        self.origins: list[Origin] = []
        self.defined: dict[str, str] = {}
        self.constants: dict[str, np.ndarray] = dict(model.initializers)
        self.variables: dict[tuple[str, tuple[int, ...]], VariableRecord] = {}
        self.records: dict[int, NodeRecord] = {}
        self.constant_nodes: dict[str, int] = {}
        self.live: set[str] | None = None  # the tensors converted nodes read and the graph outputs (fold.live_tensors)
        self.node: Node | None = None
        self._assigned: set[str] = set()
        self._reserve_names()

    # ------------------------------------------------------------------ setup

    def _reserve_names(self) -> None:
        for name in self.model.inputs:
            self.names.reserve(name)
        for node in self.model.nodes:
            for name in node.inputs:
                if name and name in self.model.initializers:
                    self.names.reserve(name)
            for name in node.outputs:
                if name:
                    self.names.reserve(name)

    def declare_inputs(self) -> list[TensorName]:
        """`x = external<scalar>(shape = [...]);` for every graph input; their NNEF names."""
        result = []
        for name in self.model.inputs:
            nnef_name = TensorName(self.names.get(name))
            shape = [int(d) for d in self.model.tensors[name].shape or ()]
            self._append(nnef_name, build.invoke("external", type_arg="scalar", shape=shape), Origin(None, name))
            self.defined[name] = nnef_name
            result.append(nnef_name)
        return result

    # ------------------------------------------------------------------ node bracket

    def begin(self, node: Node) -> None:
        self.node = node
        self.records[node.index] = NodeRecord()

    def end(self) -> None:
        """Every output of the node is defined, a constant, or dropped on purpose."""
        node = self._current()
        record = self.records[node.index]
        for name in node.outputs:
            if name and name not in self.defined and name not in self.constants and name not in record.dropped:
                raise ExportError("EXPORT-E011", f"converter of {node.op_type} left output '{name}' undefined",
                                  Location(element=f"node '{node.label}'"))
        self.node = None

    def _current(self) -> Node:
        if self.node is None:
            raise RuntimeError("no node is being converted")
        return self.node

    # ------------------------------------------------------------------ errors

    def fail(self, code: str, message: str) -> ExportError:
        """The error to raise for the current node (names node, op type, opset, supported list)."""
        node = self._current()
        return node_error(code, message, node_name=node.label, op_type=node.op_type, opset=node.opset,
                          supported=self.supported)

    # ------------------------------------------------------------------ shapes and types

    def shape(self, name: str) -> list[int]:
        """The static shape of ONNX tensor `name` (E005 if dynamic, E007 if zero-size)."""
        if name in self.constants:
            shape = list(self.constants[name].shape)
        else:
            info = self.model.tensors.get(name)
            if info is None or not info.static:
                known = "unknown" if info is None or info.shape is None else \
                    "[" + ", ".join("?" if d is None else str(d) for d in info.shape) + "]"
                raise self.fail("EXPORT-E005", f"tensor '{name}' has no static shape ({known}); "
                                "only static shapes are supported")
            shape = [int(d) for d in info.shape or ()]
        if any(d == 0 for d in shape):
            raise self.fail("EXPORT-E007", f"tensor '{name}' has a zero extent {shape}; NNEF extents are positive")
        return shape

    def shape_of(self, name: str) -> list[int]:
        """The static shape of a tensor already known to be static (graph level, no node)."""
        if name in self.constants:
            return [int(d) for d in self.constants[name].shape]
        return [int(d) for d in self.model.tensors[name].shape or ()]

    def in_shape(self, index: int) -> list[int]:
        return self.shape(self._current().inputs[index])

    def out_shape(self, index: int = 0) -> list[int]:
        return self.shape(self._current().outputs[index])

    def _elem_type(self, name: str) -> int:
        if name in self.constants:
            dtype = self.constants[name].dtype
            return TensorProto.FLOAT if dtype == np.float32 else -1
        info = self.model.tensors.get(name)
        return info.elem_type if info is not None else 0

    def _require_float(self, name: str, what: str) -> None:
        elem = self._elem_type(name)
        if elem != TensorProto.FLOAT:
            if name in self.constants:
                kind = str(self.constants[name].dtype)
            else:
                kind = elem_type_name(elem) if elem else "of unknown type"
            raise self.fail("EXPORT-E006", f"{what} '{name}' is {kind}; only float32 tensors are supported")

    # ------------------------------------------------------------------ inputs

    def has_input(self, index: int) -> bool:
        return self._current().has_input(index)

    def input_name(self, index: int) -> str:
        return self._current().inputs[index]

    def is_constant(self, index: int) -> bool:
        return self.has_input(index) and self.input_name(index) in self.constants

    def constant(self, index: int, what: str) -> np.ndarray:
        """The value of constant input `index`, read as a parameter (E008 if not constant)."""
        node = self._current()
        if not self.has_input(index):
            raise self.fail("EXPORT-E004", f"input {index} ({what}) is missing")
        name = node.inputs[index]
        if name not in self.constants:
            raise self.fail("EXPORT-E008", f"input '{name}' ({what}) must be a constant (initializer or Constant "
                            "output): its value fixes shapes or attributes of the NNEF")
        self.records[node.index].parameters.append(name)
        return self.constants[name]

    def ints(self, index: int, what: str) -> list[int]:
        """A constant integer input as a list of Python ints."""
        value = self.constant(index, what)
        if value.dtype.kind not in "iu":
            raise self.fail("EXPORT-E006", f"input '{self.input_name(index)}' ({what}) is {value.dtype}; integers expected")
        return [int(v) for v in value.reshape(-1)]

    def scalar_value(self, index: int, what: str) -> float:
        """A constant single-element float input as a Python float (its float32 value)."""
        value = self.constant(index, what)
        if value.size != 1 or value.dtype.kind != "f":
            raise self.fail("EXPORT-E004", f"input '{self.input_name(index)}' ({what}) must be one float, "
                            f"got {value.dtype} {list(value.shape)}")
        return float(np.float32(value.reshape(-1)[0]))

    def input(self, index: int) -> TensorName:
        """The NNEF name holding data input `index` (a constant becomes a variable)."""
        node = self._current()
        if not self.has_input(index):
            raise self.fail("EXPORT-E004", f"required input {index} is missing")
        name = node.inputs[index]
        if name in self.defined:
            self._require_float(name, "input")
            return TensorName(self.defined[name])
        if name in self.constants:
            return self.variable(name)
        raise ExportError("EXPORT-E011", f"input '{name}' is used before it is defined", Location(element=f"node '{node.label}'"))

    def variable(self, onnx_name: str, shape: Sequence[int] | None = None, logical: bool = False) -> TensorName:
        """The NNEF variable holding constant `onnx_name` stored with `shape` (default: its own); with
        `logical`, a bool constant as `variable<logical>` (a select's condition, ONNX Where)."""
        if logical:
            if self.constants[onnx_name].dtype != np.bool_:
                raise self.fail("EXPORT-E006", f"constant '{onnx_name}' is {self.constants[onnx_name].dtype}; a "
                                "condition must be bool")
        else:
            self._require_float(onnx_name, "constant")
        value = self.constants[onnx_name]
        target = tuple(int(d) for d in (value.shape if shape is None else shape))
        if math.prod(target) != value.size:
            raise ExportError("EXPORT-E011", f"constant '{onnx_name}' {list(value.shape)} cannot be stored as {list(target)}")
        if value.size == 0:
            raise self.fail("EXPORT-E007", f"constant '{onnx_name}' is empty {list(value.shape)}")
        key = (onnx_name, target)
        if key in self.variables:
            return TensorName(self.variables[key].name)
        first = not any(k[0] == onnx_name for k in self.variables) and onnx_name not in self.defined
        name = TensorName(self.names.reserve(onnx_name) if first else self.names.fresh(self.names.reserve(onnx_name)))
        node_index = self.constant_nodes.get(onnx_name, self.node.index if self.node is not None else None)
        data = np.ascontiguousarray(value, dtype=np.bool_ if logical else np.float32).reshape(target)
        self.variables[key] = VariableRecord(name, onnx_name, tuple(value.shape), target, data, node_index)
        self._append(name, build.invoke("variable", type_arg="logical" if logical else "scalar", shape=list(target),
                                        label=name),
                     Origin(node_index, initializer=onnx_name))
        if first and tuple(value.shape) == target:
            self.defined.setdefault(onnx_name, name)
        return name

    def define_constant(self, onnx_name: str, value: np.ndarray) -> None:
        """Output `onnx_name` of the current (Constant) node is the compile-time value `value`."""
        self.constants[onnx_name] = value
        self.constant_nodes[onnx_name] = self._current().index
        if onnx_name in self.model.outputs:
            self.variable(onnx_name)

    def literal(self, index: int) -> float | None:
        """The value of input `index` as an NNEF scalar literal, if it is a finite one-element float constant."""
        if not self.is_constant(index):
            return None
        value = self.constants[self.input_name(index)]
        if value.size != 1 or value.dtype != np.float32:
            return None
        number = float(value.reshape(-1)[0])
        if not math.isfinite(number):
            return None
        self.records[self._current().index].parameters.append(self.input_name(index))
        return number

    def aligned(self, index: int, rank: int) -> TensorName:
        """Input `index` with `rank` axes: ONNX's right-aligned broadcasting made explicit.

        A lower-rank operand gets leading unit axes (NNEF would otherwise align it on the
        left): a constant is stored with the longer shape, a computed tensor goes through
        `unsqueeze(axes = [0, ..])`.
        """
        shape = self.in_shape(index)
        missing = rank - len(shape)
        if missing < 0:
            raise ExportError("EXPORT-E011", f"cannot align rank {len(shape)} to {rank}")
        if missing == 0:
            return self.input(index)
        if self.is_constant(index):
            return self.variable(self.input_name(index), [1] * missing + shape)
        source = self.input(index)
        target = self.temp(f"{self.names.reserve(self.input_name(index))}_{rank}d")
        self.emit(target, "unsqueeze", source, axes=list(range(missing)))
        return target

    def operand(self, index: int, out_shape: Sequence[int], other_shapes: Sequence[Sequence[int]]) -> Any:
        """An element-wise operand: a scalar literal when that keeps the output shape, else aligned."""
        number = self.literal(index)
        if number is not None and any(list(s) == list(out_shape) for s in other_shapes):
            return number
        return self.aligned(index, len(out_shape))

    # ------------------------------------------------------------------ outputs and statements

    def output(self, index: int = 0) -> TensorName:
        """The NNEF name of output `index` (its sanitised ONNX name); checks float32 and static shape."""
        node = self._current()
        name = node.outputs[index]
        info = self.model.tensors.get(name)
        if info is not None and info.elem_type not in (0, TensorProto.FLOAT):
            raise self.fail("EXPORT-E006", f"output '{name}' is {elem_type_name(info.elem_type)}; "
                            "only float32 tensors are supported")
        self.shape(name)
        nnef_name = TensorName(self.names.get(name))
        self.defined[name] = nnef_name
        return nnef_name

    def drop(self, index: int) -> None:
        """Leave optional output `index` out of the NNEF (the converter checked it is unused)."""
        node = self._current()
        self.records[node.index].dropped.append(node.outputs[index])

    def is_used(self, name: str) -> bool:
        """Whether tensor `name` is a graph output or read by a node that is converted (a folded Shape reads
        no data, a dead node computes nothing needed): an optional output that is not is left out."""
        if name in self.model.outputs:
            return True
        if self.live is not None:
            return name in self.live
        return any(name in n.inputs for n in self.model.nodes)

    def wanted(self, index: int) -> bool:
        """Whether optional output `index` of the current node is named and used (is_used)."""
        node = self._current()
        return node.has_output(index) and self.is_used(node.outputs[index])

    def temp(self, hint: str) -> TensorName:
        """A fresh name for an intermediate result, `<hint>` made unique."""
        return TensorName(self.names.fresh(hint))

    def temp_for(self, what: str, output: int = 0) -> TensorName:
        """A fresh intermediate name `<output name>_<what>` for the current node."""
        node = self._current()
        base = self.names.get(node.outputs[output]) if node.has_output(output) else node.op_type.lower()
        return TensorName(self.names.fresh(f"{base}_{what}"))

    def emit(self, target: str | list[str], op: str, *positional: Any, type_arg: str | None = None,
             **named: Any) -> None:
        """Append `target = op<type_arg>(positional..., name = value, ...);` for the current node."""
        node = self._current()
        invocation = build.invoke(op, *[_argument(v) for v in positional], type_arg=type_arg,
                                  **{k: _argument(v) for k, v in named.items()})
        self._append(target, invocation, Origin(node.index))

    def _append(self, target: str | list[str], invocation: ast.Invocation, origin: Origin) -> None:
        targets = [str(target)] if isinstance(target, str) else [str(t) for t in target]
        for name in targets:
            if name in self._assigned:
                raise ExportError("EXPORT-E011", f"NNEF name '{name}' assigned twice")
            self._assigned.add(name)
        self.body.append(build.assign(targets[0] if isinstance(target, str) else targets, invocation))
        self.origins.append(origin)
        if origin.node is not None:
            self.records.setdefault(origin.node, NodeRecord()).statements.append(len(self.body) - 1)

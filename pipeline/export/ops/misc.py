"""Identity, Dropout (inference), Constant, Cast to float32 of a float32 tensor."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, numpy_helper

from pipeline.export.context import ExportContext
from pipeline.export.onnx_model import Node
from pipeline.export.converters import converter


@converter("Identity", versions=(1, 13, 14, 16, 19, 21, 23, 24, 25))
def identity(ctx: ExportContext, node: Node) -> None:
    """Identity(X) -> copy(X) (an explicit statement, so the ONNX tensor keeps its NNEF name)."""
    ctx.emit(ctx.output(), "copy", ctx.input(0))


@converter("Dropout", versions=(7, 10, 12, 13, 22), attributes=("ratio", "seed"))
def dropout(ctx: ExportContext, node: Node) -> None:
    """Dropout(X) in inference -> copy(X). training_mode (input, opset >= 12) must be
    absent or a constant false (or true with a constant ratio of 0, which is also the
    identity); the mask output is dropped when unused and rejected
    otherwise; ratio and seed only matter in training."""
    if ctx.has_input(2):
        training = ctx.constant(2, "training_mode")
        ratio = ctx.constant(1, "ratio") if ctx.has_input(1) else np.array(0.5, dtype=np.float32)
        if training.size != 1 or (bool(training.reshape(-1)[0]) and float(ratio.reshape(-1)[0]) != 0.0):
            raise ctx.fail("EXPORT-E004", "training_mode = true with a non-zero ratio is not supported (inference only)")
    if node.has_output(1):
        if ctx.is_used(node.outputs[1]):
            raise ctx.fail("EXPORT-E004", "the mask output of Dropout is not supported")
        ctx.drop(1)
    ctx.emit(ctx.output(), "copy", ctx.input(0))


@converter("Constant", versions=(1, 9, 11, 12, 13, 19, 21, 23, 24, 25),
           attributes=("value", "value_float", "value_floats", "value_int", "value_ints"))
def constant(ctx: ExportContext, node: Node) -> None:
    """Constant -> no statement of its own: its value is read where a parameter is needed
    (shape, axes, pads, ...), and becomes a `variable` (one .dat file, label = its name,
    provenance = this node) where it is used as data or is a graph output. value,
    value_float(s), value_int(s) are supported; sparse and string values are not."""
    if len(node.attrs) != 1:
        raise ctx.fail("EXPORT-E004", f"exactly one value attribute expected, got {sorted(node.attrs)}")
    (name, raw), = node.attrs.items()
    if name == "value":
        value = numpy_helper.to_array(raw)
    elif name == "value_float":
        value = np.array(raw, dtype=np.float32)
    elif name == "value_floats":
        value = np.array(list(raw), dtype=np.float32)
    elif name == "value_int":
        value = np.array(raw, dtype=np.int64)
    else:
        value = np.array(list(raw), dtype=np.int64)
    ctx.define_constant(node.outputs[0], value)


@converter("Cast", versions=(6, 9, 13, 19, 21, 23, 24, 25, 28), attributes=("to", "saturate", "round_mode"))
def cast(ctx: ExportContext, node: Node) -> None:
    """Cast(X, to = FLOAT) of a float32 X -> copy(X): the identity (skl2onnx writes it on every
    input). Any other cast of data is refused (the data path is float32 only); casts of constants
    and of shape values are folded at export (pipeline.export.fold). saturate and round_mode only
    concern casts to 8-bit floats."""
    to = int(node.attr("to", 0))
    if to != TensorProto.FLOAT:
        raise ctx.fail("EXPORT-E006", f"Cast to {TensorProto.DataType.Name(to) if to in TensorProto.DataType.values() else to}"
                       " on the data path; only the identity Cast to FLOAT of a float32 tensor is supported")
    ctx.emit(ctx.output(), "copy", ctx.input(0))

"""The export converters: ONNX op type -> the function that writes its NNEF.

A converter is registered with

    @converter("Relu", versions=(6, 13, 14), attributes=())
    def relu(ctx: ExportContext, node: Node) -> None:
        '''Relu -> relu(x).'''

`versions` lists the ONNX operator versions (schema `since_version`) whose semantics the
converter implements; a node whose operator version is not listed (a future revision) is
rejected rather than guessed. `attributes` lists every attribute the converter reads; a
node carrying any other attribute is rejected, so that no attribute is silently ignored.
The docstring states the mapping; docs/export.md is the table of them all.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from pipeline.export.context import ExportContext
    from pipeline.export.onnx_model import Node

ConvertFn = Callable[["ExportContext", "Node"], None]

# Modules defining converters, one operator family each.
CONVERTER_MODULES: tuple[str, ...] = (
    "pipeline.export.ops.conv",
    "pipeline.export.ops.pool",
    "pipeline.export.ops.linear",
    "pipeline.export.ops.activation",
    "pipeline.export.ops.elementwise",
    "pipeline.export.ops.normalization",
    "pipeline.export.ops.reduce",
    "pipeline.export.ops.shape",
    "pipeline.export.ops.misc",
    "pipeline.export.ops.resize",
    "pipeline.export.ops.recurrent",
)


@dataclass(frozen=True)
class Converter:
    op_type: str
    fn: ConvertFn
    versions: tuple[int, ...]
    attributes: frozenset[str]

    @property
    def doc(self) -> str:
        return (self.fn.__doc__ or "").strip()


_CONVERTERS: dict[str, Converter] = {}
_loaded = False


def converter(op_type: str, *, versions: tuple[int, ...], attributes: tuple[str, ...] = ()) -> Callable[[ConvertFn], ConvertFn]:
    """Register the decorated function as the converter of ONNX `op_type`."""

    def register(fn: ConvertFn) -> ConvertFn:
        if op_type in _CONVERTERS:
            raise ValueError(f"ONNX operator {op_type!r} registered twice")
        if not fn.__doc__:
            raise ValueError(f"converter of {op_type} needs a docstring stating its mapping")
        _CONVERTERS[op_type] = Converter(op_type, fn, tuple(sorted(versions)), frozenset(attributes))
        return fn

    return register


def _load() -> None:
    global _loaded
    if not _loaded:
        for module in CONVERTER_MODULES:
            importlib.import_module(module)
        _loaded = True


def converters() -> dict[str, Converter]:
    """Every registered converter by ONNX op type, sorted."""
    _load()
    return dict(sorted(_CONVERTERS.items()))


def supported_operators() -> list[str]:
    """The ONNX op types the exporter converts, sorted."""
    return list(converters())


def find(op_type: str) -> Converter | None:
    _load()
    return _CONVERTERS.get(op_type)

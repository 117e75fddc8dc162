"""Attributes shared by the windowed operators (Conv, ConvTranspose, MaxPool, AveragePool)."""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.export.context import ExportContext
from pipeline.export.onnx_model import Node
from pipeline.export.padding import WindowPadding, base_padding, window_padding


@dataclass(frozen=True)
class WindowAttrs:
    """kernel, strides, dilations (spatial axes only) and the explicit padding."""

    kernel: list[int]
    strides: list[int]
    dilations: list[int]
    padding: WindowPadding


def spatial_list(ctx: ExportContext, node: Node, name: str, rank: int, default: int) -> list[int]:
    """An integer-list attribute with one value per spatial axis (all `default` if absent)."""
    values = node.attr(name)
    if values is None:
        return [default] * rank
    values = [int(v) for v in values]
    if len(values) != rank or any(v <= 0 for v in values):
        raise ctx.fail("EXPORT-E004", f"attribute {name} = {values} must hold {rank} positive values")
    return values


def window_attrs(ctx: ExportContext, node: Node, kernel: list[int], in_spatial: list[int],
                 out_spatial: list[int]) -> WindowAttrs:
    """Strides, dilations and explicit padding giving ONNX's output extents `out_spatial`."""
    rank = len(in_spatial)
    declared = node.attr("kernel_shape")
    if declared is not None and [int(k) for k in declared] != kernel:
        raise ctx.fail("EXPORT-E004", f"kernel_shape {list(declared)} differs from the weights' {kernel}")
    strides = spatial_list(ctx, node, "strides", rank, 1)
    dilations = spatial_list(ctx, node, "dilations", rank, 1)
    pads = node.attr("pads")
    try:
        base = base_padding(node.attr("auto_pad", "NOTSET"), [int(p) for p in pads] if pads is not None else None,
                            in_spatial, kernel, strides, dilations)
        padding = window_padding(base, in_spatial, kernel, strides, dilations, out_spatial)
    except ValueError as exc:
        raise ctx.fail("EXPORT-E004", str(exc)) from None
    return WindowAttrs(kernel, strides, dilations, padding)

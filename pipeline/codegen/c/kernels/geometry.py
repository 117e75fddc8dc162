"""Sliding-window geometry as the generator reads it from the NNEF attributes.

Written apart from the reference's `pipeline.semantics.windows` on purpose: the C kernels
are judged 0 ULP against the reference, and a geometry computed by the same code on both
sides would cancel out of that comparison. What the two must agree on is the NNEF 1.0.5
specification (section 4.3, sliding-window operations):

    stride, dilation     [] means 1 on every axis
    padding              [] means automatic: output extent ceil(n / s), total padding
                         max(0, (out - 1) * s + (k - 1) * d + 1 - n), the odd unit after
    output extent        floor((n + p + q - (k - 1) * d - 1) / s) + 1
    tap j of output i    reads input position i * s + j * d - p

The output extent is also compared with the shape the NNEF checker inferred for the
operation's result (the format layer's own computation), so a disagreement stops code
generation instead of producing code for a different shape. Independent checks of this
module: the 0-ULP comparison with the reference on every kernel test and model, and
`tests/codegen/test_geometry.py` against onnx.reference (auto_pad SAME_UPPER, strides,
dilations, explicit pads).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from pipeline.codegen.c.kernels.common import Kernel
from pipeline.nnef.catalogue import BORDER_MODES

BORDERS = BORDER_MODES


@dataclass(frozen=True)
class WindowGeometry:
    """A window over some axes: every tuple has one entry per axis."""

    in_shape: tuple[int, ...]
    size: tuple[int, ...]
    stride: tuple[int, ...]
    dilation: tuple[int, ...]
    padding: tuple[tuple[int, int], ...]
    out_shape: tuple[int, ...]

    @property
    def padded(self) -> bool:
        return any(p or q for p, q in self.padding)


def same_padding(extent: int, size: int, stride: int, dilation: int) -> tuple[int, int]:
    """Automatic padding of one axis (NNEF `padding = []`): the extra unit goes after."""
    outputs = (extent + stride - 1) // stride
    span = (size - 1) * dilation + 1
    total = (outputs - 1) * stride + span - extent
    if total <= 0:
        return 0, 0
    before = total // 2
    return before, total - before


def _per_axis(value: Any, rank: int, name: str, default: int) -> tuple[int, ...]:
    values = tuple(int(v) for v in value) if isinstance(value, (list, tuple)) else ()
    if not values:
        return (default,) * rank
    if len(values) != rank or any(v <= 0 for v in values):
        raise ValueError(f"'{name}' {list(values)} must hold {rank} positive integers")
    return values


def window_geometry(in_shape: Sequence[int], size: Sequence[int], padding: Any, stride: Any,
                    dilation: Any) -> WindowGeometry:
    """The geometry of a window with the NNEF defaults filled in (ValueError if it does not fit)."""
    rank = len(in_shape)
    sizes = tuple(int(k) for k in size)
    strides = _per_axis(stride, rank, "stride", 1)
    dilations = _per_axis(dilation, rank, "dilation", 1)
    if len(sizes) != rank:
        raise ValueError(f"window size {list(sizes)} must have {rank} items")
    if isinstance(padding, (list, tuple)) and len(padding) > 0:
        pads = tuple((int(p), int(q)) for p, q in padding)
        if len(pads) != rank:
            raise ValueError(f"'padding' {[list(p) for p in pads]} must have {rank} pairs")
    else:
        pads = tuple(same_padding(n, k, s, d) for n, k, s, d in zip(in_shape, sizes, strides, dilations))
    outs = []
    for n, k, s, d, (p, q) in zip(in_shape, sizes, strides, dilations, pads):
        reach = n + p + q - (k - 1) * d - 1
        if reach < 0:
            raise ValueError(f"a window of {k} taps (dilation {d}) does not fit {n} + {p} + {q} elements")
        outs.append(reach // s + 1)
    return WindowGeometry(tuple(int(n) for n in in_shape), sizes, strides, dilations, pads, tuple(outs))


def kernel_window(k: Kernel, in_shape: Sequence[int], size: Sequence[int], result_axes: slice) -> WindowGeometry:
    """The window of `k`'s instruction, its output extents checked against the checker's result shape.

    `result_axes` selects the windowed axes of the result (`slice(2, None)` for conv).
    CODEGEN-E002 when the attributes do not give a window, CODEGEN-E008 when the extents
    disagree with the shape the NNEF checker inferred.
    """
    attribs = k.op.attribs
    try:
        geometry = window_geometry(in_shape, size, attribs.get("padding", []), attribs.get("stride", []),
                                   attribs.get("dilation", []))
    except ValueError as error:
        raise k.fail(str(error)) from None
    inferred = tuple(k.outputs[0].shape[result_axes])
    if inferred != geometry.out_shape:
        raise k.fail(f"window output extents {list(geometry.out_shape)} differ from the NNEF checker's "
                     f"{list(inferred)}", "CODEGEN-E008")
    return geometry

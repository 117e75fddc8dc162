"""Sliding-window geometry as the generators (C and CUDA) read it from the NNEF attributes.

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

Also here, for the same reason: deconv's extents (pipeline/codegen/c/kernels/deconv.py states the
rule) and multilinear_upsample's sampling rule per axis (c/kernels/multilinear.py states it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence


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


def deconv_extents(attribs: dict, in_shape: tuple[int, ...], size: tuple[int, ...]
                   ) -> tuple[list[int], list[int], list[tuple[int, int]], list[int]]:
    """(stride, dilation, padding pairs, output extents) from the NNEF attributes alone (shared by
    the C and CUDA generators); ValueError names a malformed attribute."""
    rank = len(in_shape)
    stride = list(_per_axis(attribs.get("stride", []), rank, "stride", 1))
    dilation = list(_per_axis(attribs.get("dilation", []), rank, "dilation", 1))
    padding = attribs.get("padding", [])
    output_shape = [int(v) for v in attribs.get("output_shape", []) or []]
    pads = [(int(p), int(q)) for p, q in padding] if isinstance(padding, (list, tuple)) and padding else []
    if pads and len(pads) != rank:
        raise ValueError(f"'padding' must have {rank} pairs")
    if output_shape:
        outs = output_shape[2:]
    elif pads:
        outs = [(n - 1) * s + (kk - 1) * d + 1 - p - q for n, kk, s, d, (p, q) in zip(in_shape, size, stride, dilation, pads)]
    else:
        outs = [n * s for n, s in zip(in_shape, stride)]
    if not pads:
        for n, kk, s, d, o in zip(in_shape, size, stride, dilation, outs):
            total = max(0, (n - 1) * s + (kk - 1) * d + 1 - o)
            pads.append((total // 2, total - total // 2))
    return stride, dilation, pads, outs


METHODS = ("symmetric", "aligned")


def axis_rule(method: str, n: int, f: int) -> tuple[str, int, int]:
    """(C expression of the shifted numerator t + den in terms of `y`, den, shift of lo) for one axis."""
    if method == "symmetric":
        den = 2 * f
        return f"2 * {{y}} + {1 - f + den}", den, 1  # (t + den) / den = lo + 1
    den = max(n * f - 1, 1)
    return f"{{y}} * {n - 1}", den, 0


def axis_numerator(method: str, n: int, f: int, y: int) -> int:
    """The value of axis_rule's numerator expression at output position `y` (generation-time tables)."""
    return 2 * y + 1 - f + 2 * f if method == "symmetric" else y * (n - 1)

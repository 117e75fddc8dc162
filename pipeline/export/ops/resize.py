"""Resize: upsampling by whole factors -> NNEF nearest_upsample (mode 'nearest') or
multilinear_upsample (mode 'linear').

ONNX Resize maps output coordinate y of an axis to an input coordinate x_original by
`coordinate_transformation_mode`, then picks an input element by `nearest_mode`. With a whole
factor f (output extent = f x input extent, the scale exactly f) and y = q f + r (0 <= r < f):

- asymmetric: x = y / f = q + r / f, in [q, q + 1): `floor` picks q (torch's
  nn.Upsample(scale_factor, mode='nearest') and F.interpolate export this pair);
- half_pixel / pytorch_half_pixel: x = (y + 0.5) / f - 0.5 = q + (r - (f - 1) / 2) / f,
  strictly within 0.5 of q: `round_prefer_floor` and `round_prefer_ceil` pick q;
- tf_half_pixel_for_nn: x = (y + 0.5) / f, in (q, q + 1): `floor` picks q.

Each is x[y // f] on every axis, which is NNEF's nearest_upsample(factor = [f..]) (the
reference's `+0 + x[y // f]`: a -0 input gives +0 where ONNX copies -0, a difference of 0 in
value).

Mode 'linear' interpolates between the two input elements around x_original, clamped to
[0, n - 1] (onnxruntime clamps; onnx.reference pads with the edge: the same), which is NNEF's
multilinear_upsample (Khronos NNEF-Tools: 'aligned' is align_corners, 'symmetric' with border
'replicate' is half-pixel):

- half_pixel, and pytorch_half_pixel (torch's bilinear with align_corners=False; it differs
  from half_pixel only for an output extent of 1, which a whole factor reaches only from
  extent 1 with f = 1, where both read x[0]): x = (y + 0.5) / f - 0.5 -> method 'symmetric',
  border 'replicate' (the clamp is the replicated border);
- align_corners: x = y (n - 1) / (f n - 1) -> method 'aligned'.

Refused with EXPORT-E004 naming the mode: 'asymmetric' (x = y / f; NNEF's 'asymmetric' kernel
samples at (y + 1) / f - 1, one input step earlier, and reads a border on the other side),
tf_half_pixel_for_nn, tf_crop_and_resize, half_pixel_symmetric; and everything else (cubic,
non-whole or downsampling factors: multilinear_upsample takes integer factors only, other
nearest_mode pairings, exclude_outside, antialias).
"""

from __future__ import annotations

import numpy as np

from pipeline.export.context import ExportContext
from pipeline.export.onnx_model import Node
from pipeline.export.converters import converter

# coordinate_transformation_mode -> the nearest_mode values that give x[y // f] for whole factors
NEAREST_PAIRS: dict[str, tuple[str, ...]] = {
    "asymmetric": ("floor",),
    "half_pixel": ("round_prefer_floor", "round_prefer_ceil"),
    "pytorch_half_pixel": ("round_prefer_floor", "round_prefer_ceil"),
    "tf_half_pixel_for_nn": ("floor",),
}


# coordinate_transformation_mode -> the multilinear_upsample method of mode 'linear'
LINEAR_METHODS: dict[str, str] = {
    "half_pixel": "symmetric",
    "pytorch_half_pixel": "symmetric",
    "align_corners": "aligned",
}


def _scales(ctx: ExportContext, node: Node) -> list[float] | None:
    """The constant scales input, if given and not empty."""
    index = 1 if (node.since_version or 0) < 11 else 2
    if not ctx.has_input(index):
        return None
    value = ctx.constant(index, "scales")
    return None if value.size == 0 else [float(v) for v in value.reshape(-1)]


@converter("Resize", versions=(10, 11, 13, 18, 19),
           attributes=("mode", "coordinate_transformation_mode", "nearest_mode", "cubic_coeff_a", "exclude_outside",
                       "extrapolation_value", "antialias", "axes", "keep_aspect_ratio_policy"))
def resize(ctx: ExportContext, node: Node) -> None:
    """Resize(X, roi, scales | sizes), whole factors f >= 1 on the spatial axes (1 on N and C).
    Mode 'nearest', coordinate_transformation_mode / nearest_mode one of asymmetric / floor
    (Resize-10's only rule), half_pixel or pytorch_half_pixel / round_prefer_floor or
    round_prefer_ceil, tf_half_pixel_for_nn / floor -> nearest_upsample(X, factor = [f..]);
    mode 'linear' with half_pixel or pytorch_half_pixel -> multilinear_upsample(method =
    'symmetric', border = 'replicate'), with align_corners -> method 'aligned'; all factors 1
    -> copy(X)."""
    version = node.since_version or 0
    mode = str(node.attr("mode", "nearest"))
    if mode not in ("nearest", "linear"):
        raise ctx.fail("EXPORT-E004", f"Resize attribute mode = '{mode}' is not supported (only 'nearest', "
                       "'linear')")
    transform = "asymmetric" if version < 11 else str(node.attr("coordinate_transformation_mode", "half_pixel"))
    nearest = "floor" if version < 11 else str(node.attr("nearest_mode", "round_prefer_floor"))
    if mode == "linear":
        if transform not in LINEAR_METHODS:
            raise ctx.fail("EXPORT-E004", f"Resize attribute coordinate_transformation_mode = '{transform}' with mode"
                           f" = 'linear' is not supported (supported: {', '.join(LINEAR_METHODS)}; no NNEF "
                           "multilinear_upsample method samples at the positions it defines)")
    elif transform not in NEAREST_PAIRS:
        raise ctx.fail("EXPORT-E004", f"Resize attribute coordinate_transformation_mode = '{transform}' is not "
                       f"supported (supported: {', '.join(NEAREST_PAIRS)})")
    elif nearest not in NEAREST_PAIRS[transform]:
        raise ctx.fail("EXPORT-E004", f"Resize attribute nearest_mode = '{nearest}' with coordinate_transformation_mode"
                       f" = '{transform}' is not supported (supported: {', '.join(NEAREST_PAIRS[transform])})")
    for attr in ("exclude_outside", "antialias"):
        if int(node.attr(attr, 0)) != 0:
            raise ctx.fail("EXPORT-E004", f"Resize attribute {attr} = {node.attr(attr)} is not supported (only 0)")
    in_shape, out_shape = ctx.in_shape(0), ctx.out_shape()
    factors = []
    for axis, (n, m) in enumerate(zip(in_shape, out_shape)):
        if m % n or m < n:
            raise ctx.fail("EXPORT-E004", f"Resize from {in_shape} to {out_shape}: axis {axis} is not upsampled by a "
                           "whole factor (inputs scales / sizes: only whole upsampling factors are supported; NNEF "
                           "up-sampling takes integer factors)")
        factors.append(m // n)
    scales = _scales(ctx, node)
    if scales is not None:
        axes = [int(a) % len(in_shape) for a in node.attr("axes", [])] or list(range(len(in_shape)))
        full = [1.0] * len(in_shape)
        for a, s in zip(axes, scales):
            full[a] = s
        if any(np.float32(s) != np.float32(f) for s, f in zip(full, factors)):
            raise ctx.fail("EXPORT-E004", f"Resize scales {scales} are not the whole factors {factors} of the shapes "
                           "(the coordinate mapping would not be the one of factor f)")
    if factors[:2] != [1, 1]:
        raise ctx.fail("EXPORT-E004", f"Resize of the batch or channel axis (factors {factors[:2]}) is not supported")
    if all(f == 1 for f in factors):
        ctx.emit(ctx.output(), "copy", ctx.input(0))
        return
    if mode == "linear":
        ctx.emit(ctx.output(), "multilinear_upsample", ctx.input(0), factor=factors[2:],
                 method=LINEAR_METHODS[transform], border="replicate")
        return
    ctx.emit(ctx.output(), "nearest_upsample", ctx.input(0), factor=factors[2:])

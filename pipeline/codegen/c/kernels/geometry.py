"""The window of a C kernel's instruction: the geometry read from the NNEF attributes
(pipeline/codegen/shared/geometry.py, which states the rules and how they are checked), its output
extents checked against the shape the NNEF checker inferred.
"""

from __future__ import annotations

from typing import Sequence

from pipeline.codegen.c.kernels.common import Kernel
from pipeline.codegen.shared.geometry import WindowGeometry, window_geometry
from pipeline.nnef.catalogue import BORDER_MODES

BORDERS = BORDER_MODES


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

"""deconv: transposed convolution, terms in (input channel, kernel taps) order, bias last.

out[n, o, y] = (+0 + sum over (c, j0, j1, ...) lexicographic of
               filter[g*Cg + c, o % Og, j] * x[n, g*Cg + c, i]  for the i with i*s + j*d - p = y)
               + bias[o],  g = o // Og
(docs/semantics/sliding_window.md): a tap (c, j) with no such i inside the input contributes
no term; every product and every sum is one float32 rounding, in this order. Which taps of
an output position have a term (y + p - j*d a multiple of the stride, landing inside the
input) is decided at generation time: per axis, index tables list the taps of each output
position in ascending order with their input positions, so the kernel has no branch.

Geometry (NNEF 1.0.5, deconv): stride and dilation [] mean 1; the output extent is the
`output_shape` attribute's, else (n - 1) * s + (k - 1) * d + 1 - p - q; automatic padding
([]) has output extent n * s and total padding max(0, (n - 1) * s + (k - 1) * d + 1 - out),
the odd unit after. Computed here from the attributes, apart from the reference, and compared
with the result shape the NNEF checker inferred (CODEGEN-E008 when they differ).
"""

from __future__ import annotations

import numpy as np

from pipeline.codegen.c.kernels.common import F32, Kernel, emitter, strides
from pipeline.codegen.c.kernels.conv import _groups, bias_array, store_plus_bias
from pipeline.codegen.c.kernels.geometry import BORDERS
from pipeline.codegen.shared.geometry import deconv_extents


def deconv_geometry(k: Kernel, in_shape: tuple[int, ...], size: tuple[int, ...]
                    ) -> tuple[list[int], list[int], list[tuple[int, int]], list[int]]:
    """(stride, dilation, padding pairs, output extents) of the instruction, checked against the checker."""
    try:
        stride, dilation, pads, outs = deconv_extents(k.op.attribs, in_shape, size)
    except ValueError as error:
        raise k.fail(str(error)) from None
    inferred = list(k.out.shape[2:])
    if inferred != outs:
        raise k.fail(f"deconv output extents {outs} differ from the NNEF checker's {inferred}", "CODEGEN-E008")
    return stride, dilation, pads, outs


@emitter("deconv")
def deconv(k: Kernel) -> None:
    x, f, bias = k.operand("input"), k.operand("filter"), k.operand("bias")
    if len(x.shape) < 3 or len(f.shape) != len(x.shape) or f.shape[0] != x.shape[1]:
        raise k.fail(f"input {list(x.shape)} and filter {list(f.shape)}: equal rank >= 3 and filter[0] = input channels")
    border = str(k.op.attribs["border"])
    if border not in BORDERS or border not in ("constant", "ignore"):
        raise k.fail(f"deconv border '{border}' (constant and ignore only: a padded tap is no term)")
    channels = x.shape[1]
    output_shape = [int(v) for v in k.op.attribs.get("output_shape", []) or []]
    groups = _groups(k, output_shape[1] if output_shape else channels)  # 0: one group per channel
    if channels % groups:
        raise k.fail(f"groups = {groups} does not divide the {channels} input channels")
    cg, og = channels // groups, f.shape[1]
    outs = groups * og
    if k.out.shape[1] != outs:
        raise k.fail(f"output channels {k.out.shape[1]} differ from groups x filter[1] = {outs}", "CODEGEN-E008")
    rank = len(x.shape) - 2
    stride, dilation, pads, out_extents = deconv_geometry(k, tuple(x.shape[2:]), tuple(f.shape[2:]))
    xst, wst, ost = strides(x.shape), strides(f.shape), strides(k.out.shape)
    wref = f.c
    if f.is_constant:
        wref = k.const_array(f"W_{f.label or f.name}", np.asarray(f.value, F32), "float",
                             f"{f.label or f.name} as in its tensor file (row-major [c][o][taps])", source=f.label,
                             layout={"kind": "identity"})
    kind, bref = bias_array(k, bias, outs)
    tables = []
    for a in range(rank):
        lo, hi, taps, inputs = [], [], [], []
        for y in range(out_extents[a]):
            lo.append(len(taps))
            for j in range(f.shape[2 + a]):
                t = y + pads[a][0] - j * dilation[a]
                if t >= 0 and t % stride[a] == 0 and t // stride[a] < x.shape[2 + a]:
                    taps.append(j)
                    inputs.append(t // stride[a])
            hi.append(len(taps))
        if not taps:  # no output position of this axis has a term: keep the tables non-empty
            taps, inputs = [0], [0]
        names = [k.const_array(f"IX_{k.function}_{what}{a}", np.asarray(values, np.int32), "int", comment)
                 for what, values, comment in (
                     ("lo", lo, f"first entry of the taps of each output position of axis {a}"),
                     ("hi", hi, f"one past the last entry, axis {a}"),
                     ("tap", taps, f"the taps j (ascending) whose input position is whole and inside, axis {a}"),
                     ("in", inputs, f"the input position i of each listed tap, axis {a}"))]
        tables.append(names)
    k.comment("per output: acc = +0, then acc = acc + w * x over (c, taps) in order, only the taps whose input "
              "position i = (y + p - j*d) / s is whole and inside the input (index tables), then + bias")
    ys = [f"y{a}" for a in range(rank)]
    k.open(f"for (int n = 0; n < {x.shape[0]}; ++n)")
    k.open(f"for (int o = 0; o < {outs}; ++o)")
    k.line(f"const int g = o / {og}, oo = o % {og};")
    for y, extent in zip(ys, out_extents):
        k.open(f"for (int {y} = 0; {y} < {extent}; ++{y})")
    k.line("float acc = 0.0f;")
    k.reduce(f"for (int c = 0; c < {cg}; ++c)", cg)
    for a, y in enumerate(ys):
        lo, hi, tap, inp = tables[a]
        k.reduce(f"for (int m{a} = {lo}[{y}]; m{a} < {hi}[{y}]; ++m{a})", f.shape[2 + a])
        k.line(f"const int j{a} = {tap}[m{a}], i{a} = {inp}[m{a}];")
    x_index = " + ".join([f"(n * {channels} + g * {cg} + c) * {xst[1]}"] + [f"i{a} * {xst[2 + a]}" for a in range(rank)])
    w_index = " + ".join([f"(g * {cg} + c) * {wst[0]}", f"oo * {wst[1]}"] + [f"j{a} * {wst[2 + a]}" for a in range(rank)])
    k.line(f"acc = acc + {wref}[{w_index}] * {x.c}[{x_index}];")
    for _ in range(rank + 1):
        k.close()
    o_index = " + ".join([f"n * {ost[0]}", f"o * {ost[1]}"] + [f"{y} * {ost[2 + a]}" for a, y in enumerate(ys)])
    store_plus_bias(k, o_index, kind, bref, bias)
    for _ in range(rank + 2):
        k.close()

"""local_response_normalization as its fragment (docs/semantics/normalization.md):

sigma = bias + alpha * box(x * x, size, normalize = true)   border constant, automatic
        padding, stride 1: the sum of the window taps in row-major order from +0, divided by
        the window volume (one IEEE division)
y     = x / pow(sigma, beta)                                the pow program

x * x is written into a zero-padded scratch copy first (a +0 tap changes no sum from +0).
(softmax and batch_normalization live with the reductions and the element-wise operations.)
"""

from __future__ import annotations

import math

from pipeline.codegen.c.kernels.common import F32, Kernel, attr_float, emitter, flit, strides
from pipeline.codegen.shared.geometry import same_padding


@emitter("local_response_normalization")
def lrn(k: Kernel) -> None:
    x = k.operand("input")
    size = [int(v) for v in k.op.attribs["size"]]
    if len(size) != len(x.shape):
        raise k.fail(f"'size' {size} must have one item per input axis")
    alpha, beta, bias = (attr_float(k.op, key) for key in ("alpha", "beta", "bias"))
    pads = [same_padding(n, s, 1, 1) for n, s in zip(x.shape, size)]
    padded = tuple(n + p + q for n, (p, q) in zip(x.shape, pads))
    rank = len(x.shape)
    xst, pst = strides(x.shape), strides(padded)
    sq = k.scratch(math.prod(padded))
    k.line(f"float *const sq = {sq};")
    k.comment("x * x into a zero-padded copy (automatic padding of the box)")
    total = math.prod(padded)
    k.open(f"for (int i = 0; i < {total}; ++i)")
    k.line("sq[i] = 0.0f;")
    k.close()
    ys = [f"y{a}" for a in range(rank)]
    for y, n in zip(ys, x.shape):
        k.open(f"for (int {y} = 0; {y} < {n}; ++{y})")
    src = " + ".join(f"{y} * {s}" for y, s in zip(ys, xst))
    dst = " + ".join(f"({y} + {p}) * {s}" for y, (p, _), s in zip(ys, pads, pst))
    k.line(f"const float v = {x.c}[{src}];")
    k.line(f"sq[{dst}] = v * v;")
    for _ in ys:
        k.close()
    volume = flit(F32(math.prod(size)))
    k.comment(f"sigma = {float(bias)!r} + {float(alpha)!r} * (window sum of x*x, row-major from +0) / {math.prod(size)}; "
              f"y = x / pow(sigma, {float(beta)!r})")
    for y, n in zip(ys, x.shape):
        k.open(f"for (int {y} = 0; {y} < {n}; ++{y})")
    k.line("float acc = 0.0f;")
    taps = [a for a in range(rank) if size[a] > 1]
    for a in taps:
        k.reduce(f"for (int t{a} = 0; t{a} < {size[a]}; ++t{a})", size[a])
    off = " + ".join(f"({ys[a]}{' + t' + str(a) if a in taps else ''}) * {pst[a]}" for a in range(rank))
    k.line(f"acc = acc + sq[{off}];")
    for _ in taps:
        k.close()
    k.line(f"const float sigma = {flit(bias)} + {flit(alpha)} * (acc / {volume});")
    k.line(f"{k.out.c}[{src}] = {x.c}[{src}] / nnef_pow(sigma, {flit(beta)});")
    for _ in ys:
        k.close()

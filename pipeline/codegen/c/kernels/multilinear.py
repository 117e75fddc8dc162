"""multilinear_upsample: linear interpolation by whole factors, the 2^d corner terms in order.

Per spatial axis (input extent n, factor f) output y samples the exact rational t / den:
'symmetric' (border 'replicate') t = 2y + 1 - f, den = 2f; 'aligned' t = y (n - 1),
den = f n - 1 (1 if f n = 1). lo = floor(t / den), r = t - lo den; the taps are
x[clamp(lo)] and x[clamp(lo + 1)] with weights (float)(den - r) / (float)den and
(float)r / (float)den (one IEEE division of exact integers each). The generated C computes
r per output position with integer arithmetic (floor through an offset of den, so the
dividend is never negative) and reads the clamped taps from per-axis index tables computed
at generation time (no `?:`: numeric kernels are branch-free, codegen.static), then

    acc = +0; acc = acc + ((w_a2 * w_a3) * ...) * x[corner]   corners lexicographic, lo first

(docs/semantics/sliding_window.md "multilinear_upsample"), each * and + one float32 rounding
(the qualified flags forbid contraction).
"""

from __future__ import annotations

import itertools

import numpy as np

from pipeline.codegen.c.kernels.common import Kernel, emitter, strides
from pipeline.codegen.shared.geometry import METHODS, axis_numerator, axis_rule


@emitter("multilinear_upsample")
def multilinear_upsample(k: Kernel) -> None:
    x = k.operand("input")
    factor = [int(f) for f in k.op.attribs["factor"]]
    method = str(k.op.attribs.get("method", "symmetric"))
    border = str(k.op.attribs.get("border", "replicate"))
    rank = len(x.shape) - 2
    if len(factor) != rank or any(f <= 0 for f in factor):
        raise k.fail(f"'factor' {factor} must have {rank} positive items")
    if method not in METHODS or (method == "symmetric" and border != "replicate"):
        raise k.fail(f"multilinear_upsample method '{method}' with border '{border}' (this generator: 'symmetric' "
                     "with 'replicate', 'aligned')")
    expected = list(x.shape[:2]) + [n * f for n, f in zip(x.shape[2:], factor)]
    if list(k.out.shape) != expected:
        raise k.fail(f"multilinear_upsample output {list(k.out.shape)} is not {expected}", "CODEGEN-E008")
    xst, ost = strides(x.shape), strides(k.out.shape)
    k.comment(f"multilinear_upsample by {factor}, method '{method}': per axis lo/hi taps and weights from the "
              "exact position t / den; acc = +0 + corner terms (lo before hi, axis 2 outermost)")
    k.open(f"for (int y0 = 0; y0 < {x.shape[0]}; ++y0)")
    k.open(f"for (int y1 = 0; y1 < {x.shape[1]}; ++y1)")
    for a in range(rank):
        n, f = x.shape[2 + a], factor[a]
        numerator, den, shift = axis_rule(method, n, f)
        y = f"y{a + 2}"
        k.open(f"for (int {y} = 0; {y} < {n * f}; ++{y})")
        k.line(f"const int t{a} = {numerator.format(y=y)};")
        k.line(f"const int q{a} = t{a} / {den}, r{a} = t{a} - q{a} * {den};")
        lo_tab, hi_tab = _taps(method, den, shift, n, f)
        lo_name = k.const_array(f"IX_{k.function}_lo{a}", lo_tab, "int",
                                f"lower tap clamp(floor(t / den) - {shift}, 0, {n - 1}) per output position, axis {a + 2}")
        hi_name = k.const_array(f"IX_{k.function}_hi{a}", hi_tab, "int",
                                f"upper tap min(floor(t / den) - {shift} + 1, {n - 1}) per output position, axis {a + 2}")
        k.line(f"const int lo{a} = {lo_name}[{y}], hi{a} = {hi_name}[{y}];")
        k.line(f"const float wl{a} = (float)({den} - r{a}) / {den}.0f, wh{a} = (float)r{a} / {den}.0f;")
    base = f"y0 * {xst[0]} + y1 * {xst[1]}"
    k.line("float acc = 0.0f;")
    for corner in itertools.product((0, 1), repeat=rank):
        names = [("wh" if side else "wl") + str(a) for a, side in enumerate(corner)]
        weight = names[0]
        for name in names[1:]:
            weight = f"({weight} * {name})"
        index = " + ".join([base] + [f"{'hi' if side else 'lo'}{a} * {xst[2 + a]}" for a, side in enumerate(corner)])
        k.line(f"acc = acc + {weight} * {x.c}[{index}];")
    dst = " + ".join(f"y{a} * {st}" for a, st in enumerate(ost))
    k.line(f"{k.out.c}[{dst}] = acc;")
    for _ in range(rank + 2):
        k.close()


def _taps(method: str, den: int, shift: int, n: int, f: int) -> tuple[np.ndarray, np.ndarray]:
    """The clamped lower and upper tap of each output position of one axis (the reference's
    clamp(lo, 0, n - 1) and clamp(lo + 1, 0, n - 1), lo = floor(t / den) - shift; t + den >= 0)."""
    lo, hi = [], []
    for y in range(n * f):
        raw = axis_numerator(method, n, f, y) // den - shift
        lo.append(min(max(raw, 0), n - 1))
        hi.append(min(max(raw + 1, 0), n - 1))
    return np.asarray(lo, np.int32), np.asarray(hi, np.int32)

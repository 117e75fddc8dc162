"""sum_reduce, mean_reduce, max_reduce, min_reduce, and softmax over `axes`.

The reduced axes are visited in row-major order of their indices (ascending axes, the last
fastest), one term at a time (docs/semantics/reduce.md):
    sum   acc = +0; acc = acc + t_r; mean (and sum with normalize): acc / float(R)
    max   m = -inf; m = t if t > m or t is the first NaN   (min: +inf and <)
softmax  m = max_reduce(x); e = exp(x - m) (the exp program); s = sum_reduce(e); y = e / s.
The last kept axis is computed NNEF_VL outputs at a time (strided loads across it); the
reduction loops are inside, so every lane runs its own terms in order.
"""

from __future__ import annotations

import math

from pipeline.codegen.c.kernels.common import F32, Kernel, Operand, emitter, flit, strides

# The ACSL assertions of softmax that Frama-C's EVA cannot decide (its interval domain does not
# relate a value to the row's maximum): listed with their proof in pipeline/prove/justified.json.
SOFTMAX_SHIFT = "nnef_softmax_shift"
SOFTMAX_SUM = "nnef_softmax_sum"


def _axes(k: Kernel, x: Operand) -> list[int]:
    axes = sorted(int(a) for a in k.op.attribs["axes"])
    if any(not 0 <= a < len(x.shape) for a in axes) or len(set(axes)) != len(axes):
        raise k.fail(f"axes {axes} invalid for rank {len(x.shape)}")
    return axes


@emitter("sum_reduce", "mean_reduce", "max_reduce", "min_reduce")
def reduce(k: Kernel) -> None:
    x = k.operand("input")
    op = k.op.name
    axes = _axes(k, x)
    rank = len(x.shape)
    xst = strides(x.shape)
    kept = [a for a in range(rank) if a not in axes and x.shape[a] > 1]
    reduced = [a for a in axes if x.shape[a] > 1]
    count = math.prod(x.shape[a] for a in axes)
    normalize = op == "mean_reduce" or (op == "sum_reduce" and bool(k.op.attribs.get("normalize", False)))
    out_shape = [1 if a in axes else x.shape[a] for a in range(rank)]
    ost = strides(out_shape)
    vaxis = kept[-1] if kept else None
    outer = kept[:-1]
    kind = {"sum_reduce": "sum", "mean_reduce": "sum", "max_reduce": "max", "min_reduce": "min"}[op]
    k.comment(f"{op}: per output, {'+0 then acc + t' if kind == 'sum' else kind + ' rule from ' + ('-inf' if kind == 'max' else '+inf')}"
              f" over the {count} terms of axes {axes} in row-major order" + (f", then / {count}" if normalize else ""))
    for a in outer:
        k.open(f"for (int y{a} = 0; y{a} < {x.shape[a]}; ++y{a})")

    def body(vector: bool, lane: str | None) -> None:
        inits = {"sum": ("nnef_vzero()", "0.0f"), "max": ("nnef_vset1(nnef_float(0xff800000u))", "nnef_float(0xff800000u)"),
                 "min": ("nnef_vset1(nnef_float(0x7f800000u))", "nnef_float(0x7f800000u)")}[kind]
        k.line(f"{'nnef_vf' if vector else 'float'} acc = {inits[0] if vector else inits[1]};")
        for a in reduced:
            k.reduce(f"for (int r{a} = 0; r{a} < {x.shape[a]}; ++r{a})", x.shape[a])
        terms = [f"y{a} * {xst[a]}" for a in outer] + [f"r{a} * {xst[a]}" for a in reduced]
        if vaxis is not None and lane is not None:
            terms.append(f"{lane} * {xst[vaxis]}")
        off = " + ".join(terms) or "0"
        if vector:
            stride = xst[vaxis]
            load = f"nnef_vload({x.c} + {off})" if stride == 1 else f"nnef_vload_strided({x.c} + {off}, {stride})"
            k.line(f"const nnef_vf t = {load};")
            k.line({"sum": "acc = nnef_vadd(acc, t);", "max": "acc = nnef_vmax_update(t, acc);",
                    "min": "acc = nnef_vmin_update(t, acc);"}[kind])
        else:
            k.line(f"const float t = {x.c}[{off}];")
            k.line({"sum": "acc = acc + t;", "max": "acc = nnef_max_update(t, acc);",
                    "min": "acc = nnef_min_update(t, acc);"}[kind])
        for _ in reduced:
            k.close()
        if normalize:
            k.line(f"acc = nnef_vdiv(acc, nnef_vset1({flit(F32(count))}));" if vector else f"acc = acc / {flit(F32(count))};")
        oterms = [f"y{a} * {ost[a]}" for a in outer]
        if vaxis is not None and lane is not None:
            oterms.append(f"{lane} * {ost[vaxis]}")
        dst = f"{k.out.c} + {' + '.join(oterms) or '0'}"
        k.line(f"nnef_vstore({dst}, acc);" if vector else f"*({dst}) = acc;")

    if vaxis is None:
        k.open("")
        body(False, None)
        k.close()
    else:
        extent = x.shape[vaxis]
        end = extent - extent % k.lanes
        if end:
            k.open(f"for (int v = 0; v < {end}; v += {k.lanes})")
            body(True, "v")
            k.close()
        if end < extent:
            k.open(f"for (int v = {end}; v < {extent}; ++v)")
            body(False, "v")
            k.close()
    for _ in outer:
        k.close()


@emitter("softmax")
def softmax(k: Kernel) -> None:
    x = k.operand("x")
    axes = _axes(k, x)
    rank = len(x.shape)
    xst = strides(x.shape)
    kept = [a for a in range(rank) if a not in axes and x.shape[a] > 1]
    reduced = [a for a in axes if x.shape[a] > 1]
    k.comment(f"softmax over axes {axes}: m = first maximum (NaN propagates); e = exp(x - m) by the exp program; "
              "s = +0 + e in row-major order; y = e / s")
    for a in kept:
        k.open(f"for (int y{a} = 0; y{a} < {x.shape[a]}; ++y{a})")
    base = " + ".join(f"y{a} * {xst[a]}" for a in kept) or "0"
    k.line(f"const float *const xs = {x.c} + {base};")
    k.line(f"float *const ys = {k.out.c} + {base};")

    def reduce_loops() -> str:
        for a in reduced:
            k.reduce(f"for (int r{a} = 0; r{a} < {x.shape[a]}; ++r{a})", x.shape[a])
        return " + ".join(f"r{a} * {xst[a]}" for a in reduced) or "0"

    def close() -> None:
        for _ in reduced:
            k.close()

    k.line("float m = nnef_float(0xff800000u);")
    off = reduce_loops()
    k.line(f"m = nnef_max_update(xs[{off}], m);")
    close()
    k.line("float s = 0.0f;")
    off = reduce_loops()
    k.line(f"const float d = xs[{off}] - m;")
    k.line(f"/*@ assert {SOFTMAX_SHIFT}: d <= 0; */")   # m is the row's maximum (docs/prove.md)
    k.line("const float e = nnef_exp(d);")
    k.line(f"ys[{off}] = e;")
    k.line("s = s + e;")
    close()
    k.line(f"/*@ assert {SOFTMAX_SUM}: s >= 1; */")      # the maximum's own term is exp(+0) = 1
    off = reduce_loops()
    k.line(f"ys[{off}] = ys[{off}] / s;")
    close()
    for _ in kept:
        k.close()

"""Data movement: concat, stack, split, unstack, transpose, slice, tile, pad (docs/semantics/shape_ops.md).

No arithmetic: every element is copied bit for bit (memcpy or an assignment of a float
object), -0 and NaN payloads included. reshape, squeeze, unsqueeze and copy move no data at
all: their result shares the operand's storage (the buffer plan extends the operand's
lifetime), so their functions are empty.
"""

from __future__ import annotations

import math

from pipeline.codegen.c.kernels.common import F32, Kernel, Operand, VIEW_OPERATIONS, attr_float, emitter, strides
from pipeline.codegen.c.kernels.padding import emit_padded_copy


@emitter(*sorted(VIEW_OPERATIONS))
def view(k: Kernel) -> None:
    """No code: the result is the operand's storage read with another shape (row-major unchanged)."""
    k.comment(f"{k.op.name}: the result shares the operand's storage (same row-major sequence); no data moves")


def _join(k: Kernel, values: list[Operand], out: Operand, axis: int) -> None:
    """Copy `values` one after the other along `axis` of `out` (concat / stack)."""
    outer = math.prod(out.shape[:axis])
    out_inner = math.prod(out.shape[axis:])
    offset = 0
    for index, value in enumerate(values):
        inner = value.size // outer if outer else 0
        k.comment(f"operand {index} ({value.name}): {outer} block(s) of {inner} floats at offset {offset} of each "
                  f"{out_inner}-float block")
        if outer == 1:
            k.line(f"(void)memcpy({out.c} + {offset}, {value.c}, {inner}u * sizeof(float));")
        else:
            k.open(f"for (int b = 0; b < {outer}; ++b)")
            k.line(f"(void)memcpy({out.c} + b * {out_inner} + {offset}, {value.c} + b * {inner}, {inner}u * sizeof(float));")
            k.close()
        offset += inner


def _axis(k: Kernel, rank: int) -> int:
    axis = int(k.op.attribs["axis"])
    if not 0 <= axis < rank:
        raise k.fail(f"axis {axis} out of range for rank {rank}")
    return axis


@emitter("concat")
def concat(k: Kernel) -> None:
    values = k.operand_list("values")
    if any(v.is_literal for v in values):
        raise k.fail("literal operands of concat are not supported")
    _join(k, values, k.out, _axis(k, len(k.out.shape)))


@emitter("stack")
def stack(k: Kernel) -> None:
    values = k.operand_list("values")
    _join(k, values, k.out, _axis(k, len(k.out.shape)))


def _cut(k: Kernel, value: Operand, outs: list[Operand], axis: int) -> None:
    outer = math.prod(value.shape[:axis])
    in_inner = math.prod(value.shape[axis:])
    offset = 0
    for index, out in enumerate(outs):
        inner = out.size // outer if outer else 0
        k.comment(f"result {index} ({out.name}): {inner} floats at offset {offset} of each {in_inner}-float block")
        if outer == 1:
            k.line(f"(void)memcpy({out.c}, {value.c} + {offset}, {inner}u * sizeof(float));")
        else:
            k.open(f"for (int b = 0; b < {outer}; ++b)")
            k.line(f"(void)memcpy({out.c} + b * {inner}, {value.c} + b * {in_inner} + {offset}, {inner}u * sizeof(float));")
            k.close()
        offset += inner


@emitter("split")
def split(k: Kernel) -> None:
    value = k.operand("value")
    _cut(k, value, k.outputs, _axis(k, len(value.shape)))


@emitter("unstack")
def unstack(k: Kernel) -> None:
    value = k.operand("value")
    _cut(k, value, k.outputs, _axis(k, len(value.shape)))


def _gather_loops(k: Kernel, out: Operand, source: str, index_of: list[str]) -> None:
    """out[y] = source[sum index_of[a](y_a)] over every output position, row-major."""
    ys = [f"y{a}" for a in range(len(out.shape))]
    ost = strides(out.shape)
    for y, n in zip(ys, out.shape):
        k.open(f"for (int {y} = 0; {y} < {n}; ++{y})")
    dst = " + ".join(f"{y} * {s}" for y, s in zip(ys, ost)) or "0"
    src = " + ".join(index_of) or "0"
    k.line(f"{out.c}[{dst}] = {source}[{src}];")
    for _ in ys:
        k.close()


@emitter("transpose")
def transpose(k: Kernel) -> None:
    x = k.operand("input")
    axes = [int(a) for a in k.op.attribs["axes"]]
    perm = axes + list(range(len(axes), len(x.shape)))
    xst = strides(x.shape)
    k.comment(f"transpose: output axis i is input axis {perm}[i]; element copies in output row-major order")
    _gather_loops(k, k.out, x.c, [f"y{i} * {xst[p]}" for i, p in enumerate(perm)])


@emitter("nearest_upsample")
def nearest_upsample(k: Kernel) -> None:
    """out[n, c, y..] = +0 + x[n, c, y // f..]: the fragment's one-term sum (debox), so -0 becomes +0
    exactly as in the reference; every other value is copied."""
    x = k.operand("input")
    factor = [int(f) for f in k.op.attribs["factor"]]
    if len(factor) != len(x.shape) - 2 or any(f <= 0 for f in factor):
        raise k.fail(f"'factor' {factor} must have {len(x.shape) - 2} positive items")
    expected = list(x.shape[:2]) + [n * f for n, f in zip(x.shape[2:], factor)]
    if list(k.out.shape) != expected:
        raise k.fail(f"nearest_upsample output {list(k.out.shape)} is not {expected}", "CODEGEN-E008")
    xst = strides(x.shape)
    ys = [f"y{a}" for a in range(len(x.shape))]
    ost = strides(k.out.shape)
    k.comment(f"nearest_upsample by {factor}: out = 0.0f + x[.., y / f] (the reference's +0 + x)")
    for y, n in zip(ys, k.out.shape):
        k.open(f"for (int {y} = 0; {y} < {n}; ++{y})")
    src = " + ".join([f"y0 * {xst[0]}", f"y1 * {xst[1]}"]
                     + [f"({ys[a]} / {factor[a - 2]}) * {xst[a]}" for a in range(2, len(x.shape))])
    dst = " + ".join(f"{y} * {st}" for y, st in zip(ys, ost))
    k.line(f"{k.out.c}[{dst}] = 0.0f + {x.c}[{src}];")
    for _ in ys:
        k.close()


@emitter("slice")
def slice_(k: Kernel) -> None:
    x = k.operand("input")
    rank = len(x.shape)
    axes = [int(a) for a in k.op.attribs["axes"]]
    begin = [int(v) for v in k.op.attribs["begin"]]
    end = [int(v) for v in k.op.attribs["end"]]
    stride = [int(v) for v in k.op.attribs.get("stride", [])] or [1] * len(axes)
    if not len(begin) == len(end) == len(stride) == len(axes) or 0 in stride:
        raise k.fail(f"slice axes {axes}, begin {begin}, end {end}, stride {stride} do not agree")
    first = [0] * rank
    step = [1] * rank
    for axis, b, s in zip(axes, begin, stride):
        n = x.shape[axis]
        first[axis] = max(-1, min(n, b + n if b < 0 else b))
        step[axis] = s
    xst = strides(x.shape)
    k.comment(f"slice: per axis, input index = begin + i * stride (begin {first}, stride {step})")
    _gather_loops(k, k.out, x.c, [f"({first[a]} + y{a} * {step[a]}) * {xst[a]}" for a in range(rank)])


@emitter("tile")
def tile(k: Kernel) -> None:
    x = k.operand("input")
    xst = strides(x.shape)
    k.comment("tile: output index y reads input index y % extent on every axis")
    _gather_loops(k, k.out, x.c, [f"(y{a} % {n}) * {s}" for a, (n, s) in enumerate(zip(x.shape, xst))])


@emitter("pad")
def pad(k: Kernel) -> None:
    x = k.operand("input")
    border = str(k.op.attribs["border"])
    if border not in ("constant", "replicate", "reflect", "reflect-even"):
        raise k.fail(f"border '{border}' is not allowed for pad")
    pads = [(int(p), int(q)) for p, q in k.op.attribs["padding"]]
    if len(pads) != len(x.shape):
        raise k.fail(f"'padding' {pads} must have {len(x.shape)} items")
    value = attr_float(k.op, "value") if "value" in k.op.attribs else F32(0.0)
    emit_padded_copy(k, x.c, x.shape, pads, border, float(value) if border == "constant" else None, k.out.c, "pad")

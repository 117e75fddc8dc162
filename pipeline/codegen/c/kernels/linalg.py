"""linear and matmul: k increasing from +0, each product and sum one rounding, bias last.

linear  out[n, o] = (+0 + x[n, 0] * w[o, 0] + ... + x[n, K-1] * w[o, K-1]) + bias[o]
matmul  C[.., m, n] = +0 + A'[.., m, 0] * B'[.., 0, n] + ... (A', B' transposed if asked)
(docs/semantics/linear_algebra.md). Vectors run across output columns (o, or n): with
constant weights the filter is re-arranged at generation time into blocks of output
columns ([block][k][lanes]); for each k in order every lane adds its own product, so each
output keeps the documented order. Up to 8 vectors of outputs are kept in registers.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from pipeline.codegen.c.kernels.common import F32, Kernel, Operand, emitter, strides

MAX_VECTORS = 8


def _blocks(columns: int, lanes: int) -> list[tuple[int, int]]:
    """(first column, columns) of each block of at most MAX_VECTORS vectors."""
    size = MAX_VECTORS * lanes
    return [(start, min(size, columns - start)) for start in range(0, columns, size)]


def _bias_values(k: Kernel, bias: Operand, outs: int) -> tuple[str, np.ndarray | None]:
    if bias.is_literal:
        if np.array([bias.literal], F32).view(np.uint32)[0] == 0:
            return "zero", None
        return "const", np.full(outs, bias.literal, F32)
    shape = list(bias.shape)
    if not (all(d == 1 for d in shape) or (len(shape) == 2 and shape[0] == 1 and shape[1] == outs)):
        raise k.fail(f"bias of shape {shape} is neither [1, {outs}] nor a scalar")
    if bias.is_constant:
        values = np.asarray(bias.value, F32).reshape(-1)
        return "const", (np.full(outs, values[0], F32) if values.size == 1 else values.copy())
    return ("tensor_scalar" if all(d == 1 for d in shape) else "tensor"), None


def _fmt(template: Any, column: int) -> str:
    """A B' access for column `column` at row k: a format string or a function of (k, column)."""
    if callable(template):
        return template("k", column)
    return template.format(k="k", c=column)


def _emit_rows(k: Kernel, rows: int, columns: int, depth: int, a_elem: str, b_vec: Any, b_scalar: Any,
               out_row: str, bias: tuple[str, str | None]) -> None:
    """C[r, c] = +0 + sum_k A(r, k) * B(k, c), column blocks vectorised, then + bias[c].

    a_elem(r, k) is a C expression with {r} and {k}; b_vec(k, c) a vector load of B'(k, c..);
    b_scalar(k, c) a scalar read; out_row(r) the output row pointer."""
    lanes = k.lanes
    kind, bref = bias
    k.open(f"for (int r = 0; r < {rows}; ++r)" if rows > 1 else "")
    if rows == 1:
        k.line("const int r = 0;")
    k.line(f"float *const orow = {out_row};")
    for start, count in _blocks(columns, lanes):
        nvec, tail = divmod(count, lanes)
        k.comment(f"output columns {start}..{start + count - 1}: {nvec} vector(s) and {tail} scalar(s), "
                  f"k = 0..{depth - 1} in order")
        k.open("")
        accs = [f"a{v}" for v in range(nvec)]
        scalars = [f"s{t}" for t in range(tail)]
        if accs:
            k.line("nnef_vf " + ", ".join(f"{a} = nnef_vzero()" for a in accs) + ";")
        if scalars:
            k.line("float " + ", ".join(f"{s} = 0.0f" for s in scalars) + ";")
        k.reduce(f"for (int k = 0; k < {depth}; ++k)", depth)
        k.line(f"const float ak = {a_elem.format(r='r', k='k')};")
        if accs:
            k.line("const nnef_vf av = nnef_vset1(ak);")
        for v, acc in enumerate(accs):
            k.line(f"{acc} = nnef_vadd({acc}, nnef_vmul(av, {_fmt(b_vec, start + v * lanes)}));")
        for t, s in enumerate(scalars):
            k.line(f"{s} = {s} + ak * {_fmt(b_scalar, start + nvec * lanes + t)};")
        k.close()
        for v, acc in enumerate(accs):
            column = start + v * lanes
            if kind == "zero":
                value = acc
            elif kind == "const":
                value = f"nnef_vadd({acc}, nnef_vload({bref} + {column}))"
            elif kind == "tensor":
                value = f"nnef_vadd({acc}, nnef_vload({bref} + {column}))"
            else:
                value = f"nnef_vadd({acc}, nnef_vset1({bref}[0]))"
            k.line(f"nnef_vstore(orow + {column}, {value});")
        for t, s in enumerate(scalars):
            column = start + nvec * lanes + t
            if kind == "zero":
                value = s
            elif kind in ("const", "tensor"):
                value = f"{s} + {bref}[{column}]"
            else:
                value = f"{s} + {bref}[0]"
            k.line(f"orow[{column}] = {value};")
        k.close()
    k.close()


@emitter("linear")
def linear(k: Kernel) -> None:
    x, f, bias = k.operand("input"), k.operand("filter"), k.operand("bias")
    if len(x.shape) != 2 or len(f.shape) != 2 or x.shape[1] != f.shape[1]:
        raise k.fail(f"input {list(x.shape)} and filter {list(f.shape)} must be [N, K] and [O, K]")
    rows, depth = x.shape
    outs = f.shape[0]
    kind, values = _bias_values(k, bias, outs)
    bref = None
    if values is not None:
        bref = k.const_array(f"B_{bias.label or k.function}", values, "float", f"bias of {k.op.name} per output",
                             source=bias.label, layout={"kind": "bias_channels", "outs": outs} if bias.label else {})
    elif kind != "zero":
        bref = bias.c
    k.comment("linear: out[n, o] = (+0 + x[n, 0] * w[o, 0] + ... + x[n, K-1] * w[o, K-1]) + bias[o]")
    if f.is_constant:
        # Blocks of `width` output columns, [k][column] inside each; the last block holds only the
        # outputs left (no zero padding: a 10-output layer keeps 10 columns, not 64). Vector loads
        # are memcpy-based (unaligned), and a block's tail columns are read as scalars.
        width = MAX_VECTORS * k.lanes
        nblocks = -(-outs // width)
        last = outs - (nblocks - 1) * width
        w = np.asarray(f.value, F32)
        arranged = np.concatenate([w[b * width:b * width + min(width, outs - b * width)].T.reshape(-1)
                                   for b in range(nblocks)])
        wname = k.const_array(f"W_{f.label or f.name}_kb{width}", arranged, "float",
                              f"{f.label or f.name} as [block {nblocks}][k {depth}][{width} outputs] (each block's "
                              f"columns contiguous; the last block holds its {last} outputs only)",
                              source=f.label, layout={"kind": "linear_blocks", "outs": outs, "depth": depth,
                                                      "block": width, "last_block": last})

        def b_offset(kk: str, c: int) -> str:
            block = c // width
            columns = width if block < nblocks - 1 else last
            return f"{block * depth * width} + {kk} * {columns} + {c % width}"

        def b_vec(kk: str, c: int) -> str:
            return f"nnef_vload({wname} + {b_offset(kk, c)})"

        def b_scalar(kk: str, c: int) -> str:
            return f"{wname}[{b_offset(kk, c)}]"

        _emit_rows(k, rows, outs, depth, f"{x.c}[{{r}} * {depth} + {{k}}]", b_vec, b_scalar,
                   f"{k.out.c} + r * {outs}", (kind, bref))
    else:
        _emit_rows(k, rows, outs, depth, f"{x.c}[{{r}} * {depth} + {{k}}]",
                   f"nnef_vload_strided({f.c} + {{c}} * {depth} + {{k}}, {depth})",
                   f"{f.c}[{{c}} * {depth} + {{k}}]", f"{k.out.c} + r * {outs}", (kind, bref))


@emitter("matmul")
def matmul(k: Kernel) -> None:
    a, b = k.operand("A"), k.operand("B")
    if len(a.shape) < 2 or len(a.shape) != len(b.shape):
        raise k.fail(f"operands {list(a.shape)} and {list(b.shape)} must have equal rank >= 2")
    ta, tb = bool(k.op.attribs["transposeA"]), bool(k.op.attribs["transposeB"])
    m, depth = (a.shape[-1], a.shape[-2]) if ta else (a.shape[-2], a.shape[-1])
    depth_b, n = (b.shape[-1], b.shape[-2]) if tb else (b.shape[-2], b.shape[-1])
    if depth != depth_b:
        raise k.fail(f"inner dimensions differ: {list(a.shape)} x {list(b.shape)}")
    batch = list(k.out.shape[:-2])
    ast, bst, ost = strides(a.shape), strides(b.shape), strides(k.out.shape)
    k.comment("matmul: C[.., m, n] = +0 + A'[.., m, 0] * B'[.., 0, n] + ... (k increasing)")
    bvars = [f"i{d}" for d in range(len(batch))]
    for var, extent in zip(bvars, batch):
        k.open(f"for (int {var} = 0; {var} < {extent}; ++{var})")

    def base(shape: tuple[int, ...], st: list[int]) -> str:
        terms = [f"{v} * {s}" for v, d, s in zip(bvars, shape[:-2], st[:-2]) if d > 1]
        return " + ".join(terms) or "0"

    k.line(f"const float *const ab = {a.c} + {base(a.shape, ast)};")
    b_rearranged = b.is_constant and math.prod(batch) == 1
    if not b_rearranged:  # a rearranged constant B is read through its own array: no pointer into B
        k.line(f"const float *const bb = {b.c} + {base(b.shape, bst)};")
    k.line(f"float *const cb = {k.out.c} + {base(k.out.shape, ost)};")
    a_elem = f"ab[{{k}} * {a.shape[-1]} + {{r}}]" if ta else f"ab[{{r}} * {a.shape[-1]} + {{k}}]"
    if b_rearranged:
        arranged = np.asarray(b.value, F32).reshape(b.shape[-2], b.shape[-1])
        arranged = np.ascontiguousarray(arranged.T if tb else arranged)
        wname = k.const_array(f"W_{b.label or b.name}_kn", arranged, "float",
                              f"{b.label or b.name} as B' [k {depth}][n {n}]", source=b.label,
                              layout={"kind": "transpose2d" if tb else "identity"})
        b_vec = f"nnef_vload({wname} + {{k}} * {n} + {{c}})"
        b_scalar = f"{wname}[{{k}} * {n} + {{c}}]"
    elif tb:
        b_vec = f"nnef_vload_strided(bb + {{c}} * {b.shape[-1]} + {{k}}, {b.shape[-1]})"
        b_scalar = f"bb[{{c}} * {b.shape[-1]} + {{k}}]"
    else:
        b_vec = f"nnef_vload(bb + {{k}} * {n} + {{c}})"
        b_scalar = f"bb[{{k}} * {n} + {{c}}]"
    _emit_rows(k, m, n, depth, a_elem, b_vec, b_scalar, f"cb + r * {n}", ("zero", None))
    for _ in batch:
        k.close()

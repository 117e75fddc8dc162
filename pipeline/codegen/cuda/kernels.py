"""The body of each NNEF instruction's CUDA kernel: the statements computing ONE output element.

A thread computes whole output elements: the caller decomposes the flat output index `i` into
coordinates `u0, u1, ...` (row-major) and the emitter writes the statements that compute
`y[i]` from them in the reference's evaluation order (docs/codegen.md "Evaluation order",
docs/semantics): sums from +0, one term at a time, terms row-major, bias last; the running
maximum from -inf; element-wise expressions parenthesised as elementwise.md writes them.
Nothing is shared between threads, so no result depends on the launch order; padded taps
are skipped by index tests (never a data-dependent branch in a sum), which is the reference's
"skipped" exactly. Every multiply and add goes through NNEF_MUL/NNEF_ADD (nnef_cuda.h).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from pipeline.codegen.shared.spelling import flit, strides
from pipeline.codegen.shared.geometry import METHODS as LINEAR_METHODS, axis_rule, deconv_extents, window_geometry
from pipeline.nnef.graph import Operation

F32 = np.float32


@dataclass
class Arg:
    """An operand as a kernel sees it: a tensor parameter (`param`) or a float32 literal."""

    shape: tuple[int, ...]
    param: str = ""
    literal: np.float32 | None = None

    @property
    def is_literal(self) -> bool:
        return self.literal is not None


class Unsupported(Exception):
    """The operation or an attribute value this generator does not implement (CODEGEN-E001/E002)."""


class Body:
    """The emission context of one kernel: its operands, its output shape, the statements."""

    def __init__(self, op: Operation, inputs: dict[str, Any], out_shape: tuple[int, ...], output: int = 0,
                 offset: int = 0) -> None:
        self.op = op
        self.inputs = inputs
        self.out_shape = out_shape
        self.output = output  # which result of the operation this kernel computes (split: one kernel per part)
        self.offset = offset  # split: where that part starts along the axis
        self.lines: list[str] = []

    def arg(self, key: str) -> Arg:
        value = self.inputs[key]
        if not isinstance(value, Arg):
            raise Unsupported(f"{self.op.name}: operand '{key}' must be a single tensor")
        return value

    def emit(self, text: str) -> None:
        self.lines.append(text)

    def coords(self) -> list[str]:
        return [f"u{a}" for a in range(len(self.out_shape))]

    def read(self, arg: Arg, coords: list[str]) -> str:
        """The element of `arg` broadcast NNEF-style (left-aligned) to the output coordinates."""
        if arg.is_literal:
            return flit(arg.literal)
        aligned = list(arg.shape) + [1] * (len(coords) - len(arg.shape))
        st = strides(aligned)
        terms = [f"{c} * {s}" if s != 1 else c for c, n, s in zip(coords, aligned, st) if n != 1]
        return f"{arg.param}[{' + '.join(terms) or '0'}]"


Emitter = Callable[[Body], None]
EMITTERS: dict[str, Emitter] = {}
VIEW_OPERATIONS = frozenset({"reshape", "squeeze", "unsqueeze", "copy"})


def emitter(*names: str) -> Callable[[Emitter], Emitter]:
    def register(fn: Emitter) -> Emitter:
        for name in names:
            EMITTERS[name] = fn
        return fn

    return register


BINARY = {"add": "NNEF_ADD({0}, {1})", "sub": "NNEF_SUB({0}, {1})", "mul": "NNEF_MUL({0}, {1})",
          "div": "NNEF_DIV({0}, {1})", "max": "nnef_max({0}, {1})", "min": "nnef_min({0}, {1})",
          "pow": "nnef_pow({0}, {1})"}
UNARY = {"relu": "nnef_relu({0})", "neg": "nnef_float(nnef_bits({0}) ^ 0x80000000u)",
         "abs": "nnef_float(nnef_bits({0}) & 0x7fffffffu)", "sqrt": "NNEF_SQRT({0})",
         "exp": "nnef_exp({0})", "log": "nnef_log({0})", "tanh": "nnef_tanh({0})", "sigmoid": "nnef_sigmoid({0})",
         "softplus": "nnef_softplus({0})", "erf": "nnef_erf({0})", "rcp": "NNEF_DIV(1.0f, {0})",
         "sqr": "NNEF_MUL({0}, {0})",
         "floor": "nnef_floor({0})", "round": "nnef_rint({0})"}


@emitter(*BINARY)
def binary(b: Body) -> None:
    x, y = b.arg("x"), b.arg("y")
    c = b.coords()
    b.emit(f"y[i] = {BINARY[b.op.name].format(b.read(x, c), b.read(y, c))};")


@emitter(*UNARY)
def unary(b: Body) -> None:
    b.emit(f"const float x = {b.read(b.arg('x'), b.coords())};")
    b.emit(f"y[i] = {UNARY[b.op.name].format('x')};")


@emitter("batch_normalization")
def batch_normalization(b: Body) -> None:
    c = b.coords()
    eps = flit(F32(b.op.attribs["epsilon"]))
    x, mean, var = b.read(b.arg("input"), c), b.read(b.arg("mean"), c), b.read(b.arg("variance"), c)
    offset, scale = b.read(b.arg("offset"), c), b.read(b.arg("scale"), c)
    b.emit("/* offset + ((scale * (input - mean)) / sqrt(variance + epsilon)): five IEEE operations in this order */")
    b.emit(f"const float d = NNEF_SQRT(NNEF_ADD({var}, {eps}));")
    b.emit(f"y[i] = NNEF_ADD({offset}, NNEF_DIV(NNEF_MUL({scale}, NNEF_SUB({x}, {mean})), d));")


def _bias(b: Body, bias: Arg, channel: str) -> str | None:
    """The bias term of output channel `channel`, or None for a literal +0 (adds nothing)."""
    if bias.is_literal:
        return None if np.array([bias.literal], F32).view(np.uint32)[0] == 0 else flit(bias.literal)
    shape = list(bias.shape)
    if all(d == 1 for d in shape):
        return f"{bias.param}[0]"
    if len(shape) >= 2 and shape[0] == 1 and all(d == 1 for d in shape[2:]):
        return f"{bias.param}[{channel}]"
    raise Unsupported(f"{b.op.name}: bias of shape {shape} is neither per channel nor a scalar")


@emitter("conv")
def conv(b: Body) -> None:
    x, f, bias = b.arg("input"), b.arg("filter"), b.arg("bias")
    if x.is_literal or f.is_literal or len(x.shape) < 3 or len(f.shape) != len(x.shape):
        raise Unsupported(f"conv: input {list(x.shape)} and filter {list(f.shape)} must be tensors of equal rank >= 3")
    border = str(b.op.attribs.get("border", "constant"))
    if border not in ("constant", "ignore"):
        raise Unsupported(f"conv: border '{border}' (this generator: constant, ignore)")
    channels, outs = x.shape[1], f.shape[0]
    groups = int(b.op.attribs.get("groups", 1)) or channels
    cg, og = channels // groups, outs // groups
    spatial = x.shape[2:]
    g = window_geometry(spatial, f.shape[2:], b.op.attribs.get("padding", []), b.op.attribs.get("stride", []),
                        b.op.attribs.get("dilation", []))
    if tuple(b.out_shape[2:]) != g.out_shape:
        raise Unsupported(f"conv: window extents {list(g.out_shape)} differ from {list(b.out_shape[2:])}")
    u = b.coords()
    xs, fs = strides(x.shape), strides(f.shape)
    b.emit("/* acc = +0; acc = acc + w * x over (c, k...) row-major, padded taps skipped; bias last */")
    b.emit(f"const unsigned cg0 = (u1 / {og}u) * {cg}u;  /* first input channel of the group */")
    axes = [(k, [f"const int p{a} = (int){u[a + 2]} * {s} + (int)k{a} * {d} - {p};",
                 f"if (p{a} < 0 || p{a} >= {spatial[a]}) continue;  /* padded tap: skipped */"],
             f"(unsigned)p{a} * {xs[a + 2]}", f"k{a} * {fs[a + 2]}")
            for a, (k, s, d, (p, _)) in enumerate(zip(g.size, g.stride, g.dilation, g.padding))]
    _accumulate_taps(b, cg, x, f, bias, [f"u0 * {xs[0]}", f"(cg0 + c) * {xs[1]}"], [f"u1 * {fs[0]}", f"c * {fs[1]}"],
                     axes)


def _accumulate_taps(b: Body, cg: int, x: Arg, f: Arg, bias: Arg, x_index: list[str], f_index: list[str],
                     axes: list[tuple[int, list[str], str, str]]) -> None:
    """The loop nest of both convolutions, in the reference's order: acc = +0, then over the group's
    input channel c and the kernel taps k0, k1, ... (lexicographic) one NNEF_ADD(acc, NNEF_MUL(w, x))
    per term; bias last. Each axis is (kernel extent, the lines that name the tap's input position and
    `continue` when it has none, the input index term, the filter index term)."""
    b.emit("float acc = 0.0f;")
    b.emit(f"for (unsigned c = 0; c < {cg}u; ++c) {{")
    depth = 1
    x_index, f_index = list(x_index), list(f_index)
    for a, (extent, lines, x_term, f_term) in enumerate(axes):
        b.emit(f"{'    ' * depth}for (unsigned k{a} = 0; k{a} < {extent}u; ++k{a}) {{")
        depth += 1
        for line in lines:
            b.emit(f"{'    ' * depth}{line}")
        x_index.append(x_term)
        f_index.append(f_term)
    b.emit(f"{'    ' * depth}acc = NNEF_ADD(acc, NNEF_MUL({f.param}[{' + '.join(f_index)}], "
           f"{x.param}[{' + '.join(x_index)}]));")
    for level in range(depth - 1, -1, -1):
        b.emit("    " * level + "}")
    term = _bias(b, bias, "u1")
    b.emit(f"y[i] = {f'NNEF_ADD(acc, {term})' if term else 'acc'};")


@emitter("deconv")
def deconv(b: Body) -> None:
    """acc = +0; acc = acc + filter[g*Cg + c, o % Og, j] * x[i] over (c, j0, j1, ...) lexicographic,
    only the taps whose input position i = (y + p - j*d) / s is whole and inside the input (index
    tests on the thread's coordinates, never on data); bias last (docs/semantics/sliding_window.md)."""
    x, f, bias = b.arg("input"), b.arg("filter"), b.arg("bias")
    if x.is_literal or f.is_literal or len(x.shape) < 3 or len(f.shape) != len(x.shape) or f.shape[0] != x.shape[1]:
        raise Unsupported(f"deconv: input {list(x.shape)} and filter {list(f.shape)} must be tensors of equal rank "
                          ">= 3 with filter[0] = input channels")
    border = str(b.op.attribs.get("border", "constant"))
    if border not in ("constant", "ignore"):
        raise Unsupported(f"deconv: border '{border}' (constant and ignore only: a padded tap is no term)")
    channels = x.shape[1]
    output_shape = [int(v) for v in b.op.attribs.get("output_shape", []) or []]
    groups = int(b.op.attribs.get("groups", 1)) or (output_shape[1] if output_shape else channels)
    if groups <= 0 or channels % groups or b.out_shape[1] != groups * f.shape[1]:
        raise Unsupported(f"deconv: groups {groups}, {channels} input channels, filter {list(f.shape)}, output "
                          f"channels {b.out_shape[1]} do not agree")
    cg, og = channels // groups, f.shape[1]
    spatial = x.shape[2:]
    try:
        stride, dilation, pads, outs = deconv_extents(b.op.attribs, tuple(spatial), tuple(f.shape[2:]))
    except ValueError as error:
        raise Unsupported(f"deconv: {error}") from None
    if list(b.out_shape[2:]) != outs:
        raise Unsupported(f"deconv: output extents {outs} differ from {list(b.out_shape[2:])}")
    u = b.coords()
    xs, fs = strides(x.shape), strides(f.shape)
    b.emit("/* acc = +0; acc = acc + w * x over (c, j...) lexicographic, only taps with a whole input position "
           "inside the input; bias last */")
    b.emit(f"const unsigned cg0 = (u1 / {og}u) * {cg}u, oo = u1 % {og}u;  /* group's first input channel */")
    axes = [(k, [f"const int t{a} = (int){u[a + 2]} + {p} - (int)k{a} * {d};",
                 f"if (t{a} < 0{f' || t{a} % {s} != 0' if s != 1 else ''} || t{a} / {s} >= {spatial[a]}) continue;"
                 "  /* no input position: no term */"],
             f"(unsigned)(t{a} / {s}) * {xs[a + 2]}", f"k{a} * {fs[a + 2]}")
            for a, (k, s, d, (p, _)) in enumerate(zip(f.shape[2:], stride, dilation, pads))]
    _accumulate_taps(b, cg, x, f, bias, [f"u0 * {xs[0]}", f"(cg0 + c) * {xs[1]}"],
                     [f"(cg0 + c) * {fs[0]}", f"oo * {fs[1]}"], axes)


@emitter("linear", "matmul")
def linear(b: Body) -> None:
    """acc = +0; acc = acc + A'[.., m, k] * B'[.., k, n] for k increasing; bias last (linear). matmul's
    batch axes (all but the last two) broadcast NNEF-style: an operand's axis of extent 1 is read at 0."""
    a = b.arg("input" if b.op.name == "linear" else "A")
    w = b.arg("filter" if b.op.name == "linear" else "B")
    if a.is_literal or w.is_literal or len(a.shape) < 2 or len(a.shape) != len(w.shape) or \
            (b.op.name == "linear" and len(a.shape) != 2):
        raise Unsupported(f"{b.op.name}: operands must be tensors of equal rank >= 2 (linear: 2)")
    if b.op.name == "linear":
        ta, tb, bias = False, True, b.arg("bias")
    else:
        ta, tb, bias = bool(b.op.attribs.get("transposeA")), bool(b.op.attribs.get("transposeB")), None
    rank = len(b.out_shape)
    m, n = f"u{rank - 2}", f"u{rank - 1}"
    k = a.shape[-2] if ta else a.shape[-1]

    def batch(arg: Arg) -> str:
        st = strides(arg.shape)
        return "".join(f"u{d} * {st[d]}u + " for d in range(rank - 2) if arg.shape[d] != 1)

    ai = f"{batch(a)}k * {a.shape[-1]}u + {m}" if ta else f"{batch(a)}{m} * {a.shape[-1]}u + k"
    wi = f"{batch(w)}{n} * {w.shape[-1]}u + k" if tb else f"{batch(w)}k * {w.shape[-1]}u + {n}"
    b.emit("/* acc = +0; acc = acc + a[k] * b[k] for k increasing; bias last */")
    b.emit("float acc = 0.0f;")
    b.emit(f"for (unsigned k = 0; k < {k}u; ++k) acc = NNEF_ADD(acc, NNEF_MUL({a.param}[{ai}], {w.param}[{wi}]));")
    term = _bias(b, bias, n) if bias is not None else None
    b.emit(f"y[i] = {f'NNEF_ADD(acc, {term})' if term else 'acc'};")


@emitter("slice")
def slice_(b: Body) -> None:
    """y[u] = x[begin + u * stride] per sliced axis (the begin resolved as NNEF says: negative counts from
    the end, clamped to the extent); a copy, no arithmetic."""
    x = b.arg("input")
    if x.is_literal:
        raise Unsupported("slice: literal operand")
    rank = len(x.shape)
    axes = [int(v) for v in b.op.attribs["axes"]]
    begin = [int(v) for v in b.op.attribs["begin"]]
    stride = [int(v) for v in b.op.attribs.get("stride", [])] or [1] * len(axes)
    if not len(begin) == len(stride) == len(axes) or 0 in stride:
        raise Unsupported(f"slice: axes {axes}, begin {begin}, stride {stride} do not agree")
    first, step = [0] * rank, [1] * rank
    for axis, start, s in zip(axes, begin, stride):
        extent = x.shape[axis]
        first[axis] = max(-1, min(extent, start + extent if start < 0 else start))
        step[axis] = s
    st = strides(list(x.shape))
    terms = [f"({first[a]} + (int)u{a} * {step[a]}) * {st[a]}" for a in range(rank) if x.shape[a] != 1]
    b.emit(f"y[i] = {x.param}[{' + '.join(terms) or '0'}];")


def _window_taps(b: Body, g: Any, in_shape: tuple[int, ...], xs: list[int]) -> tuple[str, list[str], int]:
    """Open one loop per windowed axis of a pool (an axis of one tap, stride 1 and no padding on
    either side reads the output coordinate itself); returns the test that the tap lies inside the
    input ('' when no axis is padded), the index terms and the loop depth. Every axis padded at its
    beginning *or its end* gets its bounds test: an axis padded only at the end (ceil-mode pools)
    has taps past the last input element too."""
    u = b.coords()
    depth = 0
    index: list[str] = []
    tests: list[str] = []
    for a, (k, s, d, (p, q)) in enumerate(zip(g.size, g.stride, g.dilation, g.padding)):
        if k == 1 and s == 1 and p == 0 and q == 0:
            index.append(f"{u[a]} * {xs[a]}")
            continue
        b.emit(f"{'    ' * depth}for (unsigned k{a} = 0; k{a} < {k}u; ++k{a}) {{")
        depth += 1
        ind = "    " * depth
        b.emit(f"{ind}const int p{a} = (int){u[a]} * {s} + (int)k{a} * {d} - {p};")
        if p or q:
            tests.append(f"p{a} >= 0 && p{a} < {in_shape[a]}")
        index.append(f"(unsigned)p{a} * {xs[a]}")
    return " && ".join(tests), index, depth


@emitter("max_pool")
def max_pool(b: Body) -> None:
    x = b.arg("input")
    border = str(b.op.attribs.get("border", "constant"))
    if border not in ("constant", "ignore"):
        raise Unsupported(f"max_pool: border '{border}' (this generator: constant, ignore)")
    g = window_geometry(x.shape, b.op.attribs["size"], b.op.attribs.get("padding", []),
                        b.op.attribs.get("stride", []), b.op.attribs.get("dilation", []))
    if tuple(b.out_shape) != g.out_shape:
        raise Unsupported(f"max_pool: window extents {list(g.out_shape)} differ from {list(b.out_shape)}")
    xs = strides(x.shape)
    b.emit("/* m = -inf; m = t if t > m or t is the first NaN; taps row-major; "
           + ("padded taps skipped */" if border == "ignore" else "padded taps are +0 */"))
    b.emit("float m = nnef_float(0xff800000u);")
    inside, index, depth = _window_taps(b, g, x.shape, xs)
    ind = "    " * depth
    read = f"{x.param}[{' + '.join(index) or '0'}]"
    if inside and border == "ignore":
        b.emit(f"{ind}if ({inside}) m = nnef_runmax(m, {read});")
    elif inside:
        b.emit(f"{ind}m = nnef_runmax(m, ({inside}) ? {read} : 0.0f);")
    else:
        b.emit(f"{ind}m = nnef_runmax(m, {read});")
    for level in range(depth - 1, -1, -1):
        b.emit("    " * level + "}")
    b.emit("y[i] = m;")


def _axes(b: Body, rank: int) -> list[int]:
    axes = [int(a) + rank if int(a) < 0 else int(a) for a in b.op.attribs.get("axes", [1])]
    return sorted(set(axes))


def _reduced_loops(b: Body, x: Arg, axes: list[int], statement: str, depth0: int = 0) -> None:
    """Loops over the reduced axes (row-major) around `statement`, which reads `X` (the term)."""
    xs = strides(x.shape)
    index = []
    for a in range(len(x.shape)):
        if a in axes:
            b.emit("    " * (depth0 + axes.index(a)) + f"for (unsigned r{a} = 0; r{a} < {x.shape[a]}u; ++r{a}) {{")
            index.append(f"r{a} * {xs[a]}")
        elif x.shape[a] != 1:
            index.append(f"u{a} * {xs[a]}")
    ind = "    " * (depth0 + len(axes))
    b.emit(ind + statement.replace("X", f"{x.param}[{' + '.join(index) or '0'}]"))
    for level in range(len(axes) - 1, -1, -1):
        b.emit("    " * (depth0 + level) + "}")


@emitter("sum_reduce", "mean_reduce", "max_reduce")
def reduce(b: Body) -> None:
    x = b.arg("input")
    axes = _axes(b, len(x.shape))
    count = math.prod(x.shape[a] for a in axes)
    if b.op.name == "max_reduce":
        b.emit("/* m = -inf; m = t if t > m or t is the first NaN; reduced axes row-major */")
        b.emit("float m = nnef_float(0xff800000u);")
        _reduced_loops(b, x, axes, "m = nnef_runmax(m, X);")
        b.emit("y[i] = m;")
        return
    b.emit("/* acc = +0; acc = acc + t over the reduced axes row-major" +
           ("; / R once */" if b.op.name == "mean_reduce" or b.op.attribs.get("normalize") else " */"))
    b.emit("float acc = 0.0f;")
    _reduced_loops(b, x, axes, "acc = NNEF_ADD(acc, X);")
    if b.op.name == "mean_reduce" or b.op.attribs.get("normalize"):
        b.emit(f"y[i] = NNEF_DIV(acc, {flit(F32(count))});")
    else:
        b.emit("y[i] = acc;")


@emitter("softmax")
def softmax(b: Body) -> None:
    x = b.arg("x")
    axes = _axes(b, len(x.shape))
    u = b.coords()
    b.emit("/* m = max over the axes (first maximum, NaN propagates); s = +0 + exp(t - m) row-major;"
           " y = exp(x - m) / s. Each thread recomputes m and s of its own slice: the same bits. */")
    b.emit("float m = nnef_float(0xff800000u);")
    _reduced_loops(b, x, axes, "m = nnef_runmax(m, X);")
    b.emit("float s = 0.0f;")
    _reduced_loops(b, x, axes, "s = NNEF_ADD(s, nnef_exp(NNEF_SUB(X, m)));")
    b.emit(f"y[i] = NNEF_DIV(nnef_exp(NNEF_SUB({b.read(x, u)}, m)), s);")


@emitter("clamp")
def clamp(b: Body) -> None:
    """clamp(x, a, b) = max(min(x, b), a), as the fragment and the reference (NaN propagates, a > b gives a)."""
    c = b.coords()
    x, low, high = b.read(b.arg("x"), c), b.read(b.arg("a"), c), b.read(b.arg("b"), c)
    b.emit(f"y[i] = nnef_max(nnef_min({x}, {high}), {low});")


@emitter("transpose")
def transpose(b: Body) -> None:
    """Output axis k is input axis axes[k]; axes not named keep their place (a copy, no arithmetic)."""
    x = b.arg("input")
    if x.is_literal:
        raise Unsupported("transpose: literal operand")
    rank = len(b.out_shape)
    axes = [int(a) for a in b.op.attribs["axes"]]
    axes = axes + list(range(len(axes), rank))
    st = strides(list(x.shape))
    terms = [f"u{k} * {st[a]}u" if st[a] != 1 else f"u{k}" for k, a in enumerate(axes) if x.shape[a] != 1]
    b.emit(f"y[i] = {x.param}[{' + '.join(terms) or '0'}];")


@emitter("nearest_upsample")
def nearest_upsample(b: Body) -> None:
    """out = +0 + x[.., y / f] (the reference's one-term sum: -0 becomes +0)."""
    x = b.arg("input")
    if x.is_literal:
        raise Unsupported("nearest_upsample: literal operand")
    factor = [int(f) for f in b.op.attribs["factor"]]
    if len(factor) != len(b.out_shape) - 2:
        raise Unsupported(f"nearest_upsample: factor {factor}")
    coords = b.coords()
    coords = coords[:2] + [f"({u} / {f}u)" for u, f in zip(coords[2:], factor)]
    b.emit(f"y[i] = NNEF_ADD(0.0f, {b.read(x, coords)});")


@emitter("multilinear_upsample")
def multilinear_upsample(b: Body) -> None:
    """Per axis the two taps (clamped: the replicated border) and the weights of the exact position
    t / den from integer arithmetic, then acc = +0 + ((w_a2 * w_a3) * ...) * x[corner] over the 2^d
    corners, lo before hi, axis 2 outermost (docs/semantics/sliding_window.md, as kernels/multilinear.py)."""
    x = b.arg("input")
    if x.is_literal:
        raise Unsupported("multilinear_upsample: literal operand")
    factor = [int(f) for f in b.op.attribs["factor"]]
    method = str(b.op.attribs.get("method", "symmetric"))
    border = str(b.op.attribs.get("border", "replicate"))
    rank = len(b.out_shape) - 2
    if len(factor) != rank or method not in LINEAR_METHODS or (method == "symmetric" and border != "replicate"):
        raise Unsupported(f"multilinear_upsample: factor {factor}, method '{method}', border '{border}' (this "
                          "generator: 'symmetric' with 'replicate', 'aligned')")
    u = b.coords()
    for a in range(rank):
        n = x.shape[2 + a]
        numerator, den, shift = axis_rule(method, n, factor[a])
        b.emit(f"const int t{a} = {numerator.format(y=f'(int){u[2 + a]}')};")
        b.emit(f"const int q{a} = t{a} / {den}, r{a} = t{a} - q{a} * {den};")
        lo = f"q{a} - {shift}" if shift else f"q{a}"
        b.emit(f"const int lo{a} = {lo} < 0 ? 0 : ({lo} > {n - 1} ? {n - 1} : {lo});")
        b.emit(f"const int hi{a} = {lo} + 1 > {n - 1} ? {n - 1} : {lo} + 1;")
        if n == 1:
            b.emit(f"(void)lo{a}; (void)hi{a};  /* extent 1: the read omits the axis */")
        b.emit(f"const float wl{a} = NNEF_DIV((float)({den} - r{a}), {den}.0f), "
               f"wh{a} = NNEF_DIV((float)r{a}, {den}.0f);")
    b.emit("float acc = 0.0f;")
    for corner in itertools.product((0, 1), repeat=rank):
        names = [("wh" if side else "wl") + str(a) for a, side in enumerate(corner)]
        weight = names[0]
        for name in names[1:]:
            weight = f"NNEF_MUL({weight}, {name})"
        coords = u[:2] + [f"(unsigned){'hi' if side else 'lo'}{a}" for a, side in enumerate(corner)]
        b.emit(f"acc = NNEF_ADD(acc, NNEF_MUL({weight}, {b.read(x, coords)}));")
    b.emit("y[i] = acc;")


@emitter("concat")
def concat(b: Body) -> None:
    values = b.inputs["values"]
    values = list(values) if isinstance(values, list) else [values]
    axis = int(b.op.attribs["axis"])
    axis = axis + len(b.out_shape) if axis < 0 else axis
    u = b.coords()
    start = 0
    for n, v in enumerate(values):
        if v.is_literal:
            raise Unsupported("concat: literal operand")
        end = start + v.shape[axis]
        coords = list(u)
        coords[axis] = f"(u{axis} - {start}u)"
        keyword = "if" if n == 0 else "else if"
        if n == len(values) - 1:
            b.emit(f"else y[i] = {b.read(v, coords)};" if n else f"y[i] = {b.read(v, coords)};")
        else:
            b.emit(f"{keyword} (u{axis} < {end}u) y[i] = {b.read(v, coords)};")
        start = end


@emitter("avg_pool", "box")
def avg_pool(b: Body) -> None:
    x = b.arg("input")
    border = str(b.op.attribs.get("border", "constant"))
    if border not in ("constant", "ignore"):
        raise Unsupported(f"{b.op.name}: border '{border}' (this generator: constant, ignore)")
    normalize = b.op.name == "avg_pool" or bool(b.op.attribs.get("normalize"))
    g = window_geometry(x.shape, b.op.attribs["size"], b.op.attribs.get("padding", []),
                        b.op.attribs.get("stride", []), b.op.attribs.get("dilation", []))
    if tuple(b.out_shape) != g.out_shape:
        raise Unsupported(f"{b.op.name}: window extents {list(g.out_shape)} differ from {list(b.out_shape)}")
    xs = strides(x.shape)
    count_taps = normalize and border == "ignore" and any(p or q for p, q in g.padding)
    b.emit("/* acc = +0; acc = acc + t, taps row-major, padded taps skipped" +
           ("; / D once (D: " + ("taps inside, at least 1" if count_taps else "window volume") + ") */"
            if normalize else " */"))
    b.emit("float acc = 0.0f;")
    if count_taps:
        b.emit("unsigned taps = 0;")
    inside, index, depth = _window_taps(b, g, x.shape, xs)
    ind = "    " * depth
    if inside:
        b.emit(f"{ind}if (!({inside})) continue;  /* padded tap: skipped */")
    b.emit(f"{ind}acc = NNEF_ADD(acc, {x.param}[{' + '.join(index) or '0'}]);")
    if count_taps:
        b.emit(f"{ind}taps += 1u;")
    for level in range(depth - 1, -1, -1):
        b.emit("    " * level + "}")
    if not normalize:
        b.emit("y[i] = acc;")
    elif count_taps:
        b.emit("y[i] = NNEF_DIV(acc, (float)(taps ? taps : 1u));")
    else:
        b.emit(f"y[i] = NNEF_DIV(acc, {flit(F32(math.prod(g.size)))});")


@emitter("leaky_relu", "prelu")
def leaky_relu(b: Body) -> None:
    """select(x < 0, alpha * x, x): -0 and NaN are never < 0 and pass unchanged (elementwise.md); prelu's
    alpha a tensor broadcast NNEF-style, leaky_relu's a float attribute."""
    c = b.coords()
    x = b.read(b.arg("x"), c)
    alpha = b.read(b.arg("alpha"), c) if b.op.name == "prelu" else flit(F32(b.op.attribs["alpha"]))
    b.emit(f"const float x = {x};")
    b.emit(f"y[i] = (x < 0.0f) ? NNEF_MUL({alpha}, x) : x;")


def _border_index(j: str, n: int, border: str) -> str:
    """The input index an int position `j` (possibly outside [0, n)) reads under `border`
    (pipeline/semantics/windows.py: replicate clamps, reflect mirrors without the edge, reflect-even
    with it, both periodically)."""
    if border == "replicate":
        return f"({j} < 0 ? 0 : ({j} > {n - 1} ? {n - 1} : {j}))"
    if border == "reflect":
        if n == 1:
            return "0"
        period = 2 * (n - 1)
        m = f"((({j}) % {period} + {period}) % {period})"
        return f"({m} < {n} ? {m} : {period} - {m})"
    period = 2 * n
    m = f"((({j}) % {period} + {period}) % {period})"
    return f"({m} < {n} ? {m} : {period - 1} - {m})"


@emitter("pad")
def pad(b: Body) -> None:
    """y[u] = x[u - p] inside the input; outside: `value` (constant) or the element the border names
    (replicate, reflect, reflect-even). A copy: no arithmetic."""
    x = b.arg("input")
    if x.is_literal:
        raise Unsupported("pad: literal operand")
    border = str(b.op.attribs.get("border", "constant"))
    if border not in ("constant", "replicate", "reflect", "reflect-even"):
        raise Unsupported(f"pad: border '{border}'")
    padding = [(int(p), int(q)) for p, q in b.op.attribs["padding"]]
    if len(padding) != len(x.shape) or any(p < 0 or q < 0 for p, q in padding):
        raise Unsupported(f"pad: padding {padding} for rank {len(x.shape)} (non-negative pairs)")
    st = strides(list(x.shape))
    terms, tests = [], []
    for a, (n, (p, q)) in enumerate(zip(x.shape, padding)):
        j = f"((int)u{a} - {p})" if p else f"(int)u{a}"
        if p or q:
            if border == "constant":
                tests.append(f"{j} >= 0 && {j} < {n}")
            else:
                j = _border_index(j, n, border)
        if n != 1:
            terms.append(f"{j} * {st[a]}")
    read = f"{x.param}[{' + '.join(terms) or '0'}]"
    if tests:
        b.emit(f"y[i] = ({' && '.join(tests)}) ? {read} : {flit(F32(b.op.attribs.get('value', 0.0)))};")
    else:
        b.emit(f"y[i] = {read};")


@emitter("local_response_normalization")
def local_response_normalization(b: Body) -> None:
    """sigma = bias + alpha * ((+0 + t over the window's taps inside the input, row-major) / volume),
    t = x * x, the window centred by NNEF's automatic padding; y = x / pow(sigma, beta)
    (normalization.md, as the C kernel)."""
    x = b.arg("input")
    size = [int(v) for v in b.op.attribs["size"]]
    if x.is_literal or len(size) != len(x.shape):
        raise Unsupported(f"local_response_normalization: size {size} for input {list(x.shape)}")
    u, st = b.coords(), strides(list(x.shape))
    b.emit("/* acc = +0; acc = acc + t * t over the window row-major, padded taps skipped */")
    b.emit("float acc = 0.0f;")
    depth, index, tests = 0, [], []
    for a, (n, k) in enumerate(zip(x.shape, size)):
        if k == 1:
            if n != 1:
                index.append(f"{u[a]} * {st[a]}")
            continue
        before = (k - 1) // 2  # NNEF automatic padding, stride 1: the odd unit after
        b.emit(f"{'    ' * depth}for (unsigned t{a} = 0; t{a} < {k}u; ++t{a}) {{")
        depth += 1
        b.emit(f"{'    ' * depth}const int p{a} = (int){u[a]} + (int)t{a} - {before};")
        tests.append(f"p{a} >= 0 && p{a} < {n}")
        index.append(f"p{a} * {st[a]}")
    ind = "    " * depth
    if tests:
        b.emit(f"{ind}if (!({' && '.join(tests)})) continue;")
    b.emit(f"{ind}const float v = {x.param}[{' + '.join(index) or '0'}];")
    b.emit(f"{ind}acc = NNEF_ADD(acc, NNEF_MUL(v, v));")
    for level in range(depth - 1, -1, -1):
        b.emit("    " * level + "}")
    alpha, beta, bias = (flit(F32(b.op.attribs[key])) for key in ("alpha", "beta", "bias"))
    volume = flit(F32(math.prod(size)))
    b.emit(f"const float sigma = NNEF_ADD({bias}, NNEF_MUL({alpha}, NNEF_DIV(acc, {volume})));")
    b.emit(f"y[i] = NNEF_DIV({b.read(x, u)}, nnef_pow(sigma, {beta}));")


@emitter("select")
def select(b: Body) -> None:
    """select(c, t, f): t where c, else f (the chosen value's bits, -inf and NaN included); the condition a
    constant held as 1.0f / 0.0f (pipeline/codegen/shared/conditions.py), operands broadcast NNEF-style."""
    c = b.coords()
    condition, true_value, false_value = (b.read(b.arg(k), c) for k in ("condition", "true_value", "false_value"))
    b.emit(f"y[i] = ({condition} != 0.0f) ? {true_value} : {false_value};")


@emitter("split")
def split(b: Body) -> None:
    """One part of split(value, axis, ratios) per kernel: y[u] = x[u + offset along the axis], the part's
    offset the extents of the parts before it (the C generator's memcpy of the same elements); a copy."""
    x = b.arg("value")
    if x.is_literal:
        raise Unsupported("split: literal operand")
    axis = int(b.op.attribs["axis"])
    st = strides(list(x.shape))
    terms = []
    for a, (n, s) in enumerate(zip(x.shape, st)):
        coordinate = f"({b.offset} + (int)u{a})" if a == axis and b.offset else f"(int)u{a}"
        if n != 1:
            terms.append(coordinate if s == 1 else f"{coordinate} * {s}")
    b.emit(f"y[i] = {x.param}[{' + '.join(terms) or '0'}];")

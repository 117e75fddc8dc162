"""Element-wise operations and activations: one expression per output element.

No reduction happens here, so the only order is the expression's own (each operation one
IEEE operation, parenthesised as docs/semantics/elementwise.md writes it; min, max, relu,
clamp and the selects of prelu/elu are bitwise selects, never branches). Operands are
broadcast NNEF-style (left-aligned). The loop nest runs over the output in row-major
order, with adjacent axes merged where every operand is contiguous or broadcast across
them; the innermost run is computed NNEF_VL elements at a time (a scalar tail finishes
it), and the sub-expressions that do not vary along it (a per-channel batch-norm
denominator, a literal) are computed once per run, which changes no bit: the same
operation on the same values gives the same result.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pipeline.codegen.c.kernels.common import F32, Kernel, Operand, attr_float, emitter, flit, strides

# An expression: ("in", k) operand k, ("const", float32), or (operation, *arguments).
Node = tuple[Any, ...]

SCALAR: dict[str, str] = {
    "add": "({0} + {1})", "sub": "({0} - {1})", "mul": "({0} * {1})", "div": "({0} / {1})",
    "max": "nnef_max({0}, {1})", "min": "nnef_min({0}, {1})", "pow": "nnef_pow({0}, {1})",
    "neg": "nnef_fneg({0})", "abs": "nnef_fabs({0})", "relu": "nnef_relu({0})", "sqrt": "nnef_sqrt({0})",
    "exp": "nnef_exp({0})", "log": "nnef_log({0})", "tanh": "nnef_tanh({0})", "sigmoid": "nnef_sigmoid({0})",
    "softplus": "nnef_softplus({0})", "erf": "nnef_erf({0})", "floor": "nnef_floor({0})", "ceil": "nnef_ceil({0})",
    "rint": "nnef_rint({0})", "sign": "nnef_sign({0})",
    "select_lt0": "nnef_select({0} < 0.0f, {1}, {2})",
    "select_ne0": "nnef_select({0} != 0.0f, {1}, {2})",
}
VECTOR: dict[str, str] = {
    "add": "nnef_vadd({0}, {1})", "sub": "nnef_vsub({0}, {1})", "mul": "nnef_vmul({0}, {1})",
    "div": "nnef_vdiv({0}, {1})", "max": "nnef_vmax({0}, {1})", "min": "nnef_vmin({0}, {1})",
    "pow": "nnef_vpow({0}, {1})", "neg": "nnef_vneg({0})", "abs": "nnef_vabs({0})", "relu": "nnef_vrelu({0})",
    "sqrt": "nnef_vsqrt({0})", "exp": "nnef_vexp({0})", "log": "nnef_vlog({0})", "tanh": "nnef_vtanh({0})",
    "sigmoid": "nnef_vsigmoid({0})", "softplus": "nnef_vsoftplus({0})", "erf": "nnef_verf({0})",
    "floor": "nnef_vfloor({0})",
    "ceil": "nnef_vceil({0})", "rint": "nnef_vrint({0})", "sign": "nnef_vsign({0})",
    "select_lt0": "nnef_vselect(nnef_vlt({0}, nnef_vzero()), {1}, {2})",
    "select_ne0": "nnef_vselect(nnef_vne({0}, nnef_vzero()), {1}, {2})",
}

X: Node = ("in", 0)


def const(value: float | np.floating) -> Node:
    return ("const", F32(value))


# The NNEF unary operations and activations as expressions of operand 0 (docs/semantics/elementwise.md).
def _unary(op_name: str, op: Any) -> Node:
    one = const(1.0)
    table: dict[str, Node] = {
        "neg": ("neg", X), "abs": ("abs", X), "rcp": ("div", one, X), "sqr": ("mul", X, X),
        "sqrt": ("sqrt", X), "rsqr": ("div", one, ("mul", X, X)), "rsqrt": ("div", one, ("sqrt", X)),
        "exp": ("exp", X), "log": ("log", X), "log2": ("div", ("log", X), ("log", const(2.0))),
        "sign": ("sign", X), "floor": ("floor", X), "ceil": ("ceil", X), "round": ("rint", X),
        "relu": ("relu", X), "sigmoid": ("sigmoid", X), "tanh": ("tanh", X), "softplus": ("softplus", X),
        "erf": ("erf", X),
        "silu": ("mul", X, ("sigmoid", X)),
        "gelu": ("mul", X, ("sigmoid", ("mul", const(F32(1.702)), X))),
    }
    if op_name in table:
        return table[op_name]
    if op_name == "leaky_relu":
        return ("select_lt0", X, ("mul", const(attr_float(op, "alpha")), X), X)
    if op_name == "elu":
        return ("select_lt0", X, ("mul", const(attr_float(op, "alpha")), ("sub", ("exp", X), one)), X)
    if op_name == "selu":
        inner = ("select_lt0", X, ("mul", const(attr_float(op, "alpha")), ("sub", ("exp", X), one)), X)
        return ("mul", const(attr_float(op, "lambda")), inner)
    if op_name == "softabs":
        return ("sqrt", ("add", ("mul", X, X), const(attr_float(op, "epsilon"))))
    raise KeyError(op_name)


UNARY_OPS = ("neg", "abs", "rcp", "sqr", "sqrt", "rsqr", "rsqrt", "exp", "log", "log2", "sign", "floor", "ceil",
             "round", "relu", "sigmoid", "tanh", "softplus", "silu", "gelu", "leaky_relu", "elu", "selu", "softabs",
             "erf")
BINARY_OPS = ("add", "sub", "mul", "div", "max", "min", "pow")


def _leaves(node: Node) -> set[int]:
    if node[0] == "in":
        return {node[1]}
    if node[0] == "const":
        return set()
    return set().union(*(_leaves(a) for a in node[1:]))


class _Emitter:
    """Emits the loops of one element-wise expression over its output."""

    def __init__(self, k: Kernel, expr: Node, operands: list[Operand], out: Operand) -> None:
        self.k = k
        self.expr = expr
        self.operands = operands
        self.out = out
        self.hoisted: dict[Node, str] = {}

    def _layout(self) -> tuple[list[int], list[list[int]], list[int]]:
        """Merged loop extents, per-operand strides per loop (0: broadcast) and output strides."""
        shape = list(self.out.shape)
        rank = len(shape)
        per_operand: list[list[int]] = []
        for operand in self.operands:
            if operand.is_literal:
                per_operand.append([0] * rank)
                continue
            aligned = list(operand.shape) + [1] * (rank - len(operand.shape))
            st = strides(aligned)
            per_operand.append([0 if aligned[a] == 1 else st[a] for a in range(rank)])
        out_st = strides(shape)
        extents: list[int] = []
        op_st: list[list[int]] = [[] for _ in self.operands]
        o_st: list[int] = []
        for axis in range(rank):
            if shape[axis] == 1:
                continue
            mergeable = bool(extents) and o_st[-1] == out_st[axis] * shape[axis] and all(
                op_st[i][-1] == per_operand[i][axis] * shape[axis] for i in range(len(self.operands)))
            if mergeable:
                extents[-1] *= shape[axis]
                o_st[-1] = out_st[axis]
                for i in range(len(self.operands)):
                    op_st[i][-1] = per_operand[i][axis]
            else:
                extents.append(shape[axis])
                o_st.append(out_st[axis])
                for i in range(len(self.operands)):
                    op_st[i].append(per_operand[i][axis])
        if not extents:
            extents, o_st, op_st = [1], [1], [[0] for _ in self.operands]
        return extents, op_st, o_st

    def _invariant(self, node: Node, inner: list[int]) -> bool:
        """Whether `node` is the same for every element of the innermost run."""
        return all(inner[i] == 0 for i in _leaves(node))

    def _scalar(self, node: Node, offsets: list[str], inner: list[int], index: str) -> str:
        if node in self.hoisted:
            return self.hoisted[node]
        if node[0] == "const":
            return flit(node[1])
        if node[0] == "in":
            operand = self.operands[node[1]]
            if operand.is_literal:
                return flit(operand.literal)
            offset = offsets[node[1]]
            if inner[node[1]]:
                offset = index if offset == "0" else f"{offset} + {index}"
            return f"{operand.c}[{offset}]"
        args = [self._scalar(a, offsets, inner, index) for a in node[1:]]
        return SCALAR[node[0]].format(*args)

    def _vector(self, node: Node, offsets: list[str], inner: list[int], index: str) -> str:
        if node in self.hoisted:
            return f"{self.hoisted[node]}_v"
        if node[0] == "const":
            return f"nnef_vset1({flit(node[1])})"
        if node[0] == "in":
            offset = offsets[node[1]]
            offset = index if offset == "0" else f"{offset} + {index}"
            return f"nnef_vload({self.operands[node[1]].c} + {offset})"
        args = [self._vector(a, offsets, inner, index) for a in node[1:]]
        return VECTOR[node[0]].format(*args)

    def _hoist(self, node: Node, inner: list[int], offsets: list[str], vectorised: bool) -> None:
        """Name each maximal invariant sub-expression once per run (scalar and broadcast vector)."""
        if node[0] == "const" and not vectorised:
            return
        if self._invariant(node, inner):
            if node in self.hoisted:
                return
            name = f"h{len(self.hoisted)}"
            self.k.line(f"const float {name} = {self._scalar(node, offsets, inner, '0')};")
            if vectorised:
                self.k.line(f"const nnef_vf {name}_v = nnef_vset1({name});")
            self.hoisted[node] = name
            return
        if node[0] in ("in", "const"):
            return
        for arg in node[1:]:
            self._hoist(arg, inner, offsets, vectorised)

    def emit(self) -> None:
        extents, op_st, o_st = self._layout()
        lanes = self.k.lanes
        outer, n = extents[:-1], extents[-1]
        inner = [st[-1] for st in op_st]
        variables = [f"i{a}" for a in range(len(outer))]
        for var, extent in zip(variables, outer):
            self.k.open(f"for (int {var} = 0; {var} < {extent}; ++{var})")
        offsets = []
        for st in op_st:
            offsets.append(_sum([(v, s) for v, s in zip(variables, st[:-1])]))
        out_offset = _sum([(v, s) for v, s in zip(variables, o_st[:-1])])
        vector_end = n - n % lanes
        vectorised = vector_end > 0 and any(inner)
        self.hoisted = {}
        self._hoist(self.expr, inner, offsets, vectorised)
        dst = self.out.c if out_offset == "0" else f"{self.out.c} + {out_offset}"
        if vectorised:
            self.k.open(f"for (int i = 0; i < {vector_end}; i += {lanes})")
            self.k.line(f"nnef_vstore({dst} + i, {self._vector(self.expr, offsets, inner, 'i')});")
            self.k.close()
        start = vector_end if vectorised else 0
        if start < n:
            self.k.open(f"for (int i = {start}; i < {n}; ++i)")
            self.k.line(f"({dst})[i] = {self._scalar(self.expr, offsets, inner, 'i')};")
            self.k.close()
        for _ in outer:
            self.k.close()


def _sum(terms: list[tuple[str, int]]) -> str:
    parts = [v if s == 1 else f"{v} * {s}" for v, s in terms if s]
    return " + ".join(parts) if parts else "0"


def emit_expression(k: Kernel, expr: Node, operands: list[Operand], describe: str) -> None:
    """Emit `expr` over k.out, operands broadcast NNEF-style; `describe` is the order comment."""
    k.comment(describe)
    _Emitter(k, expr, operands, k.out).emit()


@emitter(*UNARY_OPS)
def unary(k: Kernel) -> None:
    """y = f(x) element by element (docs/semantics/elementwise.md)."""
    x = k.operand("x")
    emit_expression(k, _unary(k.op.name, k.op), [x], f"{k.op.name}: one expression per element, row-major")


@emitter(*BINARY_OPS)
def binary(k: Kernel) -> None:
    """z = x op y with NNEF broadcasting."""
    x, y = k.operand("x"), k.operand("y")
    emit_expression(k, (k.op.name, ("in", 0), ("in", 1)), [x, y],
                    f"{k.op.name}(x, y) per element, operands broadcast NNEF-style (left-aligned)")


@emitter("clamp")
def clamp(k: Kernel) -> None:
    """clamp(x, a, b) = max(min(x, b), a) as the fragment."""
    ops = [k.operand("x"), k.operand("a"), k.operand("b")]
    emit_expression(k, ("max", ("min", ("in", 0), ("in", 2)), ("in", 1)), ops, "clamp = max(min(x, b), a)")


@emitter("prelu")
def prelu(k: Kernel) -> None:
    """select(x < 0, alpha * x, x), alpha broadcast NNEF-style."""
    ops = [k.operand("x"), k.operand("alpha")]
    emit_expression(k, ("select_lt0", ("in", 0), ("mul", ("in", 1), ("in", 0)), ("in", 0)), ops,
                    "prelu = select(x < 0, alpha * x, x)")


@emitter("batch_normalization")
def batch_normalization(k: Kernel) -> None:
    """offset + ((scale * (input - mean)) / sqrt(variance + epsilon)), five IEEE operations."""
    ops = [k.operand(name) for name in ("input", "mean", "variance", "offset", "scale")]
    eps = const(attr_float(k.op, "epsilon"))
    expr = ("add", ("in", 3), ("div", ("mul", ("in", 4), ("sub", ("in", 0), ("in", 1))),
                               ("sqrt", ("add", ("in", 2), eps))))
    emit_expression(k, expr, ops, "offset + ((scale * (x - mean)) / sqrt(variance + epsilon)); the per-channel "
                    "denominator is computed once per channel (same operation, same bits)")


@emitter("add_n")
def add_n(k: Kernel) -> None:
    """x[0] + (x[1] + (... + (x[n-1] + 0.0))), the fragment's right fold."""
    values = k.operand_list("x")
    expr: Node = const(0.0)
    for index in reversed(range(len(values))):
        expr = ("add", ("in", index), expr)
    emit_expression(k, expr, values, "add_n: x[0] + (x[1] + (... + (x[n-1] + 0.0)))")



@emitter("select")
def select(k: Kernel) -> None:
    """select(c, t, f): t where c, else f (no arithmetic: the chosen value's bits, -inf and NaN included).
    The condition is a constant (a `variable<logical>`, ONNX Where on a mask), held as 1.0f / 0.0f (its
    tensor file's values; codegen.trace re-derives them) and tested with != 0: a bitwise select, no branch."""
    ops = [k.operand("condition"), k.operand("true_value"), k.operand("false_value")]
    if not ops[0].is_constant or ops[0].is_literal:
        raise k.fail("select: the condition must be a constant tensor (a variable<logical>)")
    emit_expression(k, ("select_ne0", ("in", 0), ("in", 1), ("in", 2)), ops,
                    "select(c, t, f) per element: bitwise select on c != 0, operands broadcast NNEF-style")

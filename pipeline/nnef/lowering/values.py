"""The values lowering computes with, and the rules on attribute values.

A value is a Python literal (attribute), a `Ref` to a tensor, a list/tuple of values, an
`ItemName` (send_var/get_var) or `POISON`, which stands for whatever could not be computed
after a finding was reported, so that one error does not cascade.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterator

import numpy as np

from pipeline.nnef import ast
from pipeline.nnef.catalogue import FragmentSig
from pipeline.nnef.graph import Ref

MAX_FRAGMENT_DEPTH = 64

# Operator -> operation emitted when an operand is a tensor (NNEF spec, "Operator expressions").
BINARY_OPERATIONS = {
    "+": "add", "-": "sub", "*": "mul", "/": "div", "^": "pow",
    "<": "lt", "<=": "le", ">": "gt", ">=": "ge", "==": "eq", "!=": "ne",
    "&&": "and", "||": "or",
}
UNARY_OPERATIONS = {"-": "neg", "!": "not", "+": "copy"}

# Parameters whose empty value means "automatic" (not allowed by the explicitness rule).
AUTOMATIC_WHEN_EMPTY = frozenset({"padding", "stride", "dilation"})

# Declarations whose element type can only come from the generic argument or its default.
TYPE_DECLARATIONS = frozenset({"external", "variable", "constant", "variablesync"})


class _Poison:
    """Stands for a value that could not be computed (a finding was already reported)."""

    def __repr__(self) -> str:
        return "POISON"


POISON: Any = _Poison()


@dataclass(frozen=True)
class ItemName:
    """An item identifier passed to send_var/get_var (not a tensor)."""

    name: str


def poisoned(value: Any) -> bool:
    if value is POISON:
        return True
    if isinstance(value, (list, tuple)):
        return any(poisoned(v) for v in value)
    return False


def has_ref(value: Any) -> bool:
    if isinstance(value, Ref):
        return True
    if isinstance(value, (list, tuple)):
        return any(has_ref(v) for v in value)
    return False


def plain(value: Any) -> Any:
    """Item names as plain strings (how the flat graph stores send_var/get_var items)."""
    if isinstance(value, ItemName):
        return value.name
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, tuple):
        return tuple(plain(v) for v in value)
    return value


def lvalue_names(expr: ast.Expr) -> Iterator[ast.Identifier]:
    """The identifiers an lvalue assigns, left to right."""
    if isinstance(expr, ast.Identifier):
        yield expr
    elif isinstance(expr, (ast.ArrayExpr, ast.TupleExpr)):
        for item in expr.items:
            yield from lvalue_names(item)


@dataclass
class Scope:
    """Names visible inside a fragment body being expanded."""

    values: dict[str, Any]
    fragment: FragmentSig | None
    depth: int

    @property
    def where(self) -> str:
        return f"fragment '{self.fragment.name}'" if self.fragment else "comprehension"


def element_type(spec: ast.TypeSpec) -> str:
    if isinstance(spec, ast.TensorType):
        return spec.item if spec.item not in (None, "?") else "scalar"
    if isinstance(spec, ast.ArrayType) and spec.item is not None:
        return element_type(spec.item)
    return "scalar"


def format_attribute(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        from pipeline.nnef.printer import format_scalar

        return format_scalar(value)
    if isinstance(value, str):
        return f"'{value}'"
    if isinstance(value, list):
        return "[" + ", ".join(format_attribute(v) for v in value) + "]"
    if isinstance(value, tuple):
        return "(" + ", ".join(format_attribute(v) for v in value) + ")"
    return str(value)


def attribute_binary(op: str, left: Any, right: Any) -> Any:
    """Binary operators on attribute values (integers, scalars, logicals, strings, arrays)."""
    numeric = (int, float)
    if op == "in":
        if not isinstance(right, list):
            raise TypeError
        return left in right
    if op in ("&&", "||"):
        if not (isinstance(left, bool) and isinstance(right, bool)):
            raise TypeError
        return (left and right) if op == "&&" else (left or right)
    if isinstance(left, bool) or isinstance(right, bool):
        if op in ("==", "!=") and isinstance(left, bool) and isinstance(right, bool):
            return (left == right) if op == "==" else (left != right)
        raise TypeError
    if op == "+" and isinstance(left, list) and isinstance(right, list):
        return left + right
    if op == "+" and isinstance(left, str) and isinstance(right, str):
        return left + right
    if op == "*" and isinstance(left, list) and isinstance(right, int):
        return left * right
    if op in ("==", "!=", "<", "<=", ">", ">=") and type(left) is type(right):
        return {"==": left == right, "!=": left != right, "<": left < right,
                "<=": left <= right, ">": left > right, ">=": left >= right}[op]
    if not (isinstance(left, numeric) and isinstance(right, numeric)) or type(left) is not type(right):
        raise TypeError
    if isinstance(left, int):
        if op == "/":
            if right == 0:
                raise ZeroDivisionError
            return int(left / right)  # C semantics: truncation toward zero
        if op == "^":
            return left ** right if right >= 0 else 0
        return {"+": left + right, "-": left - right, "*": left * right}[op]
    if op == "/" and right == 0:
        raise ZeroDivisionError
    result = {"+": lambda: left + right, "-": lambda: left - right, "*": lambda: left * right,
              "/": lambda: left / right, "^": lambda: math.pow(left, right)}[op]()
    with np.errstate(over="ignore"):
        return float(np.float32(result))

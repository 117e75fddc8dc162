"""NNEF types: construction, generic binding, castability, type of a value.

Types reuse the AST type nodes (PrimitiveType, TensorType, ArrayType, TupleType), which
compare by structure. The extension adds one primitive type, `graphitem`, for the item
identifiers that `send_var` and `get_var` take.
"""

from __future__ import annotations

from itertools import repeat
from typing import Any, Callable

from pipeline.nnef import ast
from pipeline.nnef.graph import Ref

INTEGER = ast.PrimitiveType("integer")
SCALAR = ast.PrimitiveType("scalar")
LOGICAL = ast.PrimitiveType("logical")
STRING = ast.PrimitiveType("string")
GENERIC = ast.PrimitiveType("?")
GRAPHITEM = ast.PrimitiveType("graphitem")

PRIMITIVE_NAMES = ("integer", "scalar", "logical", "string")


def tensor(item: str | None) -> ast.TensorType:
    return ast.TensorType(item)


def array(item: ast.TypeSpec | None) -> ast.ArrayType:
    """An array type; `item` None stands for the item type of an empty array literal."""
    return ast.ArrayType(item)  # type: ignore[arg-type]


def format_type(spec: ast.TypeSpec | None) -> str:
    if spec is None:
        return "?"
    if isinstance(spec, ast.PrimitiveType):
        return spec.name
    if isinstance(spec, ast.TensorType):
        return f"tensor<{spec.item or ''}>"
    if isinstance(spec, ast.ArrayType):
        return f"{format_type(spec.item) if spec.item is not None else ''}[]"
    return "(" + ", ".join(format_type(t) for t in spec.items) + ")"


def is_attribute(spec: ast.TypeSpec) -> bool:
    """True when the type contains no tensor: such parameters are attributes."""
    if isinstance(spec, ast.TensorType):
        return False
    if isinstance(spec, ast.ArrayType):
        return spec.item is None or is_attribute(spec.item)
    if isinstance(spec, ast.TupleType):
        return all(is_attribute(t) for t in spec.items)
    return True


def is_generic(spec: ast.TypeSpec) -> bool:
    if isinstance(spec, ast.PrimitiveType):
        return spec.name == "?"
    if isinstance(spec, ast.TensorType):
        return spec.item == "?"
    if isinstance(spec, ast.ArrayType):
        return spec.item is not None and is_generic(spec.item)
    if isinstance(spec, ast.TupleType):
        return any(is_generic(t) for t in spec.items)
    return False


def bind(spec: ast.TypeSpec, dtype: str | None) -> ast.TypeSpec:
    """Replace the generic `?` by `dtype` (no change when dtype is None)."""
    if dtype is None:
        return spec
    if isinstance(spec, ast.PrimitiveType):
        return ast.PrimitiveType(dtype) if spec.name == "?" else spec
    if isinstance(spec, ast.TensorType):
        return ast.TensorType(dtype) if spec.item == "?" else spec
    if isinstance(spec, ast.ArrayType):
        return ast.ArrayType(bind(spec.item, dtype)) if spec.item is not None else spec
    if isinstance(spec, ast.TupleType):
        return ast.TupleType(tuple(bind(t, dtype) for t in spec.items))
    return spec


def castable(value: ast.TypeSpec | None, param: ast.TypeSpec) -> bool:
    """Can a value of type `value` be passed for a parameter of type `param`?

    As the spec says: identical types; any primitive to the generic `?`; a primitive
    literal to a tensor of that primitive (e.g. `bias = 0.0`); an empty array to any
    array; arrays and tuples item by item. No integer -> scalar promotion.
    """
    if value is None:
        return False
    if isinstance(param, ast.PrimitiveType):
        if not isinstance(value, ast.PrimitiveType):
            return False
        return param.name == "?" or value.name == param.name or value.name == "?"
    if isinstance(param, ast.TensorType):
        if isinstance(value, ast.TensorType):
            return param.item in (None, "?") or value.item in (None, "?") or value.item == param.item
        if isinstance(value, ast.PrimitiveType):
            return param.item in (None, "?") or value.name == param.item or value.name == "?"
        return False
    if isinstance(param, ast.ArrayType):
        if not isinstance(value, ast.ArrayType):
            return False
        return value.item is None or castable(value.item, param.item)
    if isinstance(param, ast.TupleType):
        return (
            isinstance(value, ast.TupleType)
            and len(value.items) == len(param.items)
            and all(castable(v, p) for v, p in zip(value.items, param.items))
        )
    return False


def common_type(a: ast.TypeSpec | None, b: ast.TypeSpec | None) -> ast.TypeSpec | None:
    """The type of `x if c else y` (None when incompatible)."""
    if a is None or b is None:
        return a or b
    if castable(a, b):
        return b
    if castable(b, a):
        return a
    return None


def type_of_value(value: Any, tensor_types: dict[str, str] | None = None) -> ast.TypeSpec | None:
    """The NNEF type of an evaluated argument value (None when it has none)."""
    if isinstance(value, Ref):
        item = (tensor_types or {}).get(value.name)
        return ast.TensorType(item)
    if isinstance(value, bool):
        return LOGICAL
    if isinstance(value, int):
        return INTEGER
    if isinstance(value, float):
        return SCALAR
    if isinstance(value, str):
        return STRING
    if isinstance(value, list):
        if not value:
            return ast.ArrayType(None)  # type: ignore[arg-type]
        item = type_of_value(value[0], tensor_types)
        for other in value[1:]:
            if item is None:
                return None  # items of incompatible types (e.g. [1, 2.5]): the array has no type
            item = common_type(item, type_of_value(other, tensor_types))
        return ast.ArrayType(item) if item is not None else None
    if isinstance(value, tuple):
        items = tuple(type_of_value(v, tensor_types) for v in value)
        return None if any(i is None for i in items) else ast.TupleType(items)  # type: ignore[arg-type]
    return None


Validator = Callable[[Any, dict[str, str]], bool]

_PYTHON_TYPES = {"integer": int, "scalar": float, "logical": bool, "string": str}


def fast_validator(spec: ast.TypeSpec) -> Validator | None:
    """A quick check that a value has type `spec` (bound, no generic) for the common cases.

    True means the value is certainly valid; False means "not certain": the caller then
    runs the general `castable` check (and reports with the value's full type). Flat
    graphs pass through here hundreds of thousands of times; the general check walks
    the type structure every time.
    """
    if isinstance(spec, ast.PrimitiveType) and spec.name in _PYTHON_TYPES:
        expected = _PYTHON_TYPES[spec.name]
        return lambda v, d: type(v) is expected
    if isinstance(spec, ast.TensorType):
        item = spec.item
        literal = _PYTHON_TYPES.get(item or "")
        if item in (None, "?"):
            return lambda v, d: type(v) is Ref
        return lambda v, d: (type(v) is Ref and d.get(v.name) == item) or type(v) is literal
    if isinstance(spec, ast.ArrayType) and spec.item is not None:
        inner = fast_validator(spec.item)
        if inner is None:
            return None
        if isinstance(spec.item, ast.PrimitiveType) and spec.item.name in _PYTHON_TYPES:
            only = {_PYTHON_TYPES[spec.item.name]}  # the item types of the list, collected in C
            return lambda v, d: type(v) is list and set(map(type, v)) <= only
        return lambda v, d: type(v) is list and all(map(inner, v, repeat(d, len(v))))
    if isinstance(spec, ast.TupleType):
        inners = [fast_validator(t) for t in spec.items]
        if any(i is None for i in inners):
            return None
        size = len(inners)
        if all(isinstance(t, ast.PrimitiveType) and t.name in _PYTHON_TYPES for t in spec.items):
            exact = tuple(_PYTHON_TYPES[t.name] for t in spec.items)  # the item types compared in C
            return lambda v, d: type(v) is tuple and tuple(map(type, v)) == exact
        return lambda v, d: type(v) is tuple and len(v) == size and all(f(i, d) for f, i in zip(inners, v))
    return None

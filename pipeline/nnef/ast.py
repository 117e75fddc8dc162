"""The NNEF abstract syntax tree, every node carrying its source span.

The parser (pipeline.nnef.parser) builds these nodes; the checker reads them; the
printer (pipeline.nnef.printer) renders them canonically. Nodes compare by structure,
ignoring spans (`span` is excluded from equality), so "parse -> print -> parse gives the
same tree" is a plain `==`. Nodes are plain slotted dataclasses, not frozen ones: a
50,000-operation graph has a million of them and frozen construction costs 3x more;
nothing mutates them after parsing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union

from pipeline.diagnostics import Span

NO_SPAN = Span("<none>", 0, 0)


def _span() -> Span:
    return field(default=NO_SPAN, compare=False, repr=False)


# ------------------------------------------------------------------ names and types


@dataclass(slots=True)
class Name:
    """An identifier occurrence: its text and where it was written."""

    value: str
    span: Span = _span()


@dataclass(slots=True)
class PrimitiveType:
    """`integer`, `scalar`, `logical`, `string`, or the generic `?`."""

    name: str
    span: Span = _span()


@dataclass(slots=True)
class TensorType:
    """`tensor<T>`; `item` is None for the unbound `tensor<>`."""

    item: str | None
    span: Span = _span()


@dataclass(slots=True)
class ArrayType:
    item: "TypeSpec"
    span: Span = _span()


@dataclass(slots=True)
class TupleType:
    items: tuple["TypeSpec", ...]
    span: Span = _span()


TypeSpec = Union[PrimitiveType, TensorType, ArrayType, TupleType]


# ------------------------------------------------------------------ expressions


@dataclass(slots=True)
class Literal:
    """A literal: `kind` is integer, scalar, string or logical.

    Scalar literals hold the float32 value of their text (NNEF scalars are float32);
    `text` keeps the spelling for messages.
    """

    value: int | float | str | bool
    kind: str
    span: Span = _span()
    text: str = field(default="", compare=False, repr=False)


@dataclass(slots=True)
class Identifier:
    name: str
    span: Span = _span()


@dataclass(slots=True)
class ArrayExpr:
    items: tuple["Expr", ...]
    span: Span = _span()


@dataclass(slots=True)
class TupleExpr:
    items: tuple["Expr", ...]
    span: Span = _span()


@dataclass(slots=True)
class Argument:
    """One argument of an invocation; `name` is None for a positional argument."""

    name: Name | None
    value: "Expr"
    span: Span = _span()


@dataclass(slots=True)
class Invocation:
    """`op<type>(args)`: a fragment invocation; `type_arg` is the explicit generic binding."""

    name: Name
    type_arg: str | None
    args: tuple[Argument, ...]
    span: Span = _span()


@dataclass(slots=True)
class Unary:
    op: str
    operand: "Expr"
    span: Span = _span()


@dataclass(slots=True)
class Binary:
    op: str
    left: "Expr"
    right: "Expr"
    span: Span = _span()


@dataclass(slots=True)
class IfElse:
    """`then if condition else otherwise`."""

    condition: "Expr"
    then: "Expr"
    otherwise: "Expr"
    span: Span = _span()


@dataclass(slots=True)
class Subscript:
    """`seq[index]`, or a slice `seq[begin:end]` when `is_range` (either bound may be None)."""

    sequence: "Expr"
    begin: "Expr | None"
    end: "Expr | None"
    is_range: bool
    span: Span = _span()


@dataclass(slots=True)
class Builtin:
    """`shape_of`, `length_of`, `range_of`, or a conversion `integer/scalar/logical/string(x)`."""

    function: str
    arg: "Expr"
    span: Span = _span()


@dataclass(slots=True)
class LoopIter:
    target: "Expr"
    iterable: "Expr"
    span: Span = _span()


@dataclass(slots=True)
class Comprehension:
    """`[for i in xs, j in ys if cond yield body]`."""

    iterators: tuple[LoopIter, ...]
    condition: "Expr | None"
    body: "Expr"
    span: Span = _span()


Expr = Union[
    Literal, Identifier, ArrayExpr, TupleExpr, Invocation, Unary, Binary, IfElse,
    Subscript, Builtin, Comprehension,
]


# ------------------------------------------------------------------ declarations


@dataclass(slots=True)
class Assignment:
    """`lhs = rhs;` where lhs is an identifier, or an array/tuple of lvalues."""

    lhs: Expr
    rhs: Expr
    span: Span = _span()


@dataclass(slots=True)
class Parameter:
    name: Name
    type: TypeSpec
    default: Expr | None
    span: Span = _span()


@dataclass(slots=True)
class Result:
    name: Name
    type: TypeSpec
    span: Span = _span()


@dataclass(slots=True)
class Fragment:
    """A fragment declaration (`body is None`) or definition.

    `generic` is False for a non-generic fragment; True for `<?>`; the default type name
    for `<? = T>` is `generic_default`.
    """

    name: Name
    generic: bool
    generic_default: str | None
    params: tuple[Parameter, ...]
    results: tuple[Result, ...]
    body: tuple[Assignment, ...] | None
    span: Span = _span()


@dataclass(slots=True)
class GraphDef:
    """A `graph` definition, or a `graphitem` of the multi-item extension (`item` set)."""

    name: Name
    params: tuple[Name, ...]
    results: tuple[Name, ...]
    body: tuple[Assignment, ...]
    item: Name | None = None
    span: Span = _span()


@dataclass(slots=True)
class Version:
    major: int
    minor: int
    span: Span = _span()


@dataclass(slots=True)
class Extension:
    names: tuple[Name, ...]
    span: Span = _span()


@dataclass(slots=True)
class Document:
    """One NNEF file: version, extensions, fragments, then one graph or several graphitems."""

    version: Version
    extensions: tuple[Extension, ...]
    fragments: tuple[Fragment, ...]
    graphs: tuple[GraphDef, ...]
    file: str = field(default="", compare=False)
    # Set by the flat fast path: every graph assignment is a flat invocation.
    flat: bool = field(default=False, compare=False)

    def extension_names(self) -> list[str]:
        return [n.value for ext in self.extensions for n in ext.names]

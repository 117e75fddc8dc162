"""Building NNEF ASTs from values: what exporters and the splitter use to write NNEF.

Generators never format NNEF text themselves; they build a Document with these helpers
and print it with pipeline.nnef.printer, so every file the pipeline writes is in the
canonical form and re-parses to the same AST.

    doc = document([graph("G", ["x"], ["y"], [
        assign("x", invoke("external", type_arg="scalar", shape=[1, 3])),
        assign("y", invoke("relu", ref("x"))),
    ])])
    text = print_document(doc)
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Iterable, Mapping, Sequence

from pipeline.nnef import ast
from pipeline.nnef.graph import Ref


def ref(name: str) -> ast.Identifier:
    """A reference to a tensor variable."""
    return ast.Identifier(name)


def value(v: Any) -> ast.Expr:
    """The AST of a Python value: Ref/Identifier, bool, int, float, str, list, tuple.

    Negative numbers become unary minus on a literal (how the text reads back);
    non-finite floats have no NNEF spelling and are rejected.
    """
    if isinstance(v, (ast.Identifier, ast.Invocation, ast.Unary, ast.Binary, ast.ArrayExpr, ast.TupleExpr, ast.Literal)):
        return v
    if isinstance(v, Ref):
        return ast.Identifier(v.name)
    if isinstance(v, bool):
        return ast.Literal(v, "logical")
    if isinstance(v, int):
        return ast.Unary("-", ast.Literal(-v, "integer")) if v < 0 else ast.Literal(v, "integer")
    if isinstance(v, float):
        if not math.isfinite(v):
            raise ValueError(f"{v!r} cannot be written as an NNEF scalar literal")
        if math.copysign(1.0, v) < 0:
            return ast.Unary("-", ast.Literal(-v, "scalar"))
        return ast.Literal(v, "scalar")
    if hasattr(v, "dtype") and hasattr(v, "item"):  # numpy scalar
        return value(v.item())
    if isinstance(v, str):
        return ast.Literal(v, "string")
    if isinstance(v, list):
        return ast.ArrayExpr(tuple(value(i) for i in v))
    if isinstance(v, tuple):
        return ast.TupleExpr(tuple(value(i) for i in v))
    raise TypeError(f"no NNEF value for {v!r} of type {type(v).__name__}")


def invoke(op: str, *positional: Any, type_arg: str | None = None, **named: Any) -> ast.Invocation:
    """`op<type_arg>(positional..., name = value, ...)`; keyword order is kept."""
    args = [ast.Argument(None, value(v)) for v in positional]
    args += [ast.Argument(ast.Name(k), value(v)) for k, v in named.items()]
    return ast.Invocation(ast.Name(op), type_arg, tuple(args))


def invoke_ordered(op: str, positional: Sequence[Any], named: Iterable[tuple[str, Any]],
                   type_arg: str | None = None) -> ast.Invocation:
    """Like `invoke`, with named arguments given as (name, value) pairs in the order wanted."""
    args = [ast.Argument(None, value(v)) for v in positional]
    args += [ast.Argument(ast.Name(k), value(v)) for k, v in named]
    return ast.Invocation(ast.Name(op), type_arg, tuple(args))


def _lvalue(target: str | Sequence[Any]) -> ast.Expr:
    if isinstance(target, str):
        return ast.Identifier(target)
    if isinstance(target, list):
        return ast.ArrayExpr(tuple(_lvalue(t) for t in target))
    return ast.TupleExpr(tuple(_lvalue(t) for t in target))


def assign(target: str | Sequence[Any], rhs: ast.Expr) -> ast.Assignment:
    """`target = rhs;` — a name, a list of names (array) or a tuple of names."""
    return ast.Assignment(_lvalue(target), rhs)


def graph(name: str, inputs: Sequence[str], outputs: Sequence[str], body: Iterable[ast.Assignment],
          item: str | None = None) -> ast.GraphDef:
    """A `graph` definition, or a `graphitem` when `item` is given."""
    return ast.GraphDef(
        ast.Name(name),
        tuple(ast.Name(n) for n in inputs),
        tuple(ast.Name(n) for n in outputs),
        tuple(body),
        ast.Name(item) if item is not None else None,
    )


def document(graphs: Iterable[ast.GraphDef], extensions: Sequence[str] = (),
             fragments: Iterable[ast.Fragment] = ()) -> ast.Document:
    """A version 1.0 document."""
    exts = (ast.Extension(tuple(ast.Name(e) for e in extensions)),) if extensions else ()
    return ast.Document(ast.Version(1, 0), exts, tuple(fragments), tuple(graphs))


def operation_invocation(name: str, inputs: Mapping[str, Any], attribs: Mapping[str, Any],
                         positional: Sequence[str], type_arg: str | None = None) -> ast.Invocation:
    """An invocation from flat-graph parameter values: parameters named in `positional`
    (tensor parameters, in order) are written positionally, all others by name."""
    values = {**inputs, **attribs}
    return invoke_ordered(
        name,
        [values[p] for p in positional],
        [(k, v) for k, v in values.items() if k not in positional],
        type_arg,
    )


def with_operation_extensions(document: ast.Document) -> ast.Document:
    """`document` with the declaration of every operation extension its graphs invoke (`erf`, from
    pipeline.nnef.catalogue.OPERATION_EXTENSIONS) after `extension KHR_enable_fragment_definitions`:
    a standard NNEF file any parser reads (our checker takes the declaration as the catalogue's)."""
    from pipeline.nnef.catalogue import FRAGMENT_DEFINITIONS, operation_extension_declarations

    used = {a.rhs.name.value for g in document.graphs for a in g.body if isinstance(a.rhs, ast.Invocation)}
    declared = {f.name.value for f in document.fragments}
    missing = tuple(f for f in operation_extension_declarations() if f.name.value in used - declared)
    if not missing:
        return document
    names = {n.value for ext in document.extensions for n in ext.names}
    extensions = document.extensions if FRAGMENT_DEFINITIONS in names else \
        document.extensions + (ast.Extension((ast.Name(FRAGMENT_DEFINITIONS),)),)
    return dataclasses.replace(document, extensions=extensions, fragments=document.fragments + missing)

"""Flat-graph operations back to NNEF statements, every parameter written out.

The splitter and the layer-parallel rewrite work on the checker's flat graph
(pipeline.nnef.graph), where every parameter is bound and every default filled in.
Writing an operation back means: tensor parameters positionally in declaration order,
all other parameters by name (so the certification profile's explicitness rule holds by
construction), the element type on declarations, item ids of `send_var`/`get_var` as
identifiers. The text comes from the canonical printer; nothing here formats NNEF.

Not trusted: every file written this way is re-read by the checker, and the union
check (pipeline.split.union) compares the re-read operations with the original ones.
"""

from __future__ import annotations

from typing import Any, Sequence

from pipeline.nnef import ast, build
from pipeline.nnef.graph import Operation, Ref

# Operations whose element type must be written (`external<scalar>`; NNEF-E062).
DECLARATIONS = frozenset({"external", "variable", "constant", "variablesync"})
# Operations that only bind a value from outside the graph (no computation).
BINDINGS = frozenset({"external", "variable"})
# The extension's communication operations.
COMMUNICATION = frozenset({"variablesync", "send_var", "get_var"})


def _lvalue(value: Any) -> Any:
    """An output value (Ref or list of Refs) as an assignment target for build.assign."""
    if isinstance(value, Ref):
        return value.name
    if isinstance(value, (list, tuple)):
        return [_lvalue(v) for v in value]
    raise TypeError(f"not an output value: {value!r}")


def target_of(op: Operation) -> Any:
    """The assignment target of `op`: one name, an array of names, or a tuple of results."""
    results = list(op.outputs.values())
    if len(results) == 1:
        return _lvalue(results[0])
    return tuple(_lvalue(v) for v in results)


def invocation(op: Operation) -> ast.Invocation:
    """`op` as an invocation with every parameter explicit."""
    attribs: dict[str, Any] = dict(op.attribs)
    positional = list(op.inputs)
    if op.name == "send_var":  # the paper's form: send_var([R1, R2], x)
        attribs["dest"] = [build.ref(str(d)) for d in attribs["dest"]]
        positional = ["dest", "data"]
    elif op.name == "get_var":  # get_var(W, v)
        attribs["source"] = build.ref(str(attribs["source"]))
        positional = ["source", "data"]
    type_arg = op.dtype if op.name in DECLARATIONS else None
    return build.operation_invocation(op.name, op.inputs, attribs, positional, type_arg)


def statement(op: Operation) -> ast.Assignment:
    """`results = op(...);` for one flat-graph operation."""
    return build.assign(target_of(op), invocation(op))


def graph_def(name: str, inputs: Sequence[str], outputs: Sequence[str], operations: Sequence[Operation],
              item: str | None = None) -> ast.GraphDef:
    """A graph (or graphitem) whose body is `operations` in the order given."""
    return build.graph(name, inputs, outputs, [statement(op) for op in operations], item=item)


def first_result(op: Operation) -> str:
    """The name of the first output of `op`: how schedules and allocations name an instruction."""
    return op.output_refs()[0].name

"""Declarations and bindings: what a name means, assigned once (SSA).

Left-hand sides (identifiers, arrays and tuples of them), the flat-body rule without
KHR_enable_operator_expressions, generated names `<op><n>`, declaration of graph-level
tensors (once; variablesync then send_var is the one allowed reassignment), renaming the
generated result of the current assignment to the identifier it is assigned to, and the
copy emitted when an identifier is bound to an existing tensor.
Findings: NNEF-E005, E011, E015, E017, E040, E042, E071, E073.
"""

from __future__ import annotations

from typing import Any

from pipeline.diagnostics import Span
from pipeline.nnef import ast
from pipeline.nnef import types as T
from pipeline.nnef.graph import Operation, Ref
from pipeline.nnef.lowering.values import POISON, lvalue_names, poisoned


class Declarations:
    """Mixed into GraphBuilder (lowering/builder.py), whose state it reads and updates."""

    def _valid_lvalue(self, lhs: ast.Expr) -> bool:
        if isinstance(lhs, ast.Identifier):
            return True
        if isinstance(lhs, (ast.ArrayExpr, ast.TupleExpr)):
            return all(self._valid_lvalue(item) for item in lhs.items)
        self.report("NNEF-E017", "only identifiers, arrays and tuples of identifiers can be assigned", lhs.span)
        return False

    def _require_flat(self, expr: ast.Expr, top: bool = False) -> None:
        """Without KHR_enable_operator_expressions a graph holds flat invocations only."""
        if isinstance(expr, ast.Invocation) and top:
            for arg in expr.args:
                self._require_flat(arg.value)
            return
        if isinstance(expr, (ast.Literal, ast.Identifier)) and not top:
            return
        if isinstance(expr, ast.Unary) and expr.op == "-" and isinstance(expr.operand, ast.Literal) and not top:
            return
        if isinstance(expr, (ast.ArrayExpr, ast.TupleExpr)) and not top:
            for item in expr.items:
                self._require_flat(item)
            return
        what = "nested invocation" if isinstance(expr, ast.Invocation) else "expression"
        self.report("NNEF-E005", f"{what} not allowed in a flat graph body; declare "
                    "'extension KHR_enable_operator_expressions;' to use compound syntax", expr.span)

    def _fresh(self, op: str) -> str:
        while True:
            n = self.counters.get(op, 0) + 1
            self.counters[op] = n
            name = f"{op}{n}"
            if name not in self.declared and name not in self.reserved and name not in self.params:
                return name

    def _declare(self, name: str, span: Span | None, op: str) -> bool:
        """Declare a graph-level tensor; SSA: once, except variablesync followed by send_var."""
        if name in self.declared:
            if op == "send_var" and name in self.sync_pending:
                self.sync_pending.discard(name)
                return True
            if op == "send_var" and name in self.sync_names:
                self.report("NNEF-E071", f"sync variable '{name}' is sent twice", span,
                            [("first assigned here", self.declared[name])])
                return False
            self.report("NNEF-E011", f"identifier '{name}' is already assigned (SSA: each variable is assigned once)",
                        span, [("first assigned here", self.declared[name])])
            return False
        if op == "send_var":
            self.report("NNEF-E073", f"send_var assigns '{name}', which is not declared by variablesync", span)
        if op == "external" and name not in self.params:
            self.report("NNEF-E042", f"'{name}' is declared by external but is not a parameter of graph "
                        f"'{self.graph.name}'", span)
        elif op not in ("external", "variablesync") and name in self.params:
            self.report("NNEF-E040", f"graph parameter '{name}' can only be declared by external"
                        + (" or variablesync" if self.graph.item else ""), span)
        self.declared[name] = span or ast.NO_SPAN
        if op == "variablesync":
            self.sync_pending.add(name)
            self.sync_names.add(name)
        return True

    def _bind_top(self, lhs: ast.Expr, value: Any, span: Span) -> None:
        if value is POISON:
            for ident in lvalue_names(lhs):  # declare so later uses do not cascade
                self._declare_poisoned(ident)
            return
        if isinstance(lhs, ast.Identifier):
            self._bind_identifier(lhs, value)
            return
        items = lhs.items
        if isinstance(lhs, ast.ArrayExpr) and not isinstance(value, list):
            self.report("NNEF-E017", "an array on the left-hand side needs an array result", lhs.span)
            return
        if isinstance(lhs, ast.TupleExpr) and not isinstance(value, tuple):
            self.report("NNEF-E017", f"a tuple of {len(items)} on the left-hand side needs as many results", lhs.span)
            return
        if len(items) != len(value):
            self.report("NNEF-E017", f"left-hand side has {len(items)} items but the value has {len(value)}", lhs.span)
            for ident in lvalue_names(lhs):
                self._declare_poisoned(ident)
            return
        for item, part in zip(items, value):
            self._bind_top(item, part, span)

    def _bind_identifier(self, ident: ast.Identifier, value: Any) -> None:
        if isinstance(value, Ref) and value.name == ident.name:
            return  # written directly by the operation (fast path)
        if not isinstance(value, Ref):
            if not poisoned(value):
                self.report("NNEF-E015", f"cannot assign a value of type {T.format_type(T.type_of_value(value))} "
                            f"to tensor identifier '{ident.name}'", ident.span)
            self._declare_poisoned(ident)
            return
        producer = self._produced_here(value.name)
        if producer is not None and self._declare(ident.name, ident.span, producer.name):
            self._rename(value.name, ident.name)
        elif producer is None and self._declare(ident.name, ident.span, "copy"):
            self._emit_copy(value, ident)

    def _declare_poisoned(self, ident: ast.Identifier) -> None:
        """Declare a name whose value failed, so later uses and results do not cascade."""
        if ident.name in self.declared and ident.name not in self.sync_pending:
            self.report("NNEF-E011", f"identifier '{ident.name}' is already assigned (SSA: each variable is assigned "
                        "once)", ident.span, [("first assigned here", self.declared[ident.name])])
            return
        self.declared.setdefault(ident.name, ident.span)
        self.poisoned.add(ident.name)

    def _produced_here(self, name: str) -> Operation | None:
        """The operation of the current assignment producing generated tensor `name`."""
        if name in self.reserved or name in self.params:
            return None
        for op in self.graph.operations[self._assignment_start:]:
            if any(r.name == name for r in op.output_refs()):
                return op
        return None

    def _rename(self, old: str, new: str) -> None:
        def swap(v: Any) -> Any:
            if isinstance(v, Ref):
                return Ref(new) if v.name == old else v
            if isinstance(v, list):
                return [swap(x) for x in v]
            if isinstance(v, tuple):
                return tuple(swap(x) for x in v)
            return v

        for op in self.graph.operations[self._assignment_start:]:
            op.inputs = {k: swap(v) for k, v in op.inputs.items()}
            op.outputs = {k: swap(v) for k, v in op.outputs.items()}
        info = self.graph.tensors.pop(old)
        info.name = new
        self.graph.tensors[new] = info
        self.dtypes[new] = self.dtypes.pop(old)
        self.declared.pop(old, None)

    def _emit_copy(self, value: Ref, ident: ast.Identifier) -> None:
        sig = self.catalogue["copy"]
        dtype = self.dtypes.get(value.name, "scalar")
        self._emit(sig, {"x": value}, {}, dtype, ident.span, frozenset({"x"}), [ident], declare=False)

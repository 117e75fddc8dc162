"""Expressions: the values of literals, identifiers, operators, subscripts, built-ins and
comprehensions, in a graph body or a fragment body (`Scope`).

Operators on tensors become operations (through `Emission`); operators on attribute values
are computed (`values.attribute_binary`).
Findings: NNEF-E008, E009, E010, E011, E015, E017.
"""

from __future__ import annotations

from typing import Any

from pipeline.nnef import ast
from pipeline.nnef import types as T
from pipeline.nnef.graph import Ref
from pipeline.nnef.lowering.values import (BINARY_OPERATIONS, POISON, UNARY_OPERATIONS, Scope, attribute_binary,
                                           format_attribute, lvalue_names, poisoned)


class Expressions:
    """Mixed into GraphBuilder (lowering/builder.py), whose state it reads and updates."""

    def _eval(self, expr: ast.Expr, scope: Scope | None) -> Any:
        kind = type(expr)
        if kind is ast.Literal:
            return expr.value
        if kind is ast.Identifier:
            return self._lookup(expr, scope)
        if kind is ast.ArrayExpr or kind is ast.TupleExpr:
            literal = ast.Literal  # literal items inline: attribute arrays are mostly numbers
            items = [e.value if type(e) is literal else self._eval(e, scope) for e in expr.items]
            for item in items:
                if item is POISON:
                    return POISON
            return items if kind is ast.ArrayExpr else tuple(items)
        if kind is ast.Unary and type(expr.operand) is ast.Literal and expr.op == "-":
            value = expr.operand.value
            if type(value) in (int, float):
                return -value
        if isinstance(expr, ast.Invocation):
            return self._invoke(expr, scope)
        if isinstance(expr, ast.Unary):
            return self._unary(expr, scope)
        if isinstance(expr, ast.Binary):
            return self._binary(expr, scope)
        if isinstance(expr, ast.IfElse):
            condition = self._eval(expr.condition, scope)
            if condition is POISON:
                return POISON
            if not isinstance(condition, bool):
                self.report("NNEF-E015", "condition of if-else must be a logical value", expr.condition.span)
                return POISON
            return self._eval(expr.then if condition else expr.otherwise, scope)
        if isinstance(expr, ast.Subscript):
            return self._subscript(expr, scope)
        if isinstance(expr, ast.Builtin):
            return self._builtin(expr, scope)
        if isinstance(expr, ast.Comprehension):
            return self._comprehension(expr, scope)
        raise TypeError(f"unexpected expression {expr!r}")

    def _lookup(self, ident: ast.Identifier, scope: Scope | None) -> Any:
        if scope is not None:
            if ident.name in scope.values:
                return scope.values[ident.name]
            self.report("NNEF-E010", f"undeclared identifier '{ident.name}' in {scope.where}", ident.span)
            return POISON
        self.referenced.add(ident.name)
        if ident.name in self.declared:
            if ident.name not in self.graph.tensors:
                return POISON  # declared by an erroneous assignment
            return Ref(ident.name)
        self.report("NNEF-E010", f"undeclared identifier '{ident.name}'", ident.span)
        self.declared[ident.name] = ident.span  # report once
        return POISON

    def _unary(self, expr: ast.Unary, scope: Scope | None) -> Any:
        operand = self._eval(expr.operand, scope)
        if poisoned(operand):
            return POISON
        if isinstance(operand, Ref):
            sig = self.catalogue[UNARY_OPERATIONS[expr.op]]
            return self._emit_operator(sig, {"x": operand}, expr.span)
        try:
            if expr.op == "-" and isinstance(operand, (int, float)) and not isinstance(operand, bool):
                return -operand
            if expr.op == "+" and isinstance(operand, (int, float)) and not isinstance(operand, bool):
                return operand
            if expr.op == "!" and isinstance(operand, bool):
                return not operand
        except TypeError:
            pass
        self.report("NNEF-E015", f"invalid operand of type {T.format_type(T.type_of_value(operand))} "
                    f"for unary '{expr.op}'", expr.span)
        return POISON

    def _binary(self, expr: ast.Binary, scope: Scope | None) -> Any:
        left = self._eval(expr.left, scope)
        right = self._eval(expr.right, scope)
        if poisoned(left) or poisoned(right):
            return POISON
        if (isinstance(left, Ref) or isinstance(right, Ref)) and expr.op in BINARY_OPERATIONS:
            sig = self.catalogue[BINARY_OPERATIONS[expr.op]]
            return self._emit_operator(sig, {"x": left, "y": right}, expr.span)
        try:
            return attribute_binary(expr.op, left, right)
        except ZeroDivisionError:
            self.report("NNEF-E009", "division by zero", expr.span)
        except (TypeError, ValueError, OverflowError):
            self.report("NNEF-E015", f"invalid operand types {T.format_type(T.type_of_value(left))} and "
                        f"{T.format_type(T.type_of_value(right))} for '{expr.op}'", expr.span)
        return POISON

    def _subscript(self, expr: ast.Subscript, scope: Scope | None) -> Any:
        sequence = self._eval(expr.sequence, scope)
        begin = self._eval(expr.begin, scope) if expr.begin is not None else None
        end = self._eval(expr.end, scope) if expr.end is not None else None
        if poisoned(sequence) or poisoned(begin) or poisoned(end):
            return POISON
        if not isinstance(sequence, (list, tuple, str)):
            self.report("NNEF-E015", "subscripted expression must be an array, tuple or string", expr.span)
            return POISON
        for bound in (begin, end):
            if bound is not None and (not isinstance(bound, int) or isinstance(bound, bool)):
                self.report("NNEF-E015", "array index must be an integer", expr.span)
                return POISON
        if not expr.is_range:
            index = begin + len(sequence) if begin < 0 else begin
            if not 0 <= index < len(sequence):
                self.report("NNEF-E009", f"index {begin} out of range for length {len(sequence)}", expr.span)
                return POISON
            return sequence[index]
        result = sequence[begin:end]
        return list(result) if isinstance(sequence, list) else result

    def _builtin(self, expr: ast.Builtin, scope: Scope | None) -> Any:
        if expr.function == "shape_of":
            self.report("NNEF-E008", "the use of operator 'shape_of' is deprecated and not supported", expr.span)
            return POISON
        arg = self._eval(expr.arg, scope)
        if poisoned(arg):
            return POISON
        function = expr.function
        if function in ("length_of", "range_of"):
            if not isinstance(arg, (list, str)):
                self.report("NNEF-E015", f"argument of {function}() must be an array or a string", expr.span)
                return POISON
            return len(arg) if function == "length_of" else list(range(len(arg)))
        if isinstance(arg, (list, tuple, Ref)):
            self.report("NNEF-E015", f"argument of {function}() must be a non-tensor primitive value", expr.span)
            return POISON
        try:
            if function == "integer":
                return int(arg) if not isinstance(arg, str) else int(arg)
            if function == "scalar":
                return float(arg)
            if function == "logical":
                return bool(arg) if not isinstance(arg, str) else arg == "true"
            return format_attribute(arg)
        except ValueError:
            self.report("NNEF-E009", f"cannot convert {arg!r} with {function}()", expr.span)
            return POISON

    def _comprehension(self, expr: ast.Comprehension, scope: Scope | None) -> Any:
        iterables = [self._eval(it.iterable, scope) for it in expr.iterators]
        if any(poisoned(i) for i in iterables):
            return POISON
        for it, iterable in zip(expr.iterators, iterables):
            if not isinstance(iterable, list):
                self.report("NNEF-E015", "expression is not iterable (an array is needed)", it.iterable.span)
                return POISON
        lengths = {len(i) for i in iterables}
        if len(lengths) > 1:
            self.report("NNEF-E009", "iterables must have the same length in an array comprehension", expr.span)
            return POISON
        if scope is None:  # a comprehension in a graph body sees the graph's tensors
            scope = Scope({name: Ref(name) for name in self.declared if name in self.graph.tensors}, None, 0)
        result = []
        for index in range(lengths.pop() if lengths else 0):
            local = Scope(dict(scope.values), scope.fragment, scope.depth)
            for it, iterable in zip(expr.iterators, iterables):
                if not self._bind_local(it.target, iterable[index], local, reassign=True):
                    return POISON
            if expr.condition is not None:
                keep = self._eval(expr.condition, local)
                if keep is POISON:
                    return POISON
                if not isinstance(keep, bool):
                    self.report("NNEF-E015", "comprehension condition must be a logical value", expr.condition.span)
                    return POISON
                if not keep:
                    continue
            result.append(self._eval(expr.body, local))
        return result

    def _bind_local(self, lhs: ast.Expr, value: Any, scope: Scope, reassign: bool = False) -> bool:
        if isinstance(lhs, ast.Identifier):
            if not reassign and lhs.name in scope.values:
                self.report("NNEF-E011", f"identifier '{lhs.name}' is already assigned in {scope.where}", lhs.span)
                return False
            scope.values[lhs.name] = value
            return True
        if isinstance(lhs, (ast.ArrayExpr, ast.TupleExpr)):
            if value is POISON:
                for ident in lvalue_names(lhs):
                    scope.values[ident.name] = POISON
                return True
            if not isinstance(value, (list, tuple)) or len(value) != len(lhs.items):
                self.report("NNEF-E017", "left-hand side does not match the structure of the value", lhs.span)
                return False
            return all(self._bind_local(item, part, scope, reassign) for item, part in zip(lhs.items, value))
        self.report("NNEF-E017", "only identifiers, arrays and tuples of identifiers can be assigned", lhs.span)
        return False

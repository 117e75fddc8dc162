"""Invocations: binding arguments to a fragment's parameters and judging them.

Positional and named arguments, defaults, the generic type, the types of arguments
(with enumerations), the explicitness rule of the certification profile, the send_var/
get_var operand rules, and the expansion of the document's own compound fragments.
Findings: NNEF-E009, E012, E013, E014, E015, E016, E018, E021, E041, E060, E061, E062,
E073, E078, E081.
"""

from __future__ import annotations

from typing import Any

from pipeline.diagnostics import Span
from pipeline.nnef import limits
from pipeline.nnef import ast
from pipeline.nnef import types as T
from pipeline.nnef.catalogue import FragmentSig
from pipeline.nnef.graph import Ref, refs_in
from pipeline.nnef.lowering.values import (AUTOMATIC_WHEN_EMPTY, MAX_FRAGMENT_DEPTH, POISON, TYPE_DECLARATIONS, ItemName,
                                           Scope, format_attribute, has_ref, plain)


SYNC_OPERATIONS = frozenset({"variablesync", "send_var", "get_var"})


class Invocations:
    """Mixed into GraphBuilder (lowering/builder.py), whose state it reads and updates."""

    def _invoke(self, inv: ast.Invocation, scope: Scope | None,
                out_names: list[ast.Expr | None] | None = None) -> Any:
        name = inv.name.value
        sig = self.catalogue.get(name)
        if sig is None:
            self.report("NNEF-E012", f"unknown operation '{name}'", inv.name.span)
            for arg in inv.args:  # still resolve the arguments: their names are used here
                self._eval(arg.value, scope)
            return POISON
        bound = self._bind_arguments(inv, sig, scope)
        if bound is None:
            return POISON
        values, explicit = bound
        if sig.origin == "user" and sig.body is not None:
            return self._expand(sig, values, inv, scope)
        dtype = self._generic_type(inv, sig, values)
        if dtype is POISON:
            return POISON
        if not self._check_types(inv, sig, values, dtype):
            return POISON
        inputs = {p.name: values[p.name] for p in sig.tensor_params}
        attribs = {p.name: (plain(values[p.name]) if p.is_item else values[p.name]) for p in sig.attribute_params}
        if sig.name in SYNC_OPERATIONS and self.graph.item is None:
            self.report("NNEF-E081", f"'{sig.name}' belongs to the multi-item extension: it is allowed in a "
                        "graphitem, not in a plain graph", inv.name.span)
        if sig.name == "get_var":
            self._check_get_var(inputs, inv)
        else:
            self._reject_sync_operands(inputs, inv.span)
        if sig.origin != "user":
            self._check_explicit(inv, sig, explicit, attribs)
        return self._emit(sig, inputs, attribs, dtype, inv.span, explicit, out_names)

    def _bind_arguments(self, inv: ast.Invocation, sig: FragmentSig,
                        scope: Scope | None) -> tuple[dict[str, Any], frozenset[str]] | None:
        values: dict[str, Any] = {}
        ok = True
        named_seen = False
        by_name = sig.params_by_name
        literal = ast.Literal
        for position, arg in enumerate(inv.args):
            if arg.name is not None:
                param = by_name.get(arg.name.value)
                if param is None:
                    self.report("NNEF-E014", f"operation '{sig.name}' has no parameter '{arg.name.value}'", arg.name.span)
                    ok = False
                    continue
                named_seen = True
            else:
                if position >= len(sig.params):
                    self.report("NNEF-E013", f"too many arguments: '{sig.name}' has {len(sig.params)} parameters", arg.span)
                    ok = False
                    continue
                param = sig.params[position]
                if named_seen or (param.is_attribute and not param.is_item):
                    self.report("NNEF-E018", f"argument for '{param.name}' of '{sig.name}' must be given by name "
                                f"('{param.name} = ...')", arg.span)
                    ok = False
            if param.name in values:
                self.report("NNEF-E016", f"parameter '{param.name}' of '{sig.name}' is given twice", arg.span)
                ok = False
                continue
            expr = arg.value
            if type(expr) is literal and not param.is_item:  # the common case, without two calls
                values[param.name] = expr.value
            else:
                values[param.name] = self._eval_argument(expr, param, scope)
        explicit = frozenset(values)
        for param in sig.params:
            if param.name not in values:
                if param.has_default:
                    values[param.name] = param.default
                else:
                    self.report("NNEF-E013", f"missing argument: parameter '{param.name}' of '{sig.name}' "
                                "has no default value", inv.span)
                    ok = False
        if not ok:
            return None
        for value in values.values():
            if value is POISON:
                return None
        return values, explicit

    def _eval_argument(self, expr: ast.Expr, param: Any, scope: Scope | None) -> Any:
        """Evaluate an argument; item identifiers (send_var dest, get_var source) are not tensors."""
        if param.is_item:
            if isinstance(expr, ast.Identifier):
                return ItemName(expr.name)
            if isinstance(expr, ast.ArrayExpr) and all(isinstance(e, ast.Identifier) for e in expr.items):
                return [ItemName(e.name) for e in expr.items]  # type: ignore[union-attr]
            self.report("NNEF-E015", f"'{param.name}' takes item identifiers", expr.span)
            return POISON
        return self._eval(expr, scope)

    def _generic_type(self, inv: ast.Invocation, sig: FragmentSig, values: dict[str, Any]) -> Any:
        if not sig.generic:
            return None
        if inv.type_arg is not None:
            return inv.type_arg
        for param in sig.params:
            if T.is_generic(param.type):
                found = self._dtype_of(values[param.name])
                if found is not None:
                    return found
        if sig.generic_default is not None:
            return sig.generic_default
        self.report("NNEF-E015", f"cannot deduce the generic type of '{sig.name}'; write {sig.name}<scalar>(...)", inv.span)
        return POISON

    def _dtype_of(self, value: Any) -> str | None:
        if isinstance(value, Ref):
            return self.dtypes.get(value.name)
        if isinstance(value, bool):
            return "logical"
        if isinstance(value, int):
            return "integer"
        if isinstance(value, float):
            return "scalar"
        if isinstance(value, str):
            return "string"
        if isinstance(value, (list, tuple)):
            for item in value:
                found = self._dtype_of(item)
                if found is not None:
                    return found
        return None

    def _type_checks(self, sig: FragmentSig, dtype: str | None) -> list[tuple[Any, Any, Any, Any]]:
        """Per parameter: (param, bound type, fast validator, allowed enum values), cached."""
        key = (sig.name, dtype)
        checks = self._validators.get(key)
        if checks is None:
            checks = []
            for param in sig.params:
                if param.is_item:
                    continue
                expected = T.bind(param.type, dtype)
                checks.append((param, expected, T.fast_validator(expected), sig.enum_values(param.name)))
            self._validators[key] = checks
        return checks

    def _check_types(self, inv: ast.Invocation, sig: FragmentSig, values: dict[str, Any], dtype: str | None) -> bool:
        ok = True
        dtypes = self.dtypes
        for param, expected, fast, allowed in self._type_checks(sig, dtype):
            value = values[param.name]
            if not (fast is not None and fast(value, dtypes)) and not self._castable(inv, sig, param, expected, value):
                ok = False
                continue
            if allowed is not None and isinstance(value, str) and value not in allowed:
                self.report("NNEF-E021", f"invalid value '{value}' for '{param.name}' of '{sig.name}'; "
                            f"expected one of {', '.join(repr(a) for a in allowed)}", self._arg_span(inv, param.name))
                ok = False
        return ok

    def _castable(self, inv: ast.Invocation, sig: FragmentSig, param: Any, expected: ast.TypeSpec, value: Any) -> bool:
        """The general type check (the fast validator was not certain); reports on failure."""
        if param.is_attribute and has_ref(value):
            self.report("NNEF-E015", f"'{param.name}' of '{sig.name}' is an attribute of type "
                        f"{T.format_type(expected)}; a tensor was given", self._arg_span(inv, param.name))
            return False
        actual = T.type_of_value(value, self.dtypes)
        if not T.castable(actual, expected):
            self.report("NNEF-E015", f"argument '{param.name}' of '{sig.name}' has type {T.format_type(actual)}, "
                        f"expected {T.format_type(expected)}", self._arg_span(inv, param.name))
            return False
        return True

    def _arg_span(self, inv: ast.Invocation, name: str) -> Span:
        for index, arg in enumerate(inv.args):
            if arg.name is not None and arg.name.value == name:
                return arg.span
        sig = self.catalogue[inv.name.value]
        for index, arg in enumerate(inv.args):
            if arg.name is None and index < len(sig.params) and sig.params[index].name == name:
                return arg.span
        return inv.span

    def _check_explicit(self, inv: ast.Invocation, sig: FragmentSig, explicit: frozenset[str],
                        attribs: dict[str, Any]) -> None:
        """The certification rule: every parameter written out, nothing automatic."""
        for param in sig.params:
            if param.has_default and param.name not in explicit:
                self._explicitness("NNEF-E060", f"'{sig.name}' relies on the default of '{param.name}' "
                                   f"({format_attribute(param.default)}); write it explicitly", inv.span)
        for name in AUTOMATIC_WHEN_EMPTY:
            if name in attribs and name in explicit and attribs[name] == []:
                self._explicitness("NNEF-E061", f"'{name} = []' of '{sig.name}' asks for an automatic value; "
                                   "write every value explicitly", self._arg_span(inv, name))
        if sig.name in TYPE_DECLARATIONS and inv.type_arg is None:
            self._explicitness("NNEF-E062", f"'{sig.name}' relies on its default element type; write "
                               f"{sig.name}<{sig.generic_default}>(...)", inv.name.span)

    def _check_get_var(self, inputs: dict[str, Any], inv: ast.Invocation) -> None:
        data = inputs.get("data")
        if isinstance(data, Ref) and data.name not in self.sync_names:
            self.report("NNEF-E073", f"get_var reads '{data.name}', which is not declared by variablesync",
                        self._arg_span(inv, "data"))

    def _reject_sync_operands(self, inputs: dict[str, Any], span: Span) -> None:
        for value in inputs.values():
            for ref in refs_in(value):
                if ref.name in self.sync_names:
                    self.report("NNEF-E078", f"sync variable '{ref.name}' is used directly; read it with "
                                f"get_var(<writer>, {ref.name}) and use the result", span)

    def _recursive(self, sig: FragmentSig) -> bool:
        """Whether `sig`'s body reaches `sig` again through the fragments it invokes (an iterative walk)."""
        from pipeline.nnef.fragments import invoked_names

        seen: set[str] = set()
        pending = [sig]
        while pending:
            current = pending.pop()
            for assignment in current.body or ():
                for name in invoked_names(assignment.rhs):
                    if name == sig.name:
                        return True
                    callee = self.catalogue.get(name)
                    if name not in seen and callee is not None and callee.body:
                        seen.add(name)
                        pending.append(callee)
        return False

    def _expand(self, sig: FragmentSig, values: dict[str, Any], inv: ast.Invocation, scope: Scope | None) -> Any:
        """Lower a compound fragment of the document: evaluate its body."""
        depth = (scope.depth if scope else 0) + 1
        if depth > MAX_FRAGMENT_DEPTH:   # a limit, not a diagnosis: recursion is named only when there is one
            kind = ("it calls itself (recursion)" if self._recursive(sig)
                    else "the chain of calls is not recursive, only deeper than the limit")
            self.report("NNEF-E009", f"fragment '{sig.name}' expands more than {MAX_FRAGMENT_DEPTH} levels of nested "
                        f"fragment calls, the front end's limit (MAX_FRAGMENT_DEPTH); {kind}", inv.span)
            return POISON
        local = Scope(dict(values), sig, depth)
        for assignment in sig.body or ():
            if limits.expression_depth(assignment.rhs) > limits.MAX_EXPRESSION_DEPTH:
                return POISON  # reported once by the fragment checks (fragments.check_body)
            value = self._eval(assignment.rhs, local)
            if not self._bind_local(assignment.lhs, value, local):
                return POISON
        results = []
        for result in sig.results:
            if result.name not in local.values:
                self.report("NNEF-E041", f"result '{result.name}' of fragment '{sig.name}' is never assigned", sig.span)
                return POISON
            results.append(local.values[result.name])
        return results[0] if len(results) == 1 else tuple(results)

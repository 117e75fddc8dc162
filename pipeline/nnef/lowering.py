"""From a graph (or graphitem) definition to a flat graph, with every finding on the way.

This is the static semantics of NNEF: each assignment is evaluated; invocations of
standard and extension fragments become operations (arguments bound to parameters,
defaults filled, types and enumerations checked, output shapes inferred); invocations of
the document's own compound fragments are expanded (lowered) into the operations of
their bodies; operator expressions on tensors (`a + b`) become the operations the spec
names (`add`); expressions on attributes (integers, arrays, comprehensions) are
computed. Intermediate tensors get generated names `<op><n>` as the Khronos parser
does. Problems become findings and evaluation goes on, with a poisoned value standing
for whatever could not be computed, so that one error does not cascade.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator

import numpy as np

from pipeline.diagnostics import Finding, Severity, Span
from pipeline.nnef import ast
from pipeline.nnef import types as T
from pipeline.nnef.catalogue import FragmentSig
from pipeline.nnef.graph import Graph, Operation, Ref, TensorInfo, refs_in
from pipeline.nnef.shapes import SHAPE_RULES, ShapeError

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


def _poisoned(value: Any) -> bool:
    if value is POISON:
        return True
    if isinstance(value, (list, tuple)):
        return any(_poisoned(v) for v in value)
    return False


def _has_ref(value: Any) -> bool:
    if isinstance(value, Ref):
        return True
    if isinstance(value, (list, tuple)):
        return any(_has_ref(v) for v in value)
    return False


def _plain(value: Any) -> Any:
    """Item names as plain strings (how the flat graph stores send_var/get_var items)."""
    if isinstance(value, ItemName):
        return value.name
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_plain(v) for v in value)
    return value


def lvalue_names(expr: ast.Expr) -> Iterator[ast.Identifier]:
    """The identifiers an lvalue assigns, left to right."""
    if isinstance(expr, ast.Identifier):
        yield expr
    elif isinstance(expr, (ast.ArrayExpr, ast.TupleExpr)):
        for item in expr.items:
            yield from lvalue_names(item)


@dataclass
class Options:
    """How strictly to check: `certification` makes explicitness findings errors."""

    profile: str = "certification"
    operator_expressions: bool = True
    fragment_definitions: bool = True


@dataclass
class _Scope:
    """Names visible inside a fragment body being expanded."""

    values: dict[str, Any]
    fragment: FragmentSig | None
    depth: int

    @property
    def where(self) -> str:
        return f"fragment '{self.fragment.name}'" if self.fragment else "comprehension"


@dataclass
class GraphBuilder:
    """Builds the flat graph of one graph definition; collects findings."""

    definition: ast.GraphDef
    catalogue: dict[str, FragmentSig]
    options: Options
    file: str
    findings: list[Finding] = field(default_factory=list)
    flat_document: bool = False  # parsed by the flat fast path: no operator expressions inside

    def __post_init__(self) -> None:
        d = self.definition
        self.graph = Graph(
            name=d.name.value,
            inputs=[n.value for n in d.params],
            outputs=[n.value for n in d.results],
            item=d.item.value if d.item is not None else None,
            source=self.file,
            span=(d.item or d.name).span,
        )
        self.declared: dict[str, Span] = {}
        self.sync_pending: set[str] = set()  # declared by variablesync, not yet sent
        self.sync_names: set[str] = set()
        self.counters: dict[str, int] = {}
        self.reserved = {i.name for a in d.body for i in lvalue_names(a.lhs)}
        self.params = {n.value: n for n in d.params}
        self._assignment_start = 0
        self.poisoned: set[str] = set()  # declared by an assignment that failed
        self.referenced: set[str] = set()  # names read by some expression
        self.dtypes: dict[str, str] = {}
        self._validators: dict[tuple[str, str | None], list[tuple[Any, Any, Any, Any]]] = {}

    # ------------------------------------------------------------------ findings

    def report(self, code: str, message: str, span: Span | None,
               related: Iterable[tuple[str, Span]] = (), severity: Severity | None = None) -> None:
        if severity is None:
            severity = Severity.WARNING if code.startswith("NNEF-W") else Severity.ERROR
            if code.startswith("NNEF-N"):
                severity = Severity.NOTE
        self.findings.append(Finding(code, severity, message, span, tuple(related)))

    def _explicitness(self, code: str, message: str, span: Span | None) -> None:
        severity = Severity.ERROR if self.options.profile == "certification" else Severity.WARNING
        self.report(code, message, span, severity=severity)

    # ------------------------------------------------------------------ graph

    def build(self) -> Graph:
        for assignment in self.definition.body:
            self._assign_top(assignment)
        self._check_interface()
        self._check_unused()
        self.graph.failed = set(self.poisoned)
        return self.graph

    def _assign_top(self, assignment: ast.Assignment) -> None:
        if not self.options.operator_expressions and not self.flat_document:
            self._require_flat(assignment.rhs, top=True)
        self._assignment_start = len(self.graph.operations)
        lhs = assignment.lhs
        if not self._valid_lvalue(lhs):
            return
        rhs = assignment.rhs
        if isinstance(lhs, ast.Identifier) and isinstance(rhs, ast.Invocation):
            value = self._invoke(rhs, None, out_names=[lhs])
        elif isinstance(lhs, ast.TupleExpr) and isinstance(rhs, ast.Invocation) and self._multi_result(rhs):
            value = self._invoke(rhs, None, out_names=list(self._result_lvalues(lhs, rhs)))
        elif isinstance(lhs, ast.ArrayExpr) and isinstance(rhs, ast.Invocation) and self._array_result(rhs):
            value = self._invoke(rhs, None, out_names=[lhs])
        else:
            value = self._eval(rhs, None)
        self._bind_top(lhs, value, assignment.span)

    def _multi_result(self, rhs: ast.Invocation) -> bool:
        sig = self.catalogue.get(rhs.name.value)
        return sig is not None and sig.origin != "user" and len(sig.results) > 1

    def _array_result(self, rhs: ast.Invocation) -> bool:
        sig = self.catalogue.get(rhs.name.value)
        return (sig is not None and sig.origin != "user" and len(sig.results) == 1
                and isinstance(sig.results[0].type, ast.ArrayType))

    def _result_lvalues(self, lhs: ast.Expr, rhs: ast.Invocation) -> Iterator[ast.Expr]:
        sig = self.catalogue[rhs.name.value]
        items = lhs.items if isinstance(lhs, ast.TupleExpr) else (lhs,)
        if len(items) != len(sig.results):
            yield from [None] * len(sig.results)  # type: ignore[misc]
            return
        yield from items

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

    # ------------------------------------------------------------------ declarations

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
            if not _poisoned(value):
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

    # ------------------------------------------------------------------ expressions

    def _eval(self, expr: ast.Expr, scope: _Scope | None) -> Any:
        kind = type(expr)
        if kind is ast.Literal:
            return expr.value
        if kind is ast.Identifier:
            return self._lookup(expr, scope)
        if kind is ast.ArrayExpr or kind is ast.TupleExpr:
            items = [self._eval(e, scope) for e in expr.items]
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

    def _lookup(self, ident: ast.Identifier, scope: _Scope | None) -> Any:
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

    def _unary(self, expr: ast.Unary, scope: _Scope | None) -> Any:
        operand = self._eval(expr.operand, scope)
        if _poisoned(operand):
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

    def _binary(self, expr: ast.Binary, scope: _Scope | None) -> Any:
        left = self._eval(expr.left, scope)
        right = self._eval(expr.right, scope)
        if _poisoned(left) or _poisoned(right):
            return POISON
        if (isinstance(left, Ref) or isinstance(right, Ref)) and expr.op in BINARY_OPERATIONS:
            sig = self.catalogue[BINARY_OPERATIONS[expr.op]]
            return self._emit_operator(sig, {"x": left, "y": right}, expr.span)
        try:
            return _attribute_binary(expr.op, left, right)
        except ZeroDivisionError:
            self.report("NNEF-E009", "division by zero", expr.span)
        except (TypeError, ValueError, OverflowError):
            self.report("NNEF-E015", f"invalid operand types {T.format_type(T.type_of_value(left))} and "
                        f"{T.format_type(T.type_of_value(right))} for '{expr.op}'", expr.span)
        return POISON

    def _subscript(self, expr: ast.Subscript, scope: _Scope | None) -> Any:
        sequence = self._eval(expr.sequence, scope)
        begin = self._eval(expr.begin, scope) if expr.begin is not None else None
        end = self._eval(expr.end, scope) if expr.end is not None else None
        if _poisoned(sequence) or _poisoned(begin) or _poisoned(end):
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

    def _builtin(self, expr: ast.Builtin, scope: _Scope | None) -> Any:
        if expr.function == "shape_of":
            self.report("NNEF-E008", "the use of operator 'shape_of' is deprecated and not supported", expr.span)
            return POISON
        arg = self._eval(expr.arg, scope)
        if _poisoned(arg):
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
            return _format_attribute(arg)
        except ValueError:
            self.report("NNEF-E009", f"cannot convert {arg!r} with {function}()", expr.span)
            return POISON

    def _comprehension(self, expr: ast.Comprehension, scope: _Scope | None) -> Any:
        iterables = [self._eval(it.iterable, scope) for it in expr.iterators]
        if any(_poisoned(i) for i in iterables):
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
            scope = _Scope({name: Ref(name) for name in self.declared if name in self.graph.tensors}, None, 0)
        result = []
        for index in range(lengths.pop() if lengths else 0):
            local = _Scope(dict(scope.values), scope.fragment, scope.depth)
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

    def _bind_local(self, lhs: ast.Expr, value: Any, scope: _Scope, reassign: bool = False) -> bool:
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

    # ------------------------------------------------------------------ invocations

    def _invoke(self, inv: ast.Invocation, scope: _Scope | None,
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
        attribs = {p.name: (_plain(values[p.name]) if p.is_item else values[p.name]) for p in sig.attribute_params}
        if sig.name == "get_var":
            self._check_get_var(inputs, inv)
        else:
            self._reject_sync_operands(inputs, inv.span)
        if sig.origin != "user":
            self._check_explicit(inv, sig, explicit, attribs)
        return self._emit(sig, inputs, attribs, dtype, inv.span, explicit, out_names)

    def _bind_arguments(self, inv: ast.Invocation, sig: FragmentSig,
                        scope: _Scope | None) -> tuple[dict[str, Any], frozenset[str]] | None:
        values: dict[str, Any] = {}
        ok = True
        named_seen = False
        for position, arg in enumerate(inv.args):
            if arg.name is not None:
                param = sig.param(arg.name.value)
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
            values[param.name] = self._eval_argument(arg.value, param, scope)
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

    def _eval_argument(self, expr: ast.Expr, param: Any, scope: _Scope | None) -> Any:
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
        if param.is_attribute and _has_ref(value):
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
                                   f"({_format_attribute(param.default)}); write it explicitly", inv.span)
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

    def _expand(self, sig: FragmentSig, values: dict[str, Any], inv: ast.Invocation, scope: _Scope | None) -> Any:
        """Lower a compound fragment of the document: evaluate its body."""
        depth = (scope.depth if scope else 0) + 1
        if depth > MAX_FRAGMENT_DEPTH:
            self.report("NNEF-E009", f"fragment '{sig.name}' expands more than {MAX_FRAGMENT_DEPTH} levels deep "
                        "(unbounded recursion?)", inv.span)
            return POISON
        local = _Scope(dict(values), sig, depth)
        for assignment in sig.body or ():
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

    # ------------------------------------------------------------------ emission

    def _emit_operator(self, sig: FragmentSig, inputs: dict[str, Any], span: Span) -> Any:
        dtype = None
        if sig.generic:
            dtype = next((d for d in (self._dtype_of(v) for v in inputs.values()) if d), sig.generic_default)
        for name, value in inputs.items():
            param = sig.param(name)
            actual = T.type_of_value(value, self.dtypes)
            if param is not None and not T.castable(actual, T.bind(param.type, dtype)):
                self.report("NNEF-E015", f"operand of type {T.format_type(actual)} is invalid for '{sig.name}'", span)
                return POISON
        self._reject_sync_operands(inputs, span)
        return self._emit(sig, inputs, {}, dtype, span, frozenset(inputs), None)

    def _emit(self, sig: FragmentSig, inputs: dict[str, Any], attribs: dict[str, Any], dtype: str | None,
              span: Span, explicit: frozenset[str], out_names: list[ast.Expr | None] | None,
              declare: bool = True) -> Any:
        shapes = self._infer(sig, inputs, attribs, span)
        outputs: dict[str, Any] = {}
        for index, result in enumerate(sig.results):
            item = T.bind(result.type, dtype)
            elem = _element_type(item)
            target = out_names[index] if out_names and index < len(out_names) else None
            shape = shapes[index] if shapes is not None else None
            if isinstance(item, ast.ArrayType):
                count = len(shape) if shape is not None else self._array_count(target)
                names = self._array_targets(target, count, sig, span)
                if names is None:
                    return POISON
                refs = []
                for k, (name, ident_span) in enumerate(names):
                    if declare and ident_span is not None and not self._declare(name, ident_span, sig.name):
                        name = self._fresh(sig.name)
                    self._add_tensor(name, elem, shape[k] if shape is not None else None)
                    refs.append(Ref(name))
                outputs[result.name] = refs
                continue
            if isinstance(target, ast.Identifier):
                name = target.name
                if declare and not self._declare(name, target.span, sig.name):
                    name = self._fresh(sig.name)  # keep the graph well formed after the finding
            else:
                name = self._fresh(sig.name)
            if sig.name == "send_var" and name in self.graph.tensors:
                outputs[result.name] = Ref(name)
                continue
            self._add_tensor(name, elem, shape)
            outputs[result.name] = Ref(name)
        op = Operation(sig.name, inputs, attribs, outputs, dtype, span, explicit)
        self.graph.operations.append(op)
        values = list(outputs.values())
        return values[0] if len(values) == 1 else tuple(values)

    def _array_count(self, target: ast.Expr | None) -> int:
        return len(target.items) if isinstance(target, ast.ArrayExpr) else 0

    def _array_targets(self, target: ast.Expr | None, count: int, sig: FragmentSig,
                       span: Span) -> list[tuple[str, Span | None]] | None:
        if target is None:
            return [(self._fresh(sig.name), None) for _ in range(count)]
        if not isinstance(target, ast.ArrayExpr) or not all(isinstance(i, ast.Identifier) for i in target.items):
            self.report("NNEF-E017", f"the result of '{sig.name}' is an array: assign it to [a, b, ...]", target.span)
            return None
        if len(target.items) != count:
            self.report("NNEF-E017", f"'{sig.name}' gives {count} tensors here but the left-hand side has "
                        f"{len(target.items)}", target.span)
            for ident in target.items:
                self._declare_poisoned(ident)  # type: ignore[arg-type]
            return None
        return [(i.name, i.span) for i in target.items]  # type: ignore[union-attr]

    def _add_tensor(self, name: str, dtype: str, shape: list[int] | None) -> None:
        self.graph.tensors[name] = TensorInfo(name, dtype, shape)
        self.dtypes[name] = dtype

    def _infer(self, sig: FragmentSig, inputs: dict[str, Any], attribs: dict[str, Any], span: Span) -> list[Any] | None:
        rule = SHAPE_RULES.get(sig.name)
        if rule is None:
            self.report("NNEF-W051", f"operation '{sig.name}' has no shape rule (a custom primitive fragment): "
                        "its output shapes are unknown and it cannot be executed", span)
            return None
        shapes: dict[str, Any] = {}
        for name, value in inputs.items():
            shape = self._shape_of(value)
            if shape is POISON:
                return None
            shapes[name] = shape
        try:
            return rule(shapes, attribs)
        except ShapeError as error:
            self.report("NNEF-E020", f"{sig.name}: {error}", span)
        except (TypeError, ValueError, IndexError, KeyError, ZeroDivisionError) as error:
            self.report("NNEF-E020", f"{sig.name}: invalid arguments ({error})", span)
        return None

    def _shape_of(self, value: Any) -> Any:
        if isinstance(value, Ref):
            info = self.graph.tensors.get(value.name)
            if info is None or info.shape is None:
                return POISON
            return info.shape
        if isinstance(value, list):
            shapes = [self._shape_of(v) for v in value]
            return POISON if any(s is POISON for s in shapes) else shapes
        return []

    # ------------------------------------------------------------------ whole-graph rules

    def _check_interface(self) -> None:
        assigned = set(self.graph.tensors)
        externals = {r.name for op in self.graph.operations if op.name == "external" for r in op.output_refs()}
        syncs = self.sync_names
        for name in self.definition.params:
            if name.value in externals:
                continue
            if self.graph.item is not None and name.value in syncs:
                continue
            if self.graph.item is not None:
                self.report("NNEF-E080", f"graphitem parameter '{name.value}' is neither declared by external nor a "
                            "sync variable the item reads", name.span)
            else:
                self.report("NNEF-E040", f"graph parameter '{name.value}' is not declared by external", name.span)
        for name in self.definition.results:
            if name.value in self.poisoned:
                continue
            if name.value not in assigned:
                self.report("NNEF-E041", f"graph result '{name.value}' is never assigned", name.span)
            elif name.value in self.sync_pending:
                self.report("NNEF-E080", f"graphitem result '{name.value}' is a sync variable this item never "
                            "sends (send_var)", name.span)

    def _check_unused(self) -> None:
        used = {r.name for op in self.graph.operations for r in op.input_refs()}
        used.update(self.graph.outputs)
        used.update(self.referenced)
        for op in self.graph.operations:
            if op.name in ("send_var", "variablesync"):
                continue
            for ref in op.output_refs():
                if ref.name not in used:
                    verb = "declared" if op.name in TYPE_DECLARATIONS else "computed"
                    self.report("NNEF-W050", f"'{ref.name}' is {verb} but never used", op.span)


def _element_type(spec: ast.TypeSpec) -> str:
    if isinstance(spec, ast.TensorType):
        return spec.item if spec.item not in (None, "?") else "scalar"
    if isinstance(spec, ast.ArrayType) and spec.item is not None:
        return _element_type(spec.item)
    return "scalar"


def _format_attribute(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        from pipeline.nnef.printer import format_scalar

        return format_scalar(value)
    if isinstance(value, str):
        return f"'{value}'"
    if isinstance(value, list):
        return "[" + ", ".join(_format_attribute(v) for v in value) + "]"
    if isinstance(value, tuple):
        return "(" + ", ".join(_format_attribute(v) for v in value) + ")"
    return str(value)


def _attribute_binary(op: str, left: Any, right: Any) -> Any:
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

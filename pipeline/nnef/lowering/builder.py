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

The builder is one walk over the body, cut into parts with one idea each, mixed into
`GraphBuilder`: declarations.py (names, SSA, bindings), expressions.py (values of
expressions), invocations.py (arguments, types, explicitness, fragment expansion),
emission.py (operations, result tensors, shapes), interface.py (whole-graph rules), on the
values of values.py. They are not separate passes over the graph: lowering a compound
fragment needs the values (attributes, shapes) computed by the assignments before it, so
evaluation, checking and emission advance together, assignment by assignment. Recursion is
bounded in one place for fragments (`MAX_FRAGMENT_DEPTH`, invocations.py `_expand`); the
expression walk (`Expressions._eval`) is where a depth limit for nested expressions belongs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator

from pipeline.diagnostics import Finding, Severity, Span
from pipeline.nnef import ast, limits
from pipeline.nnef.catalogue import FragmentSig
from pipeline.nnef.graph import Graph
from pipeline.nnef.lowering.declarations import Declarations
from pipeline.nnef.lowering.emission import Emission
from pipeline.nnef.lowering.expressions import Expressions
from pipeline.nnef.lowering.interface import GraphRules
from pipeline.nnef.lowering.invocations import Invocations
from pipeline.nnef.lowering.values import lvalue_names


@dataclass
class Options:
    """How strictly to check: `certification` makes explicitness findings errors."""

    profile: str = "certification"
    operator_expressions: bool = True
    fragment_definitions: bool = True


@dataclass
class GraphBuilder(Declarations, Expressions, Invocations, Emission, GraphRules):
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
        self._result_cache: dict[tuple[int, str | None], list[tuple[Any, Any, str]]] = {}
        self._result_sigs: list[FragmentSig] = []
        self._shape_memo: dict[tuple[str, str, str], list[Any]] = {}

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

    def build(self) -> Graph:
        for assignment in self.definition.body:
            try:
                self._assign_top(assignment)
            except RecursionError:  # the limits keep ordinary text far from it; a last guard
                self.report(limits.CODE, "the assignment nests fragment expansions and expressions beyond the "
                            "front end's recursion limit", assignment.span)
                for ident in lvalue_names(assignment.lhs):
                    self._declare_poisoned(ident)
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
        too_deep = None if self.flat_document else limits.depth_finding(rhs)
        if too_deep is not None:  # refused before the recursive evaluation
            self.findings.append(too_deep)
            for ident in lvalue_names(lhs):
                self._declare_poisoned(ident)
            return
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

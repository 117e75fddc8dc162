"""Checks of the fragments a document defines (KHR_enable_fragment_definitions).

A fragment's prototype is checked when it is declared (duplicate names, generic
declaration, attribute parameters after tensor ones, defaults of the right type) and its
body statically (undeclared identifiers, reassignment, unknown operations or parameter
names), whether or not the graph invokes it; type and shape errors inside a body are
found when the graph invokes (lowers) the fragment.
"""

from __future__ import annotations

from typing import Iterator, Mapping

from pipeline.diagnostics import Finding, Severity, Span
from pipeline.nnef import ast, limits
from pipeline.nnef import types as T
from pipeline.nnef.catalogue import FragmentSig, literal_value, operation_extension_declarations, signature_of
from pipeline.nnef.lowering import lvalue_names


def _error(code: str, message: str, span: Span) -> Finding:
    return Finding(code, Severity.ERROR, message, span)


def check_prototype(fragment: ast.Fragment, known: Mapping[str, FragmentSig]) -> list[Finding]:
    findings = []
    name = fragment.name.value
    if name in known and not declares_operation_extension(fragment):
        origin = "standard" if known[name].origin == "standard" else "already"
        findings.append(_error("NNEF-E019", f"operation '{name}' is {origin} defined", fragment.name.span))
    seen: set[str] = set()
    attribute_seen = False
    for param in fragment.params:
        if param.name.value in seen:
            findings.append(_error("NNEF-E019", f"parameter '{param.name.value}' of '{name}' is declared twice", param.name.span))
        seen.add(param.name.value)
        is_attribute = T.is_attribute(param.type)
        if attribute_seen and not is_attribute:
            findings.append(_error("NNEF-E019", f"tensor parameter '{param.name.value}' of '{name}' follows an "
                                   "attribute parameter; attributes come last", param.name.span))
        attribute_seen |= is_attribute
        if param.default is not None:
            try:
                value = literal_value(param.default)
            except ValueError:
                findings.append(_error("NNEF-E019", f"default of '{param.name.value}' must be a literal", param.default.span))
                continue
            if not T.castable(T.type_of_value(value), param.type):
                findings.append(_error("NNEF-E015", f"default of '{param.name.value}' has type "
                                       f"{T.format_type(T.type_of_value(value))}, expected "
                                       f"{T.format_type(param.type)}", param.default.span))
    for result in fragment.results:
        if result.name.value in seen:
            findings.append(_error("NNEF-E019", f"'{result.name.value}' of '{name}' is both a parameter and a result",
                                   result.name.span))
        seen.add(result.name.value)
    if len({T.is_attribute(r.type) for r in fragment.results}) > 1:
        findings.append(_error("NNEF-E019", f"results of '{name}' must be all tensors or all attributes", fragment.name.span))
    generic_types = any(T.is_generic(p.type) for p in fragment.params) or any(T.is_generic(r.type) for r in fragment.results)
    if generic_types and not fragment.generic:
        findings.append(_error("NNEF-E019", f"'{name}' uses the generic type '?' and must be declared {name}<?>",
                               fragment.name.span))
    if fragment.generic and not generic_types:
        findings.append(_error("NNEF-E019", f"'{name}' is declared generic but has no generic parameter or result",
                               fragment.name.span))
    return findings


def declares_operation_extension(fragment: ast.Fragment) -> bool:
    """Whether `fragment` is the declaration, word for word, of one of the catalogue's operation
    extensions (an exported document declares those it uses: the catalogue's definition applies)."""
    from pipeline.nnef.printer import format_fragment

    declared = {f.name.value: f for f in operation_extension_declarations()}
    known = declared.get(fragment.name.value)
    return known is not None and fragment.body is None and format_fragment(fragment) == format_fragment(known)


def _walk(expr: ast.Expr) -> Iterator[ast.Expr]:
    """Every sub-expression, pre-order, without recursion (comprehension bodies excluded)."""
    stack: list[ast.Expr | None] = [expr]
    while stack:
        node = stack.pop()
        if node is None:
            continue
        yield node
        if not isinstance(node, ast.Comprehension):
            stack.extend(reversed(limits.children(node)))


def invoked_names(expr: ast.Expr) -> set[str]:
    """The fragments `expr` invokes (comprehension bodies included), found without recursion."""
    found: set[str] = set()
    stack: list[ast.Expr | None] = [expr]
    while stack:
        node = stack.pop()
        if node is None:
            continue
        if isinstance(node, ast.Invocation):
            found.add(node.name.value)
        stack.extend(limits.children(node))
    return found


def _check_expr(expr: ast.Expr, names: set[str], catalogue: Mapping[str, FragmentSig],
                where: str, findings: list[Finding]) -> None:
    if isinstance(expr, ast.Comprehension):
        inner = set(names)
        for it in expr.iterators:
            _check_expr(it.iterable, names, catalogue, where, findings)
            inner.update(i.name for i in lvalue_names(it.target))
        if expr.condition is not None:
            _check_expr(expr.condition, inner, catalogue, where, findings)
        _check_expr(expr.body, inner, catalogue, where, findings)
        return
    for node in _walk(expr):
        if node is not expr and isinstance(node, ast.Comprehension):
            _check_expr(node, names, catalogue, where, findings)
            continue
        if isinstance(node, ast.Identifier) and node.name not in names:
            findings.append(_error("NNEF-E010", f"undeclared identifier '{node.name}' in {where}", node.span))
        elif isinstance(node, ast.Invocation):
            sig = catalogue.get(node.name.value)
            if sig is None:
                findings.append(_error("NNEF-E012", f"unknown operation '{node.name.value}'", node.name.span))
                continue
            for arg in node.args:
                if arg.name is not None and sig.param(arg.name.value) is None:
                    findings.append(_error("NNEF-E014", f"operation '{sig.name}' has no parameter '{arg.name.value}'",
                                           arg.name.span))
            if sum(1 for a in node.args if a.name is None) > len(sig.params):
                findings.append(_error("NNEF-E013", f"too many arguments: '{sig.name}' has {len(sig.params)} "
                                       "parameters", node.span))


def check_body(fragment: ast.Fragment, catalogue: Mapping[str, FragmentSig]) -> list[Finding]:
    """Static checks of a compound fragment's body."""
    findings: list[Finding] = []
    where = f"fragment '{fragment.name.value}'"
    names = {p.name.value for p in fragment.params}
    assigned: dict[str, Span] = {}
    for assignment in fragment.body or ():
        too_deep = limits.depth_finding(assignment.rhs)
        if too_deep is not None:  # refused before the recursive checks
            findings.append(too_deep)
        else:
            _check_expr(assignment.rhs, names, catalogue, where, findings)
        for ident in lvalue_names(assignment.lhs):
            if ident.name in names:
                first = assigned.get(ident.name)
                message = (f"identifier '{ident.name}' is already assigned in {where}" if first
                           else f"parameter '{ident.name}' of {where} cannot be assigned")
                findings.append(Finding("NNEF-E011", Severity.ERROR, message, ident.span,
                                        (("first assigned here", first),) if first else ()))
            names.add(ident.name)
            assigned.setdefault(ident.name, ident.span)
    for result in fragment.results:
        if result.name.value not in assigned:
            findings.append(_error("NNEF-E041", f"result '{result.name.value}' of {where} is never assigned",
                                   result.name.span))
    return findings


def user_catalogue(document: ast.Document, standard: Mapping[str, FragmentSig]) -> tuple[dict[str, FragmentSig], list[Finding]]:
    """The catalogue a document's graph sees: standard + extension + its own fragments."""
    catalogue = dict(standard)
    findings: list[Finding] = []
    for fragment in document.fragments:
        findings += check_prototype(fragment, catalogue)
        if fragment.name.value not in catalogue:
            catalogue[fragment.name.value] = signature_of(fragment, "user")
    for fragment in document.fragments:
        if fragment.body is not None:
            findings += check_body(fragment, catalogue)
    return catalogue, findings

"""Item files read by the Khronos NNEF parser (HLR-FMT-005), which knows no extension.

`strip_extension` turns one graphitem into a plain NNEF graph that keeps every other
statement as it is: the `graphitem ITEM name` header becomes `graph name`, the
`variablesync` and `send_var` statements are removed, each `y = get_var(W, s)` becomes
`y = external<T>(shape = S)` (T and S from the declaration of s), and in the header each
sync variable read is replaced by the value received, each one written by the value
sent. `compare_with_khronos` then parses that text with the Khronos parser (PyPI
`nnef`, an independent implementation) and with our checker, and compares the two
graphs: operations with every attribute (defaults filled in), inputs, outputs, shapes.
"""

from __future__ import annotations

from pipeline.nnef import ast, build, khronos
from pipeline.nnef.checker import check_text
from pipeline.nnef.parser import parse_text
from pipeline.nnef.printer import print_document


def _invocation(assignment: ast.Assignment) -> ast.Invocation | None:
    return assignment.rhs if isinstance(assignment.rhs, ast.Invocation) else None


def _arg(invocation: ast.Invocation, index: int, name: str) -> ast.Expr:
    named = [a.value for a in invocation.args if a.name is not None and a.name.value == name]
    if named:
        return named[0]
    return [a.value for a in invocation.args if a.name is None][index]


def strip_graphitem(graph: ast.GraphDef) -> ast.GraphDef:
    """The plain-NNEF reading of one graphitem (see the module docstring)."""
    declared: dict[str, ast.Invocation] = {}
    sent: dict[str, str] = {}
    received: dict[str, str] = {}
    body: list[ast.Assignment] = []
    for assignment in graph.body:
        call = _invocation(assignment)
        name = call.name.value if call is not None else ""
        target = assignment.lhs.name if isinstance(assignment.lhs, ast.Identifier) else ""
        if name == "variablesync":
            declared[target] = call  # type: ignore[assignment]
        elif name == "send_var":
            data = _arg(call, 1, "data")  # type: ignore[arg-type]
            sent[target] = data.name if isinstance(data, ast.Identifier) else ""
        elif name == "get_var":
            sync = _arg(call, 1, "data")  # type: ignore[arg-type]
            sync_name = sync.name if isinstance(sync, ast.Identifier) else ""
            received[sync_name] = target
            declaration = declared[sync_name]
            shape = _arg(declaration, 0, "shape")
            body.append(ast.Assignment(assignment.lhs, ast.Invocation(
                ast.Name("external"), declaration.type_arg, (ast.Argument(ast.Name("shape"), shape),))))
        else:
            body.append(assignment)
    params: list[str] = []
    for param in graph.params:
        params.append(received.get(param.value, param.value))
    params += [v for v in received.values() if v not in params]
    results: list[str] = []
    for result in graph.results:
        value = sent.get(result.value, result.value)
        if value not in results:
            results.append(value)
    return build.graph(graph.name.value, params, results, body)


def strip_extension(text: str, file: str = "<item>") -> str:
    """The text of a document of graphitems, each turned into a plain graph."""
    parsed = parse_text(text, file)
    if parsed.document is None:
        raise ValueError(f"{file} does not parse: {parsed.findings[0].message if parsed.findings else ''}")
    document = parsed.document
    graphs = tuple(strip_graphitem(g) if g.item is not None else g for g in document.graphs)
    plain = ast.Document(document.version, document.extensions, document.fragments, graphs)
    return print_document(build.with_operation_extensions(plain))  # erf & co. declared, as the export does


def compare_with_khronos(text: str) -> str:
    """Parse a plain-NNEF text with Khronos and with our checker; '' when the graphs agree,
    else the first difference. Raises ImportError when `nnef` is not installed."""
    import nnef  # noqa: F401 - ImportError tells the caller the reference is missing

    report = check_text(text, "graph.nnef")
    errors = [f for f in report.findings if f.is_error]
    if errors or len(report.graphs) != 1:
        first = errors[0] if errors else None
        return f"our checker rejects the plain text: {first.code}: {first.message}" if first else "no single graph"
    try:
        theirs = khronos.load_text(text)
    except Exception as error:  # noqa: BLE001 - the Khronos parser raises several kinds
        return f"the Khronos parser rejects it: {error}"
    return khronos.graph_difference(report.graphs[0], theirs)

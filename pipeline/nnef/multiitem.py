"""Cross-item rules of the multi-item extension (docs/design.md, "The multi-item extension").

Given every `graphitem` of a multi-item description (from one or several files):
item ids are unique; each `get_var(W, v)` in reader R has a matching
`v = send_var([... R ...], x)` in W; each sync variable has exactly one writer; every
item declaring `v` declares the same shape and type, and the sent value has that shape;
tensors shared by several items (inputs, parameters) are declared identically. An item
referenced but not given is a note, not an error: checking one item file alone is
legitimate, and the cross-item rules for it simply cannot run.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Iterable

from pipeline.diagnostics import Finding, Severity, Span
from pipeline.nnef.graph import Graph, Operation, Ref


@dataclass
class _ItemFacts:
    graph: Graph
    declarations: dict[str, Operation] = field(default_factory=dict)
    sends: dict[str, Operation] = field(default_factory=dict)
    gets: list[Operation] = field(default_factory=list)
    received: set[tuple[str, str]] = field(default_factory=set)  # (writer item, sync variable) read


def _facts(graph: Graph) -> _ItemFacts:
    facts = _ItemFacts(graph)
    for op in graph.operations:
        if op.name == "variablesync":
            facts.declarations[op.output_refs()[0].name] = op
        elif op.name == "send_var":
            facts.sends[op.output_refs()[0].name] = op
        elif op.name == "get_var":
            facts.gets.append(op)
            data = op.inputs.get("data")
            if isinstance(data, Ref):
                facts.received.add((str(op.attribs.get("source")), data.name))
    return facts


def _finding(code: str, message: str, span: Span | None, related: Iterable[tuple[str, Span]] = ()) -> Finding:
    severity = Severity.NOTE if code.startswith("NNEF-N") else (
        Severity.WARNING if code.startswith("NNEF-W") else Severity.ERROR)
    return Finding(code, severity, message, span, tuple((m, s) for m, s in related if s is not None))


def _shape(graph: Graph, ref: Ref) -> list[int] | None:
    info = graph.tensors.get(ref.name)
    return info.shape if info else None


def check_items(graphs: list[Graph]) -> list[Finding]:
    """All cross-item findings for the item graphs given (plain graphs are ignored)."""
    findings: list[Finding] = []
    items: dict[str, _ItemFacts] = {}
    for graph in graphs:
        if graph.item is None:
            continue
        if graph.item in items:
            first = items[graph.item].graph
            findings.append(_finding("NNEF-E076", f"item '{graph.item}' is defined more than once",
                                     _graph_span(graph), [("first defined here", _graph_span(first))]))
            continue
        items[graph.item] = _facts(graph)
    missing_noted: set[str] = set()

    def known(item: str, span: Span | None) -> bool:
        if item in items:
            return True
        if item not in missing_noted:
            missing_noted.add(item)
            findings.append(_finding("NNEF-N074", f"item '{item}' is not among the descriptions checked; "
                                     "cross-item checks involving it were not run", span))
        return False

    writers: dict[str, list[tuple[str, Operation]]] = defaultdict(list)
    for name, facts in items.items():
        for var, op in facts.sends.items():
            writers[var].append((name, op))
            for dest in op.attribs.get("dest", []):
                if dest == name:
                    findings.append(_finding("NNEF-E077", f"item '{name}' sends '{var}' to itself", op.span))
                elif known(dest, op.span) and (name, var) not in items[dest].received:
                    findings.append(_finding("NNEF-W079", f"'{var}' is sent by '{name}' to '{dest}', which never "
                                             f"reads it with get_var({name}, {var})", op.span))
            declared = facts.declarations.get(var)
            data = op.inputs.get("data")
            sent = _shape(facts.graph, data) if isinstance(data, Ref) else (None if data is None else [])
            if declared is not None and sent is not None and list(declared.attribs["shape"]) != sent:
                what = f"has shape {sent}" if isinstance(data, Ref) else f"is the literal {data!r} (shape [])"
                findings.append(_finding("NNEF-E072", f"'{var}' is declared with shape {declared.attribs['shape']} "
                                         f"but the value sent {what}", op.span,
                                         [("declared here", declared.span)]))
    for var, ops in writers.items():
        if len(ops) > 1:
            first_item, first = ops[0]
            for item, op in ops[1:]:
                findings.append(_finding("NNEF-E071", f"sync variable '{var}' is written by '{first_item}' and "
                                         f"'{item}'; a sync variable has exactly one writer", op.span,
                                         [(f"written by '{first_item}' here", first.span)]))
    for name, facts in items.items():
        for op in facts.gets:
            source, data = op.attribs.get("source"), op.inputs.get("data")
            if not isinstance(data, Ref):
                continue
            var = data.name
            if source == name:
                findings.append(_finding("NNEF-E077", f"item '{name}' reads '{var}' from itself", op.span))
                continue
            if not known(source, op.span):
                continue
            send = items[source].sends.get(var)
            if send is None and var in items[source].graph.failed:
                continue  # the writer's send_var failed: already reported there
            if send is None:
                findings.append(_finding("NNEF-E070", f"get_var({source}, {var}) in '{name}': item '{source}' "
                                         f"never sends '{var}'", op.span))
            elif name not in send.attribs.get("dest", []):
                findings.append(_finding("NNEF-E070", f"get_var({source}, {var}) in '{name}': the send_var of "
                                         f"'{var}' in '{source}' does not name '{name}' among its readers",
                                         op.span, [("sent here", send.span)]))
    findings += _agreement(items)
    return findings


def _graph_span(graph: Graph) -> Span | None:
    return graph.span or Span(graph.source, 1, 1)


def _agreement(items: dict[str, _ItemFacts]) -> list[Finding]:
    """Sync variables and shared tensors declared identically wherever they appear."""
    findings: list[Finding] = []
    seen: dict[tuple[str, str], tuple[str, Operation]] = {}
    for name, facts in sorted(items.items()):
        for op in facts.graph.operations:
            if op.name not in ("variablesync", "external", "variable", "constant"):
                continue
            var = op.output_refs()[0].name
            kind = "sync" if op.name == "variablesync" else "shared"
            key = (kind, var)
            signature = (op.name, op.dtype, list(op.attribs.get("shape", [])), op.attribs.get("label"))
            if key not in seen:
                seen[key] = (name, op)
                continue
            other_item, other = seen[key]
            other_signature = (other.name, other.dtype, list(other.attribs.get("shape", [])), other.attribs.get("label"))
            if signature != other_signature:
                code = "NNEF-E072" if kind == "sync" else "NNEF-E075"
                findings.append(_finding(code, f"'{var}' is declared in '{name}' as {_describe(op)} but in "
                                         f"'{other_item}' as {_describe(other)}", op.span,
                                         [(f"declared in '{other_item}' here", other.span)]))
    return findings


def _describe(op: Operation) -> str:
    label = f", label '{op.attribs['label']}'" if "label" in op.attribs else ""
    return f"{op.name}<{op.dtype}>(shape {op.attribs.get('shape')}{label})"

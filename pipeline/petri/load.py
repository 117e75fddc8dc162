"""Reading the descriptions to translate: NNEF files -> checked flat graphs.

The Petri step trusts nothing it reads: the descriptions go through the NNEF checker
(standard profile, no tensor files: the nets depend on the dataflow only). Syntax and
static-semantics errors make a description unusable (PETRI-E001, bad input); the cross-item
findings of the multi-item rules do not, because the nets exist to show their consequences
as counterexamples (a get_var with no writer becomes a missing producer, a cycle of
exchanges a deadlock).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence

from pipeline.diagnostics import Finding, Location, PipelineError, Span
from pipeline.nnef.checker import check_paths
from pipeline.nnef.graph import Graph

# Cross-item rules of the extension (pipeline.nnef.multiitem): reported, not blocking.
CROSS_ITEM_CODES = frozenset(f"NNEF-E{n:03d}" for n in range(70, 81)) | {"NNEF-N074"}


def _relative_span(span: Span | None, root: Path, files: dict[str, str | None]) -> Span | None:
    """`span` with its file relative to `root`; `files` remembers each file's relative name (one
    resolution per file, not per operation, and one string shared by its operations)."""
    if span is None:
        return None
    if span.file not in files:
        try:
            files[span.file] = Path(span.file).resolve().relative_to(root.resolve()).as_posix()
        except ValueError:
            files[span.file] = None
    rel = files[span.file]
    return span if rel is None else span._replace(file=rel)


def load_graphs(paths: Sequence[str | os.PathLike[str]], root: str | os.PathLike[str] | None = None) -> tuple[list[Graph], list[Finding]]:
    """Checked graphs of the files (all graphitems together), and the non-blocking findings.

    With `root`, source locations are made relative to it, so that artifacts hold no
    absolute path. Raises PipelineError PETRI-E001 at the first blocking error.
    """
    report = check_paths(list(paths), profile="standard", tensors=False)
    blocking = [f for f in report.findings if f.is_error and f.code not in CROSS_ITEM_CODES]
    if blocking:
        first = blocking[0]
        more = f" (and {len(blocking) - 1} more error(s))" if len(blocking) > 1 else ""
        raise PipelineError("PETRI-E001", f"the description does not check: {first.code}: {first.message}{more}",
                            Location.of_span(first.span))
    if root is not None:
        base = Path(root)
        files: dict[str, str | None] = {}
        for graph in report.graphs:
            graph.span = _relative_span(graph.span, base, files)
            for op in graph.operations:
                op.span = _relative_span(op.span, base, files)
    return report.graphs, [f for f in report.findings if f.code in CROSS_ITEM_CODES]

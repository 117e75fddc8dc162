"""What every `python -m pipeline` command shares: exit codes, error and finding rendering, result tables.

One place draws a problem the way a compiler does, whatever its origin (an NNEF finding, a
deployment spec key, a plan, an ONNX node):

    models/lenet5/deploy.yaml:18:11: deployments.single.sync: error DEPLOY-E004: 'evnt' is not one of event, barrier
        sync: evnt
              ^~~~

The source line and the caret appear when the location has a file and a line and the file
can be read (bounded: files over `MAX_SOURCE_BYTES` are not shown).
"""

from __future__ import annotations

import json
import sys
import traceback
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence, TextIO

from pipeline.diagnostics import (DEBUG_ENV, INTERNAL_ERROR, IO_ERROR, Finding, Location, PipelineError, Span,  # noqa: F401
                                  debug_requested, describe_unexpected)
from pipeline.oneline import MAX_LINE, shorten  # noqa: F401 (re-exported)

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2
MAX_SOURCE_BYTES = 16 * 1024 * 1024


def _source_line(span: Span, texts: Mapping[str, str] | None) -> str | None:
    text = texts.get(span.file) if texts is not None else None
    if text is None:
        path = Path(span.file)
        try:
            if not path.is_file() or path.stat().st_size > MAX_SOURCE_BYTES:
                return None
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None
    lines = text.splitlines()
    if span.line > len(lines):
        return None
    return lines[span.line - 1].replace("\t", " ")


def caret_lines(span: Span | None, texts: Mapping[str, str] | None = None) -> list[str]:
    """The source line of `span` and a caret under it (empty when unknown or unreadable)."""
    if span is None or span.line <= 0:
        return []
    source = _source_line(span, texts)
    if source is None:
        return []
    start = max(span.column, 1)
    end = span.end_column if span.end_line in (0, span.line) and span.end_column > start else start + 1
    width = max(1, min(end, len(source) + 1) - start)
    return [f"    {source}", "    " + " " * (start - 1) + "^" + "~" * (width - 1)]


def render_problem(code: str, message: str, location: Location, severity: str = "error",
                   texts: Mapping[str, str] | None = None) -> str:
    """`location: severity CODE: message`, then the source line and caret when known."""
    where = f"{location}: " if location else ""
    return "\n".join([f"{where}{severity} {code}: {message}", *caret_lines(location.span, texts)])


def render_error(error: PipelineError, texts: Mapping[str, str] | None = None) -> str:
    """Every problem a PipelineError stands for (a document validator reports them all)."""
    return "\n".join(render_problem(p.code, p.message, p.location, texts=texts) for p in error.all_problems())


def format_finding(finding: Finding, texts: Mapping[str, str] | None = None) -> str:
    """A checker finding like a compiler diagnostic, with its related notes."""
    text = render_problem(finding.code, finding.message, Location.of_span(finding.span), finding.severity.value, texts)
    notes = [f"{span}: note: {message}" for message, span in finding.related]
    return "\n".join([text, *notes])


def print_findings(findings: Iterable[Finding], out: TextIO, texts: Mapping[str, str] | None = None) -> None:
    for finding in findings:
        print(format_finding(finding, texts), file=out)


def report_error(error: PipelineError) -> int:
    """Print a bad-input error on stderr; the exit status for bad input."""
    print(render_error(error), file=sys.stderr)
    return EXIT_BAD_INPUT


def report_unexpected(exc: BaseException, debug: bool = False) -> int:
    """Print `describe_unexpected(exc)` on stderr (and the traceback when asked); exit status 2."""
    if debug or debug_requested():
        traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
    print(render_error(exc) if isinstance(exc, PipelineError) else describe_unexpected(exc), file=sys.stderr)
    return EXIT_BAD_INPUT


def fail_usage(message: str) -> int:
    """Print a usage error on stderr; the exit status for bad usage."""
    print(f"error: {message}", file=sys.stderr)
    return EXIT_BAD_INPUT


def model_and_root(text: str) -> tuple[str, Path]:
    """A model name or models/<m> folder -> (model, project root); NAME-E001 for a name outside
    the grammar (docs/deploy.md, "Names"): it becomes artifacts/<m>/, which `../x` would leave."""
    from pipeline.names import check_name

    path = Path(text)
    if path.is_dir() and (path / "deploy.yaml").is_file():
        return check_name(path.resolve().name, "model name", Location.in_file(text)), path.resolve().parents[1]
    return check_name(text, "model name"), Path(".")


def print_results(results: Sequence[Any], as_json: bool) -> int:
    """Check results as a table (or JSON); exit 1 when one failed."""
    from pipeline.registry.checks import Verdict, results_document

    if as_json:
        print(json.dumps(results_document(list(results)), indent=2, sort_keys=True))
    else:
        for r in results:
            line = f"{r.verdict.value:8} {r.check_id:20} {r.subject}"
            print(line + (f": {r.reason}" if r.reason else ""))
    return EXIT_FAILED if any(r.verdict is Verdict.FAIL for r in results) else EXIT_OK

"""What every `python -m pipeline` command shares: exit codes, error and finding rendering, result tables.

One place draws a problem the way a compiler does, whatever its origin (an NNEF finding, a
deployment spec key, a plan, an ONNX node):

    models/lenet5/deploy.yaml:18:11: deployments.single.sync: error DEPLOY-E004: 'evnt' is not one of event, barrier
        sync: evnt
              ^~~~

The source line and the caret appear when the location has a file and a line and the file
can be read as text (bounded: files over `MAX_SOURCE_BYTES`, links and binary files are not
shown, each file is read once per rendering, a long line is cut around its caret, and one
error draws at most `MAX_PROBLEMS_SHOWN` of its problems).

Everything a command prints goes through `say`, which escapes control characters
(`diagnostics.printable`): a name, a message or a line quoted from a file can neither drive the
terminal (escape sequences, carriage returns) nor read differently from its bytes (bidirectional
overrides).
"""

from __future__ import annotations

import json
import sys
import traceback
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence, TextIO

from pipeline.diagnostics import (DEBUG_ENV, INTERNAL_ERROR, IO_ERROR, Finding, Location, PipelineError, Span,  # noqa: F401
                                  debug_requested, describe_unexpected, printable)
from pipeline.project.oneline import MAX_LINE, shorten  # noqa: F401 (re-exported)

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2
MAX_SOURCE_BYTES = 16 * 1024 * 1024
# What one error may print (docs/conventions.md, "Limits"): a spec naming 100,000 unknown tensors
# on one 789 KB line once printed that line 100,000 times (1.8 GB, then MemoryError). Each source
# file is read once per rendering, at most MAX_PROBLEMS_SHOWN problems are drawn, and a source
# line is cut to a window of MAX_LINE_CHARS around its caret.
MAX_PROBLEMS_SHOWN = 50          # PIPELINE_MAX_PROBLEMS_SHOWN
PROBLEMS_VARIABLE = "PIPELINE_MAX_PROBLEMS_SHOWN"
MAX_LINE_CHARS = 160


class _Sources(dict):  # type: ignore[type-arg]
    """File -> its lines, read once (None when unreadable or too large); `texts` given first."""

    def __init__(self, texts: Mapping[str, str] | None) -> None:
        super().__init__()
        self.texts = texts

    def lines(self, file: str) -> list[str] | None:
        if file not in self:
            text = self.texts.get(file) if self.texts is not None else None
            if text is None:
                text = _read_source(file)
            self[file] = text.splitlines() if text is not None else None
        return self[file]


def _read_source(file: str) -> str | None:
    """The text of a source file to draw lines from; None for a file that is not text (an archive, a
    binary: its "first line" is bytes no terminal should get), too large, a link or unreadable."""
    from pipeline.files.readguard import InputRefused, read_input

    try:
        data = read_input(file, max_bytes=MAX_SOURCE_BYTES)
    except (InputRefused, OSError):
        return None
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _source_line(span: Span, sources: _Sources) -> str | None:
    lines = sources.lines(span.file)
    if lines is None or span.line > len(lines):
        return None
    return lines[span.line - 1].replace("\t", " ")


def caret_lines(span: Span | None, texts: Mapping[str, str] | None = None, sources: _Sources | None = None) -> list[str]:
    """The source line of `span` and a caret under it (empty when unknown or unreadable); a line longer
    than MAX_LINE_CHARS is cut to a window around the caret, marked with '...'."""
    if span is None or span.line <= 0:
        return []
    source = _source_line(span, sources if sources is not None else _Sources(texts))
    if source is None:
        return []
    start = max(span.column, 1)
    end = span.end_column if span.end_line in (0, span.line) and span.end_column > start else start + 1
    width = max(1, min(end, len(source) + 1) - start)
    if len(source) > MAX_LINE_CHARS:
        first = max(0, min(start - 1 - MAX_LINE_CHARS // 3, len(source) - MAX_LINE_CHARS))
        head = "..." if first > 0 else ""
        tail = "..." if first + MAX_LINE_CHARS < len(source) else ""
        source = head + source[first:first + MAX_LINE_CHARS] + tail
        start = start - first + len(head)
        width = max(1, min(width, MAX_LINE_CHARS + len(head) - start + 1))
    # escaped, the caret kept under the same characters (an escape is wider than what it stands for)
    before = printable(source[:start - 1], newlines=False)
    under = printable(source[start - 1:start - 1 + width], newlines=False)
    after = printable(source[start - 1 + width:], newlines=False)
    return [f"    {before}{under}{after}", "    " + " " * len(before) + "^" + "~" * max(0, len(under) - 1)]


def render_problem(code: str, message: str, location: Location, severity: str = "error",
                   texts: Mapping[str, str] | None = None, sources: _Sources | None = None) -> str:
    """`location: severity CODE: message`, then the source line and caret when known."""
    where = f"{location}: " if location else ""
    return "\n".join([printable(f"{where}{severity} {code}: {message}"), *caret_lines(location.span, texts, sources)])


def render_error(error: PipelineError, texts: Mapping[str, str] | None = None) -> str:
    """Every problem a PipelineError stands for (a document validator reports them all), the first
    MAX_PROBLEMS_SHOWN of them drawn, each source file read once."""
    from pipeline.files.yamlguard import limit_from_env

    problems = error.all_problems()
    try:
        limit, refused = limit_from_env(PROBLEMS_VARIABLE, MAX_PROBLEMS_SHOWN), None
    except PipelineError as bad:     # the error being drawn comes first; the variable is named after it
        limit, refused = MAX_PROBLEMS_SHOWN, bad
    sources = _Sources(texts)
    drawn = [render_problem(p.code, p.message, p.location, sources=sources) for p in problems[:limit]]
    if refused is not None:
        drawn.append(render_problem(refused.code, refused.message + " (the default is used here)", refused.location,
                                    "note"))
    if len(problems) > limit:
        drawn.append(f"... and {len(problems) - limit} more problem(s) (the first {limit} are shown; "
                     f"raise the number with the environment variable {PROBLEMS_VARIABLE})")
    return "\n".join(drawn)


def format_finding(finding: Finding, texts: Mapping[str, str] | None = None, sources: _Sources | None = None) -> str:
    """A checker finding like a compiler diagnostic, with its related notes."""
    text = render_problem(finding.code, finding.message, Location.of_span(finding.span), finding.severity.value, texts,
                          sources)
    notes = [printable(f"{span}: note: {message}") for message, span in finding.related]
    return "\n".join([text, *notes])


def print_findings(findings: Iterable[Finding], out: TextIO, texts: Mapping[str, str] | None = None) -> None:
    sources = _Sources(texts)   # each file read once, however many findings point into it
    for finding in findings:
        say(format_finding(finding, texts, sources), file=out)


def say(text: Any, file: TextIO | None = None) -> None:
    """Print `text` on `file` (default stdout) with its control characters escaped (diagnostics.printable):
    the one way a command prints what may quote its input (a file name, an entry of a package, a
    model name from a baseline, a reason from a shard)."""
    print(printable(text), file=file if file is not None else sys.stdout)


def report_error(error: PipelineError) -> int:
    """Print a bad-input error on stderr; the exit status for bad input."""
    say(render_error(error), file=sys.stderr)
    return EXIT_BAD_INPUT


def report_unexpected(exc: BaseException, debug: bool = False) -> int:
    """Print `describe_unexpected(exc)` on stderr (and the traceback when asked); exit status 2."""
    if debug or debug_requested():
        traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
    say(render_error(exc) if isinstance(exc, PipelineError) else describe_unexpected(exc), file=sys.stderr)
    return EXIT_BAD_INPUT


def fail_usage(message: str) -> int:
    """Print a usage error on stderr; the exit status for bad usage."""
    say(f"error: {message}", file=sys.stderr)
    return EXIT_BAD_INPUT


def model_and_root(text: str) -> tuple[str, Path]:
    """A model name or models/<m> folder -> (model, project root); NAME-E001 for a name outside
    the grammar (docs/deploy.md, "Names"): it becomes artifacts/<m>/, which `../x` would leave."""
    from pipeline.files.names import check_name

    path = Path(text)
    if path.is_dir() and (path / "deploy.yaml").is_file():
        return check_name(path.resolve().name, "model name", Location.in_file(text)), path.resolve().parents[1]
    return check_name(text, "model name"), Path(".")


def print_results(results: Sequence[Any], as_json: bool) -> int:
    """Check results as a table (or JSON); exit 1 when one failed."""
    from pipeline.ledger.checks import Verdict, results_document

    if as_json:
        print(json.dumps(results_document(list(results)), indent=2, sort_keys=True))
    else:
        for r in results:
            line = f"{r.verdict.value:8} {r.check_id:20} {r.subject}"
            say(line + (f": {r.reason}" if r.reason else ""))
    return EXIT_FAILED if any(r.verdict is Verdict.FAIL for r in results) else EXIT_OK

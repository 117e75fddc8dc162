"""The generated code and the item NNEF files of a model as report pages, one per file, with line anchors.

From the model's page a code-trace cell opens `code/<project-relative path>.html#L-<first>-<last>`
beside it (reports/<model>/code/... in the project, evidence/<model>/code/... in the package):
the page scrolls to the range and marks it. Every line has its anchor (`#L-<n>`), every range a
trace names has one too (so the link lands without script); the script only marks the range.

Each page is two-way: beside the code, the trace of the file: for generated code each range with
the NNEF instruction it implements (a link to the line of the item's NNEF page) or the named
infrastructure part and the requirements it serves (links to the index); for an NNEF file each
instruction with the code ranges implementing it. Highlighting is Pygments' (the C, CUDA and JSON
lexers, and NNEF's grammar as a Pygments RegexLexer). A file is read only below the project root,
through pipeline/files/readguard.py, and only up to MAX_BYTES (a page then says why it shows nothing).
No timestamp: the same files give the same pages.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from typing import Iterable

from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexer import RegexLexer, bygroups, words
from pygments.lexers import CLexer, CudaLexer, JsonLexer, TextLexer
from pygments.token import Comment, Keyword, Name, Number, Operator, Punctuation, String, Text, Whitespace

from pipeline.evidence.codetrace import CodeTrace
from pipeline.evidence.html_parts import href, page, table
from pipeline.files.readguard import InputRefused, read_input

CODE_DIR = "code"
MODEL_PAGE = "report.html"    # the model's page, in the folder the code pages' folder is in (paths.MODEL_REPORT_FILE)
MAX_BYTES = 16 << 20          # a file larger than this is linked, not rendered
# A file larger than this (the weights headers: thousands of lines of hex floats) is shown plain, every line
# still anchored: colours would cost 5 times its size in markup and three quarters of the pages' time.
MAX_HIGHLIGHTED = 128 << 10
ANCHOR = "L"                  # line n's anchor: #L-n; a range's: #L-first-last


class NnefLexer(RegexLexer):
    """NNEF 1.0.5 text (and the multi-item extension's words) for Pygments."""

    name = "NNEF"
    aliases = ["nnef"]
    filenames = ["*.nnef"]
    tokens = {
        "root": [
            (r"\s+", Whitespace),
            (r"#.*?$", Comment.Single),
            (words(("version", "extension", "fragment", "graph", "graphitem", "for", "in", "if", "else", "yield"),
                   suffix=r"\b"), Keyword),
            (words(("tensor", "integer", "scalar", "logical", "string"), suffix=r"\b"), Keyword.Type),
            (words(("true", "false"), suffix=r"\b"), Keyword.Constant),
            (r"'[^']*'|\"[^\"]*\"", String),
            (r"-?\d+\.\d*([eE][-+]?\d+)?|-?\d+[eE][-+]?\d+|-?\d+", Number),
            (r"([A-Za-z_]\w*)(\s*)(?=[(<])", bygroups(Name.Function, Whitespace)),
            (r"[A-Za-z_]\w*", Name),
            (r"->|==|!=|<=|>=|&&|\|\||[=+\-*/^<>!]", Operator),
            (r"[()\[\]{},;:.]", Punctuation),
            (r".", Text),
        ]
    }


def _lexer(path: str):
    suffix = path.rsplit(".", 1)[-1] if "." in path else ""
    return {"c": CLexer, "h": CLexer, "cu": CudaLexer, "nnef": NnefLexer, "json": JsonLexer}.get(suffix, TextLexer)()


def page_name(path: str) -> str:
    """The page of project-relative `path`, relative to the model's folder."""
    return f"{CODE_DIR}/{path}.html"


def line_href(path: str, first: int, last: int | None = None, prefix: str = "") -> str:
    """The link to lines [first, last] of `path`'s page from a page `prefix` away from the model's folder."""
    anchor = f"{ANCHOR}-{first}" + (f"-{last}" if last is not None and last != first else "")
    return f"{prefix}{page_name(path)}#{anchor}"


@dataclass
class Note:
    """What a range of a file is in the trace: lines [first, last] and an HTML label."""

    first: int
    last: int
    label: str
    sort: tuple = field(default=())


@dataclass
class FileNotes:
    path: str
    kind: str                      # "code" or "nnef"
    notes: list[Note] = field(default_factory=list)


SCRIPT = """
(function () {
  "use strict";
  function mark() {
    var m = /^#L-(\\d+)(?:-(\\d+))?$/.exec(window.location.hash);
    Array.prototype.forEach.call(document.querySelectorAll(".hl-range"), function (e) { e.classList.remove("hl-range"); });
    if (!m) { return; }
    var first = Number(m[1]), last = Number(m[2] || m[1]);
    for (var n = first; n <= last; n += 1) {
      var line = document.getElementById("line-" + n);
      if (line) { line.classList.add("hl-range"); }
    }
    var start = document.getElementById("line-" + first);
    if (start) { start.scrollIntoView({block: "center"}); }
  }
  window.addEventListener("hashchange", mark);
  mark();
}());
"""

STYLE = """
.code-layout { display: flex; gap: 1rem; align-items: flex-start; }
.code-layout .source { flex: 1 1 60%; overflow-x: auto; }
.code-layout .trace { flex: 0 1 40%; max-height: 90vh; overflow-y: auto; position: sticky; top: 0; }
.highlight pre { font-size: .8em; line-height: 1.35; margin: 0; }
.highlight .linenos { color: #8c959f; padding-right: .8em; user-select: none; }
.highlight a { color: inherit; text-decoration: none; }
.hl-range { background: #fff8c5; display: inline-block; width: 100%; }
[id^="line-"]:target { background: #fff8c5; }
"""


def _anchors(html: str, ranges: Iterable[tuple[int, int]]) -> str:
    """An extra anchor `L-first-last` at the first line of each range, so that a link lands without script."""
    starts: dict[int, list[str]] = {}
    for first, last in sorted(set(ranges)):
        if last != first:
            starts.setdefault(first, []).append(f'<a id="{ANCHOR}-{first}-{last}"></a>')
    for first, tags in starts.items():
        marker = f'<span id="line-{first}">'
        html = html.replace(marker, marker + "".join(tags), 1)
    return html


def _plain(text: str) -> str:
    """A file too large to highlight, as Pygments' formatter lays out a page (the same anchors, line spans
    and numbers), without colours: no highlighting, so nothing here is written by hand that Pygments does."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines = lines[:-1]
    width = len(str(len(lines)))
    body = "".join(f'<span id="line-{n}"><a id="{ANCHOR}-{n}" name="{ANCHOR}-{n}"></a><a href="#{ANCHOR}-{n}">'
                   f'<span class="linenos">{n:>{width}}</span></a>{escape(line, quote=False)}\n</span>'
                   for n, line in enumerate(lines, start=1))
    return f'<div class="highlight"><pre><span></span><code>{body}</code></pre></div>\n'


def render_file(notes: FileNotes, root: Path, prefix: str, model_page: str, index_page: str) -> str:
    """The page of one file: its text, highlighted, every line anchored, and its trace beside it.
    `prefix`: from this page to the model's folder; `model_page`, `index_page`: links back."""
    try:
        data = read_input(notes.path, base=root, max_bytes=MAX_BYTES)
    except (InputRefused, OSError) as error:
        why = getattr(error, "reason", None) or str(error)
        body = f"<p>Not shown: {escape(str(why))}.</p>"
        return page(notes.path, f'<a href="{escape(model_page)}">Model page</a>', [], body)
    text = data.decode("utf-8", errors="replace")
    formatter = HtmlFormatter(linenos="inline", lineanchors=ANCHOR, anchorlinenos=True, linespans="line",
                              wrapcode=True)
    shown = highlight(text, _lexer(notes.path), formatter) if len(data) <= MAX_HIGHLIGHTED else _plain(text)
    code = _anchors(shown, [(n.first, n.last) for n in notes.notes])
    rows = [f'<tr><td class="nowrap"><a href="#{ANCHOR}-{n.first}' + (f'-{n.last}' if n.last != n.first else "")
            + f'">{n.first}' + (f"-{n.last}" if n.last != n.first else "") + f"</a></td><td>{n.label}</td></tr>"
            for n in sorted(notes.notes, key=lambda n: (n.first, n.last, n.sort))]
    heading = ("Lines → NNEF instruction or infrastructure part (requirements)" if notes.kind == "code"
               else "NNEF line → generated code")
    trace = (table(f"trace-{notes.kind}", ["Lines", heading], rows) if rows
             else "<p>No trace entry names this file.</p>")
    sha = hashlib.sha256(data).hexdigest()
    meta = (f'<a href="{escape(model_page)}">Model page</a> · <a href="{escape(index_page)}">Index</a> · '
            f'SHA-256 <span class="hash">{sha}</span> · {len(text.splitlines())} lines')
    style = f"<style>{HtmlFormatter().get_style_defs('.highlight')}{STYLE}</style>"
    body = (f'{style}<div class="code-layout"><div class="source">{code}</div>'
            f'<div class="trace">{trace}</div></div><script>{SCRIPT}</script>')
    return page(notes.path, meta, [], body)


def file_notes(traces: Iterable[CodeTrace], prefix: str, index_page: str) -> dict[str, FileNotes]:
    """Every file the traces name, with what each of its ranges is (code files) or implements (NNEF files).
    Links are relative to a page `prefix` away from the model's folder."""
    files: dict[str, FileNotes] = {}

    def notes(path: str, kind: str) -> FileNotes:
        return files.setdefault(path, FileNotes(path, kind))

    seen: set[tuple] = set()
    for trace in traces:
        notes(trace.nnef_file, "nnef")
        for e in trace.entries:
            key = ("entry", trace.nnef_file, e.nnef_line, e.code_file, e.first_line, e.last_line)
            if key in seen:
                continue
            seen.add(key)
            nnef_link = f'<a href="{escape(line_href(trace.nnef_file, e.nnef_line, prefix=prefix))}">' \
                        f"{escape(Path(trace.nnef_file).name)}:{e.nnef_line}</a>"
            notes(e.code_file, "code").notes.append(Note(e.first_line, e.last_line,
                                                         f"{nnef_link} <code>{escape(e.instruction)}</code>",
                                                         (0, e.nnef_line)))
            code_link = f'<a href="{escape(line_href(e.code_file, e.first_line, e.last_line, prefix))}">' \
                        f"{escape(Path(e.code_file).name)}:{e.first_line}-{e.last_line}</a>"
            notes(trace.nnef_file, "nnef").notes.append(Note(e.nnef_line, e.nnef_line,
                                                             f"{code_link} ({escape(trace.item)}, {escape(trace.target)})",
                                                             (0, e.code_file, e.first_line)))
        for p in trace.parts:
            key = ("part", p.name, p.code_file, p.first_line, p.last_line)
            if key in seen:
                continue
            seen.add(key)
            reqs = ", ".join(f'<a href="{escape(index_page)}#req-{escape(r)}">{escape(r)}</a>' for r in p.requirements)
            notes(p.code_file, "code").notes.append(Note(p.first_line, p.last_line,
                                                         f"<em>{escape(p.name)}</em> ({reqs})", (1, p.name)))
    return files


def render_code_pages(traces: list[CodeTrace], root: Path, index_page: str) -> dict[str, str]:
    """name (relative to the model's folder, `code/<path>.html`) -> page, for every file `traces` name.
    `index_page`: the index's path from the model's folder."""
    pages = {}
    by_depth: dict[int, dict[str, FileNotes]] = {}
    for path in sorted(file_notes(traces, "", index_page)):
        if href(path, "") is None or not path:      # absolute or `..`: not a file of the project; never a page
            continue
        depth = page_name(path).count("/")
        up = "../" * depth
        if depth not in by_depth:
            by_depth[depth] = file_notes(traces, up, up + index_page)
        pages[page_name(path)] = render_file(by_depth[depth][path], root, up, up + MODEL_PAGE, up + index_page)
    return pages

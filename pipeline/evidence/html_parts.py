"""What the report pages share: the style, the table script, cells, badges, links and the page frame.

Every page is self-contained: CSS and script inline, pictures embedded as `data:` URIs or
inline SVG, nothing fetched from a network. Links to artifacts are relative to the page, so
the same page works in the project (reports/...) and inside an evidence package
(evidence/...), where the artifacts lie at the same relative place. No timestamp: the same
matrix gives the same bytes.
"""

from __future__ import annotations

import base64
import os
from html import escape
from pathlib import Path
from typing import Iterable, Sequence
from urllib.parse import quote

STYLE = """
:root { --pass:#1b7f3b; --fail:#b3261e; --warn:#9a6700; --muted:#5f6368; --line:#d0d7de; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0 2rem 3rem; color: #1f2328; max-width: 100rem; }
h1 { margin: 1.2rem 0 .2rem; font-size: 1.6rem; }
h2 { margin-top: 2.2rem; border-bottom: 2px solid var(--line); padding-bottom: .2rem; font-size: 1.25rem; }
h3 { margin: 1.2rem 0 .3rem; font-size: 1.05rem; }
.meta { color: var(--muted); margin: 0 0 1rem; }
nav a { margin-right: 1rem; }
table { border-collapse: collapse; width: 100%; margin: .5rem 0 1rem; }
th, td { border: 1px solid var(--line); padding: .25rem .45rem; text-align: left; vertical-align: top; }
td { overflow-wrap: anywhere; }
thead th { background: #f6f8fa; position: sticky; top: 0; }
table.sortable thead th { cursor: pointer; user-select: none; white-space: nowrap; }
table.sortable thead th::after { content: " \\2195"; color: #8c959f; font-size: .8em; }
table.sortable thead th[aria-sort="ascending"]::after { content: " \\25B2"; color: #1f2328; }
table.sortable thead th[aria-sort="descending"]::after { content: " \\25BC"; color: #1f2328; }
code, .hash { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: .85em; }
.hash { word-break: break-all; color: var(--muted); }
.v { display: inline-block; padding: 0 .4rem; border-radius: .6rem; font-size: .85em; white-space: nowrap; border: 1px solid currentColor; margin: 1px 0; }
a .v { text-decoration: none; }
.v-pass, .s-verified { color: var(--pass); }
.v-fail, .s-failed, .sev-error, .v-step-failed { color: var(--fail); font-weight: 600; }
.v-not-run, .v-no-check, .s-not-verified, .s-no-check, .sev-note { color: var(--muted); }
.v-emulated, .v-partial, .v-pass-off-target, .s-partially-verified, .s-verified-only-on-host-or-by-emulation, .sev-warning { color: var(--warn); }
.v-n-a, .s-not-applicable { color: #8c959f; border-style: dashed; }   /* does not apply: grey, counted apart */
.fix { color: #1f2328; font-size: .9em; }
.small { font-size: .85em; color: var(--muted); }
.nowrap { white-space: nowrap; }
.filter { margin: .3rem 0; padding: .2rem .4rem; width: 24rem; max-width: 100%; font: inherit; }
figure { margin: .8rem 0 1.2rem; break-inside: avoid; page-break-inside: avoid; }
figure img, figure svg { max-width: 100%; height: auto; border: 1px solid var(--line); }
figcaption { font-size: .85em; color: var(--muted); }
.pictures { display: flex; flex-wrap: wrap; gap: 1rem; }
.pictures figure { flex: 0 1 40rem; }
dl.req dt { font-weight: 600; margin-top: .8rem; }
dl.req dd { margin: .1rem 0 .3rem 1.2rem; }
@media print {
  body { margin: 0; font-size: 9pt; max-width: none; }
  nav, .no-print, .filter { display: none; }
  thead { display: table-header-group; }
  thead th { position: static; }
  tr, dl.req dd, figure { page-break-inside: avoid; }
  table.sortable thead th::after { content: ""; }
  h2 { page-break-after: avoid; }
  a { color: inherit; text-decoration: none; }
  .v { border: none; padding: 0; }
}
"""

SCRIPT = """
(function () {
  "use strict";
  function key(cell) {
    var v = cell.getAttribute("data-sort");
    return v === null ? cell.textContent.trim() : v;
  }
  function compare(a, b) {
    var na = Number(a), nb = Number(b);
    if (a !== "" && b !== "" && !isNaN(na) && !isNaN(nb)) { return na - nb; }
    return a.localeCompare(b, undefined, { numeric: true, sensitivity: "base" });
  }
  function sortBy(table, index, th) {
    var ascending = th.getAttribute("aria-sort") !== "ascending";
    Array.prototype.forEach.call(th.parentNode.cells, function (c) { c.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (r1, r2) {
      var d = compare(key(r1.cells[index]), key(r2.cells[index]));
      return ascending ? d : -d;
    });
    rows.forEach(function (r) { body.appendChild(r); });
  }
  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), function (table) {
    if (!table.tHead || !table.tBodies.length) { return; }
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, index) {
      th.tabIndex = 0;
      th.title = "Sort by this column";
      th.addEventListener("click", function () { sortBy(table, index, th); });
      th.addEventListener("keydown", function (e) {
        if (e.key === "Enter" || e.key === " ") { e.preventDefault(); sortBy(table, index, th); }
      });
    });
  });
  Array.prototype.forEach.call(document.querySelectorAll("input.filter"), function (input) {
    var table = document.getElementById(input.getAttribute("data-table"));
    if (!table || !table.tBodies.length) { return; }
    input.addEventListener("input", function () {
      var words = input.value.toLowerCase().split(/\\s+/).filter(Boolean);
      Array.prototype.forEach.call(table.tBodies[0].rows, function (row) {
        var text = row.textContent.toLowerCase();
        row.hidden = !words.every(function (w) { return text.indexOf(w) >= 0; });
      });
    });
  });
}());
"""

MAX_PICTURE_BYTES = 4 << 20   # an SVG larger than this is linked, not embedded


def css_class(value: str) -> str:
    """A verdict or status as a class name: `not run` -> `not-run`, `n/a` -> `n-a`."""
    return value.replace(" ", "-").replace("/", "-")


def verdict(value: str, title: str = "") -> str:
    tip = f' title="{escape(title)}"' if title else ""
    return f'<span class="v v-{css_class(value)}"{tip}>{escape(value)}</span>'


def cell(content: str, sort: str | int | None = None, raw: bool = False) -> str:
    attr = f' data-sort="{escape(str(sort))}"' if sort is not None else ""
    return f"<td{attr}>{content if raw else escape(content)}</td>"


def table(table_id: str, headers: Sequence[str], rows: Iterable[str], caption: str = "", filterable: bool = False) -> str:
    head = "".join(f'<th scope="col">{escape(h)}</th>' for h in headers)
    body = "\n".join(rows)
    cap = f'<caption class="small">{escape(caption)}</caption>' if caption else ""
    box = (f'<input class="filter no-print" type="search" data-table="{table_id}" '
           f'placeholder="Filter rows (words, all must match)" aria-label="Filter {escape(table_id)}">\n'
           if filterable else "")
    return (f'{box}<table class="sortable" id="{table_id}">{cap}<thead><tr>{head}</tr></thead>\n'
            f"<tbody>\n{body}\n</tbody></table>")


def href(path: str, prefix: str) -> str | None:
    """The link from a page `prefix` deep to a project-relative `path` (None for a path outside the project)."""
    if not path or path.startswith("/") or ".." in path.split("/"):
        return None
    return prefix + quote(path, safe="/")


def file_link(path: str, prefix: str, text: str | None = None) -> str:
    """`path` as a link relative to the page (plain text when it cannot be one)."""
    target = href(path, prefix)
    label = f"<code>{escape(text if text is not None else path)}</code>"
    return f'<a href="{escape(target)}">{label}</a>' if target else label


def short_hash(sha: str | None) -> str:
    return sha[:16] if sha else "missing"


def svg_data_uri(path: str, root: Path) -> str | None:
    """The SVG file at project-relative `path` as a `data:` URI, or None when it is not one to embed.

    Embedded through <img>, an SVG runs no script and fetches nothing. Only a regular file
    inside `root`, reached without a symbolic link, of at most MAX_PICTURE_BYTES, that starts
    like an SVG document is embedded.
    """
    if href(path, "") is None:
        return None
    full = root / path
    try:
        base = root.resolve()
        if full.is_symlink() or base not in full.resolve().parents:
            return None
        stat = os.stat(full, follow_symlinks=False)
        if not full.is_file() or stat.st_size > MAX_PICTURE_BYTES:
            return None
        data = full.read_bytes()
    except OSError:
        return None
    head = data[:512].lstrip().lower()
    if not (head.startswith(b"<?xml") or head.startswith(b"<svg") or head.startswith(b"<!doctype svg")) or b"<svg" not in data[:4096].lower():
        return None
    return "data:image/svg+xml;base64," + base64.b64encode(data).decode("ascii")


def page(title: str, meta: str, nav: Sequence[tuple[str, str]], body: str) -> str:
    """A whole HTML document (`meta` and `body` are HTML already)."""
    links = "".join(f'<a href="{escape(target)}">{escape(text)}</a>' for text, target in nav)
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{escape(title)}</title>
<style>{STYLE}</style>
</head>
<body>
<header>
<h1>{escape(title)}</h1>
<p class="meta">{meta}</p>
<nav class="no-print">{links}</nav>
</header>
<main>
{body}
</main>
<script>{SCRIPT}</script>
</body>
</html>
"""

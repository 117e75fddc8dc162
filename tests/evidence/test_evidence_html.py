"""The auditor's report: an index and a page per model, self-contained, linked, with its pictures.

The browser tests need Debian's `chromium` and `chromium-driver` and PyPI's `selenium`; they
are skipped, saying so, where they are missing (CI installs them). They keep screenshots and
printed PDFs under reports/test-artifacts/ (or $EVIDENCE_TEST_ARTIFACTS), and check the
screenshots themselves for what must be drawn: the budget line of a MET histogram and the
limit line of the numeric-error plot (their red, counted in the screenshot's pixels), the
Petri net picture where Graphviz is installed.
"""

from __future__ import annotations

import base64
import os
import re
import shutil
import subprocess
import zipfile
from html.parser import HTMLParser
from pathlib import Path
from typing import Iterator
from urllib.parse import unquote, urlsplit

import pytest

from pipeline.files.atomic import write_json, write_text
from pipeline.compare.svg import histogram_svg
from pipeline.evidence.build import build_all, build_reports
from pipeline.evidence.matrix import TraceMatrix
from pipeline.project.layout import step_dir
from pipeline.ledger.checks import CheckResult, Verdict, results_document
from pipeline.ledger.records import record_step
from tests.evidence.evidence_fakeproject import FAKE_CHECKS, REPO, FakeProject, isolated_registry

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
DOT = shutil.which("dot")
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--window-size=1400,2000",
)
SCREEN_WIDTH = 1400
LIMIT_RED = (0xC0, 0x39, 0x2B)   # pipeline.compare.svg COLOURS[0]: the budget and limit lines
CHECKS = dict(FAKE_CHECKS, **{"met.budget": ("compare", ("HLR-MET-001",))})
MODELS = ("alpha", "beta", "gamma", "delta", "epsilon")
HOSTILE = "output[0][3]: 0.51 vs 0.49 <script>alert(1)</script>"


def add_pictures(fake: FakeProject, model: str) -> None:
    """What the compare and petri steps leave for the pictures: a MET histogram, a Petri net picture."""
    root = fake.root
    folder = step_dir(model, "compare", root) / "single"
    samples = [20.0 + (i % 13) * 0.7 for i in range(995)] + [400.0, 900.0, 1500.0, 2500.0, 4000.0]
    svg = write_text(folder / "met-histogram.svg", histogram_svg(samples, f"{model}/single: time per inference",
                                                                 marks=[("median", 24.0), ("p99", 900.0), ("budget", 3000.0)]))
    rel = svg.relative_to(root).as_posix()
    result = CheckResult("met.budget", f"{model}/single", Verdict.NOT_RUN, "host is not the timing platform",
                         measured={"budget_us": 3000.0, "median_us": 24.0, "p99_us": 900.0, "max_us": 4000.0}, written=[rel])
    write_json(step_dir(model, "compare", root) / "checks.json", results_document([result]))
    record_step(model, "compare", inputs=[f"artifacts/{model}/export/graph.nnef"], command="fake compare", root=root)
    if DOT:
        petri = step_dir(model, "petri", root)
        (petri / "single.dot").write_text("digraph G { p1 -> t1 -> p2; }\n")
        subprocess.run([DOT, "-Tsvg", "-o", str(petri / "single.svg"), str(petri / "single.dot")], check=True, timeout=60)
        record_step(model, "petri", inputs=[f"artifacts/{model}/export/graph.nnef"], command="fake petri", root=root)


@pytest.fixture
def report(tmp_path: Path) -> Iterator[tuple[Path, TraceMatrix]]:
    with isolated_registry(CHECKS):
        fake = FakeProject(tmp_path / "project")
        numeric = {"export.numeric": {"out.max_abs_error": 3.0e-6, "out.effective_max_abs_error": 1.0e-5}}
        for model in MODELS:
            verdicts = {"export.numeric": ("fail", HOSTILE)} if model == "alpha" else {}
            if model == "beta":
                verdicts["petri.final_marking"] = ("not run", "no Petri tool")
            fake.add_model(model, verdicts=verdicts, measured=numeric)
            add_pictures(fake, model)
        _, matrix = build_all(tmp_path / "project")
        yield tmp_path / "project/reports/trace-matrix.html", matrix


def pages(index: Path, matrix: TraceMatrix) -> list[Path]:
    """The index, every model's page and every code page (reports/<model>/code/...)."""
    found = [index] + [index.parent / model / "report.html" for model in matrix.models]
    return found + sorted(p for model in matrix.models for p in (index.parent / model / "code").rglob("*.html"))


class Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []
        self.ids: set[str] = set()
        self.srcs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if found.get("id"):
            self.ids.add(str(found["id"]))
        if tag == "a" and found.get("href"):
            self.hrefs.append(str(found["href"]))
        if found.get("src"):
            self.srcs.append(str(found["src"]))


def parse(path: Path) -> Links:
    links = Links()
    links.feed(path.read_text(encoding="utf-8"))
    return links


def test_pages_are_self_contained_and_escaped(report: tuple[Path, TraceMatrix]) -> None:
    index, matrix = report
    for path in pages(index, matrix):
        html = path.read_text(encoding="utf-8")
        assert not re.search(r"<(link|iframe|object|embed)\b|url\(|@import", html), path
        assert not re.search(r"https?://(?!www\.w3\.org/2000/svg\")", html), path   # the SVG namespace is a name, not a fetch
        assert all(src.startswith("data:image/svg+xml;base64,") for src in parse(path).srcs), path
        assert "<script>alert(1)</script>" not in html and "@media print" in html
    index_html = index.read_text(encoding="utf-8")
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in (index.parent / "alpha/report.html").read_text(encoding="utf-8")
    for req in matrix.requirements:
        assert f'id="req-{req.id}"' in index_html and f'id="text-{req.id}"' in index_html


def _resolve(page: Path, href: str) -> tuple[Path, str]:
    parts = urlsplit(href)
    assert not parts.scheme and not parts.netloc, f"{page}: {href} leaves the folder"
    target = (page.parent / unquote(parts.path)).resolve() if parts.path else page.resolve()
    return target, parts.fragment


def check_links(top: Path, page: Path) -> list[str]:
    """Every link of `page` that does not resolve to a file or folder under `top` (or to an id there)."""
    broken = []
    links = parse(page)
    for href in links.hrefs:
        target, fragment = _resolve(page, href)
        if not target.exists() or top.resolve() not in target.parents:
            broken.append(href)
        elif fragment and target.suffix == ".html" and fragment not in parse(target).ids:
            broken.append(href)
    return broken


def test_every_link_resolves_in_the_project_and_in_the_package(report: tuple[Path, TraceMatrix], tmp_path: Path) -> None:
    index, matrix = report
    project = index.parents[1]
    model_page = index.parent / "alpha/report.html"
    links = parse(model_page)
    artifact_links = [h for h in links.hrefs if h.startswith("../../artifacts/")]
    assert "../../artifacts/alpha/export/graph.nnef" in artifact_links
    assert any(h.endswith("met-histogram.svg") for h in artifact_links)
    for page in pages(index, matrix):
        assert check_links(project, page) == [], page
    # the same page inside the model's evidence package: the same relative links resolve there
    unpacked = tmp_path / "unpacked"
    with zipfile.ZipFile(project / "reports/alpha/evidence.zip") as archive:
        archive.extractall(unpacked)
    packaged = unpacked / "evidence/alpha/report.html"
    assert packaged.is_file()
    packaged_links = {h for h in parse(packaged).hrefs if h.startswith("../../artifacts/")}
    assert packaged_links and packaged_links <= set(artifact_links)
    assert [h for h in check_links(unpacked, packaged) if h.startswith("../../")] == []


def test_model_page_shows_the_pictures(report: tuple[Path, TraceMatrix]) -> None:
    index, matrix = report
    html = (index.parent / "alpha/report.html").read_text(encoding="utf-8")
    histogram = re.search(r'<img src="data:image/svg\+xml;base64,([^"]+)"[^>]*class="met-histogram"', html)
    assert histogram is not None
    drawn = base64.b64decode(histogram.group(1)).decode("utf-8")
    assert 'class="mark-budget"' in drawn and "1 of 1000 runs above the budget" in drawn
    assert 'class="numeric-error"' in html and 'class="limit"' in html and "3e-06 of 1e-05" in html
    assert ('class="petri-net"' in html) == bool(DOT)
    if not DOT:
        assert "Graphviz" in html


def test_csv_and_markdown_say_where_each_verdict_was_obtained(report: tuple[Path, TraceMatrix]) -> None:
    import csv

    index, _ = report
    rows = list(csv.DictReader((index.parent / "trace-matrix.csv").read_text(encoding="utf-8").splitlines()))
    judged = [r for r in rows if r["verdict"]]
    assert judged and all(r["obtained"] in ("host", "emulation", "target", "emulation host") for r in judged)
    assert all("missing" not in r["artifacts"] for r in rows)
    assert any("@sha256:" in r["artifacts"] for r in rows)
    markdown = (index.parent / "trace-matrix.md").read_text(encoding="utf-8")
    assert "| Obtained on |" in markdown


def artifacts_dir() -> Path:
    target = Path(os.environ.get("EVIDENCE_TEST_ARTIFACTS", REPO / "reports" / "test-artifacts"))
    target.mkdir(parents=True, exist_ok=True)
    return target


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[object]:
    if not CHROMIUM or not CHROMEDRIVER:
        pytest.skip("chromium and chromium-driver are not installed (Debian: apt-get install -y chromium chromium-driver)")
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium (PyPI) drives the headless browser")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tmp_path / 'chromium-profile'}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def first_column(driver: object, table_id: str) -> list[str]:
    return driver.execute_script(  # type: ignore[attr-defined]
        "return Array.from(document.querySelectorAll('#' + arguments[0] + ' tbody tr')).map(r => r.cells[0].textContent.trim());",
        table_id,
    )


COUNT_RED = """
var done = arguments[arguments.length - 1], rgb = arguments[1];
var img = new Image();
img.onload = function () {
  var canvas = document.createElement('canvas');
  canvas.width = img.width; canvas.height = img.height;
  var g = canvas.getContext('2d');
  g.drawImage(img, 0, 0);
  var d = g.getImageData(0, 0, canvas.width, canvas.height).data, other = 0, columns = new Array(canvas.width).fill(0);
  for (var i = 0; i < d.length; i += 4) {
    if (Math.abs(d[i] - rgb[0]) < 30 && Math.abs(d[i + 1] - rgb[1]) < 30 && Math.abs(d[i + 2] - rgb[2]) < 30) {
      columns[(i / 4) % canvas.width]++;
    } else if (d[i] < 240 || d[i + 1] < 240 || d[i + 2] < 240) { other++; }
  }
  done([Math.max.apply(null, columns), other, canvas.width, canvas.height]);
};
img.onerror = function () { done([-1, -1, 0, 0]); };
img.src = 'data:image/png;base64,' + arguments[0];
"""


def shot_pixels(driver: object, element: object, name: str) -> tuple[float, int]:
    """Save a screenshot of `element`; (the tallest red vertical run as a fraction of its height, other drawn pixels).

    A vertical line in the limit red (a budget or limit line) fills a good part of one pixel
    column; red text (the count of runs above the budget) does not.
    """
    png = element.screenshot_as_base64  # type: ignore[attr-defined]
    (artifacts_dir() / name).write_bytes(base64.b64decode(png))
    red, other, width, height = driver.execute_async_script(COUNT_RED, png, list(LIMIT_RED))  # type: ignore[attr-defined]
    assert width > 20 and height > 20, (name, width, height)
    return red / height, other


def no_console_errors(driver: object) -> None:
    errors = [entry for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]  # type: ignore[attr-defined]
    assert errors == [], errors


def test_index_rendered_in_headless_chromium(report: tuple[Path, TraceMatrix], browser: object) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.print_page_options import PrintOptions

    path, matrix = report
    driver = browser
    driver.get(path.resolve().as_uri())  # type: ignore[attr-defined]
    assert driver.title == "Trace matrix"  # type: ignore[attr-defined]
    text = driver.find_element(By.TAG_NAME, "body").text  # type: ignore[attr-defined]
    missing = [r.id for r in matrix.requirements if r.id not in text]
    assert missing == [], f"requirements not shown: {missing}"
    no_console_errors(driver)
    # five model columns fit a 1400-pixel screen
    width = driver.execute_script("return [document.documentElement.scrollWidth, window.innerWidth];")  # type: ignore[attr-defined]
    assert width[0] <= width[1] <= SCREEN_WIDTH, width
    assert sorted(first_column(driver, "models-table")) == sorted(MODELS)

    # Sorting: click the Requirement header; rows reorder ascending, a second click descends.
    before = first_column(driver, "requirements-table")
    header = driver.find_element(By.CSS_SELECTOR, "#requirements-table thead th:nth-child(1)")  # type: ignore[attr-defined]
    header.click()
    ascending = first_column(driver, "requirements-table")
    assert ascending != before and ascending == sorted(before) and header.get_attribute("aria-sort") == "ascending"
    header.click()
    assert first_column(driver, "requirements-table") == sorted(before, reverse=True)
    status = driver.find_element(By.CSS_SELECTOR, "#requirements-table thead th:nth-child(4)")  # type: ignore[attr-defined]
    status.click()
    first_status = driver.execute_script("return document.querySelector('#requirements-table tbody tr').cells[3].textContent;")  # type: ignore[attr-defined]
    assert first_status == "failed"
    # Filtering: the words typed keep only the rows holding them all.
    box = driver.find_element(By.CSS_SELECTOR, 'input.filter[data-table="requirements-table"]')  # type: ignore[attr-defined]
    box.send_keys("HLR-MET-001")
    shown = driver.execute_script("return Array.from(document.querySelectorAll('#requirements-table tbody tr')).filter(r => !r.hidden).map(r => r.textContent);")  # type: ignore[attr-defined]
    assert 0 < len(shown) < len(before) and all("HLR-MET-001" in row for row in shown)
    box.clear()
    box.send_keys(" ")

    out = artifacts_dir()
    driver.execute_script("window.scrollTo(0, 0);")  # type: ignore[attr-defined]
    assert driver.save_screenshot(str(out / "trace-matrix.png"))  # type: ignore[attr-defined]
    pdf = base64.b64decode(driver.print_page(PrintOptions()))  # type: ignore[attr-defined]
    assert pdf.startswith(b"%PDF")
    (out / "trace-matrix.pdf").write_bytes(pdf)
    # The console check is not vacuous: an error logged now is seen.
    driver.execute_script("console.error('probe from the test')")  # type: ignore[attr-defined]
    assert any("probe from the test" in e["message"] for e in driver.get_log("browser"))  # type: ignore[attr-defined]


def test_model_page_rendered_in_headless_chromium(report: tuple[Path, TraceMatrix], browser: object) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.print_page_options import PrintOptions

    index, _ = report
    driver = browser
    driver.get((index.parent / "alpha/report.html").resolve().as_uri())  # type: ignore[attr-defined]
    assert driver.title == "Model alpha"  # type: ignore[attr-defined]
    no_console_errors(driver)
    width = driver.execute_script("return [document.documentElement.scrollWidth, window.innerWidth];")  # type: ignore[attr-defined]
    assert width[0] <= width[1], width

    histogram = driver.find_element(By.CSS_SELECTOR, "img.met-histogram")  # type: ignore[attr-defined]
    assert driver.execute_script("return arguments[0].complete && arguments[0].naturalWidth;", histogram) > 0  # type: ignore[attr-defined]
    red, other = shot_pixels(driver, histogram, "model-met-histogram.png")
    assert red > 0.25 and other > 500, ("the budget line (red) and the bars must be drawn", red, other)

    plot = driver.find_element(By.CSS_SELECTOR, "figure.numeric-error svg")  # type: ignore[attr-defined]
    red, other = shot_pixels(driver, plot, "model-numeric-error.png")
    assert red > 0.25 and other > 500, ("the limit line (red) and the error bar must be drawn", red, other)

    if DOT:
        net = driver.find_element(By.CSS_SELECTOR, "img.petri-net")  # type: ignore[attr-defined]
        assert driver.execute_script("return arguments[0].naturalWidth;", net) > 0  # type: ignore[attr-defined]
        _, drawn = shot_pixels(driver, net, "model-petri-net.png")
        assert drawn > 100, "the Petri net picture is blank"

    # the failing verdict, its escaped reason and its artifacts as links
    row = driver.find_element(By.ID, "check-export.numeric")  # type: ignore[attr-defined]
    assert "fail" in row.text and "<script>alert(1)</script>" in row.text
    assert row.find_elements(By.CSS_SELECTOR, 'a[href^="../../artifacts/alpha/"]')

    out = artifacts_dir()
    driver.execute_script("window.scrollTo(0, 0);")  # type: ignore[attr-defined]
    assert driver.save_screenshot(str(out / "model-page.png"))  # type: ignore[attr-defined]
    pdf = base64.b64decode(driver.print_page(PrintOptions()))  # type: ignore[attr-defined]
    assert pdf.startswith(b"%PDF") and len(pdf) > 10_000
    (out / "model-page.pdf").write_bytes(pdf)
    print(f"screenshots and printed pages: {out}")


CODE_PAGE = "code/artifacts/alpha/codegen/c/ITEM1.c.html"
NNEF_PAGE = "code/artifacts/alpha/export/graph.nnef.html"


def test_code_lands_on_the_line_in_two_clicks(report: tuple[Path, TraceMatrix], tmp_path: Path) -> None:
    """Index -> a requirement's badge on a model (1) -> its code line link on the model's page (2) opens the
    generated file's page at the range; every line and range has its anchor; the page is two-way (the
    range's NNEF instruction links to the NNEF page's line); the same pages are in the package."""
    index, matrix = report
    index_links = parse(index).hrefs
    assert "alpha/report.html#req-HLR-COD-002" in index_links                       # click 1
    model_page = index.parent / "alpha/report.html"
    model_links = parse(model_page)
    row = re.search(r'<tr><td data-sort="HLR-COD-002">.*?</tr>', model_page.read_text(encoding="utf-8"), re.S)
    assert row and f'href="{CODE_PAGE}#L-1-2"' in row.group(0)                      # click 2
    code = index.parent / "alpha" / CODE_PAGE
    ids = parse(code).ids
    assert {f"L-{n}" for n in range(1, 17)} <= ids and "L-1-2" in ids and "L-15-16" in ids
    code_html = code.read_text(encoding="utf-8")
    assert 'class="highlight"' in code_html and '<span class="kt">void</span>' in code_html   # Pygments' C lexer
    assert f'href="{"../" * 5}{NNEF_PAGE}#L-4"' in code_html                       # back to the instruction
    nnef = parse(index.parent / "alpha" / NNEF_PAGE)
    assert "L-4" in nnef.ids and any(h.endswith("ITEM1.c.html#L-1-2") for h in nnef.hrefs)
    # code-trace cells link to the range; requirement IDs of the verdicts are links
    assert f"{CODE_PAGE}#L-15-16" in model_links.hrefs
    verdicts = re.search(r'<table class="sortable" id="verdicts-table">.*?</table>',
                         model_page.read_text(encoding="utf-8"), re.S).group(0)
    assert '<a href="#req-HLR-COD-002">HLR-COD-002</a>' in verdicts
    unpacked = tmp_path / "unpacked"
    with zipfile.ZipFile(index.parent / "alpha/evidence.zip") as archive:
        archive.extractall(unpacked)
    assert (unpacked / "evidence/alpha" / CODE_PAGE).is_file()
    assert [h for h in check_links(unpacked, unpacked / "evidence/alpha" / CODE_PAGE) if "#L-" in h] == []


def test_a_code_range_is_marked_in_headless_chromium(report: tuple[Path, TraceMatrix], browser: object) -> None:
    index, _ = report
    page = index.parent / "alpha" / CODE_PAGE
    browser.get(page.as_uri() + "#L-15-16")  # type: ignore[attr-defined]
    marked = browser.execute_script(  # type: ignore[attr-defined]
        "return Array.from(document.querySelectorAll('.hl-range')).map(e => e.id);")
    assert marked == ["line-15", "line-16"]
    visible = browser.execute_script(  # type: ignore[attr-defined]
        "var r = document.getElementById('line-15').getBoundingClientRect(); return r.top >= 0 && r.bottom <= innerHeight;")
    assert visible

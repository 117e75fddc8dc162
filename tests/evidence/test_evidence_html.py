"""The HTML trace matrix: self-contained, and correct when rendered in headless Chromium.

The browser test needs Debian's `chromium` and `chromium-driver` and PyPI's `selenium`; it is
skipped, saying so, where they are missing (CI installs them). It keeps a screenshot and a
printed PDF under reports/test-artifacts/ (or $EVIDENCE_TEST_ARTIFACTS).
"""

from __future__ import annotations

import base64
import os
import re
import shutil
from pathlib import Path
from typing import Iterator

import pytest

from tests.evidence.evidence_fakeproject import REPO, FakeProject
from pipeline.evidence.build import build_reports
from pipeline.evidence.matrix import TraceMatrix

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
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


@pytest.fixture
def report(tmp_path: Path, registry: None) -> tuple[Path, TraceMatrix]:
    fake = FakeProject(tmp_path / "project")
    fake.add_model("alpha", verdicts={"export.numeric": ("fail", "output[0][3]: 0.51 vs 0.49 <script>alert(1)</script>")})
    fake.add_model("beta", verdicts={"petri.final_marking": ("not run", "no Petri tool")})
    matrix = build_reports(tmp_path / "project")
    return tmp_path / "project/reports/trace-matrix.html", matrix


def test_page_is_self_contained_and_escaped(report: tuple[Path, TraceMatrix]) -> None:
    path, matrix = report
    html = path.read_text(encoding="utf-8")
    assert not re.search(r"<(link|img|iframe)\b|\bsrc=|url\(|@import|https?://", html)
    assert "<script>alert(1)</script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "@media print" in html
    for req in matrix.requirements:
        assert f'id="req-{req.id}"' in html


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


def test_rendered_in_headless_chromium(report: tuple[Path, TraceMatrix], browser: object) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.print_page_options import PrintOptions

    path, matrix = report
    driver = browser
    driver.get(path.resolve().as_uri())  # type: ignore[attr-defined]
    assert driver.title == "Trace matrix"  # type: ignore[attr-defined]
    text = driver.find_element(By.TAG_NAME, "body").text  # type: ignore[attr-defined]
    missing = [r.id for r in matrix.requirements if r.id not in text]
    assert missing == [], f"requirements not shown: {missing}"
    errors = [entry for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]  # type: ignore[attr-defined]
    assert errors == [], errors

    # Sorting: click the Requirement header; rows reorder ascending, a second click descends.
    before = first_column(driver, "requirements-table")
    header = driver.find_element(By.CSS_SELECTOR, "#requirements-table thead th:nth-child(1)")  # type: ignore[attr-defined]
    header.click()
    ascending = first_column(driver, "requirements-table")
    assert ascending != before and ascending == sorted(before) and header.get_attribute("aria-sort") == "ascending"
    header.click()
    assert first_column(driver, "requirements-table") == sorted(before, reverse=True)
    # Status sorts by severity (failed first), not alphabetically.
    status = driver.find_element(By.CSS_SELECTOR, "#requirements-table thead th:nth-child(4)")  # type: ignore[attr-defined]
    status.click()
    first_status = driver.execute_script("return document.querySelector('#requirements-table tbody tr').cells[3].textContent;")  # type: ignore[attr-defined]
    assert first_status == "failed"

    out = artifacts_dir()
    shot = out / "trace-matrix.png"
    driver.execute_script("window.scrollTo(0, 0);")  # type: ignore[attr-defined]
    assert driver.save_screenshot(str(shot))  # type: ignore[attr-defined]
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    pdf = base64.b64decode(driver.print_page(PrintOptions()))  # type: ignore[attr-defined]
    assert pdf.startswith(b"%PDF")
    (out / "trace-matrix.pdf").write_bytes(pdf)
    print(f"screenshot: {shot}; printed: {out / 'trace-matrix.pdf'}")

    # The console check is not vacuous: an error logged now is seen.
    driver.execute_script("console.error('probe from the test')")  # type: ignore[attr-defined]
    assert any("probe from the test" in e["message"] for e in driver.get_log("browser"))  # type: ignore[attr-defined]

"""report.html in a real browser (Debian's chromium, driven through playwright): a run with
failures opens on what failed, and its nodes x clauses matrix fits the window at 1,400 and
2,560 px, scrolling inside its own box with the node column and the clause row held in
place, every failing column reachable. Read from the DOM, not from the HTML's text; the
screenshots are left in the test's tmp_path."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.test_oracle import EXAMPLES

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
#: (width, height) of the windows: a laptop's 1,400 px and a 2,560 px monitor
VIEWPORTS = ((1400, 900), (2560, 1440))

#: What the page says of itself, read in the browser.
LAYOUT = """() => {
  const box = e => e.getBoundingClientRect();
  const scroll = document.getElementById('matrix-scroll');
  const failed = document.getElementById('what-failed');
  const firstColumn = () => box(document.querySelector('#matrix tr:nth-child(2) > th'));
  const header = () => box(document.querySelector('#matrix tr:first-child > th.clause'));
  scroll.scrollIntoView();
  const before = {left: firstColumn().left, headerTop: header().top};
  scroll.scrollLeft = scroll.scrollWidth;
  scroll.scrollTop = scroll.scrollHeight;
  const after = {left: firstColumn().left, headerTop: header().top,
                 scrolledLeft: scroll.scrollLeft, scrolledTop: scroll.scrollTop};
  const table = box(document.getElementById('matrix'));
  const failing = [...document.querySelectorAll(
      '#matrix td.m-fail, #matrix td.m-short, #matrix td.m-error')].map(td => {
    const cell = box(td);
    return {right: cell.right - table.left, title: td.title};
  });
  scroll.scrollLeft = 0;
  scroll.scrollTop = 0;
  window.scrollTo(0, 0);
  return {pageWidth: document.documentElement.scrollWidth, innerWidth, innerHeight,
          failedTop: box(failed).top + scrollY, failedBottom: box(failed).bottom + scrollY,
          failedItems: failed.querySelectorAll('li').length,
          footer: document.getElementById('level-ran').innerText,
          footerBottom: box(document.getElementById('level-ran')).bottom,
          scrollRight: box(scroll).right, scrollWidth: scroll.scrollWidth,
          clientWidth: scroll.clientWidth, overflowX: getComputedStyle(scroll).overflowX,
          before, after, failing};
}"""


def _faulty_report(pytester: pytest.Pytester) -> Path:
    """The report of examples/trial-sim.yaml (two nodes rejected, checks across nodes
    failed) as a user's run writes it."""
    (pytester.path / "trial.yaml").write_text((EXAMPLES / "trial-sim.yaml").read_text())
    result = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider",
                                "--cluster-reports=reports")
    assert result.ret == 1, result.stdout.str()[-2000:]
    return (pytester.path / "reports" / "latest" / "report.html").resolve()


def _layout(report: Path, width: int, height: int, shot: Path) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            page = browser.new_page(viewport={"width": width, "height": height})
            page.goto(report.as_uri())
            page.wait_for_load_state("load")
            found: dict[str, Any] = page.evaluate(LAYOUT)
            page.screenshot(path=str(shot))
            page.evaluate("document.getElementById('matrix-scroll').scrollIntoView()")
            page.screenshot(path=str(shot.with_name(shot.stem + "-matrix.png")))
        finally:
            browser.close()
    return found


def test_the_report_opens_on_what_failed_and_its_matrix_fits_the_window(
        pytester: pytest.Pytester, tmp_path: Path) -> None:
    if not CHROMIUM.exists() or shutil.which("chromium") is None:
        pytest.skip("needs Debian's chromium (apt-get install chromium)")
    pytest.importorskip("playwright.sync_api", reason="needs python playwright (.[dev])")
    report = _faulty_report(pytester)
    for width, height in VIEWPORTS:
        shot = tmp_path / f"report-{width}.png"
        found = _layout(report, width, height, shot)
        assert shot.stat().st_size > 0
        # what failed: listed, and on the first screen
        assert found["failedItems"] >= 1, found
        assert found["failedBottom"] <= found["innerHeight"], found
        # the footer, at the window's foot, names the level that ran
        assert "level acceptance (no -m)" in found["footer"], found
        assert found["footerBottom"] == pytest.approx(found["innerHeight"], abs=1), found
        # the page itself never scrolls sideways; the matrix's box ends inside the window
        assert found["pageWidth"] <= found["innerWidth"], found
        assert found["scrollRight"] <= found["innerWidth"], found
        # a matrix wider than its box scrolls (never hides columns without a scrollbar)
        if found["scrollWidth"] > found["clientWidth"]:
            assert found["overflowX"] in ("auto", "scroll"), found
            assert found["after"]["scrolledLeft"] > 0, found
        # scrolled right and down inside its box: the node column and the clause row stay
        assert found["after"]["left"] == pytest.approx(found["before"]["left"], abs=0.5), found
        assert found["after"]["headerTop"] == pytest.approx(
            found["before"]["headerTop"], abs=0.5), found
        # every failing cell is within what the box scrolls over
        assert found["failing"], found
        for cell in found["failing"]:
            assert cell["right"] <= found["scrollWidth"] + 1, (cell, found)
    # at 1,400 px this run's matrix is wider than the window: the case the box is for
    narrow = _layout(report, *VIEWPORTS[0], tmp_path / "again.png")
    assert narrow["scrollWidth"] > narrow["clientWidth"], narrow

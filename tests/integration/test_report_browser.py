"""report.html as a person sees it, in Debian's Chromium driven by Playwright: the report of a quickstart-like run
(a node killed, restarted, throughput that never came back) and of a partition run, built from synthetic journals
and samples (tests/unit/test_report_consistency.py: fast, deterministic, no cluster).

What the page must show: the verdict line naming the outage; the flag beside it when throughput did not recover
(and none when it did); the timeline image loaded; nothing wider than the window (at a desktop and at a narrow
width); the table of database events row for row the timeline's numbered events. Full-page screenshots are taken
into the test's folder (kept when a test fails: look at them)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from chaosdb.report.build import build_report, event_rows
from tests.unit.test_report_consistency import synthetic_run

pytestmark = pytest.mark.integration

#: Debian's chromium, without anything that would reach the network
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
#: window sizes the page must fit: a desktop and a narrow laptop/tablet
WIDTHS = (1280, 820)

#: elements wider than the window, leaving out those inside a container that scrolls them (wide tables)
OVERFLOWING = """() => {
  const width = document.documentElement.clientWidth;
  const scrolls = el => { for (let p = el.parentElement; p; p = p.parentElement) {
      const o = getComputedStyle(p).overflowX; if (o === 'auto' || o === 'scroll') return true; } return false; };
  return [...document.body.querySelectorAll('*')].filter(el => {
      const r = el.getBoundingClientRect(); return (r.right > width + 1 || r.left < -1) && !scrolls(el);
  }).map(el => el.tagName + (el.id ? '#' + el.id : '') + ' ' + (el.textContent || '').slice(0, 60));
}"""


@pytest.fixture(scope="module")
def browser():
    exe = "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else shutil.which("chromium")
    if not exe:
        pytest.skip("Debian's chromium is not installed (.ci/run installs it)")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


def _opened(browser, url: str, width: int):
    """The page at *url* in a window *width* pixels wide, loaded, with the errors it logged and what it requested."""
    page = browser.new_page(viewport={"width": width, "height": 900})
    errors: list[str] = []
    requests: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.on("request", lambda req: requests.append(req.url))
    page.goto(url)
    page.wait_for_load_state("load")
    return page, errors, requests


@pytest.mark.parametrize("kind", ["kill", "partition"])
def test_the_report_page_shows_the_outage_the_flag_the_timeline_and_its_events(browser, tmp_path, kind):
    result = build_report(synthetic_run(tmp_path / "run", kind), out_dir=tmp_path / "report")
    m = json.loads((tmp_path / "report" / "metrics.json").read_text())
    url = (tmp_path / "report" / "report.html").as_uri()
    for width in WIDTHS:
        page, errors, requests = _opened(browser, url, width)
        page.screenshot(path=str(tmp_path / f"{kind}-{width}.png"), full_page=True)

        # the verdict line names the outage
        verdict = page.inner_text("#verdict")
        assert verdict.startswith("Verdict: The steady-state hypothesis held"), verdict
        assert "Outage: users disturbed for" in verdict and "no commit for" in verdict and "availability" in verdict
        assert page.is_visible("#outage")
        # the flag beside it when throughput did not recover, and only then
        flag = page.query_selector("#throughput-not-recovered")
        if kind == "kill":
            assert flag is not None and flag.is_visible()
            assert flag.inner_text().startswith("⚠ Throughput did not recover")
            box_v, box_f = page.query_selector("#verdict").bounding_box(), flag.bounding_box()
            assert 0 <= box_f["y"] - (box_v["y"] + box_v["height"]) < 60  # right below the verdict
        else:
            assert flag is None
        # the timeline (and the ECDF) loaded
        sizes = page.eval_on_selector_all("img", "imgs => imgs.map(i => [i.id, i.complete, i.naturalWidth, "
                                                 "i.naturalHeight])")
        assert [s[0] for s in sizes] == ["timeline", "ecdf"]
        assert all(done and w > 0 and h > 0 for _, done, w, h in sizes), sizes
        # nothing is wider than the window
        assert page.evaluate("document.documentElement.scrollWidth") <= page.evaluate(
            "document.documentElement.clientWidth"), width
        assert page.evaluate(OVERFLOWING) == [], width
        # the events table holds the timeline's events, row for row
        rows = page.eval_on_selector_all("#events tbody tr",
                                         "trs => trs.map(tr => [...tr.cells].map(td => td.textContent.trim()))")
        drawn = result["drawn"]["timeline"]["events"]
        assert rows == event_rows(m)
        assert [(r[0], r[4]) for r in rows] == [(str(d["n"]), d["label"]) for d in drawn]
        assert [float(r[1]) for r in rows] == [round(d["at"], 1) for d in drawn]
        assert [u for u in requests if u != url and not u.startswith("data:")] == []
        assert errors == []
        page.close()
    assert all((tmp_path / f"{kind}-{w}.png").stat().st_size > 20_000 for w in WIDTHS)

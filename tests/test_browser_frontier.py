"""The Frontier page in a real browser: open a link, press Train, see the points appear,
export the chart as a PNG from the browser, reopen the link, and save screenshots
(to a temporary folder; ``FEDCORE_SHOTS=docs/screenshots`` refreshes the committed ones)."""
from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
SHOTS = Path(os.environ.get("FEDCORE_SHOTS") or (Path(tempfile.gettempdir()) / "fedcore-shots"))
sys.path.insert(0, str(ROOT / "scripts"))
from dashboard_server import dashboard_server  # noqa: E402

ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
LINK = "/frontier?preset=demo&methods=pldp_b,kdp_fl&eps=3,10,30&seeds=2"
"""A small frontier: 2 methods x (3 eps + no privacy) x 2 seeds = 16 runs."""

pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(),
                                reason=f"{CHROMIUM} is missing; the browser test never downloads a browser")


def curve_points(pg) -> int:
    """Markers of the frontier chart's mean curves (each method: one per finished ε)."""
    chart = pg.locator("[data-testid=stPlotlyChart]")
    if not chart.count():
        return 0
    return chart.first.locator(".scatterlayer .trace .points path").count()


def settle(pg, seconds: float = 1.0) -> None:
    pg.wait_for_function("!document.querySelector('[data-testid=stStatusWidget]')", timeout=60_000)
    time.sleep(seconds)


def test_a_small_frontier_trains_and_its_points_appear(tmp_path_factory):
    from playwright.sync_api import sync_playwright

    store = tmp_path_factory.mktemp("store")
    with dashboard_server(store, tmp_path_factory.mktemp("log")) as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        pg = browser.new_page(viewport={"width": 1280, "height": 800}, accept_downloads=True)
        pg.set_default_timeout(60_000)
        pg.goto(url + LINK)
        pg.get_by_role("heading", name="Privacy–accuracy frontier").wait_for(timeout=240_000)
        pg.get_by_text("16 runs: 2 method(s)").wait_for(timeout=240_000)
        settle(pg)
        assert curve_points(pg) == 0
        pg.get_by_role("button", name="Train frontier").click()
        seen = []
        deadline = time.monotonic() + 480
        while time.monotonic() < deadline:
            n = curve_points(pg)
            if not seen or n != seen[-1]:
                seen.append(n)
            if pg.get_by_role("button", name="Trained").count():
                break
            time.sleep(0.5)
        settle(pg, 2.0)
        SHOTS.mkdir(parents=True, exist_ok=True)
        pg.screenshot(path=str(SHOTS / "frontier.png"), full_page=True)
        assert pg.get_by_role("button", name="Trained").count(), f"did not finish; curve points seen: {seen}"
        # points streamed in: the chart had some points before it had them all
        final = curve_points(pg)
        assert final >= 6 and any(0 < n < final for n in seen), f"no partial chart seen: {seen}"
        assert not pg.locator("[data-testid=stException]").count()
        # PNG export in the browser (Plotly's modebar camera), offline
        chart = pg.locator("[data-testid=stPlotlyChart]").first
        chart.hover()
        with pg.expect_download() as download:
            chart.locator(".modebar-btn[data-title='Download plot as a PNG'], "
                          ".modebar-btn[data-title='Download plot as a png']").first.click()
        saved = tmp_path_factory.mktemp("png") / "frontier.png"
        download.value.save_as(saved)
        assert saved.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and saved.stat().st_size > 10_000
        # the link reopens the finished frontier at once, in a fresh tab
        fresh = browser.new_page(viewport={"width": 1280, "height": 800})
        fresh.set_default_timeout(240_000)  # a fresh session on a loaded 2-core machine
        fresh.goto(url + LINK)
        fresh.get_by_role("button", name="Trained").wait_for()
        fresh.locator("[data-testid=stPlotlyChart] .scatterlayer .trace .points path").first.wait_for()
        settle(fresh, 1.5)
        assert curve_points(fresh) == curve_points(pg)
        browser.close()

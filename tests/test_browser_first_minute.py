"""The first minute in a real browser (issue 32): at 1280x720 (a projector) the first screen's
frontier, axis titles and legend included, is fully visible without scrolling; after Run the
run's point is marked on it ("your run")."""
from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHOTS = Path(os.environ.get("FEDCORE_SHOTS") or (Path(tempfile.gettempdir()) / "fedcore-shots"))
sys.path.insert(0, str(ROOT / "scripts"))
from dashboard_server import CHROMIUM, settle  # noqa: E402

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not Path(CHROMIUM).exists(),
                                 reason=f"{CHROMIUM} is missing; the browser test never downloads a browser")]


@pytest.fixture(scope="module")
def server(dashboards):
    return dashboards({})


def test_the_first_screen_fits_1280x720_and_the_run_lands_on_it(browser, server):
    url, _ = server
    pg = browser.new_page(viewport={"width": 1280, "height": 720})
    try:
        pg.set_default_timeout(120_000)
        pg.goto(url + "/")
        pg.get_by_text("Each dot is a model trained on the bundled digits by 10 clients").wait_for()
        chart = pg.locator("[data-testid=stPlotlyChart]").first
        chart.locator(".legend").wait_for()
        settle(pg, 1.0)
        box = chart.bounding_box()
        legend = chart.locator(".legend").bounding_box()
        titles = [chart.locator(".xtitle").nth(i).bounding_box() for i in range(chart.locator(".xtitle").count())]
        assert titles and box["y"] >= 0
        for part in (box, legend, *titles):
            assert part["y"] + part["height"] <= 720, (part, "below the fold at 1280x720")
        SHOTS.mkdir(parents=True, exist_ok=True)
        pg.screenshot(path=str(SHOTS / "first-screen-1280x720.png"))

        pg.get_by_text("worker ready").wait_for()
        pg.get_by_role("button", name="Run").click()
        pg.get_by_text("Where your run landed").wait_for()
        settle(pg, 1.0)
        landed = pg.locator("[data-testid=stPlotlyChart]").filter(has_text="your run")
        assert landed.count() == 1
        landed.scroll_into_view_if_needed()
        pg.screenshot(path=str(SHOTS / "your-run.png"))
    finally:
        pg.context.close()

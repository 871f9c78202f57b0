"""Issue 40 §2 and §5 in a real browser: the membership ROC on the Playground (screenshot) and, after an
``attack_digits`` run, the "your run" marker inside its plot area, its chart within the first two screens.
Screenshots go to pytest's ``tmp_path``."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
from dashboard_server import CHROMIUM, fresh_page, settle, stop_active_runs, wait_until  # noqa: E402

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not Path(CHROMIUM).exists(),
                                 reason=f"{CHROMIUM} is missing; the browser test never downloads a browser")]


@pytest.fixture(scope="module")
def server(dashboards):
    """The dashboard with its default host settings (shared with the other browser modules), its worker
    slots freed of what earlier modules left training."""
    url, store = dashboards({})
    stop_active_runs(store)
    return url, store


def inside(part: dict, area: dict, slack: float = 0.5) -> bool:
    return (part["x"] >= area["x"] - slack and part["y"] >= area["y"] - slack
            and part["x"] + part["width"] <= area["x"] + area["width"] + slack
            and part["y"] + part["height"] <= area["y"] + area["height"] + slack)


def test_the_your_run_marker_lies_inside_its_plot_area_after_an_attack_digits_run(browser, server, tmp_path):
    url, _ = server
    with fresh_page(browser, 1280, 720) as pg:
        pg.set_default_timeout(240_000)
        pg.goto(url + "/?preset=attack_digits")
        pg.get_by_text("worker ready").wait_for()
        pg.get_by_role("button", name="Run").click()
        pg.get_by_text("Where your run landed").wait_for()
        chart = pg.locator("[data-testid=stPlotlyChart]:visible").filter(has_text="your run")
        chart.wait_for()
        settle(pg, 1.0)
        top = pg.evaluate("(el) => el.getBoundingClientRect().top + window.scrollY", chart.element_handle())
        assert top + chart.bounding_box()["height"] <= 2 * 720, (top, "the chart starts below the first two screens")
        chart.scroll_into_view_if_needed()
        settle(pg, 1.0)
        trace = chart.locator(".scatterlayer .trace").filter(has_text="your run")
        marker = trace.locator(".points path").first
        area = chart.locator(".draglayer .xy .nsewdrag").first      # the plot area of the run's panel
        box, plot_area = marker.bounding_box(), area.bounding_box()
        chart.screenshot(path=str(tmp_path / "your-run.png"))
        assert box and plot_area and box["width"] > 5, (box, plot_area)
        assert inside(box, plot_area), (box, plot_area, "the 'your run' marker lies outside its plot area")


def test_the_playground_draws_the_membership_roc_inside_the_region_epsilon_allows(browser, server, tmp_path):
    url, _ = server
    with fresh_page(browser, 1280, 900) as pg:
        pg.set_default_timeout(240_000)
        pg.goto(url + "/?preset=attack_membership")
        pg.get_by_text("worker ready").wait_for()
        pg.get_by_role("button", name="Run").click()
        pg.get_by_text("Round 10 / 10 · finished").wait_for()
        pg.get_by_role("button", name="Attack membership").click()
        roc = pg.locator("[data-testid=stPlotlyChart]:visible").filter(has_text="Caught against wrongly accused")
        wait_until(lambda: roc.count() == 1, 300, "no membership ROC after the attack")
        roc.scroll_into_view_if_needed()
        settle(pg, 1.5)
        curves = roc.locator(".scatterlayer .trace .js-line")
        assert curves.count() >= 4                      # region's edge, blind guess, two attacks
        assert roc.locator(".scatterlayer .trace .js-fill").count() >= 1      # the region ε allows, shaded
        assert roc.locator(".xtick").count() >= 4 and "0.1 %" in roc.inner_text()
        roc.screenshot(path=str(tmp_path / "membership-roc.png"))
        pg.screenshot(path=str(tmp_path / "membership-roc-page.png"), full_page=False)
        assert (tmp_path / "membership-roc.png").stat().st_size > 10_000


def test_the_frontier_draws_a_stored_points_membership_roc(browser, server, tmp_path):
    url, _ = server
    with fresh_page(browser, 1280, 900) as pg:
        pg.set_default_timeout(180_000)
        pg.goto(url + "/frontier")
        pg.get_by_text("Who was in the data, one point at a time").wait_for()
        roc = pg.locator("[data-testid=stPlotlyChart]:visible").filter(has_text="Caught against wrongly accused")
        roc.wait_for()
        roc.scroll_into_view_if_needed()
        settle(pg, 1.5)
        assert roc.locator(".scatterlayer .trace .js-line").count() >= 4
        assert roc.locator(".scatterlayer .trace .js-fill").count() >= 1
        pg.screenshot(path=str(tmp_path / "frontier-roc-page.png"))
        assert roc.screenshot(path=str(tmp_path / "frontier-roc.png")) and (tmp_path / "frontier-roc.png").stat().st_size > 10_000

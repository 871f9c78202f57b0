"""The dashboard in a real browser: start `streamlit run app.py`, drive it with Playwright
(Debian's chromium), watch a run train live, stop it, reopen it from History, and save a
1280x800 screenshot of every page to docs/screenshots/.

Also measures the two numbers the dashboard promises (printed, and written to
docs/screenshots/timings.json): seconds from pressing Run to the first point on the
accuracy chart, and rounds shown per second while the demo trains.
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHOTS = Path(os.environ.get("FEDCORE_SHOTS") or (Path(__import__("tempfile").gettempdir()) / "fedcore-shots"))
"""Screenshots go to a temporary folder; ``FEDCORE_SHOTS=docs/screenshots`` refreshes the
committed ones (the test suite writes no tracked file)."""
sys.path.insert(0, str(ROOT / "scripts"))
from dashboard_server import (CHROMIUM, dashboard_server, fresh_page, load_scaled, round_counter,  # noqa: E402
                              scaled_ms, settle, wait_until)

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not Path(CHROMIUM).exists(),
                                 reason=f"{CHROMIUM} is missing (apt-get install chromium); "
                                 "the browser test never downloads a browser")]


@pytest.fixture(scope="module")
def server(dashboards):
    """The dashboard with its default host settings (shared with tests/test_browser_frontier.py)."""
    return dashboards({})


@pytest.fixture(scope="module")
def page(browser, server):  # noqa: ARG001  (the server must be up first)
    pg = browser.new_page(viewport={"width": 1280, "height": 800})
    pg.set_default_timeout(scaled_ms(60))
    yield pg
    pg.context.close()


def url_rounds(pg) -> int:
    """``rounds`` in the page's query string, read in the page (``page.url`` can lag)."""
    return int(pg.evaluate("new URLSearchParams(location.search).get('rounds') || 0"))



def accuracy_points(pg) -> int:
    """Markers on the first trace of the accuracy chart."""
    return pg.locator("[data-testid=stPlotlyChart]").first.locator(
        ".scatterlayer .trace").first.locator(".points path").count()


def shoot(pg, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    pg.screenshot(path=str(SHOTS / f"{name}.png"))


def test_demo_trains_live_stops_and_reopens_from_history(page, server):
    pg, (url, store) = page, server
    # a slower demo (10 local epochs of batch 4) so that Stop can land mid-run on an idle
    # machine, where the plain demo finishes 60 rounds in about a second
    pg.goto(url + "/?preset=demo&local.epochs=10&local.batch_size=4&rounds=200")
    pg.get_by_role("button", name="Run").wait_for()
    pg.get_by_text("worker ready").wait_for(timeout=scaled_ms(90))  # the pre-started worker imported torch

    # change a slider: Rounds 200 -> about 240 (keyboard on the thumb); the URL follows
    # Key presses that land while a rerun redraws the slider can stay uncommitted in
    # Streamlit's slider, so press until the thumb reads 240, then wait for the URL to
    # follow it, stepping left and right (which commits the shown value again) if it lags.
    pg.get_by_text("Clients and rounds").click()   # the settings' expander, folded on the first screen
    thumb = pg.get_by_role("slider", name="Rounds")
    start = time.monotonic()
    while int(thumb.input_value()) < 240:
        assert time.monotonic() - start < load_scaled(60), "the Rounds slider did not move to 240"
        thumb.focus()
        thumb.press("ArrowRight")
    start, nudge = time.monotonic(), time.monotonic() + 3
    while url_rounds(pg) != int(thumb.input_value()):
        assert time.monotonic() - start < load_scaled(60), f"the URL did not follow the slider: {pg.url}"
        if time.monotonic() > nudge:
            thumb.focus()
            thumb.press("ArrowLeft")
            thumb.press("ArrowRight")
            nudge = time.monotonic() + load_scaled(3)
        time.sleep(0.2)
    settle(pg, 1.0)
    rounds = url_rounds(pg)
    assert rounds >= 240

    t_press = time.perf_counter()
    pg.get_by_role("button", name="Run").click()
    wait_until(lambda: accuracy_points(pg), 60, "no point on the accuracy chart", interval=0.05)
    first_point = time.perf_counter() - t_press
    p1, r1, t1 = accuracy_points(pg), round_counter(pg), time.perf_counter()
    time.sleep(2.0)
    wait_until(lambda: round_counter(pg) > r1 and accuracy_points(pg) > p1,   # both grow while it trains
               30, f"the chart stopped at {p1} points, round {r1}", interval=0.1)
    p2, r2, t2 = accuracy_points(pg), round_counter(pg), time.perf_counter()
    shown_rate = (p2 - p1) / (t2 - t1)
    shoot(pg, "playground")

    pg.get_by_role("button", name="Stop").click()
    pg.get_by_text("Stopped after").wait_for(timeout=scaled_ms(20))
    stopped_at = round_counter(pg)
    assert 1 <= stopped_at < rounds

    # History: the run is listed; reopen it into the Playground
    pg.get_by_role("link", name="History").click()
    pg.get_by_role("button", name="Open in Playground").wait_for()
    pg.get_by_role("button", name="CSV (per round)").wait_for()
    pg.locator("[data-testid=stDataFrame] canvas").first.wait_for()
    settle(pg, 1.5)
    shoot(pg, "history")
    pg.get_by_role("button", name="Open in Playground").click()
    pg.get_by_text("Stopped after").wait_for(timeout=scaled_ms(30))
    assert round_counter(pg) == stopped_at
    search = pg.evaluate("location.search")
    assert "run=" in search and f"rounds={rounds}" in search
    run_id = pg.evaluate("new URLSearchParams(location.search).get('run')")  # the store may hold others' runs

    # Compare; the other engineers' pages open without an exception (their own tests
    # take their screenshots)
    pg.get_by_role("link", name="Compare").click()
    pg.get_by_text("Runs to compare").wait_for()
    pg.locator("[data-testid=stPlotlyChart]").nth(1).wait_for()
    settle(pg, 1.5)
    shoot(pg, "compare")
    for name, title in (("mechanisms", "Mechanisms"), ("papers", "Papers")):
        if (ROOT / "pages" / f"{name}.py").exists():
            pg.get_by_role("link", name=title).click()
            settle(pg, 1.0)
            assert not pg.locator("[data-testid=stException]").count(), f"{name} page raised"
    # Papers: the stored reproduction records render as tables and curves
    pg.get_by_role("tab", name="LDP-FL", exact=True).click()
    pg.get_by_text("fedcore reproduce ldp_fl").first.wait_for()  # the record's command line
    settle(pg, 1.5)
    shoot(pg, "papers")

    from fedcore.runner import JobStore

    events = JobStore(store).read_events(run_id, touch=False)
    rounds = [e for e in events if e["type"] == "round"]
    trained_rate = (len(rounds) - 1) / (rounds[-1]["elapsed"] - rounds[0]["elapsed"])
    timings = {"run_to_first_chart_point_s": round(first_point, 3),
               "chart_points_per_second": round(shown_rate, 2),
               "rounds_per_second_trained": round(trained_rate, 2),
               "samples": {"points": [p1, p2], "round_counter": [r1, r2], "seconds": round(t2 - t1, 2)},
               "stopped_at_round": stopped_at, "load_average": os.getloadavg()[0]}
    (SHOTS / "timings.json").write_text(json.dumps(timings, indent=1) + "\n")
    print("\nbrowser timings:", timings)


def test_a_deep_link_on_a_fresh_server_goes_through_the_router(page, tmp_path):
    # Until some session has run app.py, a fresh server runs pages/<name>.py on its own
    # (Streamlit's old pages/ mode): no menu, no wide layout, raw file names in the sidebar.
    with dashboard_server(tmp_path / "store", tmp_path) as url:
        page.goto(url + "/history")
        page.get_by_role("heading", name="Run history").wait_for()
        settle(page, 1.0)
        assert page.get_by_role("link", name="Papers", exact=True).count() == 1, "the top menu is missing"
        assert not page.locator("[data-testid=stSidebarNav]").count(), "the pages/ folder's own menu is shown"
        assert "/history" in page.evaluate("location.pathname")


def chart_boxes(pg, titles) -> dict:
    """``title -> bounding box`` of each visible chart (looked at again when caught mid-redraw)."""
    out = {}
    for title in titles:
        box = None
        for _ in range(40):
            box = pg.locator("[data-testid=stPlotlyChart]:visible").filter(has_text=title).first.bounding_box()
            if box is not None:
                break
            time.sleep(0.25)
        assert box is not None, title
        out[title] = box
    return out


def test_presentation_layout_keeps_accuracy_and_privacy_above_the_fold_at_1280x720(page, server):
    # teaching mode: large type, no settings sidebar, both charts visible without scrolling;
    # Pause holds the run between two rounds and Resume lets it finish. A second page of the
    # module's browser (one Playwright per process: a second sync_playwright() is refused).
    url, _ = server
    with fresh_page(page.context.browser, 1280, 720) as pg:
        pg.goto(f"{url}/?preset=demo&method=%22ldp_fl%22&rounds=2000&present=1")  # ~10 ms a round: time to Pause
        pg.get_by_role("button", name="Run", exact=True).click()
        pg.get_by_text("Privacy spent per client").first.wait_for()  # a redraw may show two for a moment
        pg.get_by_text("Test accuracy and loss").first.wait_for()
        for title in ("Test accuracy and loss", "Privacy spent per client"):
            box = None
            for _ in range(40):  # a live chart is redrawn every poll: look again when caught mid-redraw
                box = pg.locator("[data-testid=stPlotlyChart]:visible").filter(has_text=title).first.bounding_box()
                if box is not None:
                    break
                time.sleep(0.25)
            assert box is not None and box["y"] >= 0 and box["y"] + box["height"] <= 720, (title, box)
        assert not pg.locator("section[data-testid=stSidebar]").is_visible()
        value = pg.locator("[data-testid=stMetricValue] p").first
        assert float(value.evaluate("e => parseFloat(getComputedStyle(e).fontSize)")) >= 36
        shoot(pg, "playground-presentation-1280x720")
        pg.get_by_role("button", name="Pause").click()
        pg.get_by_text("paused: Step trains one more round").wait_for()
        held = pg.locator("[data-testid=stProgress]").inner_text()
        time.sleep(2.0)
        assert pg.locator("[data-testid=stProgress]").inner_text() == held
        # paused (issue 24): both charts still end above 720 px and start at the same height
        boxes = chart_boxes(pg, ("Test accuracy and loss", "Privacy spent per client"))
        for title, box in boxes.items():
            assert box["y"] >= 0 and box["y"] + box["height"] <= 720, (title, box)
        acc, eps = boxes.values()
        assert abs(acc["y"] - eps["y"]) <= 8 and abs(acc["height"] - eps["height"]) <= 8, boxes
        assert not pg.get_by_text("starting a worker").count()       # no start-up badge on the projector
        shoot(pg, "playground-presentation-paused-1280x720")
        pg.get_by_role("button", name="Resume").click()
        wait_until(lambda: round_counter(pg) > int(held.split()[1]), 120, "Resume did not resume")  # it trains again ...
        pg.get_by_role("button", name="Stop").click()      # ... and once it is over, the charts still fit
        pg.get_by_text("· stopped").wait_for(timeout=scaled_ms(120))
        assert "present=1" in pg.evaluate("location.search")
        settle(pg, 3.0)
        charts = pg.locator("[data-testid=stPlotlyChart]")
        for i in (0, 1):                                   # accuracy | privacy, side by side
            box = charts.nth(i).bounding_box()
            assert box is not None and box["y"] + box["height"] <= 720, ("ended", i, box)


# --- issue 24: the first minute teaches -------------------------------------------------------
def test_speed_set_before_run_draws_the_rounds_one_by_one(page, server):
    url, _ = server
    with fresh_page(page.context.browser, 1280, 720) as pg:
        pg.goto(url + "/")                                   # the first screen: a trade-off, no click
        pg.get_by_text("Each dot is a model trained on the bundled digits by 10 clients").wait_for()
        pg.locator("[data-testid=stPlotlyChart]").first.wait_for()
        settle(pg, 2.0)
        shoot(pg, "first-screen-1280x720")
        pg.get_by_role("radio", name="3 s per round").click()    # Speed before Run (a segmented control)
        settle(pg, 0.5)
        pg.get_by_role("button", name="Run", exact=True).click()
        seen, start = [], time.monotonic()
        while len(seen) < 4:
            assert time.monotonic() - start < load_scaled(180), f"rounds seen: {seen}"
            r = round_counter(pg)
            if r and (not seen or r != seen[-1][0]):
                seen.append((r, time.monotonic()))
            time.sleep(0.05)
        rounds = [r for r, _ in seen]
        assert rounds == list(range(rounds[0], rounds[0] + len(rounds))), rounds   # one by one, none skipped
        gaps = [b - a for (_, a), (_, b) in zip(seen[1:], seen[2:])]
        assert all(g >= 2.0 for g in gaps), gaps             # about 3 s apart
        pg.get_by_role("button", name="Pause").click()       # there at once
        pg.get_by_text("· paused").wait_for()
        pg.get_by_role("radio", name="full speed").click()   # usable while the page polls
        pg.get_by_role("button", name="Resume").click()
        pg.get_by_text("· finished").wait_for(timeout=scaled_ms(240))
        settle(pg, 1.5)
        pg.get_by_text("Both numbers are for the whole run").scroll_into_view_if_needed()
        time.sleep(0.5)
        shoot(pg, "epsilon-explained-dp_fedavg")


def test_the_epsilon_set_and_spent_for_ldp_fl(page, server):
    url, _ = server
    with fresh_page(page.context.browser, 1280, 800) as pg:
        pg.goto(url + "/?preset=demo&method=%22ldp_fl%22&rounds=10&privacy.epsilon=%5B100.0%5D")
        pg.get_by_role("button", name="Run", exact=True).click()
        pg.get_by_text("· finished").wait_for(timeout=scaled_ms(120))
        pg.get_by_text("Both numbers are for the whole run").wait_for()
        settle(pg, 1.5)
        pg.get_by_text("Both numbers are for the whole run").scroll_into_view_if_needed()
        time.sleep(0.5)
        shoot(pg, "epsilon-explained-ldp_fl")

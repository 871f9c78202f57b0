"""The Frontier page in a real browser: open a link, press Train, see the points appear,
export the chart as a PNG from the browser, reopen the link, and save screenshots
(to a temporary folder; ``FEDCORE_SHOTS=docs/screenshots`` refreshes the committed ones).
An audited frontier draws its lower-bound marks, and its caption's link opens the Mechanisms
page at the section that explains them."""
from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHOTS = Path(os.environ.get("FEDCORE_SHOTS") or (Path(tempfile.gettempdir()) / "fedcore-shots"))
sys.path.insert(0, str(ROOT / "scripts"))
from dashboard_server import CHROMIUM, press_until, scaled_ms, settle  # noqa: E402

LINK = "/frontier?preset=demo&methods=pldp_b,kdp_fl&eps=3,10,30&seeds=2"
"""A small frontier: 2 methods x (3 eps + no privacy + clip only) x 2 seeds = 20 runs (equal privacy)."""

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not Path(CHROMIUM).exists(),
                                 reason=f"{CHROMIUM} is missing; the browser test never downloads a browser")]


def curve_points(pg) -> int:
    """Markers of the frontier chart's mean curves (each method: one per finished ε)."""
    chart = pg.locator("[data-testid=stPlotlyChart]")
    if not chart.count():
        return 0
    return chart.first.locator(".scatterlayer .trace .points path").count()


@pytest.fixture(scope="module")
def server(dashboards):
    """The dashboard with its default host settings (shared with tests/test_browser.py)."""
    return dashboards({})


REOPEN_S = 300
"""Bound on a fresh tab showing a finished frontier (a new session on a loaded 2-core host)."""
CHART_POINTS_JS = """([want, traces]) => {
    const gd = document.querySelector('[data-testid=stPlotlyChart] .js-plotly-plot');
    if (!gd || !gd._fullData || document.querySelector('[data-testid=stStatusWidget]')) return false;
    const inData = gd._fullData.filter(t => t.visible === true && (t.mode || '').includes('markers'))
        .reduce((n, t) => n + (t.x || []).filter(x => x !== null && x !== undefined).length, 0);
    const drawn = gd.querySelectorAll('.scatterlayer .trace .points path').length;
    return drawn > 0 && drawn === (want === null ? inData : want)
        && traces.every(n => gd.data.some(t => t.name === n || t.meta === n));
}"""
"""True once the chart has drawn ``want`` marker points (None: every marker its data holds), holds
the named traces, and the app is idle (no script run in progress, which could still redraw it)."""


def wait_for_chart(pg, points, traces: tuple = (), seconds: float = REOPEN_S) -> None:
    """Wait (bounded) until the chart shows ``points`` markers (None: all its data's) and
    ``traces``; fail saying what it shows."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        pg.wait_for_function(CHART_POINTS_JS, arg=[points, list(traces)], polling=500, timeout=seconds * 1000)
    except PlaywrightTimeout:
        SHOTS.mkdir(parents=True, exist_ok=True)
        pg.screenshot(path=str(SHOTS / "frontier-timeout.png"), full_page=True)
        pytest.fail(f"after {seconds:.0f} s the chart shows {curve_points(pg)} points, want {points} "
                    f"(traces {list(traces)}); Trained button: {pg.get_by_role('button', name='Trained').count()}; "
                    f"screenshot {SHOTS / 'frontier-timeout.png'}")


def test_the_default_view_is_the_fair_frontier_in_three_panels(browser, server):
    """The page opens on the shipped equal-privacy frontier: no training, one panel per threat
    model, the local panel with >= 3 methods from near chance to near their no-privacy line
    (tests/test_shipped_frontier.py checks the numbers); saves frontier-default.png."""
    url, _ = server
    pg = browser.new_page(viewport={"width": 1280, "height": 1000})
    try:
        pg.set_default_timeout(120_000)
        pg.goto(url + "/frontier")
        wait_for_chart(pg, None, ("ldp_fl", "pldp_b", "hw_dpfl", "kdp_fl", "dp_fedavg"))
        settle(pg, 1.0)
        SHOTS.mkdir(parents=True, exist_ok=True)
        pg.screenshot(path=str(SHOTS / "frontier-default.png"), full_page=True)
        titles = pg.locator("[data-testid=stPlotlyChart] .annotation-text").evaluate_all(
            "els => els.map(e => e.textContent || '')")
        assert any("Local DP" in t for t in titles) and any("Record-level DP" in t for t in titles), titles
        assert pg.get_by_role("button", name="Train it live").count()   # shipped: one click trains it again
        lines = pg.evaluate("""() => {
            const gd = document.querySelector('[data-testid=stPlotlyChart] .js-plotly-plot');
            return gd.data.filter(t => t.xaxis === 'x' || t.xaxis === undefined)
                          .filter(t => (t.mode || '') === 'lines+markers').map(t => [t.name, Array.from(t.y)]); }""")
        local = {name: y for name, y in lines}
        assert len(local) >= 3, local
        assert all(min(y) < 0.2 and max(y) > 0.85 for y in local.values()), local
        assert not pg.locator("[data-testid=stException]").count()
    finally:
        pg.context.close()


def test_a_small_frontier_trains_and_its_points_appear(browser, server, tmp_path_factory):
    from fedcore.runner import JobStore

    url, store = server
    pg = browser.new_page(viewport={"width": 1280, "height": 800}, accept_downloads=True)
    fresh = None
    try:
        pg.set_default_timeout(60_000)
        pg.goto(url + LINK)
        pg.get_by_role("heading", name="Privacy–accuracy frontier").wait_for(timeout=scaled_ms(240))
        pg.get_by_text("20 runs: 2 method(s)").wait_for(timeout=scaled_ms(240))
        settle(pg)
        assert curve_points(pg) == 0
        before = {r["id"] for r in JobStore(store).list_job_dicts(kind="sweep")}
        press_until(pg.get_by_role("button", name="Train frontier"),
                    lambda: {r["id"] for r in JobStore(store).list_job_dicts(kind="sweep")} - before,
                    "Train frontier started no sweep")
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
        # the link reopens the finished frontier, in a fresh tab: wait until its chart has drawn
        # every point the first tab shows (a concrete condition, bounded by REOPEN_S)
        fresh = browser.new_page(viewport={"width": 1280, "height": 800})
        fresh.set_default_timeout(REOPEN_S * 1000)
        fresh.goto(url + LINK, wait_until="domcontentloaded")
        wait_for_chart(fresh, final, ("pldp_b", "kdp_fl"))
        # the page's own button says the frontier is trained (bounded: a loaded CI host may still be
        # redrawing the page around the chart; it failed once at an immediate count)
        try:
            fresh.get_by_role("button", name="Trained").wait_for(timeout=scaled_ms(30))
        except Exception:  # noqa: BLE001  (say what the page shows instead)
            fresh.screenshot(path=str(SHOTS / "frontier-reopened.png"), full_page=True)
            pytest.fail("the reopened frontier shows no 'Trained' button; buttons: "
                        f"{fresh.get_by_role('button').all_inner_texts()}; screenshot {SHOTS / 'frontier-reopened.png'}")
    finally:
        for opened in (pg, fresh):
            if opened is not None:
                opened.context.close()


AUDIT_LINK = "/frontier?preset=demo&methods=pldp_b&eps=1,3&seeds=1&audit=1&match=target"


def test_an_audited_frontier_draws_its_lower_bounds_and_links_their_meaning(browser, server):
    """A frontier audited by the page's worker (trained here first, into the running server's
    store: 4 runs, 4 audits) reopens from its link with a diamond per run, and the caption's link
    opens the Mechanisms page's section."""
    from fedcore.sweep import SweepSpec
    from fedcore.sweep.audit import DEFAULT_TRIALS
    from fedcore.runner.store import JobStore
    from fedcore.sweep.job import sweep_fields, sweep_id, sweep_main

    url, store = server
    spec = SweepSpec(preset="demo", methods=("pldp_b",), epsilons=(1.0, 3.0), seeds=1, match="target")
    fields = sweep_fields(spec, audit=DEFAULT_TRIALS)   # the page's job, trained here into the server's store
    job_id = sweep_id(fields["key"])
    JobStore(store).create_job(job_id, "sweep", owner=None, entry="fedcore.sweep.job:launch", **fields)
    sweep_main(str(store), job_id)
    pg = browser.new_page(viewport={"width": 1280, "height": 900})
    try:
        pg.set_default_timeout(REOPEN_S * 1000)
        pg.goto(url + AUDIT_LINK, wait_until="domcontentloaded")
        wait_for_chart(pg, None, ("pldp_b", "pldp_b audited", "pldp_b audit"))
        # 2 mean-curve markers + 2 seed dots + 2 audited diamonds
        assert curve_points(pg) == 6
        assert pg.get_by_role("switch", name="Audit each point").is_checked()
        assert pg.locator(".legendtext:visible", has_text="audited ε ≥").count() == 1   # the phone's copy is hidden
        assert not pg.locator("[data-testid=stException]").count()
        SHOTS.mkdir(parents=True, exist_ok=True)
        pg.screenshot(path=str(SHOTS / "frontier-audit.png"), full_page=True)
        link = pg.get_by_role("link", name="What a lower bound means")
        with pg.context.expect_page() as opened:
            link.click()
        mech = opened.value
        # the page opens scrolled to the section (its heading's anchor) and keeps the anchor in its URL
        mech.wait_for_function("() => { const h = document.getElementById('audited-privacy');"
                               " if (!h) return false; const top = h.getBoundingClientRect().top;"
                               " return top >= 0 && top < window.innerHeight; }", polling=500,
                               timeout=REOPEN_S * 1000)
        assert mech.url.endswith("/mechanisms?mechanism=two_point#audited-privacy")
    finally:
        pg.context.close()

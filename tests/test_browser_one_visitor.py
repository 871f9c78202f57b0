"""One browser is one visitor (issue 38 §3), also when its tabs are opened at once and pressed
at once: Run waits until the page has read the browser's stored code (or found none), so no
press starts work under the fresh identity a new session is issued. Three tabs of one fresh
browser each press Run on the same config as soon as it is enabled: one visitor, so one run
(a visitor's press of a config they train already opens that run), shown in every tab."""
from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
from dashboard_server import CHROMIUM, round_counter, stop_active_runs, wait_until  # noqa: E402

SLOW = "/?preset=demo&rounds=5000&local.epochs=5&local.batch_size=8&seed=383"

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not Path(CHROMIUM).exists(),
                                 reason=f"{CHROMIUM} is missing (apt-get install chromium); "
                                 "the browser test never downloads a browser")]


def _what_each_tab_shows(tabs, store, since, shots: Path) -> str:
    """Why a tab shows no round: the runs since the test began (status, owner) and each tab's
    progress text and Run/Stop states, with a screenshot of each tab under ``shots``."""
    from fedcore.runner import JobStore

    runs = [(r["id"], r["status"], r["owner"]) for r in JobStore(store).list_job_dicts(kind=None)
            if r["created"] >= since - 600]
    lines = [f"runs: {runs}"]
    for i, tab in enumerate(tabs):
        bars = tab.locator("[data-testid=stProgress]")
        lines.append(f"tab {i}: progress {bars.first.inner_text() if bars.count() else None!r}, "
                     f"alerts {[a.inner_text()[:120] for a in tab.locator('[data-testid=stAlert]').all()]}, "
                     f"errors {tab.locator('[data-testid=stException]').count()}, "
                     f"Stop enabled {tab.get_by_role('button', name='Stop', exact=True).is_enabled()}")
        tab.screenshot(path=str(shots / f"tab{i}.png"), full_page=True)
    return "a tab's press started nothing: " + "; ".join(lines) + f" (screenshots in {shots})"


def test_three_tabs_of_a_fresh_browser_pressed_at_once_are_one_visitor(browser, shared_server, tmp_path):
    from fedcore.runner import ACTIVE, JobStore

    url, store = shared_server
    stop_active_runs(store)  # the one worker slot free: what this test waits for is its own run's rounds
    wait_until(lambda: not [r for r in JobStore(store).list_job_dicts(kind=None) if r["status"] in ACTIVE], 120,
               "an earlier module's job still holds the shared server's one worker slot")
    since = time.time()
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    try:
        tabs = [context.new_page() for _ in range(3)]
        for tab in tabs:
            tab.set_default_timeout(120_000)
            tab.goto(url + SLOW, wait_until="commit")     # all three load together
        for tab in tabs:
            tab.get_by_role("button", name="Run", exact=True).click()   # waits until it is enabled
        wait_until(lambda: all(round_counter(tab) >= 1 for tab in tabs), 120,
                   lambda: _what_each_tab_shows(tabs, store, since, tmp_path))
        runs = [r for r in JobStore(store).list_job_dicts("run") if r["created"] >= since]
        assert len({r["owner"] for r in runs}) == 1, [(r["id"], r["owner"]) for r in runs]
        assert len(runs) == 1                                # one visitor's press of the config it trains opens it
        for tab in tabs:                                     # and every tab may stop it: it is theirs
            assert tab.get_by_role("button", name="Stop", exact=True).is_enabled()
    finally:
        context.close()

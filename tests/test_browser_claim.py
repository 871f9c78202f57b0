"""A claim moves control (issue 57 §3): once B enters A's "keep my runs" code in another browser,
A's open page loses its Stop, Pause and Step for that run within one heartbeat (its next whole-page
rerun is started by the polling fragment that sees control move), and B's page has every control
the owner has, Stop included: a Playground that showed no run shows the claimed one. In a real browser."""
from __future__ import annotations

import re
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
from dashboard_server import (CHROMIUM, enabled_controls, load_scaled, round_counter, scaled_ms, settle,  # noqa: E402
                              wait_until)

SLOW = "/?preset=demo&rounds=5000&local.epochs=5&local.batch_size=8&seed=57"

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not Path(CHROMIUM).exists(),
                                 reason=f"{CHROMIUM} is missing (apt-get install chromium); "
                                 "the browser test never downloads a browser")]


def store_status(store, run_id) -> str:
    from fedcore.runner import JobStore

    return JobStore(store).get_job_dict(run_id)["status"]


def test_a_claim_takes_the_controls_from_the_old_page_within_one_heartbeat(browser, shared_server):
    from pages.components.host import TOUCH_EVERY_S

    url, store = shared_server
    a_ctx = browser.new_context(viewport={"width": 1280, "height": 800})
    b_ctx = browser.new_context(viewport={"width": 1280, "height": 800})
    try:
        a = a_ctx.new_page()
        a.set_default_timeout(90_000)
        a.goto(url + SLOW)
        settle(a, 0.5)
        a.get_by_role("button", name="Run").click()
        wait_until(lambda: round_counter(a) >= 1, 120, "A's run never showed a round")
        wait_until(lambda: "run=" in a.url, 30, "A's URL never named its run")
        run_id = re.search(r"run=([^&]+)", a.url).group(1)
        wait_until(lambda: {"Stop", "Pause", "Step"} <= set(enabled_controls(a)), 30, "A never had its controls")
        a.get_by_text("Keep my runs").click()
        code = a.locator("[data-testid=stSidebar] code").first.inner_text().strip()

        b = b_ctx.new_page()
        b.set_default_timeout(90_000)
        b.goto(url + "/")  # a fresh Playground: no run on it (the link's read-only view: test_browser_identity)
        settle(b, 1.0)
        assert enabled_controls(b) == []
        b.get_by_text("Keep my runs").click()
        b.get_by_label("Claim runs with a saved code").fill(code)
        b.get_by_role("button", name="Claim my runs").click()
        b.get_by_text("are yours in this tab").wait_for()
        claimed = time.monotonic()

        # A: no enabled control for that run within one heartbeat (the load on a busy host allowed for)
        wait_until(lambda: enabled_controls(a) == [], load_scaled(TOUCH_EVERY_S),
                   f"A's page kept {enabled_controls(a)} after B claimed its code")
        took = time.monotonic() - claimed
        a.get_by_text("This browser's runs moved").wait_for(timeout=scaled_ms(10))
        assert store_status(store, run_id) == "running"  # moving control stopped nothing

        # B: the claimed run on its Playground, with every control the owner has, Stop included, and it works
        wait_until(lambda: {"Stop", "Pause", "Step"} <= set(enabled_controls(b)), load_scaled(TOUCH_EVERY_S),
                   f"B's page has only {enabled_controls(b)} after its claim")
        b.get_by_role("button", name="Stop", exact=True).click()
        wait_until(lambda: store_status(store, run_id) == "stopped", 30, "B's Stop did not stop the claimed run")
        print(f"A's controls were gone {took:.1f} s after B's claim")
    finally:
        a_ctx.close()
        b_ctx.close()

"""What ε buys, in a real browser: the Playground's attack view on the attack preset (each
client's digit beside what the attacker recovers at its ε) and the Frontier's attack panels.
Screenshots go to a temporary folder (``FEDCORE_SHOTS=docs/screenshots`` refreshes the committed ones)."""
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
    """The dashboard with its default host settings (shared with the other browser modules)."""
    return dashboards({})


def shoot_at(pg, text: str, name: str) -> Path:
    """Scroll ``text`` to the top of the view and save a screenshot named ``name``."""
    pg.get_by_text(text, exact=True).first.scroll_into_view_if_needed()
    pg.evaluate("window.scrollBy(0, 0)")
    settle(pg, 1.5)
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / f"{name}.png"
    pg.screenshot(path=str(path))
    return path


def test_the_playground_shows_each_clients_digit_beside_the_attackers(browser, server):
    url, _ = server
    pg = browser.new_page(viewport={"width": 1280, "height": 900})
    try:
        pg.set_default_timeout(120_000)
        pg.goto(url + "/?preset=attack_digits")
        pg.get_by_text("worker ready").wait_for(timeout=120_000)
        pg.get_by_role("button", name="Run").click()
        pg.get_by_text("What the attacker sees").wait_for()
        pg.get_by_text("Round 20 / 20 · finished").wait_for()
        pg.get_by_text("How often it found the image, all rounds so far").wait_for()
        view = pg.locator("[data-testid=stImage]")
        view.nth(5).wait_for()
        assert view.count() == 6                                   # one pair per client
        assert pg.get_by_text("Anyone, the server included, sees each client's noised upload.").count() == 1
        captions = " ".join(view.all_inner_texts()) or pg.inner_text("body")
        assert "Client 5 · ε 100,000" in captions or "Client 5" in captions
        assert shoot_at(pg, "What the attacker sees", "playground-attack").stat().st_size > 10_000
    finally:
        pg.context.close()


def test_the_frontier_draws_attack_success_against_epsilon(browser, server):
    url, _ = server
    pg = browser.new_page(viewport={"width": 1280, "height": 1000})
    try:
        pg.set_default_timeout(180_000)
        pg.goto(url + "/frontier")
        pg.get_by_text("What ε buys: what an attacker gets").wait_for()
        charts = pg.locator("[data-testid=stPlotlyChart]")
        charts.nth(1).wait_for()                                    # accuracy, then attack success
        attack = charts.nth(1)
        attack.locator(".scatterlayer .trace").first.wait_for()
        assert attack.locator(".scatterlayer .trace .points path").count() >= 10
        assert shoot_at(pg, "What ε buys: what an attacker gets", "frontier-attack").stat().st_size > 10_000
    finally:
        pg.context.close()

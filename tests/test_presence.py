"""Presence per visitor, by the server's clock (issue 38 §2): a visitor's jobs live while any page
of theirs is connected, however long its script runs take; a closed page's jobs stop after the
grace period. The browser tests drive ``tests/apps/slow_owner.py`` (a script run held longer than
the grace period, no heartbeat of its own) on a server of their own."""
from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from pages.components.presence import Presence

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
from dashboard_server import CHROMIUM, dashboard_server, scaled_ms, wait_until  # noqa: E402

GRACE_S = 6.0
HOLD_S = 5 * GRACE_S
"""The page's one script run lasts this long: five grace periods without a poll."""


def test_presence_keeps_the_visitors_with_a_connected_session():
    alive, touched = {"s1", "s2", "s3"}, []
    presence = Presence(touched.append, lambda s: s in alive)
    presence.note("s1", "visitor:a")
    presence.note("s2", "visitor:a")
    presence.note("s3", "visitor:b")
    presence.note("s4", None)                              # no visitor yet: nothing to keep
    presence.tick()
    assert touched == [{"visitor:a", "visitor:b"}]
    alive -= {"s1", "s3"}                                  # a's second tab is still open; b closed theirs
    presence.tick()
    assert touched[-1] == {"visitor:a"}
    presence.note("s2", "visitor:c")                       # a claim moved the session to another visitor
    presence.tick()
    assert touched[-1] == {"visitor:c"}
    alive.clear()
    presence.tick()
    assert len(touched) == 3 and presence.owners() == set()   # nobody left: nothing touched


def test_one_visitors_open_page_keeps_only_that_visitors_jobs_alive(tmp_path):
    """Two visitors with a job each queued behind a third one's, one page open (visitor a's): the
    server's presence tick refreshes a's heartbeat and neither b's nor the third's (issue 56, mutant V3:
    ``keep_owners_alive`` without its owner filter kept every visitor's jobs alive)."""
    from fedcore.runner import Jobs
    from test_jobs import blocker

    manager = Jobs(tmp_path / "store", warm=False, max_running=1)
    try:
        jobs = {owner: blocker(manager, owner, name) for owner, name in
                (("visitor:z", "busy"), ("visitor:a", "a"), ("visitor:b", "b"))}
        assert [manager.status(jobs[o]) for o in ("visitor:a", "visitor:b")] == ["queued", "queued"]
        before = {o: manager.store.last_beat(j) for o, j in jobs.items()}
        time.sleep(0.05)
        presence = Presence(manager.keep_owners_alive, lambda s: s == "tab-a")
        presence.note("tab-a", "visitor:a")
        presence.note("tab-b", "visitor:b")                # b's page was closed
        presence.tick()
        after = {o: manager.store.last_beat(j) for o, j in jobs.items()}
        assert after["visitor:a"] > before["visitor:a"]
        assert after["visitor:b"] == before["visitor:b"] and after["visitor:z"] == before["visitor:z"], (before, after)
    finally:
        manager.close()


@pytest.fixture(scope="module")
def slow_server(tmp_path_factory):
    store = tmp_path_factory.mktemp("store")
    env = {"FEDCORE_OWNER_GRACE_S": str(GRACE_S), "FEDCORE_MAX_ROUNDS": "5000", "FEDCORE_LIMITS": ""}
    with dashboard_server(store, tmp_path_factory.mktemp("log"), app="tests/apps/slow_owner.py", env=env) as url:
        yield url, store


def the_run(store) -> dict:
    from fedcore.runner import JobStore

    runs = JobStore(store).list_job_dicts("run")
    return runs[0] if runs else {"status": "none"}


@pytest.mark.slow
@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} is missing (apt-get install chromium)")
def test_a_script_run_longer_than_grace_is_no_departure_and_a_closed_page_is(slow_server, browser):
    url, store = slow_server
    context = browser.new_context()
    page = context.new_page()
    page.goto(f"{url}/?hold={HOLD_S:g}")
    wait_until(lambda: the_run(store)["status"] == "running", 120, "the run never started")
    started = time.monotonic()
    page.get_by_text("held", exact=True).wait_for(timeout=scaled_ms(HOLD_S + 120))
    assert time.monotonic() - started >= HOLD_S - 1 - 0.5 * GRACE_S   # held for grace periods while it trained
    run = the_run(store)
    assert run["status"] == "running", run.get("reason") or run.get("error")
    context.close()                                        # the page's browser session ends
    closed = time.monotonic()
    wait_until(lambda: the_run(store)["status"] != "running", 60 + 2 * GRACE_S, "the run outlived its closed page")
    run = the_run(store)
    assert run["status"] == "stopped" and "owner's page was closed" in (run.get("reason") or run.get("error") or "")
    from pages.components.presence import TICK_S

    # after the grace period, counted from the last heartbeat (refreshed every TICK_S), not before
    assert time.monotonic() - closed >= GRACE_S - TICK_S - 0.5

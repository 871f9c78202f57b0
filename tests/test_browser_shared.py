"""A shared dashboard in a real browser, with several sessions (separate browser contexts):

- B opens A's run by its link: it sees it read-only, without Stop, and cannot list or
  delete it in History; A's page keeps its Stop;
- with one worker slot, B's own run waits and shows its queue position;
- a session that closes its page has its run stopped after the grace period;
- a phishing link and links that used to raise render as plain text / warnings, never
  markdown links, images or tracebacks;
- host limits refuse a run with their message, from a link and from the UI;
- polling fragments survive a fragment run queued behind a full run (what lost a result
  in the load test: tests/apps/fragment_race.py forces it);
- the load test (benchmarks/load_test.py) at 4 sessions: every session sees its own result,
  no page dies.

Server settings (``SHARED_HOST`` in tests/conftest.py; the server is shared with
tests/test_browser_identity.py): FEDCORE_MAX_RUNNING=1, FEDCORE_OWNER_GRACE_S=10,
FEDCORE_MAX_ROUNDS=5000, FEDCORE_MAX_ACTIVE_PER_OWNER=2.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
from dashboard_server import (CHROMIUM, dashboard_server, load_scaled, press_until,  # noqa: E402
                              round_counter, scaled_ms, settle, stop_active_runs, wait_until)

SLOW = "/?preset=demo&rounds=5000&local.epochs=5&local.batch_size=8"
"""A demo slow enough (several seconds of training) that it is still running while we look."""

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not Path(CHROMIUM).exists(),
                                 reason=f"{CHROMIUM} is missing (apt-get install chromium); "
                                 "the browser test never downloads a browser")]


@pytest.fixture(scope="module")
def server(shared_server):
    """The classroom dashboard (conftest.SHARED_HOST), shared with tests/test_browser_identity.py."""
    return shared_server


def session(browser):
    """A new browser session: its own context (cookies), so its own Streamlit session."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    page.set_default_timeout(90_000)
    return page


def run_param(pg) -> str:
    return pg.evaluate("new URLSearchParams(location.search).get('run') || ''")


def store_record(store, run_id):
    from fedcore.runner import JobStore

    return JobStore(store).get_job_dict(run_id)


def test_a_link_shares_a_run_read_only_and_the_queue_shows_position(browser, server):
    url, store = server
    a = session(browser)
    a.goto(url + SLOW + "&seed=1")
    settle(a, 0.5)
    a.get_by_role("button", name="Run").click()
    wait_until(lambda: round_counter(a) >= 1, 120, "A's run never showed a round")
    wait_until(lambda: run_param(a) != "", 30, "A's URL never named its run")
    a_run = run_param(a)
    assert a.get_by_role("button", name="Stop").is_enabled()

    # B opens A's link: the run is on screen, read-only
    b = session(browser)
    b.goto(a.evaluate("location.href"))
    b.get_by_text("shared run, read-only").wait_for()
    wait_until(lambda: round_counter(b) >= 1, 60, "B does not see A's run training")
    assert b.get_by_role("button", name="Stop").count() == 0
    settle(b, 0.5)
    b.screenshot(path=str(Path(store).parent / "shared_read_only.png"))

    # B's History lists only B's runs: A's run cannot be picked or deleted there
    b.get_by_role("link", name="History").click()
    b.get_by_role("heading", name="Run history").wait_for()
    b.get_by_text("No runs yet").wait_for()

    # B starts a run of its own: one worker slot, so it waits, showing its place in the queue
    b.goto(url + SLOW + "&seed=2")
    settle(b, 0.5)
    b.get_by_role("button", name="Run").click()
    try:
        b.get_by_text(re.compile(r"Queued: position 1 of 1")).wait_for(timeout=scaled_ms(60))
    except Exception:
        b.screenshot(path="/tmp/queue_fail.png")
        from fedcore.runner import JobStore

        raise AssertionError([(r["id"], r["status"], r.get("reason")) for r in JobStore(store).list_job_dicts("run")])
    b_run = run_param(b)
    assert b_run and b_run != a_run
    assert store_record(store, b_run)["status"] == "queued"

    # A still controls its run; stopping it lets B's run start
    assert store_record(store, a_run)["status"] == "running"
    try:
        stop(a, store, a_run)
        wait_until(lambda: round_counter(b) >= 1, 120, "B's queued run never started after A's stopped")
        assert store_record(store, b_run)["owner"] != store_record(store, a_run)["owner"]
        stop(b, store, b_run)
    finally:   # closed pages stop their runs after the grace period: the worker slot is free again
        a.context.close()
        b.context.close()


def stop(page, store, run_id):
    """Press the page's Stop until the store has the request (a click that lands while the button is
    drawn again reaches no script run), then wait for the page to say so."""
    from fedcore.runner import JobStore

    press_until(page.get_by_role("button", name="Stop"),
                lambda: JobStore(store).stop_requested(run_id) or store_record(store, run_id)["status"] != "running",
                f"Stop never reached run {run_id}")
    page.get_by_text("Stopped after").wait_for(timeout=scaled_ms(30))


def test_a_closed_sessions_run_is_stopped_after_the_grace_period(browser, server):
    url, store = server
    c = session(browser)
    c.goto(url + SLOW + "&seed=3")
    settle(c, 0.5)
    c.get_by_role("button", name="Run").click()
    wait_until(lambda: round_counter(c) >= 1, 120, "C's run never showed a round")
    run_id = run_param(c)
    c.context.close()  # the owner leaves
    t_closed = time.monotonic()
    wait_until(lambda: store_record(store, run_id)["status"] != "running", 60,
               "the closed session's run kept training")
    record = store_record(store, run_id)
    assert record["status"] == "stopped" and "owner's page was closed" in record["reason"]
    assert time.monotonic() - t_closed >= 8.0  # not before (about) its grace period


PHISHING = "/?preset=demo&dataset=**Session expired.** [Log in again](http://evil.example/login)"
IMAGE = "/?preset=demo&dataset=![x](http://127.0.0.1:9/pixel.png)"


LINKS = [
    (PHISHING, "Session expired"),
    (IMAGE, "pixel.png"),
    ("/?preset=demo&privacy=123", "could not be loaded"),
    ("/?preset=demo&seed=" + "9" * 5000, "could not be loaded"),
    ("/?preset=demo&run=**nope**](http://evil.example)", "nope"),
]


@pytest.fixture(scope="module")
def link_pages(browser, server):
    """``path -> (page, requests it made)``: every link of :data:`LINKS` opened at once, each in a
    session of its own (their pages load side by side instead of one after another); a test
    takes its page out and closes it."""
    url, _ = server
    pages = {}
    for path, _ in LINKS:
        pg = session(browser)
        requests = []
        pg.on("request", lambda r, requests=requests: requests.append(r.url))
        pg.goto(url + path, wait_until="commit")
        pages[path] = (pg, requests)
    yield pages
    for pg, _ in pages.values():  # those of tests that did not run
        pg.context.close()


@pytest.mark.parametrize("path, shown", LINKS)
def test_link_values_render_as_plain_text_never_markdown_or_tracebacks(link_pages, server, path, shown):
    url, _ = server
    pg, requests = link_pages.pop(path)
    try:
        check_link_page(pg, requests, url, path, shown)
    finally:
        pg.context.close()


def check_link_page(pg, requests, url, path, shown):
    pg.get_by_role("button", name="Run").wait_for()
    settle(pg, 1.0)
    alerts = pg.locator("[data-testid=stAlertContainer]")
    assert any(shown in alerts.nth(i).inner_text() for i in range(alerts.count())), path
    assert pg.locator("a[href*='evil.example']").count() == 0
    assert pg.locator("img[src*='127.0.0.1:9']").count() == 0
    from urllib.parse import urlparse

    outside = [r for r in requests if urlparse(r).netloc != urlparse(url).netloc]
    assert not outside, outside  # no image or link fetched from another host
    assert pg.locator("[data-testid=stException]").count() == 0
    assert "Traceback" not in pg.locator("body").inner_text()


def test_host_limits_refuse_a_run_from_a_link_and_from_the_ui(browser, server):
    url, _ = server
    pg = session(browser)
    pg.goto(url + "/?preset=demo&rounds=6000")
    pg.get_by_text(re.compile(r"Not allowed on this server.*max_rounds")).wait_for()
    assert pg.get_by_role("button", name="Run").is_disabled()

    # from the UI: Compare's "Run seeds" asks for 3 runs; a visitor may have 2 at once
    pg.goto(url + SLOW + "&seed=40")
    settle(pg, 0.5)
    pg.get_by_role("link", name="Compare").click()
    pg.get_by_text("Run several seeds").click()
    pg.get_by_role("button", name="Run seeds").click()
    try:
        pg.get_by_text(re.compile(r"max_active_per_owner")).wait_for(timeout=scaled_ms(120))
    except Exception:  # noqa: BLE001  (say what the page showed instead)
        raise AssertionError("no max_active_per_owner refusal; the page showed:\n" + pg.inner_text("body")[-3000:])
    settle(pg, 0.5)
    from fedcore.runner import JobStore

    store = JobStore(Path(server[1]))
    mine = [r for r in store.list_job_dicts("run") if r["config"]["seed"] in (40, 41, 42)]
    assert len(mine) == 2  # the third was refused, not queued
    for r in mine:
        store.request_stop(r["id"])
    pg.context.close()


def test_polling_fragments_survive_a_fragment_run_queued_behind_a_full_run(browser, tmp_path):
    # tests/apps/fragment_race.py forces what twenty busy sessions did by chance: a fragment
    # run starts before the full run's messages were sent, and Streamlit drops the
    # fragments' part of them. Plain st.fragment: the page dies (the load test's "lost
    # result", a blank page); pacing.polling_fragment: every line stays, no page error.
    seen = {}
    # Streamlit's collection after each run (off in config.toml) keeps the timing the race needs
    with dashboard_server(tmp_path / "store", tmp_path, app="tests/apps/fragment_race.py",
                          env={"STREAMLIT_RUNNER_POST_SCRIPT_GC": "true"}) as url:
        for mode in ("bare", "wrapped"):
            pg = session(browser)
            errors = []
            pg.on("pageerror", lambda exc, errors=errors: errors.append(str(exc)))
            pg.goto(f"{url}/?mode={mode}")
            pg.get_by_text("second ticked").wait_for()
            for k in range(2, 5):
                pg.get_by_role("button", name="Full rerun").click()
                deadline = time.monotonic() + 30
                while not errors and f"full run {k}" not in pg.inner_text("body") and time.monotonic() < deadline:
                    time.sleep(0.2)
                time.sleep(1.5)  # the queued fragment runs
                if errors:
                    break
            seen[mode] = (errors, "" if errors else pg.inner_text("body"))
            pg.context.close()
    bare_errors, _ = seen["bare"]
    errors, body = seen["wrapped"]
    assert not errors
    for line in ("above the fragments", "first ticked", "between the fragments", "second ticked", "full run 4"):
        assert line in body, (line, body)
    if not any("Bad delta path" in e for e in bare_errors):  # the timing-dependent control
        pytest.skip(f"the race did not kill the plain-fragment page this time ({bare_errors}): the "
                    "survival above proves less; Streamlit may also have fixed ForwardMsgQueue.clear")


def test_the_load_test_runs_four_sessions_without_losing_a_result(server, tmp_path):
    # Its own process: Playwright's sync API cannot start while this module's browser
    # fixture holds the thread's event loop. Bounded: 30-round demo runs, 300 s to finish
    # times the host's load (at most the harness's 900 s). Against this module's server (--url;
    # its store named for the summary): what is still queued or training from the tests above
    # is stopped first, so the four runs have the slot. The harness's browsers run at the
    # server's priority (--nice 0), not below it: on a shared host a niced browser is starved by
    # every other process (beside four busy loops the 19 of the benchmark's default showed no
    # page in 600 s), and what is tested here is that no result is lost, not the timings.
    url, store = server
    stop_active_runs(store)
    out = tmp_path / "load.json"
    wait_s = min(load_scaled(300), 900)
    subprocess.run([sys.executable, str(ROOT / "benchmarks" / "load_test.py"), "--url", url, "--sessions", "4",
                    "--rounds", "30", "--timeout", f"{wait_s:.0f}", "--nice", "0", "--json", str(out),
                    "--shots", str(tmp_path)],
                   cwd=ROOT, check=False, timeout=wait_s + 600, env={**os.environ, "FEDCORE_STORE": str(store)})
    summary = json.loads(out.read_text())
    print("\nload test, 4 sessions:", {k: v for k, v in summary.items() if k != "lost"})
    assert summary["lost_results"] == 0, summary["lost"]
    assert summary["page_errors"] == 0
    assert summary["health_failures"] == 0
    assert summary["first_point_median_s"] is not None
    assert summary["first_round_stored_median_s"] is not None
    # the browsers were reached (Playwright's Chromium runs in a session of its own, which a
    # plain ``nice`` does not reach: benchmarks/load_test.py nice_processes)
    assert summary["browser_processes_niced"] >= 2
    assert summary["health_samples"] > 0


def test_a_class_of_30_pressing_run_within_10_s_loses_nothing_and_each_page_shows_its_place(tmp_path):
    """Issue 54 §6: a class arriving at once. 30 browser sessions press Run on 20-round demo runs within 10 s,
    against a fresh server with its default settings (warm workers up to the slot limit); none loses its
    result, and each page shows its place (queue position or round counter) within 5 s of its click (times
    the host's load). Browsers at the server's priority (see the four-session test above)."""
    out = tmp_path / "burst.json"
    wait_s = min(load_scaled(600), 900)
    subprocess.run([sys.executable, str(ROOT / "benchmarks" / "load_test.py"), "--sessions", "30", "--rounds", "20",
                    "--spread", "9", "--timeout", f"{wait_s:.0f}", "--nice", "0", "--json", str(out),
                    "--shots", str(tmp_path)], cwd=ROOT, check=False, timeout=wait_s + 600)
    summary = json.loads(out.read_text())
    print("\nburst, 30 sessions:", {k: v for k, v in summary.items() if k not in ("lost", "health_slow_at")})
    assert summary["lost_results"] == 0, summary["lost"]
    assert summary["page_errors"] == 0
    assert summary["clicks_within_s"] <= 10.0        # scheduled over 9 s; a busy browser clicks up to ~0.5 s late
    assert summary["placed_missing"] == 0 and summary["placed_max_s"] <= load_scaled(5)
    assert summary["click_to_done_p95_s"] is not None and summary["ideal_s"] is not None

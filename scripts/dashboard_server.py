"""``streamlit run app.py`` on a free port, for the browser tests and the dashboard benchmark.

    with dashboard_server(store_dir, log_dir) as url:   # e.g. "http://127.0.0.1:41235"
        ...

The server gets its own run store (``FEDCORE_STORE``) and runs offline
(``FEDCORE_OFFLINE=1``); ``env`` adds host settings (``{"FEDCORE_MAX_RUNNING": "1"}``)
to this process's environment for the server alone. The context waits for
``/_stcore/health`` and stops the server on exit. If it does not come up within
``start_s`` it raises ``RuntimeError`` with the tail of its log.

Also the few things every browser test does with a page (:func:`settle`,
:func:`wait_until`, :func:`round_counter`) and how it starts Chromium
(:data:`CHROMIUM`, :data:`BROWSER_ARGS`).
"""
from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator, Mapping, Optional

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
"""Debian's chromium: the browser tests never download a browser."""
BROWSER_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--no-first-run"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def dashboard_server(store: Path, log_dir: Path, start_s: float = 60, app: str = "app.py",
                     env: Optional[Mapping[str, str]] = None, port: Optional[int] = None) -> Iterator[str]:
    """Start the dashboard (or another script ``app``, relative to the repository) with its
    own run store and the variables ``env`` on top of this process's; on ``port`` (default:
    a free one); yield its URL; stop it afterwards."""
    port = port or free_port()
    env = {**os.environ, **(env or {}), "FEDCORE_STORE": str(store), "FEDCORE_OFFLINE": "1"}
    log = open(Path(log_dir) / "streamlit.log", "w+")
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", app, "--server.port", str(port),
                             "--server.headless", "true", "--browser.gatherUsageStats", "false"],
                            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + start_s
        while True:
            try:
                if urllib.request.urlopen(url + "/_stcore/health", timeout=2).read() == b"ok":
                    break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                log.seek(0)
                raise RuntimeError("streamlit did not start:\n" + log.read()[-3000:])
            time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
        log.close()


def round_counter(pg) -> int:
    """The round shown by the page's progress bar ("Round 7 / 40 · running"); 0 before any."""
    bars = pg.locator("[data-testid=stProgress]")
    if not bars.count():
        return 0
    m = re.search(r"Round (\d+) /", bars.first.inner_text())
    return int(m.group(1)) if m else 0


@contextmanager
def fresh_page(browser, width: int = 1280, height: int = 800):
    """A page in a new browser context (its own cookies: a new visitor) of ``width`` x ``height``,
    closed with its context on the way out."""
    context = browser.new_context(viewport={"width": width, "height": height})
    try:
        pg = context.new_page()
        pg.set_default_timeout(90_000)
        yield pg
    finally:
        context.close()


def settle(pg, seconds: float = 1.0, timeout_s: float = 90) -> None:
    """Wait until the app is not running a script, then ``seconds`` longer (charts drawing)."""
    pg.wait_for_function("!document.querySelector('[data-testid=stStatusWidget]')", timeout=timeout_s * 1000)
    if seconds:
        time.sleep(seconds)


def wait_until(predicate: Callable[[], object], timeout: float, what, interval: float = 0.2):
    """Poll ``predicate`` every ``interval`` s until it returns something true, and return that;
    fail with ``what`` (a text, or a function giving one) once ``timeout`` s times the host's load
    (:func:`load_scaled`, re-read while waiting) have passed: a condition, never a wall-clock
    deadline that a busy host misses."""
    start = time.monotonic()
    while True:
        value = predicate()
        if value:
            return value
        assert time.monotonic() - start < load_scaled(timeout), what() if callable(what) else what
        time.sleep(interval)


def press_until(button, reacted: Callable[[], object], what: str, each_s: float = 30, tries: int = 4):
    """Click ``button`` (a Playwright locator) until ``reacted()`` holds, waiting up to ``each_s``
    load-scaled seconds after each click: on a busy host a click can land while the button is being
    drawn again and reach no script run (the Frontier's "Train frontier" once started nothing in
    8 minutes at load 2-5 in a full suite). A press the page already took is not repeated: the
    button is clicked again only while ``reacted()`` is false. Returns what ``reacted()`` returned."""
    for _ in range(tries):
        button.click()
        start = time.monotonic()
        while time.monotonic() - start < load_scaled(each_s):
            value = reacted()
            if value:
                return value
            time.sleep(0.3)
    raise AssertionError(f"{what}: nothing happened after {tries} clicks")


def load_scaled(seconds: float) -> float:
    """``seconds`` times how much slower than usual work runs now (the 1-minute load per CPU, at
    least 1: :func:`fedcore.runner.queueing.load_factor`); what a test's wait allows."""
    from fedcore.runner.queueing import load_factor

    return seconds * load_factor()


def scaled_ms(seconds: float) -> int:
    """:func:`load_scaled` ``seconds`` in milliseconds, for Playwright's timeouts."""
    return int(load_scaled(seconds) * 1000)


RUN_CONTROLS = ("Stop", "Pause", "Step", "Resume")


def enabled_controls(pg, names=RUN_CONTROLS) -> list[str]:
    """The run controls of ``names`` enabled on page ``pg`` now (Pause / Step are shown greyed out to others). A
    button counted and then gone before it is read (a rerun redrawing the page, on a busy host) counts as not
    there, instead of a wait for it to come back."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    found = []
    for name in names:
        buttons = pg.get_by_role("button", name=name, exact=True)
        for i in range(buttons.count()):
            try:
                if buttons.nth(i).is_enabled(timeout=scaled_ms(2)):
                    found.append(name)
                    break
            except PlaywrightTimeout:
                pass
    return found


def stop_active_runs(store, wait_s: float = 30) -> None:
    """Ask every queued or training job of ``store`` (runs, sweeps, audits) to stop, and wait (at most
    ``wait_s``) until none trains: what a test leaves training must not hold the next test's worker
    slot. A queued one is not waited for (it stops at its first round, if it ever starts)."""
    from fedcore.runner import JobStore

    runs = JobStore(store)
    deadline = time.monotonic() + wait_s
    while True:
        active = [r for r in runs.list_job_dicts(kind=None) if r["status"] in ("queued", "running")]
        for r in active:
            runs.request_stop(r["id"])
        if not any(r["status"] == "running" for r in active) or time.monotonic() > deadline:
            return
        time.sleep(0.5)

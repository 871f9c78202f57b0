"""Shared fixtures."""
from __future__ import annotations

import os
import sys
from contextlib import ExitStack
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from dashboard_server import BROWSER_ARGS, CHROMIUM, dashboard_server, stop_active_runs  # noqa: E402

import atexit  # noqa: E402
import shutil  # noqa: E402
import tempfile  # noqa: E402

if "FEDCORE_RDP_CACHE" not in os.environ:
    os.environ["FEDCORE_RDP_CACHE"] = tempfile.mkdtemp(prefix="fedcore-rdp-")
    atexit.register(shutil.rmtree, os.environ["FEDCORE_RDP_CACHE"], ignore_errors=True)
"""The tests' (and their servers' and workers') curves on disk: a folder of this test session's own."""

PYTEST_MAIN = sys.modules.get("__main__")


@pytest.fixture(autouse=True)
def main_module_kept():
    """pytest's ``__main__`` around every test: an AppTest run of a page (in a test or a module's
    fixture) can leave the page's script module there, and a process spawned later (a worker) then
    re-runs ``app.py`` as its main module and dies before it starts (tests/test_runner.py after
    tests/test_reproduce_job.py)."""
    if PYTEST_MAIN is not None:
        sys.modules["__main__"] = PYTEST_MAIN
    yield
    if PYTEST_MAIN is not None:
        sys.modules["__main__"] = PYTEST_MAIN


@pytest.fixture(autouse=True)
def priority_kept(monkeypatch):
    """A job's body trained in the test's own process (``sweep_main``, ``reproduction_main``, an
    audit) would lower pytest's priority for good (``lower_priority``: a worker's ``os.nice``), and
    with it every later test and every server started after: the busy-host suite run of
    2026-11-27 crawled at nice 5 from the Frontier browser test on. Workers in processes of their
    own still lower theirs; a test that changes the suite's niceness fails."""
    before = os.nice(0)
    monkeypatch.setattr("fedcore.runner.worker.lower_priority", lambda *a, **k: None)
    yield
    assert os.nice(0) == before, f"the test lowered the test process's priority ({before} -> {os.nice(0)})"


@pytest.fixture(scope="module")
def store_dir(tmp_path_factory):
    """A fresh run store for the module's pages (``FEDCORE_STORE``); its job manager is closed after."""
    path = tmp_path_factory.mktemp("store")
    old = os.environ.get("FEDCORE_STORE")
    os.environ["FEDCORE_STORE"] = str(path)
    yield path
    from pages.components import server

    server.job_manager(str(path)).close()
    if old is None:
        os.environ.pop("FEDCORE_STORE", None)
    else:
        os.environ["FEDCORE_STORE"] = old


# --- browser tests: dashboards shared between modules ----------------------------------------
SHARED_HOST = {"FEDCORE_MAX_RUNNING": "1", "FEDCORE_OWNER_GRACE_S": "10", "FEDCORE_MAX_ROUNDS": "5000",
               "FEDCORE_MAX_ACTIVE_PER_OWNER": "2", "FEDCORE_LIMITS": ""}
"""The host settings of a shared classroom server (one worker slot, a 10 s grace period,
two active runs per visitor): tests/test_browser_identity.py and tests/test_browser_shared.py."""


@pytest.fixture(scope="session")
def dashboards(tmp_path_factory):
    """``dashboards(env) -> (url, store)``: ``streamlit run app.py`` with the host settings
    ``env`` ({} : the dashboard's defaults), started on first use and shared by every browser
    test module that asks for the same settings (a start costs a Streamlit import and a worker
    importing torch: seconds on a busy 2-core host); stopped at the end of the session."""
    started: dict = {}
    with ExitStack() as stack:
        def get(env: dict) -> tuple[str, Path]:
            key = tuple(sorted(env.items()))
            if key not in started:
                store = tmp_path_factory.mktemp("store")
                url = stack.enter_context(dashboard_server(store, tmp_path_factory.mktemp("log"), env=env))
                started[key] = (url, store)
            return started[key]

        yield get


@pytest.fixture(scope="module")
def shared_server(dashboards):
    """``(url, store)`` of the dashboard with :data:`SHARED_HOST`, shared by the modules that ask
    for it; what a module leaves queued or training is stopped after it."""
    url, store = dashboards(SHARED_HOST)
    yield url, store
    stop_active_runs(store)


@pytest.fixture(scope="module")
def browser():
    """Debian's headless Chromium for one browser test module (Playwright's sync API allows one
    at a time in a process; each test opens its own context: its own cookies and session)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=BROWSER_ARGS)
        yield b
        b.close()


def pytest_sessionfinish(session, exitstatus):
    """End the worker processes tests left starting (a job manager's warm worker spawned in a
    test's last second): a spawned child still unpickling its queue when pytest exits prints a
    traceback for a semaphore that is gone."""
    import multiprocessing

    children = multiprocessing.active_children()
    for child in children:
        child.terminate()
    for child in children:
        child.join(2.0)

"""A claim moves every record of its code (issue 38 §7): after a server restart, a visitor enters
a saved "keep my runs" code while the browser's own earlier code is still being reported (the
report lands after the claim, as on a busy server); History lists every run of that code, and
the page is the owner of that code's other jobs too."""
from __future__ import annotations

from pathlib import Path

import streamlit as st
from streamlit.testing.v1 import AppTest

from fedcore.runner.owners import Identities
from fedcore.runner.store import JobStore
from pages.components import host

ROOT = Path(__file__).resolve().parents[1]


PAGE = """
import streamlit as st
from fedcore.runner.record import RUN
from pages.components import history, host, state
host.sign_in_controls()
st.write("runs=" + ",".join(r.id for r in history.visible_runs(state.manager().store.list_jobs(RUN), "mine")))
"""
"""The sidebar of every page, then the runs History lists (its own functions)."""


def history(at: AppTest) -> set[str]:
    """The run ids History lists, after a run of the page."""
    at.run()
    assert not at.exception
    line = next(m.value for m in at.markdown if str(m.value).startswith("runs="))[len("runs="):]
    return set(line.split(",")) - {""}


def test_a_saved_code_claimed_after_a_restart_brings_every_run(tmp_path, monkeypatch):
    store_dir = tmp_path / "store"
    monkeypatch.setenv("FEDCORE_STORE", str(store_dir))
    ids = Identities(store_dir / "owners.db")
    owner, code = ids.issue()                         # the visitor of the saved code, from before the restart
    _, browser_code = ids.issue()                     # the code this browser holds now (a visit since)
    store = JobStore(store_dir)
    runs = set()
    for seed in (1, 2, 3):
        run = store.create_run({"rounds": 2, "seed": seed}, f"hash{seed}", label=f"run {seed}", owner=owner)
        store.finish(run["id"], "finished")
        runs.add(run["id"])
    store.create_job("sweep:k", "sweep", owner=owner, label="a sweep")
    store.update_job("sweep:k", status="stopped")
    st.cache_resource.clear()                          # the server restarted: nothing of it is remembered
    reports = []                                       # the browser's component: its reports are set below
    monkeypatch.setattr(host, "_BROWSER", lambda **kw: reports.append(kw))

    monkeypatch.chdir(ROOT)
    at = AppTest.from_string(PAGE, default_timeout=120)
    assert history(at) == set()
    at.text_input(key="host.claim_code").input(code)
    next(b for b in at.sidebar.button if b.proto.label == "Claim my runs").click()
    assert history(at) == runs
    at.session_state[host.BROWSER_KEY] = browser_code  # the browser's earlier code, reported late
    assert history(at) == runs, "the late report of the browser's earlier code took the runs away"
    assert at.session_state[host.SYNCED_KEY] == browser_code           # it was read
    assert reports[-1]["replace"] == at.session_state[host.IDENTITY_KEY][1]   # and is replaced by the claimed code
    assert at.session_state[host.IDENTITY_KEY][0] == owner
    new_code = at.session_state[host.IDENTITY_KEY][1]
    at.session_state[host.BROWSER_KEY] = new_code       # the browser stored the claimed code
    assert history(at) == runs and host.CLAIMED_KEY not in at.session_state
    assert JobStore(store_dir).get_job_dict("sweep:k")["owner"] == owner   # the sweep is the same visitor's

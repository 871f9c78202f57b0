"""A paper's quick reproduction as a job (fedcore/reproduce/job.py) and its button on the Papers
page (issue 32, item 5): the estimate is a range scaled by the load; the host's limits refuse
what they must, naming the limit; the worker reports how it ended; the page's button trains it
in the background and then shows its record, labelled as this server's, beside the shipped one;
only its starter (or an admin) can stop it."""
from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from fedcore.papers import PAPERS
from fedcore.reproduce.run import row_configs
from fedcore.reproduce.estimate import MEASURED_SPREAD, batch_seconds, load_range, rough_seconds, slowdown
from fedcore.runner.limits import HostLimits, HostUnavailable, LimitError

ROOT = Path(__file__).resolve().parents[1]


# --- the estimate ----------------------------------------------------------------------------
def test_the_range_grows_with_the_load_relative_to_the_cores():
    idle = load_range(60.0, loads=(0.0, 0.0, 0.0), cores=2)
    busy = load_range(60.0, loads=(5.0, 5.0, 5.0), cores=2)
    assert (idle.low, idle.high) == (30.0, 120.0)              # alone: the model's 2x either way
    assert (busy.low, busy.high) == (90.0, 360.0)              # it gets 2 of 6 runnable: 3x longer
    assert load_range(60.0, loads=(5.0, 5.0, 5.0), cores=6).high == 120.0   # the same load on 6 cores: none
    moving = load_range(60.0, loads=(9.0, 5.0, 1.0), cores=2)  # the load moves: its range spans the recent loads
    assert moving.low == 30.0 and moving.high == 600.0
    assert busy.label() == "about 1–6 min on this machine now (load average 5.0 on 2 cores)"
    measured = load_range(60.0, loads=(5.0, 5.0, 5.0), cores=2, spread=MEASURED_SPREAD, measured=True)
    assert busy.low < measured.low < measured.high < busy.high and measured.measured
    assert slowdown(5.0, 2, counted=True) == 2.5 and slowdown(5.0, 2) == 3.0


def test_a_lockstep_batch_pays_its_shared_work_once():
    """PLDP's quick digits table: 21 logreg runs in one lockstep batch cost far less than 21 alone
    (its overheads are shared), and a config met twice trains once."""
    paper = PAPERS["pldp"]
    runs = [c.replace(seed=s) for c in row_configs(paper.table("digits_iid"), quick=True).values()
            for s in range(paper.quick_seeds)]
    together, alone = batch_seconds(runs), sum(rough_seconds(c) for c in runs)
    assert together < alone / 5
    assert batch_seconds(runs + runs[:3]) == together
    assert batch_seconds(runs[:1]) == pytest.approx(rough_seconds(runs[0]))


# --- planning and the host's limits ------------------------------------------------------------
@pytest.fixture
def offline(tmp_path, monkeypatch):
    """An offline server without MNIST's files (digits is bundled)."""
    monkeypatch.setenv("FEDCORE_OFFLINE", "1")
    monkeypatch.setenv("FEDCORE_DATA", str(tmp_path / "data"))


def test_tables_that_cannot_run_here_are_left_out_and_named(offline):
    from fedcore.reproduce.job import plan

    p = plan("pldp", limits=HostLimits())
    assert p.tables == ["digits_iid"] and p.total == 7 * PAPERS["pldp"].quick_seeds
    assert p.left_out["mnist_iid"] == "needs mnist, whose files are not on this server"
    with pytest.raises(HostUnavailable, match="none of its quick tables can train on this server"):
        plan("hw_dpfl", limits=HostLimits())


def test_a_host_limit_refuses_it_by_name(offline, tmp_path):
    from fedcore.reproduce.job import start_reproduction
    from fedcore.runner.jobs import Jobs

    manager = Jobs(tmp_path / "store", warm=False, limits=HostLimits(max_rounds=5))
    try:
        with pytest.raises(LimitError, match=r"pldp / digits_iid: rounds: got 10.*host limit max_rounds"):
            start_reproduction(manager, "pldp")
        manager.limits = HostLimits(max_run_seconds=0.5)
        with pytest.raises(LimitError, match=r"would take about .* on this machine now.*host limit max_run_seconds"):
            start_reproduction(manager, "pldp")
        assert manager.store.list_job_dicts(kind=None) == []           # nothing was queued
    finally:
        manager.close()


# --- the worker, in this process ---------------------------------------------------------------
@pytest.fixture
def worker_here(tmp_path, monkeypatch):
    """``run(tables, stop=False) -> record``: the job's worker in this process (not niced)."""
    from fedcore.reproduce.job import plan, reproduction_fields, reproduction_id, reproduction_main
    from fedcore.runner.store import JobStore

    store = JobStore(tmp_path / "store")

    def run(p, stop: bool = False) -> dict:
        fields = reproduction_fields(p, "k")
        store.create_job(reproduction_id("k"), "reproduce", **fields)
        if stop:
            store.request_stop(reproduction_id("k"))
        reproduction_main(str(tmp_path / "store"), reproduction_id("k"))
        return store.get_job_dict(reproduction_id("k"))
    yield run, plan
    store.close()


def test_stop_ends_it_before_the_next_run(worker_here):
    run, plan = worker_here
    record = run(plan("pldp", tables=["digits_iid"], seeds=1), stop=True)
    assert record["status"] == "stopped" and record["done"] == 0


def test_a_dataset_that_fails_to_load_fails_the_job_readably(worker_here, offline):
    """Planned while MNIST seemed here, trained where it is not: ``failed``, and why in one line."""
    from fedcore.reproduce.job import Plan

    run, plan = worker_here
    record = run(Plan("pldp", ["mnist_iid"], 1))
    assert record["status"] == "failed"
    assert "mnist" in record["error"] and "not available" in record["error"] and "Traceback" not in record["error"]
    assert str(Path(os.environ["FEDCORE_DATA"])) not in record["error"]


# --- the Papers page -----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def digits_only(store_dir, tmp_path_factory):
    """The module's server offers only digits (bundled): PLDP's quick digits table is the one
    quick table that runs, one lockstep batch of seconds; the other papers are refused."""
    from pages.components import server

    env = {"FEDCORE_DATASETS": "digits", "FEDCORE_OFFLINE": "1",
           "FEDCORE_DATA": str(tmp_path_factory.mktemp("data"))}
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    server.limits.clear()
    yield store_dir
    server.manager().close()
    for k, v in old.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    server.limits.clear()


def papers_page():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.switch_page("pages/papers.py").run()
    assert not at.exception
    return at


def texts(at, kind: str) -> str:
    """The text of every ``kind`` element, markdown escapes removed (``plain`` escapes ``:``)."""
    return "\n".join(str(e.value) for e in at.get(kind)).replace("\\", "")


@pytest.mark.slow   # a quick reproduction trained, ~9 s: in the full suite only
def test_the_button_trains_the_quick_reproduction_and_shows_its_record(digits_only, monkeypatch):
    import dataclasses

    from fedcore.reproduce import report
    from fedcore.reproduce.job import reproduction_record, reproduction_status
    from fedcore.runner.store import ACTIVE
    from pages.components import server

    # one seed instead of PLDP's three: the job's record carries the seeds to its worker
    monkeypatch.setitem(PAPERS, "pldp", dataclasses.replace(PAPERS["pldp"], quick_seeds=1))
    shipped = (ROOT / "assets" / "reproduction" / "pldp.json").read_bytes()
    at = papers_page()
    button = at.button(key="papers.pldp.reproduce")
    assert not button.disabled and button.label == "Run the quick reproduction here"
    assert "on this machine now (load average" in texts(at, "caption")
    assert "left out here: mnist_iid, mnist_noniid (needs mnist, which this server does not offer); " in \
        texts(at, "caption")
    assert at.button(key="papers.hw_dpfl.reproduce").disabled            # MNIST only: refused, and why
    assert "It cannot start here: HW-DPFL: none of its quick tables can train on this server (noniid: needs mnist, " \
        "which this server does not offer)" in texts(at, "caption")
    assert not [r for r in at.radio if r.key == "papers.pldp.shown"]     # nothing of this server's yet

    at.button(key="papers.pldp.reproduce").click().run()
    assert at.button(key="papers.pldp.reproduce").disabled                  # one at a time
    assert at.get("progress") or "Queued" in texts(at, "info") or "Handing it to a worker" in texts(at, "info")
    assert [b for b in at.button if b.key == "papers.pldp.stop"]           # its starter may stop it
    deadline = time.monotonic() + 90    # the page polls the store; so does the test, then draws it once
    while time.monotonic() < deadline and reproduction_status(server.manager(), "pldp").status in ACTIVE:
        time.sleep(0.2)
    at.run()
    status = reproduction_status(server.manager(), "pldp")
    assert status.status == "finished", (status, texts(at, "error"))
    assert status.done == status.total == 7
    record = reproduction_record(server.manager().store_dir, "pldp", "pldp")   # <store>/reproductions/pldp/
    assert record["mode"] == "quick (CPU, reduced)" and [t["key"] for t in record["tables"]] == ["digits_iid"]
    # what the CLI would run (the worker, another process, knows PLDP's own three quick seeds)
    assert record["command"] == "python -m fedcore reproduce pldp --quick --seeds 1 --tables digits_iid"
    shown = at.radio(key="papers.pldp.shown")
    assert shown.value == "mine" and shown.options[0].startswith("Your quick reproduction (this server, 20")
    assert "**Your quick reproduction (this server, " in texts(at, "success")
    table = record["tables"][0]
    assert f"**Verdict: {report.table_verdict(table)}** · {report.table_seeds(table)} seed(s) per row" in \
        texts(at, "markdown")
    assert "its last run here, rescaled from the load it ran under" in texts(at, "caption")   # measured now
    # the shipped record stays one click away, labelled as such
    at.radio(key="papers.pldp.shown").set_value("shipped").run()
    assert "Shipped with the app: reproduced on" in texts(at, "caption")
    assert (ROOT / "assets" / "reproduction" / "pldp.json").read_bytes() == shipped   # left as it was
    # another visitor sees this server's record, not as theirs (issue 38 §8)
    other = papers_page()
    assert other.radio(key="papers.pldp.shown").options[0].startswith("This server's quick reproduction (this")
    assert "**This server's quick reproduction (this server, " in texts(other, "success")
    assert "Your quick reproduction" not in texts(other, "success")


def test_another_visitor_watches_the_reproduction_but_cannot_stop_it(digits_only, monkeypatch):
    from fedcore.reproduce.job import plan, reproduction_fields, reproduction_id
    from fedcore.runner.owners import NotYourRun, Viewer
    from fedcore.runner.store import JobStore
    from pages.components import host, server

    worker = subprocess.Popen(["sleep", "60"])  # the reproduction's worker, in another dashboard's hands
    store, job_id = JobStore(digits_only), reproduction_id("ldp_fl")
    p = plan("pldp", tables=["digits_iid"], seeds=1)
    store.create_job(job_id, "reproduce", owner="session:a", **{**reproduction_fields(p, "ldp_fl"), "paper": "ldp_fl",
                                                                "done": 2})
    store.update_job(job_id, status="running", pid=worker.pid)
    try:
        at = papers_page()
        assert not [b for b in at.button if b.key == "papers.ldp_fl.stop"]
        assert "Another visitor's quick reproduction: you can watch it; only they can stop it." in texts(at, "caption")
        assert "session:a" not in texts(at, "caption")
        assert at.button(key="papers.ldp_fl.reproduce").disabled
        with pytest.raises(NotYourRun):
            server.manager().stop(job_id, by=Viewer("session:b"))
        assert store.get_job_dict(job_id)["status"] == "running"
        monkeypatch.setattr(host, "viewer", lambda: Viewer("session:a"))
        at = papers_page()
        assert [b for b in at.button if b.key == "papers.ldp_fl.stop"]
        assert "Another visitor" not in texts(at, "caption")
    finally:
        worker.kill()
        worker.wait()
        store.delete(job_id)

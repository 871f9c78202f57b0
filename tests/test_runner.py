"""The job runner: runs train in worker processes, are stored, cached, stopped, and fail
readably (fedcore/runner)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from dashboard_server import load_scaled, wait_until  # scripts/ (tests/conftest.py puts it on the path)
from fedcore.events import RoundEvent, RunFinished, RunStarted, event_from_dict, summarize, to_dict
from fedcore.resolve import preset_config
from fedcore.runner import Jobs, JobStore
from fedcore.runner.record import CacheKey
from fedcore.runner import worker as worker_mod
from fedcore.budgets import tiered_epsilons
from fedcore.tables import epsilon_matrix, mean_band, rounds_table

ROOT = Path(__file__).resolve().parents[1]
DEMO = preset_config("demo")


@pytest.fixture(scope="module")
def manager(tmp_path_factory):
    m = Jobs(tmp_path_factory.mktemp("store"), warm=True)
    yield m
    m.close()


def wait_for(predicate, timeout=90.0, interval=0.05):
    """``predicate()`` once true; ``timeout`` is scaled by the host's load (``dashboard_server.wait_until``)."""
    return wait_until(predicate, timeout, f"condition not met within {timeout} s (times the load)", interval)


def rounds_stored(store, run_id, at_least=1):
    events = store.read_events(run_id, 0)
    return sum(e["type"] == "round" for e in events) >= at_least


def test_a_run_completes_and_its_events_round_trip(manager):
    cfg = DEMO.replace(rounds=3)
    run_id = manager.start(cfg)
    record = manager.wait(run_id, timeout=120)
    assert record["status"] == "finished", record
    events = manager.store.read_events(run_id)
    assert [e["type"] for e in events] == ["start", "round", "round", "round", "end"]
    assert all(to_dict(event_from_dict(e)) == e for e in events)
    assert events[0]["config_hash"] == cfg.config_hash() == record["config_hash"]
    assert record["rounds_done"] == 3 and record["final_accuracy"] == events[-1]["final_accuracy"]
    wait_for(lambda: not manager.is_alive(run_id), timeout=60)  # the worker exits after its run (niced: slow on a busy host)


def test_same_config_twice_is_a_cache_hit_without_a_new_process(manager):
    cfg = DEMO.replace(rounds=3)
    first = manager.start(cfg)
    manager.wait(first, timeout=120)
    wait_for(lambda: not manager.is_alive(first), timeout=60)
    manager.poll()  # the ended worker is let go
    again = manager.start(cfg)
    assert again == first
    assert manager.active_count() == 0 and not manager.is_alive(again)  # nothing queued, no worker started
    assert len([r for r in manager.store.list_job_dicts("run") if r["config_hash"] == cfg.config_hash()]) == 1


def test_reuse_false_trains_again(manager):
    cfg = DEMO.replace(rounds=3)
    first = manager.start(cfg)
    manager.wait(first, timeout=120)
    second = manager.start(cfg, reuse=False)
    assert second != first
    assert manager.wait(second, timeout=120)["status"] == "finished"


def test_stop_ends_the_run_in_its_worker_and_keeps_its_rounds(manager):
    run_id = manager.start(DEMO.replace(rounds=5000, seed=11))
    wait_for(lambda: rounds_stored(manager.store, run_id, 2))
    manager.stop(run_id)
    wait_for(lambda: not manager.is_alive(run_id), timeout=8)   # a warm worker lives on, back in the pool
    assert manager.status(run_id) == "stopped"
    events = manager.store.read_events(run_id)
    assert events[-1]["type"] == "end" and events[-1]["status"] == "stopped"
    assert events[-1]["rounds_done"] >= 2
    assert sum(e["type"] == "round" for e in events) == events[-1]["rounds_done"]


def test_a_killed_worker_is_marked_failed_with_its_exit_code_and_rounds_kept(manager):
    run_id = manager.start(DEMO.replace(rounds=5000, seed=12))
    wait_for(lambda: rounds_stored(manager.store, run_id, 2))
    os.kill(manager.process(run_id).pid, signal.SIGKILL)
    wait_for(lambda: manager.status(run_id) == "failed", timeout=10)
    record = manager.store.get_job_dict(run_id)
    assert "SIGKILL" in record["error"]
    rounds = [e for e in manager.store.read_events(run_id) if e["type"] == "round"]
    assert len(rounds) >= 2 and record["rounds_done"] == len(rounds)
    assert manager.store.find_finished(CacheKey(record["config_hash"])) is None


def test_an_exception_in_training_fails_the_run_with_one_line_and_keeps_rounds(tmp_path, monkeypatch):
    import fedcore.engine

    real_iter_run = fedcore.engine.iter_run

    def crashing(cfg, should_stop=lambda: False, watch=None):
        for i, event in enumerate(real_iter_run(cfg, should_stop, watch=watch)):
            if i == 3:
                raise RuntimeError("simulated crash in round 3\nsecond line")
            yield event

    monkeypatch.setattr(fedcore.engine, "iter_run", crashing)
    store = JobStore(tmp_path)
    cfg = DEMO.replace(rounds=10)
    run_id = store.create_run(cfg.to_dict(), cfg.config_hash())["id"]
    assert worker_mod.run_job(str(tmp_path), run_id) == "failed"
    record = store.get_job_dict(run_id)
    assert record["status"] == "failed"
    assert record["error"] == "RuntimeError: simulated crash in round 3"
    assert record["rounds_done"] == 2
    assert [e["type"] for e in store.read_events(run_id)] == ["start", "round", "round", "end"]


def test_an_impossible_config_fails_naming_the_field(tmp_path):
    store = JobStore(tmp_path)
    cfg = DEMO.replace(num_clients=5000)  # digits has 1437 training samples
    run_id = store.create_run(cfg.to_dict(), cfg.config_hash())["id"]
    worker_mod.run_job(str(tmp_path), run_id)
    record = store.get_job_dict(run_id)
    assert record["status"] == "failed"
    assert record["error"].startswith("num_clients: got 5000")


def test_heartbeat_timeout_stops_an_orphan(tmp_path, monkeypatch):
    monkeypatch.setenv("FEDCORE_HEARTBEAT_TIMEOUT", "0.5")
    store = JobStore(tmp_path)
    cfg = DEMO.replace(rounds=100_000)
    run_id = store.create_run(cfg.to_dict(), cfg.config_hash())["id"]
    t0 = time.monotonic()
    assert worker_mod.run_job(str(tmp_path), run_id) == "stopped"  # nobody reads its events
    assert time.monotonic() - t0 < load_scaled(20)                   # soon: not at the end of 100,000 rounds
    record = store.get_job_dict(run_id)
    assert record["status"] == "stopped" and "heartbeat" in record["reason"]


def test_a_worker_stops_when_its_parent_is_gone(tmp_path):
    # a light parent (no torch) starts a worker, waits for its first round and vanishes
    cfg = DEMO.replace(rounds=100_000)
    script = textwrap.dedent(f"""
        import json, multiprocessing, os, time
        from fedcore.runner.store import JobStore
        from fedcore.runner.worker import job_main
        if __name__ == "__main__":
            store = JobStore({str(tmp_path)!r})
            run_id = store.create_run(json.loads({cfg.to_json()!r}), {cfg.config_hash()!r})["id"]
            proc = multiprocessing.get_context("spawn").Process(target=job_main, args=({str(tmp_path)!r}, run_id))
            proc.start()
            while store.get_job_dict(run_id)["rounds_done"] < 1:
                store.touch(run_id); time.sleep(0.05)
            print(run_id, proc.pid, flush=True)
            os._exit(0)  # no cleanup, no stop flag
    """)
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True,
                         timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stderr
    run_id, pid = out.stdout.split()
    store = JobStore(tmp_path)
    wait_for(lambda: store.get_job_dict(run_id)["status"] == "stopped", timeout=15)
    assert "exited" in store.get_job_dict(run_id)["reason"]
    wait_for(lambda: not _running(int(pid)), timeout=10)


def _running(pid: int) -> bool:
    try:
        return "zombie" not in Path(f"/proc/{pid}/status").read_text().lower()
    except FileNotFoundError:
        return False


def a_round(number: int, accuracy=None, **fields) -> RoundEvent:
    return RoundEvent(number, accuracy, None, [], [], [], [], **fields)


def test_store_reads_from_an_offset_and_deletes(tmp_path):
    store = JobStore(tmp_path)
    run = store.create_run({"rounds": 2}, "h1", label="x")
    for k in range(3):
        store.append_event(run["id"], a_round(k + 1, 0.1 * k))
    assert [e["round"] for e in store.read_events(run["id"], 1)] == [2, 3]
    assert store.read_events(run["id"], 3) == []
    store.append_event(run["id"], RunFinished("finished", 3, 1.0))
    assert store.find_finished(CacheKey("h1")) == run["id"]
    store.append_event(run["id"], a_round(4))  # after the end: dropped
    assert store.num_events(run["id"]) == 4
    assert store.delete(run["id"]) and store.get_job_dict(run["id"]) is None
    assert store.find_finished(CacheKey("h1")) is None and store.list_job_dicts("run") == []
    assert (Path(tmp_path) / "cache.db").exists()


def test_result_tables_summarise_the_stream():
    run = summarize(RoundEvent(r, 0.5 + 0.1 * r, 1.0, [0, 1], [0, 1], [0.25, 0.75], [r * 1.0, r * 2.0],
                               {"rdp": [None, r * 0.5]}, seconds=0.1, elapsed=0.1 * r) for r in (1, 2))
    table = rounds_table(run)
    assert table["eps_max"].tolist() == [2.0, 4.0] and table["eps_max.rdp"].tolist() == [0.5, 1.0]
    rounds, rdp = epsilon_matrix(run, "rdp")
    assert rounds == [1, 2] and rdp.shape == (2, 2)
    band = mean_band([table, table.assign(accuracy=table["accuracy"] + 0.2)])
    assert band["mean"].round(6).tolist() == [0.7, 0.8] and band["low"].round(6).tolist() == [0.6, 0.7]


def test_tier_presets_split_clients_like_the_paper():
    assert tiered_epsilons(10, (1, 5, 10), (0.3, 0.4, 0.3)) == [1] * 3 + [5] * 4 + [10] * 3
    assert len(tiered_epsilons(101, (1, 10), (0.5, 0.5))) == 101


def test_sigterm_stops_the_worker_and_records_the_stop(manager):
    run_id = manager.start(DEMO.replace(rounds=5000, seed=13))
    wait_for(lambda: rounds_stored(manager.store, run_id, 1))
    proc = manager.process(run_id)
    proc.terminate()  # what multiprocessing does to daemon workers when the dashboard exits
    wait_for(lambda: not proc.is_alive(), timeout=10)
    record = manager.store.get_job_dict(run_id)
    assert record["status"] == "stopped" and "terminated" in record["reason"]


def test_a_link_and_a_cli_line_rebuild_the_same_config():
    import shlex

    from fedcore.cli import build_config
    from fedcore.methods import apply_method
    from fedcore.links import cli_command, config_from_params, config_to_params

    cfg = apply_method(DEMO, "pldp_b").with_overrides(
        {"num_clients": 3, "privacy.epsilon": [1, 5, 10], "partition.kind": "dirichlet", "partition.alpha": 0.3})
    assert config_from_params(config_to_params(cfg, "demo")) == cfg
    args = shlex.split(cli_command(cfg, "demo"))
    sets = [args[i + 1] for i, a in enumerate(args) if a == "--set"]
    assert build_config("demo", None, sets) == cfg


def _ended_runs(store, n=2):
    """``n`` runs that ended (finished, stopped) and one still queued."""
    ended = []
    for k in range(n):
        run = store.create_run({"rounds": 2, "seed": k}, f"h{k}", label=f"run {k}", owner="visitor:a")
        store.append_event(run["id"], RunStarted({}, f"h{k}", "cpu", 10, [5, 5], [[5], [5]], 1, [1.0], [1e-5]))
        store.append_event(run["id"], a_round(1, 0.5 + k / 10))
        store.append_event(run["id"], RunFinished("finished" if k == 0 else "stopped", 1, 1.0, 0.5))
        ended.append(run["id"])
    store.update_job(ended[-1], reason="stopped by the user")
    queued = store.create_run({"rounds": 2}, "hq")["id"]
    return ended, queued


OTHER_KINDS = {"sweep:k1": ("sweep", "finished"), "audit:k2": ("audit", "failed"),
               "reproduction:k3": ("reproduction", "stopped")}
"""Jobs of the other kinds that ended, as :func:`_ended_jobs` records them."""


def _ended_jobs(store) -> dict:
    """An ended sweep, audit and reproduction (:data:`OTHER_KINDS`); their records by id."""
    for job_id, (kind, status) in OTHER_KINDS.items():
        store.create_job(job_id, kind, owner="visitor:a", label=kind, entry="x:y", done=1, total=3)
        store.update_job(job_id, status=status, error="boom" if status == "failed" else None)
    return {job_id: store.get_job(job_id) for job_id in OTHER_KINDS}


@pytest.mark.parametrize("damage", ["header", "pages"])
def test_runs_that_ended_survive_a_damaged_store(tmp_path, damage):
    store = JobStore(tmp_path)
    ended, queued = _ended_runs(store)
    jobs = _ended_jobs(store)
    before = {i: (store.get_job_dict(i), store.read_events(i, touch=False)) for i in ended}
    store.close()
    db = tmp_path / "cache.db"
    with open(db, "r+b") as f:  # at rest: the header, or every page after the first
        if damage == "pages":
            f.seek(4096)
        f.write(os.urandom(max(8192, db.stat().st_size - f.tell())))
    manager = Jobs(tmp_path, check_store=True)  # what the dashboard starts with
    try:
        fresh = manager.store
        assert [r["id"] for r in fresh.list_job_dicts("run")] == ended[::-1]  # newest first, as before
        for run_id, (record, events) in before.items():
            assert fresh.get_job_dict(run_id) == record and fresh.read_events(run_id, touch=False) == events
        assert fresh.get_job_dict(queued) is None  # it had not ended: not archived
        assert fresh.find_finished(CacheKey("h0")) == ended[0]  # the result cache is back too
        assert {j.id: j for j in fresh.list_jobs() if j.id in OTHER_KINDS} == jobs   # every kind was archived
        assert {j.kind: j.status for j in jobs.values()} == {"sweep": "finished", "audit": "failed",
                                                               "reproduction": "stopped"}
        assert "damaged" in fresh.problem and "5 jobs that had ended" in fresh.problem
        assert list(tmp_path.glob("cache.db.damaged-*"))
        # the rebuilt store goes on: new runs, deletes (the archive goes too)
        assert fresh.delete(ended[1]) and not (tmp_path / "archive" / f"{ended[1]}.json").exists()
    finally:
        manager.close()


def test_a_deleted_database_is_rebuilt_from_the_archives(tmp_path, monkeypatch):
    from fedcore.runner import store as store_mod

    monkeypatch.setattr(store_mod, "EXISTENCE_CHECK_S", 0.0)
    store = JobStore(tmp_path)
    ended, _ = _ended_runs(store, 1)
    for side in tmp_path.glob("cache.db*"):
        side.unlink()
    assert [r["id"] for r in store.list_job_dicts("run")] == ended and "restored" in store.problem
    archive = tmp_path / "archive" / f"{ended[0]}.json"
    assert oct(archive.stat().st_mode & 0o777) == "0o600"
    archive.write_text("{not json")  # a damaged archive loses only its own run
    for side in tmp_path.glob("cache.db*"):
        side.unlink()
    assert store.list_job_dicts("run") == []


def test_a_worker_whose_record_is_gone_stops_itself_within_seconds(tmp_path):
    import multiprocessing
    import shutil

    folder = tmp_path / "runs"
    store = JobStore(folder)
    cfg = DEMO.replace(rounds=100_000)
    run_id = store.create_run(cfg.to_dict(), cfg.config_hash())["id"]
    proc = multiprocessing.get_context("spawn").Process(target=worker_mod.job_main, args=(str(folder), run_id))
    proc.start()
    try:
        wait_for(lambda: (store.touch(run_id), store.get_job_dict(run_id)["rounds_done"] >= 1)[1], timeout=120)
        store.close()
        shutil.rmtree(folder)  # the store deleted during the run; the server recreates it
        store = JobStore(folder)
        store.create_run({"rounds": 1}, "other")
        t0 = time.monotonic()
        wait_for(lambda: not proc.is_alive(), timeout=15)
        assert time.monotonic() - t0 < load_scaled(8.0)
        assert store.get_job_dict(run_id) is None and len(store.list_job_dicts("run")) == 1  # it wrote nothing back
    finally:
        if proc.is_alive():
            proc.kill()
        proc.join(5)


def test_runs_that_ended_before_archives_existed_are_archived_at_start(tmp_path):
    import shutil

    store = JobStore(tmp_path)
    ended, _ = _ended_runs(store)
    store.close()
    shutil.rmtree(tmp_path / "archive")  # a store written by an older version
    JobStore(tmp_path, check=True).close()  # the dashboard's start-up
    assert sorted(p.stem for p in (tmp_path / "archive").glob("*.json")) == sorted(ended)


def test_a_visitor_still_finds_their_finished_runs_in_history_after_the_store_was_damaged(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    from fedcore.runner.owners import Identities

    folder = tmp_path / "runs"
    owner, code = Identities(folder / "owners.db").issue()
    store = JobStore(folder)
    ended, _ = _ended_runs(store)
    for run_id in ended:
        store.update_job(run_id, owner=owner)
    store.close()
    with open(folder / "cache.db", "r+b") as f:
        f.write(os.urandom(8192))  # damaged at rest, before the server starts

    monkeypatch.setenv("FEDCORE_STORE", str(folder))
    monkeypatch.chdir(ROOT)
    at = AppTest.from_file(str(ROOT / "pages" / "history.py"), default_timeout=60)
    at.session_state["host.identity"] = (owner, code, 0.0)  # the visitor's page (or its claimed code)
    at.run()
    assert not at.exception
    assert any("damaged" in e.value and "2 jobs that had ended" in e.value for e in at.error)
    table = at.dataframe[0].value
    assert sorted(table["id"]) == sorted(ended) and set(table["status"]) == {"finished", "stopped"}


def test_a_live_run_under_another_recipe_label_is_the_same_run(tmp_path):
    """One visitor's press of a config they train already opens that run, also when the config
    arrives without its recipe label (``method`` ''): it names where the settings came from and
    changes nothing trained. A different owner, or different settings, still get their own."""
    jobs = Jobs(tmp_path, warm=False, max_running=1)
    try:
        labelled = DEMO.replace(rounds=5000, seed=5, method="fedavg")
        first = jobs.start(labelled, owner="visitor:a")
        assert jobs.start(labelled.replace(method=""), owner="visitor:a") == first
        assert jobs.start(labelled.replace(method=""), owner="visitor:b") != first
        assert jobs.start(labelled.replace(seed=6), owner="visitor:a") != first
    finally:
        jobs.close()

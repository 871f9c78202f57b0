"""Pause, step and slow motion of a live run (fedcore/runner/tempo.py, teaching mode)."""
from __future__ import annotations

import threading
import time

import pytest

from fedcore.resolve import preset_config
from fedcore.runner import JobStore
from fedcore.runner import worker as worker_mod
from fedcore.runner.owners import NotYourRun, Viewer
from fedcore.runner.tempo import read_tempo, set_tempo, step

DEMO = preset_config("demo").replace(rounds=4)


def rounds(store, run_id) -> int:
    return sum(e["type"] == "round" for e in store.read_events(run_id, 0))


def wait_for(predicate, timeout=60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"condition not met within {timeout} s")


def start(store, tmp_path, cfg=DEMO, owner="a"):
    run_id = store.create_run(cfg.to_dict(), cfg.config_hash(), owner=owner)["id"]
    result = {}
    thread = threading.Thread(target=lambda: result.setdefault("status", worker_mod.run_job(str(tmp_path), run_id)))
    return run_id, thread, result


def test_pause_holds_the_run_between_rounds_step_trains_one_and_resume_finishes_the_same_numbers(tmp_path):
    store = JobStore(tmp_path)
    plain_id, thread, _ = start(store, tmp_path, DEMO.replace(seed=3))
    thread.run()  # unpaused, in this thread
    run_id, thread, result = start(store, tmp_path, DEMO.replace(seed=3), owner="b")
    set_tempo(store, run_id, paused=True)  # paused before it starts: it stops after round 1
    thread.start()
    wait_for(lambda: read_tempo(store, run_id)["holding"])  # the worker holds after round 1
    time.sleep(1.0)
    assert rounds(store, run_id) == 1 and store.get_job_dict(run_id)["status"] == "running"
    step(store, run_id)
    wait_for(lambda: rounds(store, run_id) == 2)
    time.sleep(1.0)
    assert rounds(store, run_id) == 2 and read_tempo(store, run_id) == {"paused": True, "steps": 0, "delay": 0.0, "holding": True}
    set_tempo(store, run_id, paused=False)
    thread.join(60)
    assert result["status"] == "finished"
    acc = [e["accuracy"] for e in store.read_events(run_id) if e["type"] == "round"]
    plain = [e["accuracy"] for e in store.read_events(plain_id) if e["type"] == "round"]
    assert acc == plain  # pausing changes when rounds run, never what they compute


def test_slow_motion_waits_after_each_round_and_stop_works_while_paused(tmp_path):
    store = JobStore(tmp_path)
    run_id, thread, result = start(store, tmp_path, DEMO.replace(rounds=3))
    set_tempo(store, run_id, delay=1.0)
    t0 = time.monotonic()
    thread.run()
    assert result["status"] == "finished"
    assert time.monotonic() - t0 >= 2.0  # two waits: none after the last round
    end = store.read_events(run_id)[-1]
    assert end["type"] == "end" and 2.0 <= end["held_s"] <= end["elapsed"]  # reported apart from training
    plain_id, thread, _ = start(store, tmp_path, DEMO.replace(rounds=3))
    thread.run()
    assert store.read_events(plain_id)[-1]["held_s"] == 0.0
    run_id, thread, result = start(store, tmp_path, DEMO.replace(rounds=50))
    set_tempo(store, run_id, paused=True)
    thread.start()
    wait_for(lambda: rounds(store, run_id) == 1)
    store.request_stop(run_id)
    thread.join(10)
    assert result["status"] == "stopped" and store.get_job_dict(run_id)["reason"] == "stopped by the user"


def test_only_the_owner_or_an_admin_changes_the_tempo_and_bad_delays_are_refused(tmp_path):
    store = JobStore(tmp_path)
    run_id = store.create_run(DEMO.to_dict(), DEMO.config_hash(), owner="alice")["id"]
    with pytest.raises(NotYourRun, match="can pause it"):
        set_tempo(store, run_id, by=Viewer("bob"), paused=True)
    with pytest.raises(NotYourRun, match="can step it"):
        step(store, run_id, by=Viewer("bob"))
    assert read_tempo(store, run_id)["paused"] is False
    assert set_tempo(store, run_id, by=Viewer("alice"), paused=True)["paused"] is True
    assert step(store, run_id, by=Viewer("root", admin=True))["steps"] == 1
    with pytest.raises(Exception, match="delay"):
        set_tempo(store, run_id, delay=-1)

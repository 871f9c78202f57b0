"""One typed fold of a run's event stream (fedcore.events.fold / RunState): what the store's
records, the result tables, the live views, the sweeps and Ray read a run through."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from fedcore.events import RoundEvent, RunFinished, RunStarted, RunState, fold, replay, summarize, to_dict
from fedcore.runner import JobStore
from fedcore.runner.record import CacheKey

ROOT = Path(__file__).resolve().parents[1]


def start(threat_model: str = "central", caveat: str = "") -> RunStarted:
    return RunStarted({"rounds": 3}, "h", "cpu", 10, [5, 5], [[5], [5]], 1, [1.0, 2.0], [1e-5, 1e-5],
                      threat_model=threat_model, caveat=caveat)


def a_round(number: int, accuracy=None, threat_model: str = "central") -> RoundEvent:
    return RoundEvent(number, accuracy, 1.0, [0, 1], [0, 1], [0.5, 0.5], [number * 1.0, number * 2.0],
                      threat_model=threat_model, epsilon_headline=[0.5, number * 1.0],
                      epsilon_headline_run=number * 1.0)


STREAM = [start(caveat="assumes Poisson sampling"), a_round(1, 0.4), a_round(2, 0.6), a_round(3, None),
          RunFinished("stopped", 3, 2.5, None, held_s=0.5)]


def test_fold_is_pure_and_returns_a_new_state():
    empty = RunState()
    after = fold(empty, STREAM[0])
    assert empty == RunState() and after is not empty and after.start is STREAM[0]
    two = fold(fold(after, STREAM[1]), STREAM[2])
    assert after.rounds == () and [r.round for r in two.rounds] == [1, 2]


def test_status_is_queued_then_running_then_what_the_end_says():
    states = [RunState()]
    for event in STREAM:
        states.append(fold(states[-1], event))
    assert [s.status for s in states] == ["queued", "running", "running", "running", "running", "stopped"]
    assert [s.rounds_done for s in states] == [0, 0, 1, 2, 3, 3]


def test_final_accuracy_is_the_ends_else_the_last_round_that_measured_one():
    run = summarize(STREAM)
    assert run.final_accuracy == 0.6          # round 3 measured nothing, the end says nothing
    assert summarize([*STREAM[:-1], RunFinished("finished", 3, 2.5, 0.9)]).final_accuracy == 0.9
    assert RunState().final_accuracy is None and summarize(STREAM[:1]).final_accuracy is None


def test_the_state_names_the_runs_start_last_round_end_threat_and_caveat():
    run = summarize(STREAM)
    assert run.start is STREAM[0] and run.last_round is STREAM[3] and run.end is STREAM[-1]
    assert run.threat_model == "central" and run.caveat == "assumes Poisson sampling"
    assert summarize(STREAM[:1]).threat_model == "central" and summarize([a_round(1)]).threat_model == "central"
    assert run.events == STREAM


def test_replay_reads_stored_dicts_into_the_same_state():
    stored = [to_dict(e) for e in STREAM]
    assert replay(stored) == summarize(STREAM)
    assert replay(stored[2:], replay(stored[:2])) == summarize(STREAM)   # incrementally, as a poll does
    assert [to_dict(e) for e in replay(stored).events] == stored


def test_fold_refuses_what_is_not_a_typed_event():
    with pytest.raises(TypeError, match="dict is not a run event"):
        fold(RunState(), {"type": "round", "round": 1})


def test_record_fields_event_by_event_equal_the_fold_of_the_whole_stream():
    # The store applies each event's own fields as it arrives; that must add up to the fold.
    for stream in (STREAM, [*STREAM[:-1], RunFinished("finished", 3, 2.5, 0.9)], STREAM[:3], []):
        record: dict = {}
        for event in stream:
            record.update(fold(RunState(), event).record())
        assert record == (summarize(stream).record() if stream else {})


def test_the_store_record_is_the_fold_of_its_events(tmp_path):
    store = JobStore(tmp_path)
    run_id = store.create_run({"rounds": 3}, "h")["id"]
    for k, event in enumerate(STREAM):
        store.append_event(run_id, event)
        record, run = store.get_job_dict(run_id), replay(store.read_events(run_id, touch=False))
        assert run == summarize(STREAM[:k + 1])
        assert {f: record[f] for f in run.record()} == run.record()
    assert store.get_job_dict(run_id)["status"] == "stopped" and store.find_finished(CacheKey("h")) is None
    store.close()


# --- no second reading of the stream -------------------------------------------------------
EVENT_ONLY_KEYS = ("type", "schema", "num_params", "client_sizes", "label_counts", "num_classes", "selected",
                   "uploaded", "weights", "epsilon_spent", "epsilon_headline_run", "signals", "held_s")
"""Keys only an event dict has (record, frontier-row, reproduction-table and table keys such as
``status``, ``accuracy`` or ``epsilon_headline`` are read legitimately)."""
TYPE_TAG = re.compile(r"""==\s*["'](start|round|end)["']|isinstance\([^)]*\b(RunStarted|RoundEvent|RunFinished)\b""")
"""Comparing an event's type tag, or dispatching on its class: each is a reading of the stream's shape."""
READERS = ["app.py", "pages/**/*.py", "fedcore/runner/store.py", "fedcore/tables.py",
           "fedcore/distributed/*.py", "fedcore/sweep/job.py", "fedcore/reproduce/*.py"]
RECORD_KEYS = {"fedcore/reproduce/": ("signals",)}
"""Keys a folder's own records share with events: a reproduction record's ``signals`` is the
seed mean of each run's per-round signals (read from ``RoundEvent.signals`` by attribute), so
``record["signals"]`` there reads the record, not an event."""


def event_dict_reads(text: str, allowed: tuple = ()) -> list[str]:
    """Lines of ``text`` that read an event's dict keys (other than ``allowed``), compare its type tag or
    dispatch on its class."""
    keys = [k for k in EVENT_ONLY_KEYS if k not in allowed]
    reads = re.compile(r"""(?:\[|\.get\()\s*["'](%s)["']""" % "|".join(keys))
    return [line.strip() for line in text.splitlines() if reads.search(line) or TYPE_TAG.search(line)]


def allowed_keys(path: str) -> tuple:
    return next((keys for folder, keys in RECORD_KEYS.items() if path.startswith(folder)), ())


def test_the_scan_finds_the_dict_reads_it_forbids():
    assert event_dict_reads('rounds = [e for e in events if e.get("type") == "round"]')
    assert event_dict_reads("held = end['held_s'] or 0.0") and event_dict_reads('x = last.get("epsilon_headline_run")')
    assert not event_dict_reads('acc = record["final_accuracy"]; rows = r["accuracy"]; t = run.end.held_s')
    assert event_dict_reads('s = e["signals"]') and not event_dict_reads('s = e["signals"]', ("signals",))
    assert event_dict_reads('h = r["held_s"]', allowed_keys("fedcore/reproduce/run.py"))
    assert event_dict_reads("elif isinstance(event, RoundEvent):") and not event_dict_reads("run.last_round.round")


def test_no_page_or_store_reads_event_dict_keys():
    files = sorted({p for pattern in READERS for p in ROOT.glob(pattern)})
    assert len(files) > 10
    assert any(str(p.relative_to(ROOT)).startswith("fedcore/reproduce/") for p in files)
    found = {name: hits for p in files
             if (hits := event_dict_reads(p.read_text(), allowed_keys(name := str(p.relative_to(ROOT)))))}
    assert found == {}, ("read the run through fedcore.events.RunState (the fold), not event dict keys: "
                         f"{found}")


def test_a_sweep_point_gives_the_same_row_from_its_run_and_from_its_stored_events(tmp_path):
    # Ray trains a point alone (train_alone) and a later sweep rereads it from the store
    # (row_from_stored_run): both fold the stream and write the local sweep's row.
    from fedcore.distributed.sweep import row_from_stored_run
    from fedcore.distributed.tasks import train_alone
    from fedcore.events import event_from_dict
    from fedcore.sweep.spec import SweepSpec

    points = SweepSpec(preset="demo", methods="ldp_fl", epsilons="1", seeds=1, sets=("rounds=2", "num_clients=4"))
    clip_only = next(p for p in points.points() if p.reference == "clip_only")
    trained = train_alone(clip_only)
    store = JobStore(tmp_path)
    run_id = store.create_run(clip_only.config.to_dict(), clip_only.config.config_hash())["id"]
    for event in trained["events"]:
        store.append_event(run_id, event_from_dict(event))
    stored = row_from_stored_run(clip_only, store, run_id)
    store.close()
    assert trained["row"]["reference"] == "clip_only" and trained["row"]["accuracy"] is not None
    assert {**stored, "seconds": 0} == {**trained["row"], "seconds": 0}


def test_attack_rows_round_trip_through_json_and_old_records_nested_dicts_still_read():
    import json

    from fedcore.events import AttackRow, RoundEvent, event_from_dict, to_dict

    row = AttackRow("anyone", "anyone", "the noised upload", True, ({"client": 0, "cap": 0.5},), (1, 8, 8))
    event = RoundEvent(1, 0.5, 1.0, [0], [0], [1.0], [0.1], attack=(row,))
    assert event_from_dict(json.loads(json.dumps(to_dict(event)))) == event
    old = {**to_dict(event), "attack": {"shape": [1, 8, 8], "method": "analytic", "attackers": [
        {"key": "anyone", "who": "anyone", "received": "the noised upload", "bounded": True,
         "clients": [{"client": 0, "cap": 0.5}]}]}}
    assert event_from_dict(old).attack == (row,)
    assert event_from_dict({**old, "attack": {}}).attack == ()

"""The live attack view builds the records of rounds that close in quick succession together
(:meth:`fedcore.attacks.watch.AttackWatch.flush`): a record is the same however many rounds share a
batch, and no round's event is held back at a stop, at the end or when a later round fails."""
from __future__ import annotations

import json
import time
from dataclasses import asdict

import pytest

from fedcore.attacks import watch
from fedcore.engine import iter_run
from fedcore.events import RoundEvent, RunFinished
from fedcore.layering import build_config


def _records(cfg, rounds_per_batch: int, monkeypatch, **kw) -> list:
    monkeypatch.setattr(watch, "BATCH_ROUNDS", rounds_per_batch)
    monkeypatch.setattr(watch, "BATCH_SECONDS", float("inf"))
    return list(iter_run(cfg, watch=watch.live_watch, **kw))


@pytest.mark.parametrize("extra", [[], ["model=mlp"], ["privacy.mechanism_options.reading=central"]])
def test_a_record_is_the_same_whether_its_round_is_batched_alone_or_with_others(monkeypatch, extra):
    cfg = build_config("attack_digits", None, ["rounds=7", *extra])
    alone = [e.attack for e in _records(cfg, 1, monkeypatch) if isinstance(e, RoundEvent)]
    together = [e.attack for e in _records(cfg, 16, monkeypatch) if isinstance(e, RoundEvent)]
    assert len(alone) == 7 and all(alone)
    assert json.dumps([[asdict(a) for a in r] for r in together], sort_keys=True) == \
        json.dumps([[asdict(a) for a in r] for r in alone], sort_keys=True)
    assert any(a.clients for r in alone for a in r)


def test_a_stop_lets_every_held_round_out_with_its_record(monkeypatch):
    cfg = build_config("attack_digits", None, ["rounds=9"])
    seen = []
    events = _records(cfg, 16, monkeypatch, should_stop=lambda: len(seen) >= 4 or seen.append(1) is not None)
    rounds = [e for e in events if isinstance(e, RoundEvent)]
    assert [e.round for e in rounds] == [1, 2, 3, 4]
    assert all(e.attack for e in rounds)
    assert isinstance(events[-1], RunFinished) and events[-1].status == "stopped"


def test_a_failing_round_lets_the_rounds_before_it_out_first(monkeypatch):
    cfg = build_config("attack_digits", None, ["rounds=6"])
    real = watch.AttackWatch.plan
    calls = []

    def plan(self, sel, plan):
        calls.append(1)
        if len(calls) == 4:
            raise RuntimeError("round 4 broke")
        real(self, sel, plan)

    monkeypatch.setattr(watch.AttackWatch, "plan", plan)
    monkeypatch.setattr(watch, "BATCH_ROUNDS", 16)
    monkeypatch.setattr(watch, "BATCH_SECONDS", float("inf"))
    got = []
    with pytest.raises(RuntimeError, match="round 4 broke"):
        for event in iter_run(cfg, watch=watch.live_watch):
            got.append(event)
    rounds = [e for e in got if isinstance(e, RoundEvent)]
    assert [e.round for e in rounds] == [1, 2, 3] and all(e.attack for e in rounds)


def test_a_consumer_that_paces_the_run_gets_each_round_before_the_next_trains(monkeypatch):
    # the dashboard's slow motion and pause hold each event: rounds must not be trained ahead of it
    cfg = build_config("attack_digits", None, ["rounds=6"])
    monkeypatch.setattr(watch, "BATCH_ROUNDS", 64)
    monkeypatch.setattr(watch, "BATCH_SECONDS", 0.01)
    closed = []
    real = watch.AttackWatch.close
    monkeypatch.setattr(watch.AttackWatch, "close", lambda self, ledger: (closed.append(1), real(self, ledger)))
    seen = []
    for event in iter_run(cfg, watch=watch.live_watch):
        if isinstance(event, RoundEvent):
            seen.append((event.round, len(closed)))
            time.sleep(0.05)                      # slower than the batch window: a paced consumer
    assert seen == [(r, r) for r in range(1, 7)]


def test_a_fast_consumer_gets_rounds_in_batches_after_the_first(monkeypatch):
    cfg = build_config("attack_digits", None, ["rounds=6"])
    monkeypatch.setattr(watch, "BATCH_SECONDS", float("inf"))
    closed = []
    real = watch.AttackWatch.close
    monkeypatch.setattr(watch.AttackWatch, "close", lambda self, ledger: (closed.append(1), real(self, ledger)))
    seen = [(e.round, len(closed)) for e in iter_run(cfg, watch=watch.live_watch) if isinstance(e, RoundEvent)]
    assert seen == [(1, 1)] + [(r, 6) for r in range(2, 7)]   # round 1 alone (the consumer's pace unknown)

"""Pause, step and slow motion of a live run (the dashboard's teaching mode).

A teacher pauses a run between two rounds to talk about a point on the chart, trains one
more round with *Step*, or slows the run down so a class can follow the curves. The
worker asks :func:`between_rounds` after writing each round's event; the round loop itself
(:func:`fedcore.engine.iter_run`) knows nothing of it, so a paused or slowed run trains
exactly the numbers of an unpaused one (a seeded run gives the same result either way).

The tempo of a run is one small JSON record in the run store (``tempo:<id>``):

- ``paused``: wait before the next round;
- ``steps``: rounds still to train while paused (*Step* adds one);
- ``delay``: seconds to wait after every round (slow motion; 0: full speed);
- ``preempted``: set by the job manager, not the owner: the run is paused for fair share
  (:mod:`fedcore.runner.jobs`) until a worker slot is free for it again;
- ``holding``: set by the worker while it actually waits (a pause asked for mid-round
  takes effect when that round ends: the page says "pausing" until then).

Only the run's owner (or an admin) may change it (:func:`set_tempo` with ``by``). Paused
time counts towards the host's ``max_run_seconds`` and a run whose owner's page is closed
still stops after its grace period, so a paused run cannot hold a worker slot forever.

>>> import tempfile
>>> from fedcore.runner.store import JobStore
>>> store = JobStore(tempfile.mkdtemp())
>>> run = store.create_run({"rounds": 3}, "h", label="demo")["id"]
>>> _ = set_tempo(store, run, paused=True); step(store, run)
{'paused': True, 'steps': 1, 'delay': 0.0, 'holding': False}
>>> between_rounds(store, run, should_stop=lambda: False)   # at once, nothing held: the step's round may run
0.0
>>> read_tempo(store, run)["steps"]
0
"""
from __future__ import annotations

import time
from typing import Callable, Optional

SLOW_MOTION = {"full speed": 0.0, "1 s per round": 1.0, "3 s per round": 3.0}
"""Slow-motion choices offered by the dashboard (seconds of wait after each round)."""
MAX_DELAY = 30.0
"""The longest wait after a round that :func:`set_tempo` accepts."""
POLL_S = 0.2
"""How often a paused worker looks at the tempo and the stop flag."""
DEFAULT = {"paused": False, "steps": 0, "delay": 0.0, "holding": False}


def _key(run_id: str) -> str:
    return f"tempo:{run_id}"


def read_tempo(store, run_id: str) -> dict:
    """The run's tempo (the defaults when nobody changed it)."""
    return {**DEFAULT, **(store.cache.get(_key(run_id)) or {})}


def set_tempo(store, run_id: str, *, by=None, paused: Optional[bool] = None,
              delay: Optional[float] = None) -> dict:
    """Pause / resume and set the slow-motion ``delay`` of ``run_id``; returns the new tempo.

    With ``by`` (a :class:`~fedcore.runner.owners.Viewer`), only the owner or an admin may:
    anybody else gets :class:`~fedcore.runner.owners.NotYourRun`. Resuming drops unused steps.
    """
    from ..errors import ConfigError

    if delay is not None and not 0.0 <= float(delay) <= MAX_DELAY:
        raise ConfigError("delay", delay, f"must be between 0 and {MAX_DELAY:g} seconds per round")
    return _change(store, run_id, by, "pause" if paused else "resume" if paused is not None else "pace",
                   lambda t: t.update({k: v for k, v in (("paused", paused), ("delay", delay)) if v is not None},
                                      **({"steps": 0} if paused is False else {})))


def step(store, run_id: str, *, by=None) -> dict:
    """Let a paused run train one more round (a running run is paused after it)."""
    return _change(store, run_id, by, "step", lambda t: t.update(paused=True, steps=t["steps"] + 1))


def preempt(store, run_id: str, on: bool) -> dict:
    """Pause (``on``) or resume ``run_id`` for fair share: the job manager's hold, which the
    owner's Resume and Step do not lift."""
    return _change(store, run_id, None, "", lambda t: t.update(preempted=on))


def _change(store, run_id: str, by, action: str, change: Callable[[dict], None]) -> dict:
    if by is not None:
        from .owners import require_control

        record = store.get_job(run_id)
        if record is None:
            return dict(DEFAULT)
        require_control(record, by, action)
    with store.cache.transact():
        tempo = read_tempo(store, run_id)
        change(tempo)
        store.cache.set(_key(run_id), tempo, tag=run_id)
    return tempo


def between_rounds(store, run_id: str, should_stop: Callable[[], bool],
                   sleep: Callable[[float], None] = time.sleep) -> float:
    """Called by the worker after each round: slow motion, then wait while paused; returns
    the seconds it held the run, 0.0 when it did not wait (the worker reports their sum
    apart from training time).

    A pending step is used up (the next round runs, and the run stays paused after it).
    Returns at once when ``should_stop()`` turns true (Stop works while paused).
    """
    t0, held = time.monotonic(), False
    end = t0 + read_tempo(store, run_id)["delay"]
    while time.monotonic() < end and not should_stop():
        held = True
        sleep(min(POLL_S, max(0.0, end - time.monotonic())))
    while not should_stop():
        with store.cache.transact():
            tempo = read_tempo(store, run_id)
            go = not tempo.get("preempted") and (not tempo["paused"] or tempo["steps"] > 0)
            changed = tempo["holding"] == go  # holding exactly while waiting here
            tempo["holding"] = not go
            if go and tempo["paused"] and tempo["steps"] > 0:
                tempo["steps"] -= 1
                changed = True
            if changed:  # an unpaused run writes nothing
                store.cache.set(_key(run_id), tempo, tag=run_id)
        if go:
            break
        held = True
        sleep(POLL_S)
    return time.monotonic() - t0 if held else 0.0

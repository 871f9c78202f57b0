"""The training side of a job: code that runs inside a worker process.

A worker process runs one job at a time: it reads the run's config from the store,
iterates :func:`fedcore.engine.iter_run` and appends every event to the store. It stops
at the next round boundary when

- somebody set the run's stop flag (:meth:`JobStore.request_stop`),
- its parent process (the dashboard or the script that started it) is gone, or
- nobody refreshed its heartbeat (the owner's page does) for the run's ``grace_s``
  seconds (the host's ``owner_grace_s``; runs without one: ``FEDCORE_HEARTBEAT_TIMEOUT``,
  default 300; background jobs, ``grace_s=None``: never): an orphan whose page was closed;
- it trained longer than the run's ``max_seconds`` (the host's ``max_run_seconds``);
- its run record is gone (the store was deleted or replaced during the run): it exits
  within :data:`GONE_EXIT_S` seconds, since nothing it writes could be seen again.

The heartbeat clock starts when the worker takes the run, so time spent queued never
counts. An exception ends the run with ``RunFinished(status="failed", error=<one line>)``;
the rounds already written stay, and the traceback goes to the host's log (stderr), never
into the run record. Between two rounds the worker honours the run's tempo (pause, step,
slow motion: :mod:`fedcore.runner.tempo`). Workers lower their priority (``os.nice``) and bound torch's threads
before importing torch, so a busy host keeps serving pages (:func:`lower_priority`). :func:`warm_worker_main` is the same worker started ahead
of time: it imports torch and fedcore and loads the digits data, then waits for a job,
so the first round of a demo run appears within a fraction of a second.
"""
from __future__ import annotations

import contextlib
import dataclasses
import os
import queue
import signal
import threading
import time
import traceback
from typing import Optional

HEARTBEAT_ENV = "FEDCORE_HEARTBEAT_TIMEOUT"
DEFAULT_HEARTBEAT_TIMEOUT = 300.0
WATCH_INTERVAL = 0.25
"""Seconds between the watchdog's checks of the parent and the heartbeat."""
HARD_EXIT_GRACE = 10.0
"""Seconds a watchdog waits for the round loop to notice an orphan before exiting hard."""
RECORD_GONE = "its run record is gone (the run store was deleted or replaced)"
GONE_EXIT_S = 2.0
"""Seconds a worker whose run record is gone waits for the round loop before exiting hard."""


def heartbeat_timeout() -> float:
    """``$FEDCORE_HEARTBEAT_TIMEOUT`` in seconds (default 300)."""
    raw = os.environ.get(HEARTBEAT_ENV, "")
    try:
        return float(raw) if raw.strip() else DEFAULT_HEARTBEAT_TIMEOUT
    except ValueError:
        return DEFAULT_HEARTBEAT_TIMEOUT


def lower_priority(nice: int = 0, threads: int = 0) -> None:
    """``os.nice(nice)`` and at most ``threads`` torch / OpenMP threads (0: leave as is)."""
    if nice:
        with contextlib.suppress(OSError):
            os.nice(nice)
    if threads:
        from ..threads import set_threads

        set_threads(threads, inherited=True)   # the one setter (fedcore.threads): the processes it starts too


def parent_alive() -> bool:
    """False once the process that started this one has exited."""
    import multiprocessing

    parent = multiprocessing.parent_process()
    return parent is None or parent.is_alive()


def one_line_error(exc: BaseException) -> str:
    """A readable one-line description: the message of a FedcoreError (its ``public`` text
    where it has one: no server path), else ``Type: message``."""
    from ..errors import FedcoreError

    text = str(getattr(exc, "public", None) or exc).strip().splitlines()
    first = text[0] if text else ""
    if isinstance(exc, FedcoreError):
        return first or type(exc).__name__
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


class Watchdog:
    """Background thread deciding whether the run should stop, and why."""

    def __init__(self, store, run_id: str, timeout: Optional[float], max_seconds: Optional[float] = None):
        self.store, self.run_id, self.timeout = store, run_id, timeout
        self.max_seconds = max_seconds
        self.started = time.time()
        self.reason: Optional[str] = None
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, name=f"watchdog-{run_id}", daemon=True)

    def start(self) -> "Watchdog":
        self._thread.start()
        return self

    def close(self) -> None:
        self._done.set()

    def on_sigterm(self, signum, frame) -> None:  # noqa: ARG002
        """SIGTERM (the parent shutting down, or a stop that timed out): stop at the next
        round; if the round does not end within 3 s, record the stop and exit."""
        self.reason = "the worker was terminated"

        def hard_exit():
            self.store.finish(self.run_id, "stopped", reason=self.reason)
            os._exit(0)

        timer = threading.Timer(3.0, hard_exit)
        timer.daemon = True
        timer.start()

    def should_stop(self) -> bool:
        if self.reason is None and self.store.stop_requested(self.run_id):
            self.reason = "stopped by the user"
        return self.reason is not None

    def _record_gone(self) -> bool:
        """True once the store no longer has the run (a store error is not taken for it)."""
        from .store import StoreError

        try:
            return self.store.get_job_dict(self.run_id) is None
        except StoreError:
            return False

    def _watch(self) -> None:
        orphaned_at = None
        while not self._done.wait(WATCH_INTERVAL):
            if self.reason is None:
                if self._record_gone():
                    self.reason = RECORD_GONE
                elif not parent_alive():
                    self.reason = "the process that started it exited"
                elif self.max_seconds and time.time() - self.started > self.max_seconds:
                    self.reason = (f"it reached the server's limit of {self.max_seconds:g} s per run "
                                   "(host limit max_run_seconds)")
                elif self.timeout is not None and time.time() - self.store.last_beat(self.run_id) > self.timeout:
                    self.reason = f"its owner's page was closed: nobody watched it for {self.timeout:g} s (heartbeat timeout)"
            if self.reason is not None and self.reason != "stopped by the user":
                orphaned_at = orphaned_at or time.time()
                if self.reason == RECORD_GONE and time.time() - orphaned_at > GONE_EXIT_S:
                    os._exit(0)  # no record to finish: leave, freeing the slot
                if time.time() - orphaned_at > HARD_EXIT_GRACE:
                    # a single round is taking too long: record the stop and leave now
                    self.store.finish(self.run_id, "stopped", reason=self.reason)
                    os._exit(0)


def run_job(store_dir: str, run_id: str) -> str:
    """Train run ``run_id`` of the store at ``store_dir``; returns its final status."""
    from .store import JobStore

    store = JobStore(store_dir)
    record = store.get_job_dict(run_id)
    if record is None:
        return "missing"
    store.update_job(run_id, pid=os.getpid(), status="running", started=time.time())
    store.touch(run_id)  # the grace period starts now, not when the run was queued
    timeout = record["grace_s"] if "grace_s" in record else heartbeat_timeout()
    watchdog = Watchdog(store, run_id, timeout, record.get("max_seconds")).start()
    in_main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, watchdog.on_sigterm) if in_main else None
    status = "failed"
    try:
        from ..config import RunConfig
        from ..engine import iter_run
        from ..events import RoundEvent, RunFinished
        from .tempo import between_rounds

        cfg = RunConfig.from_dict(record["config"])
        if record.get("match") and "knob" not in record["match"]:
            cfg = solve_budget(store, run_id, cfg, record["match"])
        total, held = cfg.rounds, 0.0
        from ..attacks.watch import live_watch

        for event in iter_run(cfg, should_stop=watchdog.should_stop, watch=live_watch):
            if isinstance(event, RunFinished):
                if held:
                    event = dataclasses.replace(event, held_s=round(held, 3))
                status = event.status
                if status == "stopped":  # the reason lands before the status: readers see both
                    store.update_job(run_id, reason=watchdog.reason)
            store.append_event(run_id, event)
            if isinstance(event, RoundEvent) and event.round < total:  # pause / step / slow motion
                held += between_rounds(store, run_id, watchdog.should_stop)
    except Exception as exc:  # noqa: BLE001  (any failure becomes a failed run, rounds kept)
        traceback.print_exc()  # the host's log; the record keeps one line
        store.finish(run_id, "failed", one_line_error(exc))
    finally:
        if in_main:
            signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)
        watchdog.close()
        store.close()
    return status


def solve_budget(store, run_id: str, cfg, match: dict):
    """"Spend exactly ε in total": ``cfg`` with the method's own budget solved so the whole
    run's headline ε is ``match["target"]`` (:func:`fedcore.equal_privacy.match_headline`,
    which replays the run's accounting without training); the run's record takes that config
    and the solution (``headline``, ``reached``, ``knob``; ``released`` False and ``knob`` None when the
    run releases nothing at any budget)."""
    from ..equal_privacy import match_headline
    from .record import EqualPrivacy

    solved = match_headline(cfg, match["target"])
    store.update_job(run_id, config=solved.config.to_dict(), match=EqualPrivacy.from_matched(solved))
    return solved.config


def job_main(store_dir: str, run_id: str, nice: int = 0, threads: int = 0) -> None:
    """Entry point of a cold worker process: run one job (at lowered priority)."""
    lower_priority(nice, threads)
    run_job(store_dir, run_id)


def warm_up(dataset: str = "digits") -> None:
    """Import the engine and the exact accountant's library (dp-accounting and the scipy it loads: about
    0.6 CPU-s, which a run would otherwise pay when its PLD headline is read at its end) and load ``dataset``,
    so a following job starts at once and pays only for itself.

    Failures are left for the job to report (it repeats the imports and records the
    error as one line in the store), so a broken install does not kill the worker.
    """
    with contextlib.suppress(Exception):
        import dp_accounting  # noqa: F401

        from .. import catalog, engine  # noqa: F401
        from ..data import load_dataset

        load_dataset(dataset)


def warm_worker_main(store_dir: str, jobs, ready, nice: int = 0, threads: int = 0, idle=None,
                     max_runs: int = 1) -> None:
    """Entry point of a warm worker process: warm up, then run the jobs handed over, one at a time.

    ``jobs`` is this worker's own queue (a run id, or None to exit); ``ready`` an event set once
    warmed up; ``idle`` (:mod:`~fedcore.runner.warm`'s pool) an event set again when a run ended, so
    the worker takes the next, up to ``max_runs`` runs (without it: one). Exits without a job when its
    parent is gone.
    """
    lower_priority(nice, threads)
    warm_up()
    ready.set()
    runs = 0
    while True:
        try:
            run_id = jobs.get(timeout=WATCH_INTERVAL)
        except queue.Empty:
            if not parent_alive():
                return
            continue
        if run_id is None:
            return
        run_job(store_dir, run_id)
        runs += 1
        if idle is None or runs >= max_runs:
            return
        idle.set()

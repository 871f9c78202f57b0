"""Start, watch and stop training runs in worker processes.

:class:`JobManager` is what the dashboard (or a script) holds. Training never runs in
the caller's thread: each run gets its own process from
``multiprocessing.get_context("spawn")`` (no forked torch state, the same on every OS),
which writes its events to the :class:`~fedcore.runner.store.RunStore`; the caller polls
the store.

Start-up latency: importing torch and fedcore takes seconds, so the manager keeps ONE
warm worker that has already done so (and loaded the digits data) waiting on its queue.
:meth:`JobManager.start` hands the run to it and, shortly after, spawns the next warm one.

Shared hosts: a manager built with ``limits`` (:class:`~fedcore.runner.limits.HostLimits`)
refuses, at :meth:`JobManager.start`, a run this machine cannot run or that exceeds a host
limit (:class:`~fedcore.runner.limits.LimitError` naming it), including too many queued
or running runs overall or of one owner. Runs record their ``owner``
(:mod:`fedcore.runner.owners`); the queue reports each waiting run's position and
estimated start (:meth:`JobManager.queue_info`). Workers run niced with a bounded number
of torch threads (``worker_nice`` / ``worker_threads``) so the web server stays responsive.

Life cycle of a run: ``queued`` -> ``running`` -> ``finished`` | ``stopped`` | ``failed``.
A config that already finished is not trained again: ``start`` returns the stored run
(the result cache, keyed by :meth:`RunConfig.config_hash`). A worker that dies without
writing its end event (killed, segfault) is marked ``failed`` with its exit code by
:meth:`JobManager.poll`, which a background thread calls twice a second.

>>> manager = JobManager("/tmp/fl-runs")          # doctest: +SKIP
>>> run_id = manager.start(preset_config("demo"))  # doctest: +SKIP
>>> manager.wait(run_id)["status"]                 # doctest: +SKIP
'finished'
"""
from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Union

from ..config import RunConfig
from .labels import run_label
from .limits import HostLimits, LimitError, check_submission
from .owners import Viewer, require_control
from .queueing import estimate_starts, seconds_per_round
from .store import ACTIVE, TERMINAL, RunStore
from .worker import job_main, warm_worker_main

STOP_GRACE = 5.0
"""Seconds a worker gets to stop at its next round before it is terminated."""
WARM_RESPAWN_DELAY = (1.0, 15.0)
"""After a hand-over the next warm worker starts once no run is training (at least 1 s
later), or after 15 s at the latest: importing torch takes a few CPU-seconds that would
otherwise slow down the run just handed over on a small machine."""
POLL_INTERVAL = 0.5
HISTORY_TTL = 5.0
HISTORY_RUNS = 100
"""Queue estimates use the pace of the last ``HISTORY_RUNS`` runs, re-read every ``HISTORY_TTL`` s."""


@dataclass
class _Warm:
    process: multiprocessing.Process
    jobs: object
    ready: object
    started: float = field(default_factory=time.perf_counter)


class JobManager:
    """Runs configs in worker processes and records them in a :class:`RunStore`.

    Parameters
    ----------
    store_dir : path, optional
        The store's folder (default ``$FEDCORE_STORE`` or the per-user cache folder).
    warm : bool
        Keep one pre-started worker ready (default True).
    max_running : int
        Runs training at once; more wait as ``queued`` (default: ``limits.max_running``,
        else the CPU count, at least 1).
    limits : HostLimits, optional
        Host limits checked at :meth:`start` (None: no limits, what scripts and the CLI use).
    check_store : bool
        Check the store's database on start-up and replace it when damaged
        (:attr:`RunStore.problem` then says so).
    """

    def __init__(self, store_dir: Union[str, Path, None] = None, *, warm: bool = True,
                 max_running: Optional[int] = None, limits: Optional[HostLimits] = None,
                 check_store: bool = False):
        self.store = RunStore(store_dir, check=check_store)
        self.store_dir = str(self.store.directory)
        self.limits = limits
        host = limits or HostLimits()
        self.max_running = max_running or host.max_running or max(1, os.cpu_count() or 1)
        self._priority = (host.worker_nice or 0, host.worker_threads or 0)
        self._mp = multiprocessing.get_context("spawn")
        self._lock = threading.RLock()
        self._procs: dict[str, multiprocessing.Process] = {}
        self._handed: dict[str, _Warm] = {}  # keeps a warm worker's queue alive while it runs
        self._queued: list[str] = []
        self._stopping: dict[str, float] = {}
        self._warm_enabled = warm
        self._warm: Optional[_Warm] = None
        self._respawn_after: Optional[float] = None  # monotonic time of the last hand-over
        self._warm_deaths = 0
        self._closed = False
        self._mark_lost_runs()
        if warm:
            self._spawn_warm()
        self._monitor = threading.Thread(target=self._watch, name="fedcore-jobs", daemon=True)
        self._monitor.start()

    # --- public API -------------------------------------------------------------------
    def start(self, cfg: Union[RunConfig, dict], *, label: str = "", reuse: bool = True,
              owner: Optional[str] = None, background: bool = False) -> str:
        """Queue ``cfg`` for training and return its run id.

        With ``reuse`` (default) a config that already finished returns that run at once
        (no new process; another owner's finished run is copied into a run of ``owner``),
        and a config that ``owner`` is training right now returns the live run.

        ``owner`` is recorded with the run (see :mod:`fedcore.runner.owners`). A run that
        is not a ``background`` job is stopped once nobody refreshed its heartbeat
        (:meth:`RunStore.touch`, done by the owner's page) for ``limits.owner_grace_s``
        seconds while it trains; a queued run is never stopped for waiting.

        Raises :class:`~fedcore.runner.limits.LimitError` /
        :class:`~fedcore.runner.limits.HostUnavailable` when the manager has ``limits``
        and the run exceeds one.
        """
        cfg = cfg if isinstance(cfg, RunConfig) else RunConfig.from_dict(cfg)
        digest = cfg.config_hash()
        if self.limits is not None:
            check_submission(cfg, self.limits)
        with self._lock:
            if reuse:
                hit = self.store.find_owned(digest, owner)
                if hit is None and self.store.find_finished(digest):
                    hit = self.store.copy_run(self.store.find_finished(digest), owner=owner)
                if hit:
                    self.store.update_run(hit, last_opened=time.time())
                    return hit
            self._check_capacity(owner)
            extra = {"owner": owner, "background": background,
                     "max_seconds": self.limits.max_run_seconds if self.limits else None}
            if background:
                extra["grace_s"] = None
            elif self.limits is not None and self.limits.owner_grace_s:
                extra["grace_s"] = self.limits.owner_grace_s
            record = self.store.create_run(cfg.to_dict(), digest, label=label or run_label(cfg), **extra)
            self._queued.append(record["id"])
            self._dispatch()
            return record["id"]

    def _check_capacity(self, owner: Optional[str]) -> None:
        """Refuse a new run when the queue or this owner's share of it is full."""
        if self.limits is None:
            return
        active = [self.store.get_run(i) for i in [*self._queued, *self._procs]]
        active = [r for r in active if r is not None]
        cap = self.limits.max_active
        if cap is not None and len(active) >= cap:
            raise LimitError("max_active", f"the server has {len(active)} runs queued or training, its maximum; "
                                           "try again when some have finished")
        mine = sum(r.get("owner") == owner for r in active)
        cap = self.limits.max_active_per_owner
        if owner is not None and cap is not None and mine >= cap:
            raise LimitError("max_active_per_owner", f"you have {mine} runs queued or training, the most one "
                                                     "visitor may have at once; stop one or wait for it to finish")

    def capacity_left(self, owner: Optional[str]) -> Optional[int]:
        """How many more runs ``owner`` may queue now (None: unlimited)."""
        if self.limits is None:
            return None
        with self._lock:
            active = [r for r in (self.store.get_run(i) for i in [*self._queued, *self._procs]) if r]
        left = []
        if self.limits.max_active is not None:
            left.append(self.limits.max_active - len(active))
        if owner is not None and self.limits.max_active_per_owner is not None:
            left.append(self.limits.max_active_per_owner - sum(r.get("owner") == owner for r in active))
        return max(0, min(left)) if left else None

    def queue_info(self, run_id: str) -> Optional[dict]:
        """``{"position": 1-based place in the queue, "ahead": runs before it, "waiting":
        queue length, "eta_s": estimated seconds until it starts (None if unknown)}``,
        or None when ``run_id`` is not waiting. The pace of finished runs behind the
        estimate is re-read at most every :data:`HISTORY_TTL` s (every queued page asks)."""
        with self._lock:
            if run_id not in self._queued:
                return None
            queued = list(self._queued)
            running = list(self._procs)
        records = {i: self.store.get_run(i) for i in queued + running}
        history = self._recent_finished()
        now = time.time()

        def pace(record: dict) -> Optional[float]:
            c = record.get("config") or {}
            return seconds_per_round(history, c.get("dataset"), c.get("model"))

        run_rows = [{"rounds": r.get("rounds"), "rounds_done": r.get("rounds_done"),
                     "elapsed_s": now - (r.get("started") or r.get("handed_over") or now), "round_s": pace(r)}
                    for r in (records[i] for i in running) if r]
        queue_rows = [{"id": i, "rounds": records[i].get("rounds"), "round_s": pace(records[i])}
                      for i in queued if records.get(i)]
        known = bool(history) or bool(run_rows)
        starts = estimate_starts(run_rows, queue_rows, self.max_running)
        position = queued.index(run_id) + 1
        return {"position": position, "ahead": position - 1, "waiting": len(queued),
                "running": len(running), "slots": self.max_running,
                "eta_s": starts.get(run_id) if known else None}

    def _recent_finished(self) -> list[dict]:
        now = time.monotonic()
        cached = getattr(self, "_history", None)
        if cached is None or now - cached[0] > HISTORY_TTL:
            ids = self.store.run_ids()[-HISTORY_RUNS:]
            records = [self.store.get_run(i) for i in ids]
            cached = (now, [r for r in records if r is not None and r["status"] == "finished"])
            self._history = cached
        return cached[1]

    def queue_length(self) -> int:
        """Runs waiting for a worker slot."""
        return len(self._queued)

    def capacity_free(self) -> bool:
        """Whether a run submitted now would start at once (a slot is free, nobody waits)."""
        return not self._queued and len(self._procs) < self.max_running

    def stop(self, run_id: str, by: Optional[Viewer] = None) -> None:
        """Ask ``run_id`` to stop at its next round; terminate it after :data:`STOP_GRACE` s.

        With ``by`` (the dashboard passes the viewer) only the owner or an admin may stop
        it; anybody else gets :class:`~fedcore.runner.owners.NotYourRun`.
        """
        if by is not None:
            record = self.store.get_run(run_id)
            if record is None:
                return
            require_control(record, by, "stop")
        with self._lock:
            self.store.request_stop(run_id)
            if run_id in self._queued:
                self._queued.remove(run_id)
                self.store.finish(run_id, "stopped", reason="stopped before it started")
            elif run_id in self._procs:
                self._stopping.setdefault(run_id, time.monotonic())

    def delete(self, run_id: str, by: Optional[Viewer] = None) -> bool:
        """Stop ``run_id`` if it is active, then remove it and its events (owner or admin only
        when ``by`` is given). True if it existed."""
        record = self.store.get_run(run_id)
        if record is None:
            return False
        if by is not None:
            require_control(record, by, "delete")
        if record["status"] in ACTIVE:
            self.stop(run_id)
        return self.store.delete(run_id)

    def status(self, run_id: str) -> Optional[str]:
        """The run's status after checking that its worker is still alive."""
        self.poll()
        record = self.store.get_run(run_id)
        return record["status"] if record else None

    def is_alive(self, run_id: str) -> bool:
        """Whether a worker process of ``run_id`` is running in this manager."""
        proc = self._procs.get(run_id)
        return proc is not None and proc.is_alive()

    def process(self, run_id: str) -> Optional[multiprocessing.Process]:
        """The worker process of ``run_id`` (None when not started by this manager)."""
        return self._procs.get(run_id)

    def wait(self, run_id: str, timeout: float = 60.0, *, touch: bool = True) -> dict:
        """Block until ``run_id`` ends (or ``timeout``); returns its record."""
        deadline = time.monotonic() + timeout
        while True:
            if touch:
                self.store.touch(run_id)
            self.poll()
            record = self.store.get_run(run_id)
            if record is None or record["status"] in TERMINAL or time.monotonic() > deadline:
                return record
            time.sleep(0.05)

    def poll(self) -> None:
        """Detect dead workers, enforce stop deadlines, start queued runs."""
        with self._lock:
            for run_id, proc in list(self._procs.items()):
                if proc.is_alive():
                    started = self._stopping.get(run_id)
                    if started is not None and time.monotonic() - started > STOP_GRACE:
                        proc.terminate()
                        proc.join(2.0)
                        if proc.is_alive():
                            proc.kill()
                            proc.join(2.0)
                        self.store.finish(run_id, "stopped", reason="terminated after the stop grace period")
                    else:
                        continue
                proc.join(0)
                if run_id in self._stopping:
                    self.store.finish(run_id, "stopped", reason="stopped by the user")
                else:
                    self.store.finish(run_id, "failed", _exit_message(proc.exitcode))
                self._procs.pop(run_id, None)
                self._handed.pop(run_id, None)
                self._stopping.pop(run_id, None)
            self._dispatch()

    def close(self, *, stop_runs: bool = True) -> None:
        """Shut the warm worker down and (by default) stop every running worker."""
        with self._lock:
            self._closed = True
            if self._warm is not None:
                self._retire_warm(self._warm)
                self._warm = None
            for run_id in list(self._queued):
                self.stop(run_id)
            if stop_runs:
                for run_id, proc in list(self._procs.items()):
                    self.store.request_stop(run_id)
                    proc.join(STOP_GRACE)
                    if proc.is_alive():
                        proc.kill()
                        proc.join(2.0)
                self.poll()
        self._monitor.join(2 * POLL_INTERVAL)

    # --- internals --------------------------------------------------------------------
    def _dispatch(self) -> None:
        """Start queued runs while fewer than ``max_running`` train.

        A run whose owner's page stopped watching it while it waited (no heartbeat for
        its ``grace_s``) is not started: it ends ``stopped``. Its heartbeat restarts when
        it is handed to a worker, so time spent waiting never counts against it.
        """
        while self._queued and len(self._procs) < self.max_running and not self._closed:
            run_id = self._queued.pop(0)
            record = self.store.get_run(run_id)
            if record is None or self.store.stop_requested(run_id):
                continue
            grace = record.get("grace_s")
            if grace and time.time() - self.store.last_beat(run_id) > grace:
                self.store.finish(run_id, "stopped", reason=f"its owner left before it started "
                                                            f"(nobody watched it for {grace:g} s)")
                continue
            self.store.touch(run_id)
            self.store.update_run(run_id, handed_over=time.time())
            if self._warm is not None and self._warm.process.is_alive():
                warm, self._warm = self._warm, None
                warm.jobs.put(run_id)
                proc = warm.process
                self._handed[run_id] = warm
                self._respawn_after = time.monotonic()
            else:
                proc = self._mp.Process(target=job_main, args=(self.store_dir, run_id, *self._priority),
                                        name=f"fedcore-run-{run_id}", daemon=True)
                with spawn_without_main_module():
                    proc.start()
            self.store.update_run(run_id, pid=proc.pid)
            self._procs[run_id] = proc

    def _spawn_warm(self) -> None:
        if self._closed or not self._warm_enabled or self._warm is not None:
            return
        jobs, ready = self._mp.Queue(), self._mp.Event()
        proc = self._mp.Process(target=warm_worker_main, args=(self.store_dir, jobs, ready, *self._priority),
                                name="fedcore-warm-worker", daemon=True)
        with spawn_without_main_module():
            proc.start()
        self._warm = _Warm(proc, jobs, ready)

    def _maybe_respawn_warm(self) -> None:
        """Start the next warm worker when the machine is idle enough (see WARM_RESPAWN_DELAY)."""
        if self._warm is not None and not self._warm.process.is_alive():
            self._warm = None  # died while waiting: replace it, backing off if it keeps dying
            self._warm_deaths += 1
            self._respawn_after = time.monotonic() + min(300.0, 2.0 ** self._warm_deaths) - WARM_RESPAWN_DELAY[1]
        if self._warm is not None or self._respawn_after is None:
            return
        waited = time.monotonic() - self._respawn_after
        if waited >= WARM_RESPAWN_DELAY[1] or (waited >= WARM_RESPAWN_DELAY[0] and not self._procs):
            self._respawn_after = None
            self._spawn_warm()

    def warm_state(self) -> str:
        """``"ready"`` (warmed up, waiting), ``"starting"`` (importing) or ``"none"``
        (handed over; the next one starts when the machine is idle)."""
        warm = self._warm
        if warm is None or not warm.process.is_alive():
            return "none"
        return "ready" if warm.ready.is_set() else "starting"

    def warm_ready(self, timeout: float = 0.0) -> bool:
        """Whether the warm worker has finished warming up (waits up to ``timeout`` s)."""
        warm = self._warm
        return warm is not None and warm.ready.wait(timeout)

    def _retire_warm(self, warm: _Warm) -> None:
        try:
            warm.jobs.put(None)
        except (OSError, ValueError):
            pass
        warm.process.join(1.0)
        if warm.process.is_alive():
            warm.process.kill()
            warm.process.join(1.0)

    def _watch(self) -> None:
        while not self._closed:
            time.sleep(POLL_INTERVAL)
            try:
                self.poll()
                with self._lock:
                    if self._warm_enabled and not self._closed:
                        self._maybe_respawn_warm()
            except Exception:  # noqa: BLE001  (the monitor must survive a bad poll)
                pass

    def _mark_lost_runs(self) -> None:
        """Runs left ``running`` by a previous manager whose worker is gone: ``failed``."""
        for record in self.store.list_runs():
            if record["status"] in ACTIVE and not pid_alive(record.get("pid")):
                self.store.finish(record["id"], "failed",
                                  "its worker is gone (the dashboard was restarted while it ran)")


_SPAWNING = threading.local()
_PATCH_LOCK = threading.Lock()
_MAIN_KEYS = ("init_main_from_name", "init_main_from_path")


def _preparation_data_without_main(original):
    """``multiprocessing.spawn.get_preparation_data`` that leaves out the parent's main
    module while this thread is inside :func:`spawn_without_main_module`."""
    def get_preparation_data(name):
        data = original(name)
        if getattr(_SPAWNING, "depth", 0):
            for key in _MAIN_KEYS:
                data.pop(key, None)
        return data

    get_preparation_data.fedcore_original = original
    return get_preparation_data


@contextmanager
def spawn_without_main_module():
    """Processes spawned in this block (by this thread) do not re-run the caller's ``__main__``.

    A spawn child imports the parent's main module before it runs its target; workers
    only need :mod:`fedcore.runner.worker`. Under Streamlit that module is the page
    script (every script run installs a fresh ``__main__`` with ``__file__ = app.py``, in
    whichever session's thread runs), so a child would run the whole dashboard in bare
    mode (a JobManager, its warm worker, torch) at normal priority before its job. Hiding
    ``__main__.__file__`` for the duration of ``start()`` was not enough: another
    session's script run could install a new ``__main__`` in between (3 of 8 spawns ran
    the page script in a test with one swapping thread; under the 4-session load test the
    server choked and no run was created). So the preparation data multiprocessing sends
    to the child leaves the main module out, whatever ``sys.modules["__main__"]`` is.
    """
    from multiprocessing import spawn

    with _PATCH_LOCK:
        if not hasattr(spawn.get_preparation_data, "fedcore_original"):
            spawn.get_preparation_data = _preparation_data_without_main(spawn.get_preparation_data)
    _SPAWNING.depth = getattr(_SPAWNING, "depth", 0) + 1
    try:
        yield
    finally:
        _SPAWNING.depth -= 1


def _exit_message(code: Optional[int]) -> str:
    if code is not None and code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"the worker process was killed by {name} (exit code {code})"
    return f"the worker process exited with code {code} without finishing the run"


def pid_alive(pid) -> bool:
    """True if process ``pid`` (an int or its string) exists; False for None, 0 or garbage."""
    try:
        if not pid:
            return False
        os.kill(int(pid), 0)
    except (ProcessLookupError, ValueError, TypeError):
        return False
    except PermissionError:
        return True
    return True

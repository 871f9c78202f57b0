"""Start, watch and stop training runs in worker processes.

:class:`JobManager` is what the dashboard (or a script) holds. Training never runs in
the caller's thread: each run gets its own process from
``multiprocessing.get_context("spawn")`` (no forked torch state, the same on every OS),
which writes its events to the :class:`~fedcore.runner.store.RunStore`; the caller polls
the store.

Start-up latency: importing torch and fedcore takes seconds, so the manager keeps ONE
warm worker that has already done so (and loaded the digits data) waiting on its queue.
:meth:`JobManager.start` hands the run to it and, shortly after, spawns the next warm one.

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
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Union

from ..config import RunConfig
from .labels import run_label
from .store import ACTIVE, TERMINAL, RunStore
from .worker import job_main, warm_worker_main

STOP_GRACE = 5.0
"""Seconds a worker gets to stop at its next round before it is terminated."""
WARM_RESPAWN_DELAY = (1.0, 15.0)
"""After a hand-over the next warm worker starts once no run is training (at least 1 s
later), or after 15 s at the latest: importing torch takes a few CPU-seconds that would
otherwise slow down the run just handed over on a small machine."""
POLL_INTERVAL = 0.5


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
        Runs training at once; more wait as ``queued`` (default: CPU count, at least 1).
    """

    def __init__(self, store_dir: Union[str, Path, None] = None, *, warm: bool = True,
                 max_running: Optional[int] = None):
        self.store = RunStore(store_dir)
        self.store_dir = str(self.store.directory)
        self.max_running = max_running or max(1, os.cpu_count() or 1)
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
    def start(self, cfg: Union[RunConfig, dict], *, label: str = "", reuse: bool = True) -> str:
        """Queue ``cfg`` for training and return its run id.

        With ``reuse`` (default) a config that already finished returns that run at once
        (no new process), and a config that is training right now returns the live run.
        """
        cfg = cfg if isinstance(cfg, RunConfig) else RunConfig.from_dict(cfg)
        digest = cfg.config_hash()
        with self._lock:
            if reuse:
                hit = self.store.find_finished(digest) or self.store.find_active(digest)
                if hit:
                    self.store.update_run(hit, last_opened=time.time())
                    return hit
            record = self.store.create_run(cfg.to_dict(), digest, label=label or run_label(cfg))
            self._queued.append(record["id"])
            self._dispatch()
            return record["id"]

    def stop(self, run_id: str) -> None:
        """Ask ``run_id`` to stop at its next round; terminate it after :data:`STOP_GRACE` s."""
        with self._lock:
            self.store.request_stop(run_id)
            if run_id in self._queued:
                self._queued.remove(run_id)
                self.store.finish(run_id, "stopped", reason="stopped before it started")
            elif run_id in self._procs:
                self._stopping.setdefault(run_id, time.monotonic())

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
        """Start queued runs while fewer than ``max_running`` train."""
        while self._queued and len(self._procs) < self.max_running and not self._closed:
            run_id = self._queued.pop(0)
            if self.store.get_run(run_id) is None or self.store.stop_requested(run_id):
                continue
            self.store.update_run(run_id, handed_over=time.time())
            if self._warm is not None and self._warm.process.is_alive():
                warm, self._warm = self._warm, None
                warm.jobs.put(run_id)
                proc = warm.process
                self._handed[run_id] = warm
                self._respawn_after = time.monotonic()
            else:
                proc = self._mp.Process(target=job_main, args=(self.store_dir, run_id),
                                        name=f"fedcore-run-{run_id}", daemon=True)
                with _without_main_module():
                    proc.start()
            self.store.update_run(run_id, pid=proc.pid)
            self._procs[run_id] = proc

    def _spawn_warm(self) -> None:
        if self._closed or not self._warm_enabled or self._warm is not None:
            return
        jobs, ready = self._mp.Queue(), self._mp.Event()
        proc = self._mp.Process(target=warm_worker_main, args=(self.store_dir, jobs, ready),
                                name="fedcore-warm-worker", daemon=True)
        with _without_main_module():
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
            if record["status"] in ACTIVE and not _pid_alive(record.get("pid")):
                self.store.finish(record["id"], "failed",
                                  "its worker is gone (the dashboard was restarted while it ran)")


_MAIN_LOCK = threading.Lock()


@contextmanager
def _without_main_module():
    """Start a spawned worker without re-running the caller's ``__main__`` script in it.

    Workers only need :mod:`fedcore.runner.worker`; a spawn child otherwise re-executes
    the parent's main file (under Streamlit: the ``streamlit`` CLI, importing the whole
    web server into every worker). Hiding ``__main__.__file__`` while the process starts
    makes ``multiprocessing`` skip that step.
    """
    main = sys.modules.get("__main__")
    hide = main is not None and getattr(main, "__spec__", None) is None and hasattr(main, "__file__")
    with _MAIN_LOCK:
        if not hide:
            yield
            return
        path = main.__file__
        del main.__file__
        try:
            yield
        finally:
            main.__file__ = path


def _exit_message(code: Optional[int]) -> str:
    if code is not None and code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"the worker process was killed by {name} (exit code {code})"
    return f"the worker process exited with code {code} without finishing the run"


def _pid_alive(pid: Optional[int]) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True

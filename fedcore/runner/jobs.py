"""The one job manager: training runs, sweeps, audits and Ray sweeps in background processes.

:class:`Jobs` is what the dashboard (or a script) holds: one queue with visible
positions (:meth:`~Jobs.queue_info`, estimates capped by ``max_run_seconds`` and scaled
by the load), one set of host limits (:class:`~fedcore.runner.limits.HostLimits`, checked at
submission: a :class:`~fedcore.runner.limits.LimitError` names the limit, whatever the kind),
one owner model (:mod:`fedcore.runner.owners`), one :meth:`~Jobs.stop` and one
:func:`spawn`. A run (:meth:`~Jobs.start`) writes its events to the
:class:`~fedcore.runner.store.RunStore`, ``queued`` -> ``running`` -> ``finished`` |
``stopped`` | ``failed``; a config that already finished is not trained again (the result
cache). Any other kind is a :class:`Job` (made by ``fedcore.sweep.job``,
``fedcore.runner.audits``, ``fedcore.distributed.jobs``) queued by :meth:`~Jobs.submit`.
Every job takes one worker slot (``max_running``) while it trains; a worker that dies without
saying so is marked ``failed`` by :meth:`~Jobs.poll`, which a thread calls twice a second.
Start-up latency: ONE warm worker has imported torch and waits for the next run.

Fair share: no owner keeps more than their share of the slots (``max_running`` // owners
with jobs training or waiting, at least 1) while another waits: the youngest run of an
owner over their share is paused after its current round (:func:`~fedcore.runner.tempo.preempt`)
and its slot goes to the waiting job at once; it resumes, first in line, when a slot frees.
Sweeps and audits cannot pause, so one owner's hold at most half the slots (at least one).

>>> manager = Jobs("/tmp/fl-runs")          # doctest: +SKIP
>>> run_id = manager.start(preset_config("demo"))  # doctest: +SKIP
>>> manager.wait(run_id)["status"]                 # doctest: +SKIP
'finished'
"""
from __future__ import annotations

import hashlib
import multiprocessing
import os
import signal
import threading
import time
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional, Union

from ..config import RunConfig
from .labels import run_label
from .limits import CPUS, HostLimits, LimitError, check_submission
from .owners import Viewer, require_control
from .queueing import estimate_starts, load_factor, seconds_per_round
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


@dataclass
class Job:
    """A job other than a run (:meth:`Jobs.submit`). ``launch()`` starts it and returns its
    process (a :func:`spawn` process or the like); ``request_stop()`` asks it to end soon keeping
    what it made (None: terminate it); ``ended(status, why)`` records an end it did not write
    itself; ``queued()`` runs once it is accepted; ``seconds``: its expected duration."""

    id: str
    kind: str
    owner: Optional[str]
    launch: Callable[[], object]
    request_stop: Optional[Callable[[], None]] = None
    ended: Callable[[str, str], None] = lambda status, why: None
    queued: Callable[[], None] = lambda: None
    seconds: Optional[float] = None
    proc: object = None


class Jobs:
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
        self.max_running = max_running or host.max_running or CPUS
        self._priority = (host.worker_nice or 0, host.worker_threads or 0)
        self._mp = multiprocessing.get_context("spawn")
        self._lock = threading.RLock()
        self._procs: dict[str, multiprocessing.Process] = {}
        self._handed: dict[str, _Warm] = {}  # keeps a warm worker's queue alive while it runs
        self._queued: list[str] = []  # runs and jobs, in order
        self._jobs: dict[str, Job] = {}  # jobs that are not runs, queued or training
        self._owner: dict[str, Optional[str]] = {}  # owner of every queued / training job
        self._preempted: dict[str, multiprocessing.Process] = {}  # runs paused for fair share
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
              owner: Optional[str] = None, background: bool = False, match: bool = False) -> str:
        """Queue ``cfg`` for training and return its run id.

        ``match`` ("spend exactly ε in total", equal privacy): the worker first solves the
        method's own budget so that the whole run's headline ε is the config's largest ε
        (:func:`fedcore.sweep.calibrate.match_headline`), records it in the run's ``match``
        (``target``, ``headline``, ``reached``, ``knob``; ``sidebar``: the hash of ``cfg``)
        and trains that config. A config with nothing noised runs as it is.

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
        match = match and cfg.privacy.mechanism != "none"
        if match:   # not the cache key of the same config run as it is
            digest = hashlib.sha256(f"{digest} spend exactly".encode()).hexdigest()[:16]
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
            self.capacity_left(owner, refuse=True)
            extra = {"owner": owner, "background": background,
                     "max_seconds": self.limits.max_run_seconds if self.limits else None}
            if background:
                extra["grace_s"] = None
            elif self.limits is not None and self.limits.owner_grace_s:
                extra["grace_s"] = self.limits.owner_grace_s
            if match:
                extra["match"] = {"target": float(max(cfg.privacy.epsilons(cfg.num_clients))),
                                  "sidebar": cfg.config_hash()}
            record = self.store.create_run(cfg.to_dict(), digest, label=label or run_label(cfg), **extra)
            self._enqueue(record["id"], owner)
            return record["id"]

    def submit(self, job: Job, cfg: Optional[RunConfig] = None) -> str:
        """Queue ``job`` (a sweep, an audit, a Ray sweep) under the same limits, queue and fair
        share as runs, and return its id; a job of that id queued or training returns at once.
        ``cfg``: the config it trains, checked against the host like a run's."""
        if self.limits is not None and cfg is not None:
            check_submission(cfg, self.limits)
        with self._lock:
            self.poll()  # one that just ended is gone
            if job.id not in self._jobs:
                self.capacity_left(job.owner, refuse=True)
                job.queued()
                self._jobs[job.id] = job
                self._enqueue(job.id, job.owner)
        return job.id

    def job(self, job_id: str) -> Optional[Job]:
        """The queued or training :class:`Job` of that id (None: not a job, or ended)."""
        return self._jobs.get(job_id)

    def _enqueue(self, job_id: str, owner: Optional[str]) -> None:
        self._owner[job_id] = owner
        self._queued.append(job_id)
        self._dispatch()

    def capacity_left(self, owner: Optional[str], *, refuse: bool = False) -> Optional[int]:
        """How many more jobs ``owner`` may queue now (None: unlimited); with ``refuse``, raise
        the :class:`LimitError` of the first cap that is full instead of returning 0."""
        if self.limits is None:
            return None
        with self._lock:
            owners = list(self._owner.values())
        caps = [("max_active", self.limits.max_active, len(owners), f"the server has {len(owners)} jobs (runs, "
                 "sweeps, audits) queued or training, its maximum; try again when some have finished"),
                ("max_active_per_owner", None if owner is None else self.limits.max_active_per_owner,
                 owners.count(owner), f"you have {owners.count(owner)} jobs (runs, sweeps, audits) queued or "
                 "training, the most one visitor may have at once; stop one or wait for it to finish")]
        left = [(cap - n, name, why) for name, cap, n, why in caps if cap is not None]
        for room, name, why in left:
            if refuse and room <= 0:
                raise LimitError(name, why)
        return max(0, min(room for room, _, _ in left)) if left else None

    def queue_info(self, run_id: str) -> Optional[dict]:
        """``{"position": 1-based place in the queue, "ahead": jobs before it, "waiting":
        queue length, "eta_s": estimated seconds until it starts (None if unknown)}``,
        or None when ``run_id`` (a run or a job) is not waiting. The estimate caps every job
        at the host's ``max_run_seconds`` and scales the pace of recent runs by the load;
        that pace is re-read at most every :data:`HISTORY_TTL` s (every queued page asks)."""
        with self._lock:
            if run_id not in self._queued:
                return None
            waiting, running, jobs = list(self._queued), list(self._procs), dict(self._jobs)
            queued = [*self._preempted, *waiting]
        records = {i: self.store.get_run(i) for i in queued + running if i not in jobs}
        history = self._recent_finished()
        now, load = time.time(), load_factor()

        def row(i: str) -> Optional[dict]:
            if i in jobs:
                return {"id": i, "rounds": 1, "round_s": jobs[i].seconds, "elapsed_s": 0.0}
            r = records.get(i)
            if r is None:
                return None
            c = r.get("config") or {}
            pace = seconds_per_round(history, c.get("dataset"), c.get("model"))
            return {"id": i, "rounds": r.get("rounds"), "rounds_done": r.get("rounds_done"),
                    "elapsed_s": now - (r.get("started") or r.get("handed_over") or now),
                    "round_s": pace and pace * load}

        starts = estimate_starts([r for r in map(row, running) if r], [r for r in map(row, queued) if r],
                                 self.max_running, self.limits.max_run_seconds if self.limits else None)
        position = waiting.index(run_id) + 1
        return {"position": position, "ahead": position - 1, "waiting": len(waiting), "running": len(running),
                "slots": self.max_running, "eta_s": starts.get(run_id) if history or running else None}

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
        """Jobs waiting for a worker slot."""
        return len(self._queued)

    def active_count(self) -> int:
        """Jobs queued or training."""
        return len(self._owner)

    def capacity_free(self) -> bool:
        """Whether a job submitted now would start at once (a slot is free, nobody waits)."""
        return not self._queued and not self._preempted and len(self._procs) < self.max_running

    def stop(self, run_id: str, by: Optional[Viewer] = None) -> None:
        """Ask the run or job ``run_id`` to stop (a run at its next round); terminate it after
        :data:`STOP_GRACE` s. A queued one ends at once.

        With ``by`` (the dashboard passes the viewer) only the owner or an admin may stop
        it; anybody else gets :class:`~fedcore.runner.owners.NotYourRun`.
        """
        job = self._jobs.get(run_id)
        if by is not None:
            record = {"id": run_id, "owner": job.owner} if job else self.store.get_run(run_id)
            if record is None:
                return
            require_control(record, by, "stop")
        with self._lock:
            if job is None:
                self.store.request_stop(run_id)
            if run_id in self._queued:
                self._queued.remove(run_id)
                self._owner.pop(run_id, None)
                self._jobs.pop(run_id, None)
                why = "stopped before it started"
                job.ended("stopped", why) if job else self.store.finish(run_id, "stopped", reason=why)
            elif run_id in self._procs or run_id in self._preempted:
                self._stopping.setdefault(run_id, time.monotonic())
                if job is not None:
                    (job.request_stop or job.proc.terminate)()

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
        """Detect dead workers, enforce stop deadlines, start queued jobs."""
        with self._lock:
            for run_id, proc in [*self._procs.items(), *self._preempted.items()]:
                job = self._jobs.get(run_id)
                if proc.is_alive():
                    started = self._stopping.get(run_id)
                    if started is None or time.monotonic() - started <= STOP_GRACE:
                        continue
                    proc.terminate()
                    proc.join(2.0)
                    if proc.is_alive():
                        proc.kill()
                        proc.join(2.0)
                    if job is None:
                        self.store.finish(run_id, "stopped", reason="terminated after the stop grace period")
                proc.join(0)
                status = "stopped" if run_id in self._stopping else "failed"
                why = "stopped by its owner" if status == "stopped" else _exit_message(proc.exitcode)
                if job is not None:
                    job.ended(status, why)
                elif status == "stopped":
                    self.store.finish(run_id, status, reason="stopped by the user")
                else:
                    self.store.finish(run_id, status, why)
                for table in (self._procs, self._preempted, self._handed, self._stopping, self._jobs, self._owner):
                    table.pop(run_id, None)
            self._dispatch()

    def close(self, *, stop_runs: bool = True) -> None:
        """Shut the warm worker down and (by default) stop every running job."""
        with self._lock:
            self._closed = True
            if self._warm is not None:
                self._retire_warm(self._warm)
                self._warm = None
            for run_id in list(self._queued):
                self.stop(run_id)
            if stop_runs:
                for run_id, proc in [*self._procs.items(), *self._preempted.items()]:
                    self.stop(run_id)
                    proc.join(STOP_GRACE)
                    if proc.is_alive():
                        proc.kill()
                        proc.join(2.0)
                self.poll()
        self._monitor.join(2 * POLL_INTERVAL)

    # --- internals --------------------------------------------------------------------
    def _dispatch(self) -> None:
        """Start waiting jobs while fewer than ``max_running`` train, fairly (module doc):
        next is the first waiting job (paused runs first) whose owner trains fewer than their
        share; when every slot is busy it gets one by pausing a run of an owner over their share.
        Sweeps and audits cannot pause: one owner's hold at most half the slots (at least 1).

        A run whose owner's page stopped watching it while it waited (no heartbeat for
        its ``grace_s``) is not started: it ends ``stopped``. Its heartbeat restarts when
        it is handed to a worker, so time spent waiting never counts against it.
        """
        fixed_cap = max(1, self.max_running // 2)
        while (self._queued or self._preempted) and not self._closed:
            running = Counter(self._owner.get(i) for i in self._procs)
            fixed = Counter(self._owner.get(i) for i in self._procs if i in self._jobs)  # cannot pause
            waiting = [i for i in [*self._preempted, *self._queued]
                       if i not in self._jobs or fixed[self._owner.get(i)] < fixed_cap]
            if not waiting:
                return
            share = max(1, self.max_running // len({self._owner.get(i) for i in [*waiting, *self._procs]}))
            under = [i for i in waiting if running[self._owner.get(i)] < share]
            pick = (under or waiting)[0]
            if len(self._procs) >= self.max_running:
                over = [i for i in self._procs if running[self._owner.get(i)] > share
                        and i not in self._jobs and i not in self._stopping]
                if not under or not over:
                    return
                from .tempo import preempt

                preempt(self.store, over[-1], True)  # the youngest: it pauses after its round
                self._preempted[over[-1]] = self._procs.pop(over[-1])
            if pick in self._preempted:
                from .tempo import preempt

                preempt(self.store, pick, False)
                self._procs[pick] = self._preempted.pop(pick)
                continue
            self._queued.remove(pick)
            if pick in self._jobs:
                self._launch(self._jobs[pick])
            else:
                self._start_run(pick)

    def _launch(self, job: Job) -> None:
        try:
            job.proc = job.launch()
        except Exception as exc:  # noqa: BLE001  (one job that cannot start must not stop the queue)
            self._jobs.pop(job.id, None)
            self._owner.pop(job.id, None)
            job.ended("failed", f"it could not start ({type(exc).__name__}: {exc})"[:300])
            return
        self._procs[job.id] = job.proc

    def _start_run(self, run_id: str) -> None:
        record = self.store.get_run(run_id)
        grace = record and record.get("grace_s")
        if record is None or self.store.stop_requested(run_id):
            self._owner.pop(run_id, None)
            if record is not None:   # stopped through the store (another process) while it waited
                self.store.finish(run_id, "stopped", reason="stopped before it started")
            return
        if grace and time.time() - self.store.last_beat(run_id) > grace:
            self._owner.pop(run_id, None)
            self.store.finish(run_id, "stopped", reason=f"its owner left before it started "
                                                        f"(nobody watched it for {grace:g} s)")
            return
        self.store.touch(run_id)
        self.store.update_run(run_id, handed_over=time.time())
        if self._warm is not None and self._warm.process.is_alive():
            warm, self._warm = self._warm, None
            warm.jobs.put(run_id)
            proc = warm.process
            self._handed[run_id] = warm
            self._respawn_after = time.monotonic()
        else:
            proc = spawn(job_main, self.store_dir, run_id, *self._priority, name=f"fedcore-run-{run_id}")
        self.store.update_run(run_id, pid=proc.pid)
        self._procs[run_id] = proc

    def _spawn_warm(self) -> None:
        if self._closed or not self._warm_enabled or self._warm is not None:
            return
        jobs, ready = self._mp.Queue(), self._mp.Event()
        proc = spawn(warm_worker_main, self.store_dir, jobs, ready, *self._priority, name="fedcore-warm-worker")
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

    Under Streamlit ``__main__`` is the page script (every script run installs a fresh one, in
    whichever session's thread runs), so a spawn child would run the whole dashboard before its
    job. The preparation data multiprocessing sends to the child leaves the main module out,
    whatever ``sys.modules["__main__"]`` is by then (hiding ``__file__`` was not enough under load).
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


def spawn(target: Callable, *args, name: str) -> multiprocessing.Process:
    """Start ``target(*args)`` in a new daemon process of the "spawn" context (no forked torch
    state, the same on every OS) that does not re-run the caller's ``__main__``
    (:func:`spawn_without_main_module`): every job's process starts here."""
    proc = multiprocessing.get_context("spawn").Process(target=target, args=args, name=name, daemon=True)
    with spawn_without_main_module():
        proc.start()
    return proc


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

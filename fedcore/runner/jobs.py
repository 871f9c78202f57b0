"""The one job manager: training runs, sweeps, audits and Ray sweeps in the background.

:class:`Jobs` is what the dashboard (or a script) holds: one queue with visible
positions (:meth:`~Jobs.queue_info`, estimates capped by ``max_run_seconds`` and scaled
by the load), one set of host limits (:class:`~fedcore.runner.limits.HostLimits`, checked at
submission: a :class:`~fedcore.runner.limits.LimitError` names the limit, whatever the kind),
one owner model (:mod:`fedcore.runner.owners`), one :meth:`~Jobs.stop`, one
:meth:`~Jobs.status`. Every job is a record in the :class:`~fedcore.runner.store.JobStore`,
``queued`` -> ``running`` -> ``finished`` | ``stopped`` | ``failed``, which its worker keeps up
to date. A run (:meth:`~Jobs.start`) is one more job: it also writes its events there, a
config that already finished is not trained again (the result cache), and its record's
``entry`` is :data:`RUN_ENTRY` (a worker process, the warm one when ready). Any other kind is a
:class:`Job` (made by ``fedcore.sweep.job``, ``fedcore.runner.audits``) queued by
:meth:`~Jobs.submit`; every kind is launched by the function its record names
(:mod:`fedcore.runner.launchers`) and ends by one lifetime rule
(:func:`~fedcore.runner.policy.lifetime_over`: checked by a run's own worker, by the manager for
the others).
Every job takes one worker slot (``max_running``) while it trains, in the order and shares of
:mod:`fedcore.runner.policy`; a worker that dies without saying so is marked ``failed`` by
:meth:`~Jobs.poll`, which a thread calls twice a second. A restart keeps the store's jobs:
queued ones wait again in their order, ones whose worker still lives are watched again.
Start-up latency: warm workers, up to ``max_running``, have imported torch and take runs one after
another (:mod:`fedcore.runner.warm`): no run waits for a fresh interpreter once the pool is full.

>>> manager = Jobs("/tmp/fl-runs")          # doctest: +SKIP
>>> run_id = manager.start(preset_config("demo"))  # doctest: +SKIP
>>> manager.wait(run_id)["status"]                 # doctest: +SKIP
'finished'
"""
from __future__ import annotations

import contextlib
import multiprocessing
import threading
import time
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from types import MappingProxyType
from typing import Optional, Union

from ..config import RunConfig
from .labels import run_label
from .launchers import Launcher, PidLauncher, ProcessLauncher, load_entry, pid_alive, spawn
from .limits import CPUS, HostLimits, LimitError, check_submission
from .owners import Viewer, require_control
from .policy import fixed_cap, lifetime_over, next_move
from .queueing import estimate_starts, load_factor, seconds_per_round
from .store import ACTIVE, QUEUED, RUNNING, TERMINAL, CacheKey, EqualPrivacy, JobRecord, JobStore
from .warm import WarmWorker
from .worker import job_main

RUN_ENTRY = "fedcore.runner.jobs:Jobs._run_worker"
"""The ``entry`` of a run's record: the manager's own launcher of run workers (:meth:`Jobs._run_worker`)."""
STOP_GRACE = 5.0
"""Seconds a worker gets to stop at its next round before it is terminated."""
POLL_INTERVAL = 0.5
HISTORY_TTL = 5.0
HISTORY_RUNS = 100
"""Queue estimates use the pace of the last ``HISTORY_RUNS`` runs, re-read every ``HISTORY_TTL`` s."""


@dataclass
class Job:
    """A job other than a run, as submitted (:meth:`Jobs.submit`): ``entry``
    (``"module:function"``) launches it when its turn comes, ``function(store, record) ->``
    :class:`~fedcore.runner.launchers.Launcher`; ``fields`` go on its record (what the launcher
    needs; ``total`` for its progress); ``seconds``: its expected duration."""

    id: str
    kind: str
    entry: str
    owner: Optional[str] = None
    label: str = ""
    seconds: Optional[float] = None
    fields: dict = field(default_factory=dict)
    pausable: bool = False
    """It yields its slot for fair share between points (the preempt flag, as runs between rounds)."""


@dataclass
class _Slot:
    """Everything this manager holds about one queued or training job (one table, not six)."""

    owner: Optional[str]
    pausable: bool = False
    """It can pause for fair share (runs between rounds, local sweeps between points)."""
    launcher: Optional[Launcher] = None
    """Its worker; None while it waits for a slot."""
    paused: bool = False
    """Paused for fair share: it keeps its worker but no slot."""
    turn: int = 0
    """When it last took a slot (a counter): "oldest first" among the training."""
    stopping: Optional[float] = None
    """When it was asked to stop (monotonic s), or None."""
    reason: Optional[str] = None
    """Why the manager stopped it (its owner left, its time was up)."""


class Jobs:
    """Runs configs in worker processes and records them in a :class:`JobStore`.

    Parameters
    ----------
    store_dir : path, optional
        The store's folder (default ``$FEDCORE_STORE`` or the per-user cache folder).
    warm : bool
        Keep pre-started workers ready, up to ``max_running``, reused run after run (default True).
    max_running : int
        Runs training at once; more wait as ``queued`` (default: ``limits.max_running``,
        else the CPU count, at least 1).
    limits : HostLimits, optional
        Host limits checked at :meth:`start` (None: no limits, what scripts and the CLI use).
    check_store : bool
        Check the store's database on start-up and replace it when damaged
        (:attr:`JobStore.problem` then says so).
    """

    def __init__(self, store_dir: Union[str, Path, None] = None, *, warm: bool = True,
                 max_running: Optional[int] = None, limits: Optional[HostLimits] = None,
                 check_store: bool = False):
        self.store = JobStore(store_dir, check=check_store)
        self.store_dir = str(self.store.directory)
        self.limits = limits
        host = limits or HostLimits()
        self.max_running = max_running or host.max_running or CPUS
        self._priority = (host.worker_nice or 0, host.worker_threads or 0)
        self._lock = threading.RLock()
        self._jobs: dict[str, _Slot] = {}  # every queued or training job, in the order it was queued
        self._turns = 0
        self._closed = False
        self._recover()
        self._warm = WarmWorker(self.store_dir, self._priority, enabled=warm, size=self.max_running)
        self._monitor = threading.Thread(target=self._watch, name="fedcore-jobs", daemon=True)
        self._monitor.start()

    # --- the slots, by state ------------------------------------------------------------
    def _waiting(self) -> list[str]:
        """Jobs waiting for a slot, in the order they were queued."""
        return [i for i, s in self._jobs.items() if s.launcher is None]

    def _training(self) -> list[str]:
        """Jobs holding a slot, oldest turn first."""
        held = [(s.turn, i) for i, s in self._jobs.items() if s.launcher is not None and not s.paused]
        return [i for _, i in sorted(held)]

    def _paused(self) -> list[str]:
        return [i for i, s in self._jobs.items() if s.launcher is not None and s.paused]

    def _workers(self) -> list[tuple[str, Launcher]]:
        """``(id, launcher)`` of every job with a worker, training or paused."""
        return [(i, s.launcher) for i, s in self._jobs.items() if s.launcher is not None]

    def _take_slot(self, job_id: str, launcher: Launcher) -> None:
        self._turns += 1
        slot = self._jobs[job_id]
        slot.launcher, slot.paused, slot.turn = launcher, False, self._turns

    # --- public API -------------------------------------------------------------------
    def start(self, cfg: Union[RunConfig, dict], *, label: str = "", reuse: bool = True,
              owner: Optional[str] = None, background: bool = False, match: bool = False) -> str:
        """Queue ``cfg`` for training and return its run id.

        ``match`` ("spend exactly ε in total", equal privacy): the worker first solves the
        method's own budget so that the whole run's headline ε is the config's largest ε
        (:func:`fedcore.equal_privacy.match_headline`), records the solution in the run's
        ``match`` (:class:`~fedcore.runner.store.EqualPrivacy`) and trains that config (the
        record's ``config``; ``requested`` keeps ``cfg``). A config with nothing noised runs
        as it is.

        With ``reuse`` (default) a config that already finished returns that run at once
        (no new process; another owner's finished run is copied into a run of ``owner``),
        and a config that ``owner`` is training right now returns the live run.

        ``owner`` is recorded with the run (see :mod:`fedcore.runner.owners`). A run that
        is not a ``background`` job is stopped once nobody refreshed its heartbeat
        (:meth:`JobStore.touch`, done by the owner's page) for ``limits.owner_grace_s``
        seconds while it trains; a queued run is never stopped for waiting.

        Raises :class:`~fedcore.runner.limits.LimitError` /
        :class:`~fedcore.runner.limits.HostUnavailable` when the manager has ``limits``
        and the run exceeds one.
        """
        cfg = cfg if isinstance(cfg, RunConfig) else RunConfig.from_dict(cfg)
        exact = EqualPrivacy(float(max(cfg.privacy.epsilons(cfg.num_clients)))) \
            if match and cfg.privacy.mechanism != "none" else None
        digest = CacheKey(cfg.config_hash(), spend_exactly=bool(exact))
        if self.limits is not None:
            check_submission(cfg, self.limits)
        with self._lock:
            if reuse:
                hit = self.store.find_owned(digest, owner) or self._live_twin(cfg, exact, owner)
                if hit is None and self.store.find_finished(digest):
                    hit = self.store.copy_job(self.store.find_finished(digest), owner=owner)
                if hit:
                    self.store.update_job(hit, last_opened=time.time())
                    return hit
            self.capacity_left(owner, refuse=True)
            extra = {"owner": owner, "background": background, **self._lifetime(background)}
            record = self.store.create_run(cfg.to_dict(), cfg.config_hash(), label=label or run_label(cfg),
                                           match=exact, entry=RUN_ENTRY, **extra)
            self._enqueue(record["id"], owner, record["pausable"])
            return record["id"]

    def _live_twin(self, cfg: RunConfig, exact: Optional[EqualPrivacy], owner: Optional[str]) -> Optional[str]:
        """``owner``'s queued or training run that trains what ``cfg`` trains under another recipe
        label (``method`` names the recipe its settings came from and changes nothing trained): one
        visitor's tabs pressed at once sent one config as ``fedavg`` and as ``''`` ("none+fedavg"),
        and got two runs of it."""
        bare = cfg.replace(method="").config_hash()
        with self._lock:
            mine = [i for i, s in self._jobs.items() if s.owner == owner]
        for job_id in mine:
            record = self.store.get_job_dict(job_id)
            if not record or not record.get("events") or bool(record.get("match")) != bool(exact):
                continue
            try:
                twin = RunConfig.from_dict(record.get("requested") or record["config"])
            except Exception:  # noqa: BLE001  (a record of an older version: no twin)
                continue
            if twin.replace(method="").config_hash() == bare:
                return job_id
        return None

    def _lifetime(self, background: bool = False) -> dict:
        """A job's ``max_seconds`` and (unless ``background``) ``grace_s``, from the host's limits."""
        extra = {"max_seconds": self.limits.max_run_seconds if self.limits else None}
        if background:
            extra["grace_s"] = None
        elif self.limits is not None and self.limits.owner_grace_s:
            extra["grace_s"] = self.limits.owner_grace_s
        return extra

    def submit(self, job: Job, cfg: Optional[RunConfig] = None) -> str:
        """Record ``job`` (a sweep, an audit, a Ray sweep) and queue it under the same limits, queue
        and fair share as runs; returns its id. A job of that id queued or training returns at
        once. ``cfg``: the config it trains, checked against the host like a run's."""
        if self.limits is not None and cfg is not None:
            check_submission(cfg, self.limits)
        with self._lock:
            self.poll()  # one that just ended is gone
            if job.id not in self._jobs:
                self.capacity_left(job.owner, refuse=True)
                lifetime = self._lifetime(background=job.owner is None)
                self.store.create_job(job.id, job.kind, owner=job.owner, label=job.label, entry=job.entry,
                                      seconds=job.seconds, pausable=job.pausable, **lifetime, **job.fields)
                self._enqueue(job.id, job.owner, job.pausable)
        return job.id

    def keep_owners_alive(self, owners) -> int:
        """Refresh the heartbeat of every queued or training job of ``owners`` (the visitors with a
        page open, measured by the server: ``pages/components/presence.py``); returns how many."""
        with self._lock:
            ids = [i for i, s in self._jobs.items() if s.owner is not None and s.owner in owners]
        for job_id in ids:
            self.store.touch(job_id)
        return len(ids)

    def job(self, job_id: str) -> Optional[JobRecord]:
        """The record of job ``job_id`` while it is queued or training here (None: ended, unknown)."""
        return self.store.get_job(job_id) if job_id in self._jobs else None

    def _enqueue(self, job_id: str, owner: Optional[str], pausable: bool = False) -> None:
        self._jobs[job_id] = _Slot(owner, pausable)
        self._dispatch()

    def capacity_left(self, owner: Optional[str], *, refuse: bool = False) -> Optional[int]:
        """How many more jobs ``owner`` may queue now (None: unlimited); with ``refuse``, raise
        the :class:`LimitError` of the first cap that is full instead of returning 0."""
        if self.limits is None:
            return None
        with self._lock:
            owners = [s.owner for s in self._jobs.values()]
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

    def queue_info(self, job_id: str) -> Optional[dict]:
        """``{"position": 1-based place in the queue, "ahead": jobs before it, "waiting":
        queue length, "eta_s": estimated seconds until it starts (None if unknown)}``,
        or None when job ``job_id`` is not waiting. The estimate caps every job
        at the host's ``max_run_seconds`` and scales the pace of recent runs by the load;
        that pace is re-read at most every :data:`HISTORY_TTL` s (every queued page asks)."""
        with self._lock:
            waiting, running = self._waiting(), self._training()
            if job_id not in waiting:
                return None
            queued = [*self._paused(), *waiting]
        records = {i: self.store.get_job_dict(i) for i in queued + running}
        history = self._recent_finished()
        now, load = time.time(), load_factor()

        def row(i: str) -> Optional[dict]:
            r = records.get(i)
            if r is None:
                return None
            slot = self._jobs.get(i)
            who = {"owner": r.get("owner"), "fixed": not (slot and slot.pausable)}
            if not r["events"]:  # no rounds to go by: its expected duration, as one round
                return {"id": i, "rounds": 1, "round_s": r.get("seconds"), "elapsed_s": 0.0, **who}
            c = r.get("config") or {}
            pace = seconds_per_round(history, c.get("dataset"), c.get("model"))
            return {"id": i, "rounds": r.get("rounds"), "rounds_done": r.get("rounds_done"),
                    "elapsed_s": now - (r.get("started") or r.get("handed_over") or now),
                    "round_s": pace and pace * load, **who}

        starts = estimate_starts([r for r in map(row, running) if r], [r for r in map(row, queued) if r],
                                 self.max_running, self.limits.max_run_seconds if self.limits else None,
                                 fixed_cap=fixed_cap(self.max_running))
        position = waiting.index(job_id) + 1
        return {"position": position, "ahead": position - 1, "waiting": len(waiting), "running": len(running),
                "slots": self.max_running, "eta_s": starts.get(job_id) if history or running else None}

    def _recent_finished(self) -> list[dict]:
        now = time.monotonic()
        cached = getattr(self, "_history", None)
        if cached is None or now - cached[0] > HISTORY_TTL:
            ids = self.store.job_ids()[-HISTORY_RUNS:]
            records = [self.store.get_job_dict(i) for i in ids]
            cached = (now, [r for r in records if r is not None and r["status"] == "finished"])
            self._history = cached
        return cached[1]

    def queue_length(self) -> int:
        """Jobs waiting for a worker slot."""
        return len(self._waiting())

    def active_count(self) -> int:
        """Jobs queued or training."""
        return len(self._jobs)

    def capacity_free(self) -> bool:
        """Whether a job submitted now would start at once (a slot is free, nobody waits)."""
        return not self._waiting() and not self._paused() and len(self._training()) < self.max_running

    def stop(self, job_id: str, by: Optional[Viewer] = None) -> None:
        """Ask the job ``job_id`` to stop (a run at its next round, a sweep after its batch);
        terminate it after :data:`STOP_GRACE` s. A queued one ends at once.

        With ``by`` (the dashboard passes the viewer) only the owner or an admin may stop
        it; anybody else gets :class:`~fedcore.runner.owners.NotYourRun`.
        """
        record = self.store.get_job(job_id)
        if record is None:
            return
        if by is not None:
            require_control(record, by, "stop")
        with self._lock:
            self.store.request_stop(job_id)
            slot = self._jobs.get(job_id)
            if slot is None:
                return
            if slot.launcher is None:
                self._forget(job_id)
                self.store.finish(job_id, "stopped", reason="stopped before it started")
            else:
                if slot.stopping is None:
                    slot.stopping = time.monotonic()
                slot.launcher.request_stop()

    def delete(self, job_id: str, by: Optional[Viewer] = None) -> bool:
        """Stop ``job_id`` if it is active, then remove it and its events (owner or admin only
        when ``by`` is given). True if it existed."""
        record = self.store.get_job(job_id)
        if record is None:
            return False
        if by is not None:
            require_control(record, by, "delete")
        if record.status in ACTIVE:
            self.stop(job_id)
        return self.store.delete(job_id)

    def job_record(self, job_id: str) -> JobRecord:
        """Job ``job_id``'s :class:`~fedcore.runner.record.JobRecord` (``status``: one of the run
        store's words, ``done``, ``total``, ``owner``, ``error``, ...), with ``queue``
        (:meth:`queue_info`) in its :attr:`~fedcore.runner.record.JobRecord.fields` while it waits;
        status ``"none"`` (nothing done of 0) when it never ran."""
        record = self.store.get_job(job_id)
        if record is None:
            return JobRecord(job_id, status="none", total=0)
        queue = self.queue_info(job_id) if record.status == QUEUED else None
        return replace(record, fields=MappingProxyType({**record.fields, "queue": queue})) if queue else record

    def status(self, job_id: str) -> Optional[str]:
        """The job's status after checking that its worker is still alive."""
        self.poll()
        record = self.store.get_job_dict(job_id)
        return record["status"] if record else None

    def is_alive(self, job_id: str) -> bool:
        """Whether job ``job_id`` is training in this manager."""
        slot = self._jobs.get(job_id)
        return slot is not None and slot.launcher is not None and not slot.paused and slot.launcher.alive()

    def process(self, job_id: str) -> Optional[multiprocessing.Process]:
        """The worker process of ``job_id`` (None when not started by this manager)."""
        slot = self._jobs.get(job_id)
        return getattr(slot and slot.launcher, "process", None)

    def wait(self, job_id: str, timeout: float = 60.0, *, touch: bool = True) -> dict:
        """Block until ``job_id`` ends (or ``timeout``); returns its record."""
        deadline = time.monotonic() + timeout
        while True:
            if touch:
                self.store.touch(job_id)
            self.poll()
            record = self.store.get_job_dict(job_id)
            if record is None or record["status"] in TERMINAL or time.monotonic() > deadline:
                return record
            time.sleep(0.05)

    def poll(self) -> None:
        """Detect dead workers, enforce stop deadlines, start queued jobs."""
        with self._lock:
            self._expire()
            for job_id, launcher in self._workers():
                slot = self._jobs[job_id]
                if launcher.alive():
                    if slot.stopping is None or time.monotonic() - slot.stopping <= STOP_GRACE:
                        continue
                    launcher.terminate()
                    self.store.finish(job_id, "stopped", reason=slot.reason or "terminated after the stop grace period")
                if slot.stopping is not None:
                    self.store.finish(job_id, "stopped", reason=slot.reason or "stopped by the user")
                else:
                    why = getattr(launcher, "why_ended", lambda: "its worker ended without saying how")()
                    self.store.finish(job_id, "failed", why)
                self._forget(job_id)
            self._dispatch()

    def close(self, *, stop_runs: bool = True) -> None:
        """Shut the warm worker down and (by default) stop every queued and training job; with
        ``stop_runs=False`` they stay in the store for the next manager (a restart)."""
        with self._lock:
            self._closed = True
            self._warm.close()
            if stop_runs:
                for job_id in self._waiting():
                    self.stop(job_id)
                for job_id, launcher in self._workers():
                    self.stop(job_id)
                    deadline = time.monotonic() + STOP_GRACE
                    while launcher.alive() and time.monotonic() < deadline:
                        time.sleep(0.05)
                    if launcher.alive():
                        launcher.terminate()
                self.poll()
        self._monitor.join(2 * POLL_INTERVAL)

    # --- internals --------------------------------------------------------------------
    def _forget(self, job_id: str) -> None:
        self._jobs.pop(job_id, None)

    def _expire(self) -> None:
        """Stop the jobs whose owner left or whose time is up
        (:func:`~fedcore.runner.policy.lifetime_over`), but for those whose worker checks the same
        itself (a run's: its launcher ``watches_lifetime``)."""
        now = time.time()
        for job_id, launcher in self._workers():
            if getattr(launcher, "watches_lifetime", False) or self._jobs[job_id].stopping is not None:
                continue
            record = self.store.get_job_dict(job_id)
            why = record and lifetime_over(record, self.store.last_beat(job_id), now)
            if why:
                self._jobs[job_id].reason = why
                self.store.update_job(job_id, reason=why)  # its worker may record the stop itself
                self.stop(job_id)

    def _dispatch(self) -> None:
        """Start waiting jobs while slots are free, in the order and shares of
        :func:`fedcore.runner.policy.next_move` (pausing a run when the policy says so).

        A run whose owner's page stopped watching it while it waited (no heartbeat for
        its ``grace_s``) is not started: it ends ``stopped``. Its heartbeat restarts when
        it is handed to a worker, so time spent waiting never counts against it.
        """
        from .tempo import preempt

        while not self._closed:
            jobs = self._jobs
            move = next_move(self._waiting(), self._paused(), self._training(),
                             {i: s.owner for i, s in jobs.items()},
                             pausable={i for i, s in jobs.items() if s.pausable}, slots=self.max_running,
                             stopping={i for i, s in jobs.items() if s.stopping is not None})
            if move is None:
                return
            if move.pause is not None:
                preempt(self.store, move.pause, True)  # it pauses after its current round
                jobs[move.pause].paused = True
            if jobs[move.start].paused:
                preempt(self.store, move.start, False)
                self._take_slot(move.start, jobs[move.start].launcher)
                continue
            record = self.store.claim(move.start)
            if record is None:  # stopped, deleted, or taken by another manager of the store
                self._forget(move.start)
            else:
                self._launch(record)

    def _launch(self, record: dict) -> None:
        """Start job ``record`` by its ``entry`` (a run's: :meth:`_run_worker`), unless its owner
        left while it waited."""
        why = lifetime_over({**record, "started": None}, self.store.last_beat(record["id"]), time.time())
        if why:  # its owner left while it waited
            self._forget(record["id"])
            self.store.finish(record["id"], "stopped", reason=f"its owner left before it started ({why})")
            return
        self.store.touch(record["id"])  # time spent waiting never counts against it
        entry = record.get("entry") or RUN_ENTRY  # a run of an older store names none
        try:
            launcher = (self._run_worker if entry == RUN_ENTRY else load_entry(entry))(self.store, record)
        except Exception as exc:  # noqa: BLE001  (one job that cannot start must not stop the queue)
            self._forget(record["id"])
            self.store.finish(record["id"], "failed", f"it could not start ({type(exc).__name__}: {exc})"[:300])
            return
        self._take_slot(record["id"], launcher)
        if getattr(launcher, "watches_lifetime", False):  # its worker records its own start
            self.store.update_job(record["id"], pid=launcher.pid)
        else:
            self.store.update_job(record["id"], status=RUNNING, pid=launcher.pid, started=time.time())

    def _run_worker(self, store: JobStore, record: dict) -> Launcher:
        """A run's launcher (entry :data:`RUN_ENTRY`): the warm worker when one is ready, else a
        worker spawned now; the worker records its start and checks its own lifetime
        (:class:`~fedcore.runner.worker.Watchdog`)."""
        run_id = record["id"]
        warm = self._warm.take(run_id)
        proc = warm.process if warm else spawn(job_main, self.store_dir, run_id, *self._priority,
                                               name=f"fedcore-run-{run_id}")
        return ProcessLauncher(proc, partial(store.request_stop, run_id), keep=warm, watches_lifetime=True,
                               done=warm.idle if warm else None)

    def warm_state(self) -> str:
        """The warm worker's :meth:`~fedcore.runner.warm.WarmWorker.state`."""
        return self._warm.state()

    def warm_ready(self, timeout: float = 0.0) -> bool:
        """Whether the warm worker has finished warming up (waits up to ``timeout`` s)."""
        return self._warm.ready(timeout)

    def _watch(self) -> None:
        while not self._closed:
            time.sleep(POLL_INTERVAL)
            with contextlib.suppress(Exception):  # the monitor must survive a bad poll
                self.poll()
                with self._lock:
                    if not self._closed:
                        self._warm.tick(busy=bool(self._training()))

    def _recover(self) -> None:
        """Take up the store's jobs after a restart: one whose worker still lives is watched
        again (holding its slot), one queued waits again in its place, and one whose worker
        is gone ends ``failed``."""
        from .tempo import preempt

        for record in reversed(self.store.list_job_dicts(kind=None)):  # oldest first
            job_id = record["id"]
            if record["status"] not in ACTIVE:
                continue
            alive = pid_alive(record.get("pid"))
            if not alive and not (record["status"] == QUEUED and not record.get("handed_over")):
                self.store.finish(job_id, "failed", "its worker is gone (the dashboard was restarted while it ran)")
                continue
            self._jobs[job_id] = _Slot(record.get("owner"), bool(record.get("pausable")))
            if alive:  # watched again, holding its slot
                self._take_slot(job_id, PidLauncher(record["pid"], partial(self.store.request_stop, job_id),
                                                    watches_lifetime=(record.get("entry") or RUN_ENTRY) == RUN_ENTRY))
            if record.get("pausable"):
                preempt(self.store, job_id, False)  # one paused for fair share gets its turn again

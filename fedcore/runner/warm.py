"""Warm workers: worker processes started ahead of time (torch imported, the digits data loaded,
:func:`~fedcore.runner.worker.warm_worker_main`), kept up to the slot limit, that take runs one
after another: a class that presses Run at once waits for a slot, never for a fresh interpreter.

A run handed to a warm worker trains in it; when it ends the worker is idle again (its ``idle``
event, which its launcher reads as the run's end) and takes the next run, up to :data:`RUNS_PER_WORKER`
runs, then exits and is replaced (whatever a run leaves behind stays bounded). A seeded run gives
the same numbers in a reused worker as in a fresh one (``tests/test_warm_pool.py``).

The pool grows one worker at a time, up to ``size``: the next starts once the last one is ready and
no job trains (at least 1 s after a hand-over), or 15 s after it at the latest (:data:`RESPAWN_DELAY`):
importing torch takes a few CPU-seconds that would otherwise slow down the runs training on a small
machine. One that dies while idle is replaced, backing off (up to 5 min) if they keep dying.
"""
from __future__ import annotations

import contextlib
import multiprocessing
import time
from dataclasses import dataclass, field
from typing import Optional

from .launchers import spawn
from .worker import warm_worker_main

RESPAWN_DELAY = (1.0, 15.0)
"""Seconds after a hand-over: the earliest a next warm worker starts (when idle), the latest."""
RUNS_PER_WORKER = 200
"""Runs one warm worker trains before it exits and a fresh one takes its place."""


@dataclass
class Warm:
    """A warm worker's process, its own job queue (a run id, or None to exit), its ready event and its
    idle event (set while it waits for a run)."""

    process: multiprocessing.Process
    jobs: object
    ready: object
    idle: object
    runs: int = field(default=0)

    def waiting(self) -> bool:
        return self.process.is_alive() and self.idle.is_set()


class WarmWorker:
    """Keeps up to ``size`` warm workers of the store at ``store_dir`` (none when not ``enabled``)."""

    def __init__(self, store_dir: str, priority: tuple = (0, 0), enabled: bool = True, size: int = 1):
        self.store_dir, self.priority, self.enabled, self.size = store_dir, priority, enabled, max(1, size)
        self.pool: list[Warm] = []
        self._respawn_after: Optional[float] = None  # monotonic time of the last hand-over
        self._deaths = 0
        self._spawn()

    def _spawn(self) -> None:
        if self.enabled and len(self.pool) < self.size:
            ctx = multiprocessing.get_context("spawn")
            jobs, ready, idle = ctx.Queue(), ctx.Event(), ctx.Event()
            idle.set()
            proc = spawn(warm_worker_main, self.store_dir, jobs, ready, *self.priority, idle, RUNS_PER_WORKER,
                         name="fedcore-warm-worker")
            self.pool.append(Warm(proc, jobs, ready, idle))

    def take(self, run_id: str) -> Optional[Warm]:
        """Hand ``run_id`` to a waiting warm worker (a ready one first) and return it (keep it while the run
        trains: its queue lives in it); None when none waits."""
        waiting = sorted((w for w in self.pool if w.waiting()), key=lambda w: not w.ready.is_set())
        if not waiting:
            return None
        warm = waiting[0]
        warm.idle.clear()
        warm.runs += 1
        warm.jobs.put(run_id)
        self._respawn_after = time.monotonic()
        return warm

    def tick(self, busy: bool) -> None:
        """Replace the workers that ended and grow the pool when it is time (module doc); ``busy``: a job
        trains."""
        for warm in [w for w in self.pool if not w.process.is_alive()]:
            self.pool.remove(warm)
            if warm.idle.is_set() and warm.runs < RUNS_PER_WORKER:  # died while waiting: back off if it repeats
                self._deaths += 1
                self._respawn_after = time.monotonic() + min(300.0, 2.0 ** self._deaths) - RESPAWN_DELAY[1]
        if not self.enabled or len(self.pool) >= self.size or any(not w.ready.is_set() for w in self.pool):
            return
        waited = float("inf") if self._respawn_after is None else time.monotonic() - self._respawn_after
        if waited >= RESPAWN_DELAY[1] or (waited >= RESPAWN_DELAY[0] and not busy):
            self._spawn()

    def state(self) -> str:
        """``"ready"`` (one warmed up and waiting), ``"starting"`` (one importing) or ``"none"``
        (all busy; the next starts when the machine is idle)."""
        waiting = [w for w in self.pool if w.waiting()]
        if any(w.ready.is_set() for w in waiting):
            return "ready"
        return "starting" if waiting else "none"

    def ready(self, timeout: float = 0.0) -> bool:
        """Whether a waiting warm worker has finished warming up (waits up to ``timeout`` s)."""
        deadline = time.monotonic() + timeout
        while True:
            waiting = [w for w in self.pool if w.waiting()]
            if any(w.ready.is_set() for w in waiting):
                return True
            left = deadline - time.monotonic()
            if not waiting or left <= 0:
                return False
            waiting[0].ready.wait(min(left, 0.1))

    def close(self) -> None:
        """Let every warm worker exit once its run (if any) ends; kill those still waiting after 1 s;
        start no other."""
        pool, self.pool, self.enabled = self.pool, [], False
        for warm in pool:
            with contextlib.suppress(OSError, ValueError):
                warm.jobs.put(None)
        for warm in pool:
            if warm.idle.is_set():
                warm.process.join(1.0)
                if warm.process.is_alive():
                    warm.process.kill()
                    warm.process.join(1.0)

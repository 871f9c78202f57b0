"""The warm worker: ONE worker process started ahead of time (torch imported, the digits data
loaded, :func:`~fedcore.runner.worker.warm_worker_main`) that takes the next run at once, so
the first round of a demo run appears within a fraction of a second.

After a hand-over the next one starts once no job trains (at least 1 s later), or after 15 s
at the latest (:data:`RESPAWN_DELAY`): importing torch takes a few CPU-seconds that would
otherwise slow down the run just handed over on a small machine. One that dies while waiting
is replaced, backing off (up to 5 min) if it keeps dying.
"""
from __future__ import annotations

import multiprocessing
import time
from dataclasses import dataclass
from typing import Optional

from .launchers import spawn
from .worker import warm_worker_main

RESPAWN_DELAY = (1.0, 15.0)
"""Seconds after a hand-over: the earliest a next warm worker starts (when idle), the latest."""


@dataclass
class Warm:
    """A warm worker's process, its own job queue (a run id, or None to exit) and ready event."""

    process: multiprocessing.Process
    jobs: object
    ready: object


class WarmWorker:
    """Keeps one warm worker of the store at ``store_dir`` (none when not ``enabled``)."""

    def __init__(self, store_dir: str, priority: tuple = (0, 0), enabled: bool = True):
        self.store_dir, self.priority, self.enabled = store_dir, priority, enabled
        self.current: Optional[Warm] = None
        self._respawn_after: Optional[float] = None  # monotonic time of the last hand-over
        self._deaths = 0
        self._spawn()

    def _spawn(self) -> None:
        if self.enabled and self.current is None:
            ctx = multiprocessing.get_context("spawn")
            jobs, ready = ctx.Queue(), ctx.Event()
            proc = spawn(warm_worker_main, self.store_dir, jobs, ready, *self.priority, name="fedcore-warm-worker")
            self.current = Warm(proc, jobs, ready)

    def take(self, run_id: str) -> Optional[Warm]:
        """Hand ``run_id`` to the warm worker and return it (keep it while the run trains: its
        queue lives in it); None when there is none alive."""
        warm = self.current
        if warm is None or not warm.process.is_alive():
            return None
        warm.jobs.put(run_id)
        self.current, self._respawn_after = None, time.monotonic()
        return warm

    def tick(self, busy: bool) -> None:
        """Start the next warm worker when it is time (module doc); ``busy``: a job trains."""
        if self.current is not None and not self.current.process.is_alive():
            self.current = None  # died while waiting: replace it, backing off if it keeps dying
            self._deaths += 1
            self._respawn_after = time.monotonic() + min(300.0, 2.0 ** self._deaths) - RESPAWN_DELAY[1]
        if self.current is not None or self._respawn_after is None:
            return
        waited = time.monotonic() - self._respawn_after
        if waited >= RESPAWN_DELAY[1] or (waited >= RESPAWN_DELAY[0] and not busy):
            self._respawn_after = None
            self._spawn()

    def state(self) -> str:
        """``"ready"`` (warmed up, waiting), ``"starting"`` (importing) or ``"none"``
        (handed over; the next one starts when the machine is idle)."""
        warm = self.current
        if warm is None or not warm.process.is_alive():
            return "none"
        return "ready" if warm.ready.is_set() else "starting"

    def ready(self, timeout: float = 0.0) -> bool:
        """Whether the warm worker has finished warming up (waits up to ``timeout`` s)."""
        warm = self.current
        return warm is not None and warm.ready.wait(timeout)

    def close(self) -> None:
        """Let the waiting warm worker exit (killed after 1 s) and start no other."""
        warm, self.current, self.enabled = self.current, None, False
        if warm is None:
            return
        try:
            warm.jobs.put(None)
        except (OSError, ValueError):
            pass
        warm.process.join(1.0)
        if warm.process.is_alive():
            warm.process.kill()
            warm.process.join(1.0)

"""The dashboard's sweeps on Ray: a kind of job of the one job manager, run on the cluster.

:func:`fedcore.sweep.job.start_sweep` with ``ray=<address>`` (the host setting
``$FEDCORE_RAY_ADDRESS``, :func:`configured_address`) queues the sweep like a local one; when
its turn comes :func:`ray_process` builds its points and sends them to the cluster in a
thread, writing the same ``<key>.json`` frontier and ``<key>.status.json`` files as the local
worker, so the Frontier page draws it unchanged: points stream into the file as the
cluster's tasks finish, Stop cancels the tasks, and a sweep started again skips the points
already in its file (a cancelled or partly failed frontier resumes where it stopped).
"""
from __future__ import annotations

import threading
from pathlib import Path
from typing import Optional

from .cluster import configured_address  # noqa: F401  (the page names the address)

_STATES = {"pending": "starting", "connecting": "starting", "running": "running", "finished": "finished",
           "cancelled": "stopped", "failed": "failed"}


def ray_installed() -> bool:
    """Whether the optional Ray extra is importable here (the page offers the toggle then)."""
    import importlib.util

    return importlib.util.find_spec("ray") is not None


class _RayProcess(threading.Thread):
    """A Ray sweep as the job manager sees a worker process (``is_alive``, ``terminate``, ...)."""

    exitcode = 0
    pid = None

    def __init__(self, spec, address: str, folder: Path, key: str, owner: Optional[str]):
        super().__init__(name=f"fedcore-ray-sweep-{key}", daemon=True)
        self.spec, self.address, self.folder, self.key, self.owner = spec, address, Path(folder), key, owner
        self.handle, self.cancelled = None, threading.Event()

    def run(self) -> None:
        from ..errors import FedcoreError
        from ..sweep.job import write_status
        from .sweep import RaySweep, SweepHandle

        def status(state: str, **extra) -> None:
            write_status(self.folder, self.key, state, owner=self.owner, address=self.address, **extra)

        try:
            status("starting", total=self.spec.count(), done=0)
            points = self.spec.points()
            self.handle = SweepHandle(RaySweep(points, address=self.address, out=self.folder / f"{self.key}.json"))
            while not self.handle.wait(0.5):
                if self.cancelled.is_set():
                    self.handle.cancel()
                p = self.handle.progress()
                status(_STATES.get(p["state"], "running"), done=p["done"], total=p["total"], cluster=p["cluster"])
            p, failed = self.handle.progress(), [r for f in self.handle.sweep.failed for r in f["runs"]]
            error = p["error"] or failed and (f"{len(failed)} run(s) failed on the cluster after a retry ("
                                              f"{'; '.join(failed[:6])}{' …' if len(failed) > 6 else ''}): "
                                              f"{self.handle.sweep.failed[0]['error']}")
            state = _STATES.get(p["state"], "failed")
            status("failed" if state in ("starting", "running") else state, done=p["done"], total=p["total"],
                   failed=p["failed"], cluster=p["cluster"], skipped=self.handle.sweep.skipped, error=error or None)
        except FedcoreError as exc:
            status("failed", error=str(exc))
        except Exception as exc:  # noqa: BLE001  (shown on the page as one line)
            status("failed", error=f"{type(exc).__name__}: {exc}"[:200])

    def terminate(self) -> None:
        """Cancel the sweep's tasks on the cluster (finished points stay in its file)."""
        self.cancelled.set()
        if self.handle is not None:
            self.handle.cancel()

    kill = terminate


def ray_process(spec, address: str, folder: Path, key: str, owner: Optional[str] = None) -> _RayProcess:
    """Start ``spec`` on the cluster at ``address`` (see the module doc); the job's process."""
    proc = _RayProcess(spec, address, folder, key, owner)
    proc.start()
    return proc

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
from typing import Callable

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

    def __init__(self, spec, address: str, out: Path, write_status: Callable[..., None]):
        super().__init__(name=f"fedcore-ray-sweep-{out.stem}", daemon=True)
        self.spec, self.address, self.out, self.write_status = spec, address, out, write_status
        self.sweep, self.cancelled = None, threading.Event()

    def run(self) -> None:
        from ..errors import FedcoreError
        from .sweep import RaySweep

        def status(state: str, **extra) -> None:
            p = self.sweep.progress() if self.sweep else {"done": 0, "total": self.spec.count()}
            self.write_status(state, address=self.address, done=p["done"],
                         total=p["total"], **({"cluster": p["cluster"], "failed": p["failed"],
                                               "skipped": p["skipped"]} if self.sweep else {}), **extra)

        try:
            status("starting")
            self.sweep = RaySweep(self.spec.points(), address=self.address, out=self.out)
            for _ in self.sweep.run():
                if self.cancelled.is_set():
                    self.sweep.cancel()
                status("running")
            failed = [r for f in self.sweep.failed for r in f["runs"]]
            status(_STATES.get(self.sweep.state, "failed"), error=failed and (
                f"{len(failed)} run(s) failed on the cluster after a retry ({'; '.join(failed[:6])}"
                f"{' …' if len(failed) > 6 else ''}): {self.sweep.failed[0]['error']}") or None)
        except FedcoreError as exc:
            status("failed", error=str(exc))
        except Exception as exc:  # noqa: BLE001  (shown on the page as one line)
            status("failed", error=f"{type(exc).__name__}: {exc}"[:200])

    def terminate(self) -> None:
        """Cancel the sweep's tasks on the cluster (finished points stay in its file)."""
        self.cancelled.set()
        if self.sweep is not None:
            self.sweep.cancel()

    kill = terminate


def ray_process(spec, address: str, out: Path, write_status: Callable[..., None]) -> _RayProcess:
    """Start ``spec`` on the cluster at ``address``, its rows into ``out``, its state through
    ``write_status(state, **fields)`` (see the module doc); returns the job's process."""
    proc = _RayProcess(spec, address, out, write_status)
    proc.start()
    return proc

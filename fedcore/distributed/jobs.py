"""The dashboard's sweeps on Ray: the Frontier page's job interface, backed by the cluster.

:class:`RaySweepJobs` has the methods of :class:`fedcore.sweep.job.SweepJobs`
(``start`` / ``stop`` / ``status`` / ``rows`` / ``close``, the same keys and the same
``<folder>/<key>.json`` frontier files), so the Frontier page can send a sweep to the
cluster named by the host setting ``$FEDCORE_RAY_ADDRESS`` (:func:`ray_jobs`) instead of
its local background process and draw it unchanged: points stream into the file as the
cluster's tasks finish, Stop cancels the tasks, and a sweep started again skips the points
already in its file (a cancelled or partly failed frontier resumes where it stopped).
"""
from __future__ import annotations

import threading
from pathlib import Path
from typing import Union

from .cluster import configured_address
from .sweep import RaySweep, SweepHandle

_STATES = {"pending": "starting", "connecting": "starting", "running": "running", "finished": "finished",
           "cancelled": "stopped", "failed": "failed"}


def ray_installed() -> bool:
    """Whether the optional Ray extra is importable here (the page offers the toggle then)."""
    import importlib.util

    return importlib.util.find_spec("ray") is not None


class RaySweepJobs:
    """Sweeps on the Ray cluster at ``address``; results in ``folder`` (see the module doc)."""

    def __init__(self, folder: Union[str, Path], address: str):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.address = address
        self._handles: dict[str, SweepHandle] = {}
        self._lock = threading.Lock()

    def start(self, spec) -> str:
        """Send ``spec`` to the cluster and return its key (a running one returns at once)."""
        from ..sweep.job import spec_key

        key = spec_key(spec)
        with self._lock:
            handle = self._handles.get(key)
            if handle is not None and not handle.done:
                return key
            sweep = RaySweep(spec.points(), address=self.address, out=self.folder / f"{key}.json")
            self._handles[key] = SweepHandle(sweep)
        return key

    def stop(self, key: str) -> None:
        """Cancel the sweep's tasks on the cluster (finished points stay in its file)."""
        handle = self._handles.get(key)
        if handle is not None:
            handle.cancel()

    def status(self, key: str) -> dict:
        """``{"status": none|starting|running|finished|stopped|failed, "done", "total",
        "cluster", "error"}``; a failed sweep's error names the runs that failed."""
        handle = self._handles.get(key)
        if handle is None:
            return {"status": "none", "done": 0, "total": 0}
        p = handle.progress()
        state = _STATES.get(p["state"], "failed")
        if handle.done and state in ("starting", "running"):
            state = "failed"
        error = p["error"]
        if handle.sweep.failed and not error:
            runs = [r for f in handle.sweep.failed for r in f["runs"]]
            error = (f"{len(runs)} run(s) failed on the cluster after a retry ({'; '.join(runs[:6])}"
                     f"{' …' if len(runs) > 6 else ''}): {handle.sweep.failed[0]['error']}")
        return {"status": state, "done": p["done"], "total": p["total"], "failed": p["failed"],
                "cluster": p["cluster"], "address": self.address, "error": error}

    def rows(self, key: str) -> list[dict]:
        """The rows finished so far (those of an earlier sweep of this key before it starts)."""
        handle = self._handles.get(key)
        if handle is not None:
            return handle.progress()["rows"]
        from ..sweep.rows import read_frontier
        from ..errors import FedcoreError

        path = self.folder / f"{key}.json"
        try:
            return read_frontier(path) if path.exists() else []
        except FedcoreError:
            return []

    def close(self) -> None:
        for handle in self._handles.values():
            handle.cancel()


_JOBS: dict = {}


def ray_jobs(folder: Union[str, Path], address: str = "") -> RaySweepJobs:
    """This process's :class:`RaySweepJobs` for ``folder`` on ``address`` (default the host
    setting ``$FEDCORE_RAY_ADDRESS``, else a local Ray instance)."""
    address = address or configured_address()
    key = (str(folder), address)
    if key not in _JOBS:
        _JOBS[key] = RaySweepJobs(folder, address)
    return _JOBS[key]

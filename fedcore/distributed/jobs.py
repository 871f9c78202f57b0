"""The dashboard's sweeps on Ray: a kind of job of the one job manager, run on the cluster.

:func:`fedcore.sweep.job.start_sweep` with ``ray=<address>`` (the host setting
``$FEDCORE_RAY_ADDRESS``, :func:`configured_address`) queues the sweep like a local one; when
its turn comes the manager calls :func:`launch` (the record's ``entry``), which builds its
points and sends them to the cluster from a thread of the manager, writing the same
``<key>.json`` rows file and reporting in the same job record as the local worker, so the
Frontier page draws it unchanged: points stream into the file as the cluster's tasks finish,
Stop cancels the tasks, and a sweep started again skips the points already in its file (a
cancelled or partly failed frontier resumes where it stopped).
"""
from __future__ import annotations

import threading

from ..runner.store import FAILED, FINISHED, RUNNING, STOPPED
from .cluster import configured_address  # noqa: F401  (the page names the address)

_STATES = {"pending": RUNNING, "connecting": RUNNING, "running": RUNNING, "finished": FINISHED,
           "cancelled": STOPPED, "failed": FAILED}


def ray_installed() -> bool:
    """Whether the optional Ray extra is importable here (the page offers the toggle then)."""
    import importlib.util

    return importlib.util.find_spec("ray") is not None


class RaySweepLauncher(threading.Thread):
    """A sweep driven on the cluster by a thread of the manager: a
    :class:`~fedcore.runner.launchers.Launcher` with no process of its own (``pid`` None)."""

    pid = None

    def __init__(self, store, record: dict):
        super().__init__(name=f"fedcore-ray-sweep-{record['key']}", daemon=True)
        self.store, self.record = store, record
        self.sweep, self.cancelled = None, threading.Event()

    def run(self) -> None:
        from ..errors import FedcoreError
        from ..sweep.job import rows_path, spec_from_dict
        from .sweep import RaySweep

        spec, job_id, address = spec_from_dict(self.record["spec"]), self.record["id"], self.record["ray"]

        def report(**fields) -> None:
            p = self.sweep.progress() if self.sweep else {"done": 0, "total": spec.count()}
            self.store.update_job(job_id, address=address, done=p["done"], total=p["total"],
                                  **({"cluster": p["cluster"], "failed": p["failed"], "skipped": p["skipped"]}
                                     if self.sweep else {}), **fields)

        try:
            report()
            self.sweep = RaySweep(spec.points(), address=address, out=rows_path(self.store.directory,
                                                                                 self.record["key"]))
            for _ in self.sweep.run():
                if self.cancelled.is_set():
                    self.sweep.cancel()
                report()
            failed = [r for f in self.sweep.failed for r in f["runs"]]
            report(status=_STATES.get(self.sweep.state, FAILED), error=failed and (
                f"{len(failed)} run(s) failed on the cluster after a retry ({'; '.join(failed[:6])}"
                f"{' …' if len(failed) > 6 else ''}): {self.sweep.failed[0]['error']}") or None)
        except FedcoreError as exc:
            report(status=FAILED, error=str(exc))
        except Exception as exc:  # noqa: BLE001  (shown on the page as one line)
            report(status=FAILED, error=f"{type(exc).__name__}: {exc}"[:200])

    def alive(self) -> bool:
        return self.is_alive()

    def request_stop(self) -> None:
        """Cancel the sweep's tasks on the cluster (finished points stay in its file)."""
        self.cancelled.set()
        if self.sweep is not None:
            self.sweep.cancel()

    terminate = request_stop


def launch(store, record: dict) -> RaySweepLauncher:
    """The manager's launcher of a sweep on the cluster at the record's ``ray`` address."""
    launcher = RaySweepLauncher(store, record)
    launcher.start()
    return launcher

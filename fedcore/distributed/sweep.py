"""An ε sweep on Ray: the same points, rows and ``frontier.json`` as a local sweep.

:class:`RaySweep` cuts the points into tasks (:func:`~fedcore.distributed.tasks.sweep_batches`:
one per lockstep batch), sends them to the cluster and, as each task ends, appends its
rows to ``out`` (written atomically after every task, like the local sweep, so finished
points are never lost) and, when a :class:`~fedcore.runner.store.JobStore` is given,
records runs that came back with their event stream (points trained alone) as finished
runs there, where the dashboard's History and Compare pages find them.

Rerunning the same sweep skips the points already done: those whose config hash has a
row in ``out`` or a finished run in the store. Rows of ``out`` that belong to no point of
this sweep are dropped from the new file (it describes this sweep), and counted.

:func:`submit_sweep` runs a :class:`RaySweep` in a background thread for the dashboard:
the returned :class:`SweepHandle` reports progress and can cancel.
"""
from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Callable, Iterator, Optional, Sequence, Union

from ..runner.record import CacheKey
from .cluster import check_address, cluster_resources, connect
from .driver import Dispatcher
from .tasks import sweep_batches, sweep_job, train_sweep_batch

DEFAULT_MAX_BATCH = 24  # fedcore.sweep.runner.MAX_BATCH (read at run time when present)


def _max_batch() -> int:
    from ..sweep import runner

    return getattr(runner, "MAX_BATCH", DEFAULT_MAX_BATCH)


def row_from_stored_run(point, store, run_id: str) -> Optional[dict]:
    """The frontier row of ``point`` from a finished run in the store, or None when the stored
    stream did not finish."""
    from ..events import replay
    from ..sweep.runner import row_of_run

    return row_of_run(point, replay(store.read_events(run_id, 0, touch=False)))


class RaySweep:
    """A sweep's points trained on Ray; iterate :meth:`run` for the results as they arrive.

    ``address``: see :func:`fedcore.distributed.cluster.connect`. ``cpus``: CPUs per task.
    ``num_cpus``: CPUs of a local instance (default all). ``task``: the task body
    (default :func:`~fedcore.distributed.tasks.train_sweep_batch`; tests wrap it).
    """

    def __init__(self, points: Sequence, *, address: Optional[str] = None, out: Union[str, Path, None] = None,
                 batched: bool = True, max_batch: Optional[int] = None, cpus: float = 1.0, store=None,
                 num_cpus: Optional[int] = None, task: Optional[Callable] = None):
        self.points = list(points)
        self.address = check_address(address)
        self.out = Path(out) if out else None
        self.batched = batched
        self.max_batch = max_batch or _max_batch()
        self.cpus = cpus
        self.store = store
        self.num_cpus = num_cpus
        self.task = task or train_sweep_batch
        self.rows: dict[str, dict] = {}      # config hash -> row (kept and new)
        self.failed: list[dict] = []
        self.skipped = 0
        self.dropped = 0
        self.state = "pending"
        self.error: Optional[str] = None
        self.dispatcher: Optional[Dispatcher] = None
        self.resources: dict = {}
        self._stop = threading.Event()
        self._order: Optional[list[str]] = None
        self.started = time.time()

    # --- what is already done -----------------------------------------------------------
    def _load_done(self) -> list:
        """Fill :attr:`rows` from ``out`` and the store; the points still to train."""
        from ..sweep.rows import rows_to_resume

        by_hash = {p.config.config_hash(): p for p in self.points}
        if self.out is not None:
            for row in rows_to_resume(self.out):
                if row.get("config_hash") in by_hash:
                    self.rows[row["config_hash"]] = row
                else:
                    self.dropped += 1
        if self.store is not None:
            for h, point in by_hash.items():
                run_id = None if h in self.rows else self.store.find_finished(CacheKey(h))
                row = row_from_stored_run(point, self.store, run_id) if run_id else None
                if row is not None:
                    self.rows[h] = row
        self.skipped = len(self.rows)
        return [p for h, p in by_hash.items() if h not in self.rows]

    def ordered_rows(self) -> list[dict]:
        """The rows in the order a local sweep writes them (batch after batch)."""
        if self._order is None:
            batches = sweep_batches(self.points, batched=self.batched, max_batch=self.max_batch)
            self._order = [p.config.config_hash() for batch in batches for p in batch]
        return [self.rows[h] for h in self._order if h in self.rows]

    # --- running ------------------------------------------------------------------------
    def run(self) -> Iterator[tuple[str, object]]:
        """Train the points not done yet; yields ``("started", {points, tasks, skipped, CPU,
        GPU, ...})`` once the tasks are submitted, then ``("row", row)`` per finished point
        and ``("failed", {"runs", "error"})`` per task that failed after its retry."""
        todo = self._load_done()
        if self.out is not None and (self.dropped or self.rows):
            self._write()
        self.state = "connecting"
        connect(self.address, num_cpus=self.num_cpus)
        self.resources = cluster_resources()
        jobs = [sweep_job(b, batched=self.batched, cpus=self.cpus, cluster_gpus=self.resources["GPU"])
                for b in sweep_batches(todo, batched=self.batched, max_batch=self.max_batch)]
        self.dispatcher = Dispatcher(self.task, jobs)
        self.dispatcher.submit()
        self.state = "running"
        yield "started", {"points": len(todo), "tasks": len(jobs), "skipped": self.skipped, **self.resources}
        by_hash = {p.config.config_hash(): p for p in todo}
        for outcome in self.dispatcher.outcomes(self._stop.is_set):
            if outcome.failed:
                record = {"runs": list(outcome.job.runs), "error": outcome.error}
                self.failed.append(record)
                yield "failed", record
                continue
            for item in outcome.result:
                row = item["row"]
                self.rows[row["config_hash"]] = row
                if self.store is not None and item.get("events"):
                    self._record(by_hash.get(row["config_hash"]), item["events"])
            self._write()
            for item in outcome.result:
                yield "row", item["row"]
        self.state = "cancelled" if self.dispatcher.cancelled else ("failed" if self.failed else "finished")

    def _write(self) -> None:
        if self.out is not None:
            from ..sweep.rows import write_frontier

            write_frontier(self.out, self.ordered_rows())

    def _record(self, point, events: list[dict]) -> None:
        """A point trained alone: its event stream as a finished run in the store."""
        if point is None:
            return
        from ..events import event_from_dict
        from ..runner.labels import run_label

        cfg = point.config
        run = self.store.create_run(cfg.to_dict(), cfg.config_hash(), label=run_label(cfg), owner=None,
                                    background=True, source="ray sweep")
        for event in events:
            self.store.append_event(run["id"], event_from_dict(event))

    def cancel(self) -> None:
        """Stop: cancel the tasks still queued or running; rows already written stay."""
        self._stop.set()

    def progress(self) -> dict:
        """``{"state", "total", "done", "skipped", "failed", "running", "rows", "elapsed_s",
        "cluster": {CPU, GPU, ...}, "error"}`` (counts of points)."""
        failed_runs = sum(len(f["runs"]) for f in self.failed)
        total = len(self.points)
        return {"state": self.state, "total": total, "done": len(self.rows), "skipped": self.skipped,
                "failed": failed_runs, "running": max(0, total - len(self.rows) - failed_runs)
                if self.state == "running" else 0, "rows": self.ordered_rows(),
                "elapsed_s": time.time() - self.started, "cluster": dict(self.resources), "error": self.error}


class SweepHandle:
    """A :class:`RaySweep` running in a background thread (what the dashboard holds)."""

    def __init__(self, sweep: RaySweep):
        self.sweep = sweep
        self._thread = threading.Thread(target=self._main, name="fedcore-ray-sweep", daemon=True)
        self._thread.start()

    def _main(self) -> None:
        from ..errors import FedcoreError

        try:
            for _ in self.sweep.run():
                pass
        except FedcoreError as exc:
            self.sweep.state, self.sweep.error = "failed", str(exc)
        except Exception as exc:  # noqa: BLE001  (shown on the page as one line)
            self.sweep.state, self.sweep.error = "failed", f"{type(exc).__name__}: {exc}"[:200]

    def progress(self) -> dict:
        return self.sweep.progress()

    def cancel(self) -> None:
        self.sweep.cancel()

    def wait(self, timeout: Optional[float] = None) -> bool:
        """Wait for the end; True if it ended."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    @property
    def done(self) -> bool:
        return not self._thread.is_alive()


def submit_sweep(spec, address: Optional[str] = None, *, out: Union[str, Path, None] = None,
                 batched: bool = True, store=None, cpus: float = 1.0) -> SweepHandle:
    """Start ``spec`` (a :class:`~fedcore.sweep.spec.SweepSpec`) on the cluster at
    ``address`` (default the host setting ``$FEDCORE_RAY_ADDRESS``, else a local instance)
    in a background thread; poll ``handle.progress()``, stop with ``handle.cancel()``."""
    from .cluster import configured_address

    sweep = RaySweep(spec.points(), address=address or configured_address(), out=out, batched=batched,
                     store=store, cpus=cpus)
    return SweepHandle(sweep)

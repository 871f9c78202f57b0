"""Send :class:`~fedcore.distributed.tasks.Job` s to Ray and stream their results back.

:class:`Dispatcher` submits every job as a Ray task with the CPUs and GPUs it asks for
(``.options(num_cpus=..., num_gpus=...)``) and yields an :class:`Outcome` per job as soon
as that job ends (``ray.wait``), in the order they finish. Failures:

- a task whose worker dies (killed, out of memory, node lost) or that raises is retried
  once by Ray (``max_retries=1``, ``retry_exceptions=True``);
- if the retry fails too, the job's outcome carries a one-line ``error`` and the names of
  its runs; the other jobs go on, and every finished job's result has already been yielded.

:meth:`Dispatcher.cancel` (or ``should_stop`` returning True, or Ctrl-C in the caller)
cancels every job still queued or running (``ray.cancel(force=True)``).
"""
from __future__ import annotations

import contextlib
import threading
import time
from dataclasses import dataclass
from typing import Callable, Iterator, Optional, Sequence

from .tasks import Job, failure_line

RETRIES = 1
"""Times Ray retries a task that died or raised before it is reported as failed."""
POLL_S = 0.25


@dataclass
class Outcome:
    """The end of one job: its ``result`` (the task's return value), or ``error``."""

    job: Job
    result: object = None
    error: Optional[str] = None

    @property
    def failed(self) -> bool:
        return self.error is not None


class Dispatcher:
    """Run ``fn(*job.args)`` for every job on the connected Ray cluster."""

    def __init__(self, fn: Callable, jobs: Sequence[Job], *, retries: int = RETRIES):
        self.fn = fn
        self.jobs = list(jobs)
        self.retries = retries
        self._pending: dict = {}
        self._lock = threading.Lock()
        self.done = 0
        self.failed = 0
        self.cancelled = False
        self.started: Optional[float] = None

    def submit(self) -> None:
        """Submit every job (Ray queues what the cluster cannot run yet)."""
        import ray

        remote = ray.remote(self.fn)
        self.started = time.perf_counter()
        for job in self.jobs:
            ref = remote.options(num_cpus=job.num_cpus, num_gpus=job.num_gpus, max_retries=self.retries,
                                 retry_exceptions=True, name=f"fedcore:{job.runs[0]}"[:120]).remote(*job.args)
            self._pending[ref] = job

    @property
    def pending(self) -> int:
        return len(self._pending)

    def outcomes(self, should_stop: Callable[[], bool] = lambda: False) -> Iterator[Outcome]:
        """Yield one :class:`Outcome` per job as it ends; submits first if needed."""
        import ray
        from ray.exceptions import RayError

        if self.started is None:
            self.submit()
        try:
            while self._pending:
                if should_stop() or self.cancelled:
                    self.cancel()
                    return
                ready, _ = ray.wait(list(self._pending), num_returns=1, timeout=POLL_S)
                for ref in ready:
                    job = self._pending.pop(ref)
                    try:
                        outcome = Outcome(job, result=ray.get(ref))
                        self.done += 1
                    except RayError as exc:
                        outcome = Outcome(job, error=failure_line(exc))
                        self.failed += 1
                    yield outcome
        except (KeyboardInterrupt, GeneratorExit):
            self.cancel()
            raise

    def cancel(self) -> None:
        """Cancel every job still queued or running; finished results stay with the caller."""
        import ray

        self.cancelled = True
        with self._lock:
            refs = list(self._pending)
            self._pending.clear()
        for ref in refs:
            with contextlib.suppress(Exception):  # already finished, or the cluster is gone
                ray.cancel(ref, force=True)

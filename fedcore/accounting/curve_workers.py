"""Processes that compute RDP curves beside the round (issue 41: accounting off the critical path).

A record whose multipliers change every round (``GaussianRecord.grid``, ULDP-FED's central reading)
brings new RDP curves most rounds, 0.1-0.3 CPU-s each through dp-accounting. On a GPU a W3 round
trains in about 0.05 s, while its new curves cost about 0.4 CPU-s: one worker process made every round
wait 0.35 s for them (H200, 2026-11-27). So curves go to a small **pool** of worker processes
(:func:`curve_pool`), which grows one process at a time while every live one is busy, up to
:func:`pool_size` (``FEDCORE_RDP_WORKERS``; default every core but two, at most 16: one on a 2-core
host, 14 on a 16-core GPU host). Each worker computes exactly :func:`.rdp._compute_curve` (JSON floats
round-trip exactly), so the ledger composes the very curves it would have computed itself; a curve
goes out in :data:`PIECES` pieces of its orders, put back together bit for bit (:func:`submit_curve`).
"""
from __future__ import annotations

import os
import threading
from typing import Optional

ACCOUNTING_ENV = "FEDCORE_ACCOUNTING"
"""``background`` (default): new curves of changing-multiplier records are computed by worker
processes beside the round; ``inline``: in the round (as before issue 41)."""
WORKERS_ENV = "FEDCORE_RDP_WORKERS"
"""Most worker processes a run's curves may use (a whole number; 0 or 1: one). Default
:func:`pool_size`."""
MAX_DEFAULT_WORKERS = 16
SPARE_CORES = 2
"""Cores the default pool leaves to the round loop (its thread and the device's feeding) and the rest."""
PIECES = 4
"""A curve is split into at most this many pieces (every ``PIECES``-th order), each computed by its own
worker, when the pool may hold more than one: a round on a GPU trains in about 0.05 s, while one curve
takes dp-accounting 0.05-0.2 s, so a whole curve per worker still kept each H200 W3 round waiting
0.10 s (2026-11-27). The pieces cost about the same (the orders' costs change slowly along the list)."""

_WORKER_CODE = r"""
import json, sys, time
from fedcore.accounting.rdp import _compute_curve
import dp_accounting
print("ready", flush=True)
for line in sys.stdin:
    z, q, pieces, piece = json.loads(line)
    c0 = time.process_time()
    curve = _compute_curve(z, q, pieces, piece)
    print(json.dumps([list(curve), time.process_time() - c0]), flush=True)
"""

_BACKGROUND_CPU = [0.0]


def background_cpu_seconds() -> float:
    """CPU seconds the worker processes spent on this process's curves so far (benchmarks)."""
    return _BACKGROUND_CPU[0]


def add_background_cpu(seconds: float) -> None:
    _BACKGROUND_CPU[0] += seconds


def pool_size() -> int:
    """How many worker processes a run may start: ``FEDCORE_RDP_WORKERS``, else every usable core but
    :data:`SPARE_CORES`, between 1 and :data:`MAX_DEFAULT_WORKERS`.

    W3 on a GPU is throughput-bound here: its new curves cost about 0.5 CPU-s a round against a 0.03 s
    round, and with 8 workers an H100 round took 0.061 s, the background CPU over 8 (2026-11-27). A
    shared instance running several runs at once may set ``FEDCORE_RDP_WORKERS`` lower: a run's pool
    only grows while every live worker is busy."""
    raw = (os.environ.get(WORKERS_ENV) or "").strip()
    if raw:
        if not raw.isdigit():
            from ..errors import FedcoreError

            raise FedcoreError(f"{WORKERS_ENV}={raw[:20]!r}: expected a whole number of processes, e.g. 8")
        return max(1, int(raw))
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:   # not Linux
        cores = os.cpu_count() or 1
    return max(1, min(MAX_DEFAULT_WORKERS, cores - SPARE_CORES))


class CurveWorker:
    """One ``python -c`` process that computes curves in the order asked, over pipes. A plain
    subprocess rather than a multiprocessing pool: nothing of the parent (its ``__main__``, torch) is
    imported again there; its start (numpy, scipy, dp-accounting) is paid beside the rounds. A reader
    thread collects the answers, so asking and checking never block the round."""

    def __init__(self):
        import subprocess
        import sys
        from pathlib import Path

        env = dict(os.environ)
        root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        self.proc = subprocess.Popen([sys.executable, "-c", _WORKER_CODE], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True,
                                     bufsize=1)
        self.ready = False
        self.dead = False
        self.sent = 0
        self.answers: list = []
        self.lock = threading.Lock()
        self.cond = threading.Condition(self.lock)
        threading.Thread(target=self._read, name="fedcore-curves", daemon=True).start()

    def _read(self) -> None:
        import json

        try:
            for line in self.proc.stdout:
                with self.cond:
                    if line.strip() == "ready":
                        self.ready = True
                    else:
                        curve, cpu = json.loads(line)
                        self.answers.append((tuple(curve), float(cpu)))
                    self.cond.notify_all()
        finally:
            with self.cond:
                self.dead = True
                self.cond.notify_all()

    @property
    def outstanding(self) -> int:
        """Curves asked for and not yet answered."""
        return self.sent - len(self.answers)

    def submit(self, pair: tuple, pieces: int = 1, piece: int = 0) -> int:
        """Ask for the curve of ``(z, q)`` (with ``pieces`` > 1: its orders ``piece::pieces``); returns its ticket."""
        import json

        with self.lock:
            self.proc.stdin.write(json.dumps([pair[0], pair[1], pieces, piece]) + "\n")
            self.proc.stdin.flush()
            self.sent += 1
            return self.sent - 1

    def done(self, ticket: int) -> bool:
        return ticket < len(self.answers) or self.dead

    def result(self, ticket: int) -> tuple:
        with self.cond:
            while ticket >= len(self.answers) and not self.dead:
                self.cond.wait()
            if ticket >= len(self.answers):
                raise RuntimeError("the curve worker ended")
            return self.answers[ticket]

    def stop(self) -> None:
        try:
            self.proc.stdin.close()
        except Exception:   # noqa: BLE001
            pass


class CurvePool:
    """Up to ``size`` :class:`CurveWorker` processes, started one at a time as they are needed."""

    def __init__(self, size: int):
        self.size = size
        self.workers: list[CurveWorker] = []
        self._grow()

    def _grow(self) -> None:
        try:
            self.workers.append(CurveWorker())
        except Exception:   # noqa: BLE001 -- no more processes: the live ones carry on
            self.size = len(self.workers)

    @property
    def live(self) -> list[CurveWorker]:
        return [w for w in self.workers if not w.dead]

    @property
    def ready(self) -> bool:
        """Whether some worker can take a curve now."""
        return any(w.ready for w in self.live)

    def pick(self) -> Optional[CurveWorker]:
        """The ready worker with the fewest curves out (starting another while every live one is busy)."""
        live = self.live
        if len(self.workers) < self.size and all(w.outstanding > 0 or not w.ready for w in live):
            self._grow()
        ready = [w for w in live if w.ready]
        return min(ready, key=lambda w: w.outstanding) if ready else None

    def stop(self) -> None:
        for worker in self.workers:
            worker.stop()


_POOL: dict = {}


def submit_curve(pool: CurvePool, pair: tuple) -> Optional[list]:
    """Send the curve of ``pair = (z, q)`` out in pieces: ``[(worker, ticket, pieces, piece), ...]``, or
    None when no worker is ready (the caller computes it)."""
    pieces = min(PIECES, pool.size)
    out = []
    for piece in range(pieces):
        worker = pool.pick()
        if worker is None:   # every worker ended meanwhile: what went out is never read
            return None
        out.append((worker, worker.submit(pair, pieces, piece), pieces, piece))
    return out


def gather_curve(parts: list, length: int):
    """The curve whose pieces ``parts`` (from :func:`submit_curve`) are: ``(curve, cpu_seconds)``, waiting
    for pieces still out; raises where a worker ended before answering."""
    import numpy as np

    curve, cpu = np.empty(length), 0.0
    for worker, ticket, pieces, piece in parts:
        values, seconds = worker.result(ticket)
        curve[piece::pieces] = values
        cpu += seconds
    return curve, cpu


def curve_pool() -> Optional[CurvePool]:
    """The process's :class:`CurvePool` (its first worker started on first call), or None:
    ``FEDCORE_ACCOUNTING=inline``, or no process could start, or every worker ended."""
    if "pool" not in _POOL:
        _POOL["pool"] = None
        if os.environ.get(ACCOUNTING_ENV, "background").strip().lower() == "background":
            pool = CurvePool(pool_size())
            if pool.workers:
                _POOL["pool"] = pool
                import atexit

                atexit.register(pool.stop)
    pool = _POOL["pool"]
    return pool if pool is not None and pool.live else None

"""Processes that compute RDP curves beside the round (issue 41), now only where asked for
(``FEDCORE_ACCOUNTING=background``).

Issue 41 sent a grid record's new curves (ULDP-FED's central reading: new multipliers every round) to a
pool of worker processes, because dp-accounting's order-by-order loops took 80 ms a curve. Issue 55 §2
counted what that cost: on W3-quick (2-core host, 2026-11-28) the workers spent 2.2 CPU-s, half of it
starting up, against 0.005 CPU-s a round left on the round's thread. A curve is now computed every order
at once (:func:`.rdp.subsampled_gaussian_rdp`, about 2 ms), so by default the ledger computes it in the
round and starts no process. With ``background`` a pool (:func:`curve_pool`) starts at a run's first such
record, up to :func:`pool_size` (``FEDCORE_RDP_WORKERS``; default every core but two, at most 16); each
worker computes exactly :func:`.rdp._compute_curve` (JSON floats round-trip exactly), in :data:`PIECES`
pieces of its orders put back together bit for bit (:func:`submit_curve`).
"""
from __future__ import annotations

import os
import threading
from typing import Optional

ACCOUNTING_ENV = "FEDCORE_ACCOUNTING"
"""``inline`` (default): every curve is computed in the round; ``background``: new curves of
changing-multiplier records are computed by worker processes beside it (issue 41)."""
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
import base64, json, pickle, sys, time
from fedcore.accounting.rdp import _compute_curve
from fedcore.accounting.pure import gaussian_steps_pld, composed_epsilon
import dp_accounting
print("ready", flush=True)
for line in sys.stdin:
    kind, *args = json.loads(line)
    c0 = time.process_time()
    try:
        if kind == "pld":
            out = base64.b64encode(pickle.dumps(gaussian_steps_pld(*args))).decode()
        elif kind == "epsilon":
            out = composed_epsilon(tuple(((z, q), k) for z, q, k in args[0]), *args[1:])
        else:
            out = list(_compute_curve(*args))
    except Exception:
        out = None
    print(json.dumps([out, time.process_time() - c0]), flush=True)
"""
"""A request is a JSON line ``["curve", z, q, pieces, piece]`` (RDP orders), ``["pld", z, q, steps, relation,
interval]`` (:func:`.pure.gaussian_steps_pld`, pickled) or ``["epsilon", [[z, q, steps], ...], relation, interval,
delta]`` (:func:`.pure.composed_epsilon`); the answer ``[payload, cpu_seconds]``, payload None where dp-accounting
raised (the caller computes it again and meets the error itself)."""

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
    shared instance running several runs at once may set ``FEDCORE_RDP_WORKERS`` lower: a run whose
    multipliers change every round starts its whole pool at its first such record (:meth:`CurvePool.fill`)."""
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
                        payload, cpu = json.loads(line)
                        self.answers.append((payload, float(cpu)))
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
        return self.ask(["curve", pair[0], pair[1], pieces, piece])

    def ask(self, request: list) -> int:
        """Send one request (:data:`_WORKER_CODE`); returns its ticket."""
        import json

        with self.lock:
            self.proc.stdin.write(json.dumps(request) + "\n")
            self.proc.stdin.flush()
            self.sent += 1
            return self.sent - 1

    def done(self, ticket: int) -> bool:
        return ticket < len(self.answers) or self.dead

    def result(self, ticket: int) -> tuple:
        """``(payload, cpu_seconds)`` of ``ticket``, waiting for it; raises where the worker ended first."""
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
    """Up to ``size`` :class:`CurveWorker` processes, started one at a time as they are needed
    (:meth:`fill`: all at once)."""

    def __init__(self, size: int):
        self.size = size
        self.workers: list[CurveWorker] = []
        self._grow()

    def _grow(self) -> None:
        try:
            self.workers.append(CurveWorker())
        except Exception:   # noqa: BLE001 -- no more processes: the live ones carry on
            self.size = len(self.workers)

    def fill(self) -> None:
        """Start every worker the pool may hold now, so that they warm up together."""
        while len(self.workers) < self.size:
            self._grow()

    @property
    def live(self) -> list[CurveWorker]:
        return [w for w in self.workers if not w.dead]

    @property
    def ready(self) -> bool:
        """Whether some worker can take a curve now."""
        return any(w.ready for w in self.live)

    def pick(self, grow: bool = True) -> Optional[CurveWorker]:
        """The ready worker with the fewest curves out (with ``grow``, starting another while every live
        one is busy)."""
        live = self.live
        if grow and len(self.workers) < self.size and all(w.outstanding > 0 or not w.ready for w in live):
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


def curve_pool(fill: bool = False) -> Optional[CurvePool]:
    """The process's :class:`CurvePool` (its first worker started on first call; with ``fill``, all of
    them), or None: unless ``FEDCORE_ACCOUNTING=background`` (read on every call), or where no process could start, or
    every worker ended."""
    if os.environ.get(ACCOUNTING_ENV, "inline").strip().lower() != "background":
        return None
    if "pool" not in _POOL:
        _POOL["pool"] = None
        pool = CurvePool(pool_size())
        if pool.workers:
            _POOL["pool"] = pool
            import atexit

            atexit.register(pool.stop)
    pool = _POOL["pool"]
    if fill and pool is not None:
        pool.fill()
    return pool if pool is not None and pool.live else None


def side_by_side(requests: list) -> Optional[list]:
    """The payloads of ``requests`` (:data:`_WORKER_CODE`), in order, computed by the ready workers of a pool
    already running with more than one, or None where there is none (the caller computes them itself:
    one worker would only move the work, and a pool started here would warm up for longer than the work
    takes). A payload is None where its worker could not compute it or ended first.

    The end of a ULDP-FED W3 run composes a PLD of 64-71 Gaussian entries (the run's PLD view), 5.2
    CPU-s of dp-accounting on this project's 2-core host; its 14 curve workers on a GPU host build the
    entries together (:func:`.pure.composed_gaussian_pld`)."""
    pool = _POOL.get("pool")
    if pool is None or len([w for w in pool.live if w.ready]) < 2:
        return None
    tickets = []
    for request in requests:
        worker = pool.pick(grow=False)
        if worker is None:
            return None
        tickets.append((worker, worker.ask(request)))
    out = []
    for worker, ticket in tickets:
        try:
            payload, seconds = worker.result(ticket)
            add_background_cpu(seconds)
        except RuntimeError:   # the worker ended
            payload = None
        out.append(payload)
    return out


_END: dict = {}


def start_end_worker() -> None:
    """Start this process's one :class:`CurveWorker` for a run's PLD at its end (:func:`end_worker`), if none is
    running: on a GPU host, beside the run's setup and rounds, on a core of its own. Issue 55 §5: the run's PLD
    needs dp-accounting (1.5 CPU-s to import on an H100's host); imported in the run's process beside its
    setup, it slowed the setup by as much under the GIL (0.4 -> 1.1 s on this project's 2-core host), and
    after its last round it delayed the result. The worker imports it in its own process and composes the
    PLD there, so the run's process never imports it."""
    worker = _END.get("worker")
    if worker is not None and not worker.dead:
        return
    try:
        _END["worker"] = CurveWorker()
    except Exception:   # noqa: BLE001 -- no process: the run's end composes the PLD itself
        _END["worker"] = None
        return
    if not _END.get("atexit"):
        import atexit

        atexit.register(lambda: _END["worker"] is not None and _END["worker"].stop())
        _END["atexit"] = True


def end_worker() -> Optional[CurveWorker]:
    """The worker :func:`start_end_worker` started, while it lives; else None."""
    worker = _END.get("worker")
    return worker if worker is not None and not worker.dead else None


def stop_pool() -> None:
    """End this process's pool and wait for its workers (benchmarks: their CPU, start-up included, is then in
    ``RUSAGE_CHILDREN``); the next curve sent out starts a new one."""
    pool = _POOL.pop("pool", None)
    if pool is not None:
        pool.stop()
        for worker in pool.workers:
            try:
                worker.proc.wait(timeout=60)
            except Exception:   # noqa: BLE001 -- one that will not end is left to the process's exit
                pass

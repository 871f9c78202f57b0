"""RDP curves composed in the order recorded, per distinct history (issue 41, issue 55 §2).

A record the ledger composes by RDP (``GaussianRecord.grid``: ULDP-FED's central reading with a
decaying clip, every user its own multipliers; and a client whose PLD dp-accounting cannot build)
brings new curves most rounds. Each costs about 2 ms (:func:`.rdp.subsampled_gaussian_rdp`) and is
computed in the round; clients with the same history so far (:attr:`RdpQueue.history`: W3's 1,000 users
hold 14 after 5 rounds) share one composed curve, and a reader takes each distinct history's ε once.
With ``FEDCORE_ACCOUNTING=background`` (issue 41) :class:`RdpQueue` hands new curves to the pool of
:mod:`.curve_workers` and composes each as soon as it is back, in the order recorded; a reader of
:attr:`RdpQueue.curves` first waits for what is still out, so a figure is always that of every round
recorded (bitwise the same as composing inline). A round whose curves are out keeps its figures
(:meth:`RdpQueue.mark`: the ledger's snapshot) and gets its curves when every curve up to its place in
the queue is composed (:meth:`RdpQueue.settle`); where no process can be started the queue computes them.
"""
from __future__ import annotations

import time
from collections import deque
from typing import Optional

import numpy as np

from .curve_workers import add_background_cpu, curve_pool, gather_curve, submit_curve
from .rdp import ORDERS, curve_cache, curve_key, gaussian_rdp, rounded_multiplier

_CURVES: dict = {}
"""``(z, q) -> curve`` met in this process's lifetime, inline or by a worker (a few KB each)."""
CURVES_KEPT = 20_000
"""At most this many curves in :data:`_CURVES` (about 30 MB); past it the memo starts again."""


def _remember(pair: tuple, curve: np.ndarray) -> np.ndarray:
    if len(_CURVES) >= CURVES_KEPT:
        _CURVES.clear()
    _CURVES[pair] = curve
    return curve


def _inline_curve(pair: tuple) -> np.ndarray:
    return _remember(pair, gaussian_rdp(*pair))


def _keep_on_disk(pair: tuple, curve: np.ndarray) -> None:
    cache = curve_cache()
    if cache is not None:
        try:
            cache.set(curve_key(cache, *pair), curve.tolist())
        except Exception:   # noqa: BLE001 -- an unusable cache only costs the speed
            pass


def _groups(history: np.ndarray, steps: np.ndarray) -> tuple:
    """The distinct ``(history, steps)`` of one unit's clients: ``(histories [k], steps [k], inverse [n])``."""
    keys, inverse = np.unique(history.astype(np.float64) + 1j * np.asarray(steps, np.float64), return_inverse=True)
    return keys.real.astype(np.int64), keys.imag, inverse.reshape(-1)   # pairs as complex numbers: sorted the same


class RdpQueue:
    """Each of ``num_clients`` clients' composed RDP curve, ``[N, len(ORDERS)]`` (:attr:`curves`)."""

    def __init__(self, num_clients: int):
        self.history = np.zeros(num_clients, dtype=np.int64)
        """Each client's history: clients with the same one hold the same curve, composed once (issue 55 §2)."""
        self._store, self._count = np.zeros((64, len(ORDERS))), 1   # history -> its composed curve (rows 0-count)
        self._queue: deque = deque()    # (clients, steps, curve or (pair, parts)), in the order recorded
        self.queued = self.composed = 0   # units ever queued / composed (the queue's positions)
        self._marks: deque = deque()      # figures waiting for the curves up to their position
        self.grid_records = 0
        self.wait_s = 0.0
        """Wall seconds readers spent waiting for curves still out (benchmarks: the round's wait)."""

    @property
    def curves(self) -> np.ndarray:
        """Every client's curve of every record so far (waits for the curves still out)."""
        self.drain(wait=True)
        return self._histories[self.history]

    @property
    def histories(self) -> tuple:
        """``(curves [H, len(ORDERS)], history [N])``: each distinct history's curve and each client's history
        (waits for the curves still out)."""
        self.drain(wait=True)
        return self._histories, self.history.copy()

    def __getstate__(self):
        self.drain(wait=True)
        return {**self.__dict__, "_queue": deque(), "_marks": deque()}

    def note_grid_record(self) -> None:
        """A grid record arrived: the first starts the workers, to warm up beside round 1."""
        self.grid_records += 1
        if self.grid_records == 1:
            curve_pool(fill=True)

    def add(self, ids: np.ndarray, steps: np.ndarray, value: float, rate: float) -> None:
        """Clients ``ids`` each took ``steps`` steps at multiplier ``value``, Poisson rate ``rate``."""
        unit = self._curve(value, rate) if value > 0 else np.full(len(ORDERS), np.inf)
        self._queue.append((ids, steps, unit))
        self.queued += 1

    def add_now(self, client: int, tally: dict) -> None:
        """Client ``client``'s whole ``tally`` ``{(z, q): steps}`` at once (a PLD that could not be built)."""
        self._compact()
        curve = self._histories[self.history[client]] + sum(k * gaussian_rdp(*zq) for zq, k in tally.items())
        self.history[client] = self._add_histories(curve[None, :])[0]

    def drain(self, wait: bool, upto: Optional[int] = None) -> None:
        """Compose the queued curves in the order recorded; with ``wait``, all of them (those up to
        position ``upto``)."""
        t0 = None
        while self._queue and (upto is None or self.composed < upto):
            ids, steps, unit = self._queue[0]
            if not isinstance(unit, np.ndarray):
                pair, parts = unit
                if not all(worker.done(ticket) for worker, ticket, _, _ in parts):
                    if not wait:
                        return
                    t0 = t0 or time.perf_counter()
                try:
                    curve, cpu = gather_curve(parts, len(ORDERS))
                    add_background_cpu(cpu)
                    unit = _remember(pair, curve)
                    _keep_on_disk(pair, curve)
                except Exception:   # noqa: BLE001 -- a worker that ended: compute it here
                    unit = _inline_curve(pair)
            self._compose(ids, steps, unit)
            self._queue.popleft()
            self.composed += 1
            while self._marks and self._marks[0].position <= self.composed:
                self._fill(self._marks.popleft())
        if t0 is not None:
            self.wait_s += time.perf_counter() - t0

    def pending(self) -> bool:
        """Whether curves computed beside the round are still out (a reader would wait for them)."""
        self.drain(wait=False)
        return bool(self._queue)

    def mark(self, figures) -> None:
        """``figures`` (with ``position``, the queue's length when they were taken) get their ``rdp`` when
        every curve up to that position is composed; at once if it is."""
        if self.composed >= figures.position:
            self._fill(figures)
        else:
            self._marks.append(figures)

    def settle(self, figures, wait: bool = False) -> bool:
        """Whether ``figures`` are complete; with ``wait``, after waiting for their curves (not later ones)."""
        if figures.rdp is None:
            self.drain(wait=wait, upto=figures.position if wait else None)
        return figures.rdp is not None

    def _compose(self, ids: np.ndarray, steps: np.ndarray, unit: np.ndarray) -> None:
        """Clients ``ids`` take ``steps`` more of ``unit``: one new curve per distinct (history, steps), the very
        sum each client's own row would hold."""
        self._compact()
        olds, ks, inverse = _groups(self.history[ids], steps)
        self.history[ids] = self._add_histories(self._histories[olds] + ks[:, None] * unit[None, :])[inverse]

    def _add_histories(self, curves: np.ndarray) -> np.ndarray:
        """Append ``curves [k, len(ORDERS)]`` as new histories; their numbers."""
        n = self._count
        if n + len(curves) > len(self._store):
            self._store = np.concatenate([self._store, np.zeros((max(len(self._store), len(curves)), len(ORDERS)))])
        self._store[n:n + len(curves)] = curves
        self._count += len(curves)
        return np.arange(n, n + len(curves))

    @property
    def _histories(self) -> np.ndarray:
        return self._store[:self._count]

    def _compact(self) -> None:
        """Drop the histories no client holds any more (at most twice as many rows as clients are kept)."""
        if self._count > 2 * len(self.history) + 64:
            held, inverse = np.unique(self.history, return_inverse=True)
            self._store, self._count = self._store[held], len(held)
            self.history = inverse.reshape(-1).astype(np.int64)

    def _fill(self, figures) -> None:
        figures.rdp, figures.rdp_history = self._histories[self.history], self.history.copy()

    def _curve(self, value: float, rate: float):
        """The curve of ``(value, rate)``: an array, or ``(pair, parts)`` when it is computed beside (in pieces:
        :func:`.curve_workers.submit_curve`)."""
        pair = (rounded_multiplier(value), float(rate))
        if pair in _CURVES:
            return _CURVES[pair]
        if self.grid_records > 1:   # round 1 computes inline while the first worker starts
            pool = curve_pool()
            if pool is not None and pool.ready:
                cache = curve_cache()
                if cache is None or curve_key(cache, *pair) not in cache:
                    try:
                        parts = submit_curve(pool, pair)
                        if parts is not None:
                            return pair, parts
                    except Exception:   # noqa: BLE001
                        pass
        return _inline_curve(pair)

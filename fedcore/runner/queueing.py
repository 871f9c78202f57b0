"""When will a queued run start? A small simulation of the job queue.

``slots`` jobs train at once; queued ones start in order as slots free up. A running
run frees its slot after its remaining rounds at its own pace so far (at least the round
in progress); a queued run is expected to take ``rounds x`` the seconds per round of recent
finished runs of the same dataset and model (else of any recent run, else
:data:`FALLBACK_ROUND_S`), scaled by the load (:func:`load_factor`). No job is expected
to outlast the host's ``max_run_seconds`` (``max_seconds``).

>>> running = [{"rounds": 10, "rounds_done": 5, "elapsed_s": 5.0}]
>>> queued = [{"id": "a", "rounds": 4, "round_s": 1.0}, {"id": "b", "rounds": 4, "round_s": 1.0}]
>>> estimate_starts(running, queued, slots=1)
{'a': 5.0, 'b': 9.0}
"""
from __future__ import annotations

import os
import statistics
from typing import Iterable, Optional

FALLBACK_ROUND_S = 0.5
"""Seconds per round assumed when nothing comparable has run yet."""


def remaining_seconds(run: dict, max_seconds: Optional[float] = None) -> float:
    """Seconds a running run still needs at its pace so far (its start-up when no round yet;
    at least the round in progress), at most what ``max_seconds`` leaves it."""
    done, total = run.get("rounds_done") or 0, run.get("rounds") or 1
    elapsed = run.get("elapsed_s") or 0.0
    if done <= 0:
        left = max(1.0, (run.get("round_s") or FALLBACK_ROUND_S) * total - elapsed)
    else:
        left = elapsed / done * max(1, total - done)
    return min(left, max(0.0, max_seconds - elapsed)) if max_seconds else left


def estimate_starts(running: list[dict], queued: list[dict], slots: int,
                    max_seconds: Optional[float] = None, fixed_cap: Optional[int] = None) -> dict[str, float]:
    """Seconds from now until each queued run (in queue order) starts.

    ``running``: dicts with ``rounds``, ``rounds_done``, ``elapsed_s`` (and ``round_s``);
    ``queued``: dicts with ``id``, ``rounds`` and ``round_s`` (expected seconds per round).
    With ``fixed_cap`` (the fair share's cap on one owner's jobs that cannot pause,
    :func:`fedcore.runner.policy.next_move`), a job marked ``fixed`` also waits until its
    ``owner`` holds fewer than ``fixed_cap`` such jobs: an owner's second audit waits for the
    first even while a slot is free.

    >>> busy = [{"rounds": 1, "round_s": 40.0, "owner": "A", "fixed": True}]
    >>> estimate_starts(busy, [{"id": "a2", "rounds": 1, "round_s": 1.0, "owner": "A", "fixed": True}],
    ...                 slots=2, fixed_cap=1)
    {'a2': 40.0}
    """
    live = [(0.0, remaining_seconds(r, max_seconds), r.get("owner"), bool(r.get("fixed")))
            for r in running][:slots]
    starts = {}
    for q in queued:
        start = _first_start(live, q, max(1, slots), fixed_cap)
        starts[q["id"]] = start
        duration = remaining_seconds({**q, "rounds_done": 0, "elapsed_s": 0.0}, max_seconds)
        live.append((start, start + duration, q.get("owner"), bool(q.get("fixed"))))
    return starts


def _first_start(live: list, job: dict, slots: int, fixed_cap: Optional[int]) -> float:
    """The first moment (now, or when a job ends) with a free slot that the caps let ``job`` take."""
    for t in sorted({0.0, *(end for _, end, _, _ in live)}):
        now = [(o, f) for start, end, o, f in live if start <= t < end]
        if len(now) >= slots:
            continue
        if fixed_cap and job.get("fixed") and sum(f and o == job.get("owner") for o, f in now) >= fixed_cap:
            continue
        return t
    return max((end for _, end, _, _ in live), default=0.0)


def load_factor() -> float:
    """How much slower than usual work runs now: the 1-minute load per CPU, at least 1."""
    try:
        return max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1))
    except (OSError, AttributeError):
        return 1.0


def seconds_per_round(history: Iterable[dict], dataset: str, model: str) -> Optional[float]:
    """Median seconds per round of finished records (``elapsed / rounds_done``) of that
    dataset and model, else of any; None when there is nothing to go by."""
    same, other = [], []
    for r in history:
        if r.get("status") != "finished" or not r.get("rounds_done") or not r.get("elapsed"):
            continue
        pace = r["elapsed"] / r["rounds_done"]
        c = r.get("config") or {}
        (same if (c.get("dataset"), c.get("model")) == (dataset, model) else other).append(pace)
    pool = same or other
    return statistics.median(pool) if pool else None

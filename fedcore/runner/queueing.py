"""When will a queued run start? A small simulation of the job queue.

``slots`` runs train at once; queued runs start in order as slots free up. A running
run frees its slot after its remaining rounds at its own pace so far; a queued run is
expected to take ``rounds x`` the seconds per round of recent finished runs of the same
dataset and model (else of any recent run, else :data:`FALLBACK_ROUND_S`).

>>> running = [{"rounds": 10, "rounds_done": 5, "elapsed_s": 5.0}]
>>> queued = [{"id": "a", "rounds": 4, "round_s": 1.0}, {"id": "b", "rounds": 4, "round_s": 1.0}]
>>> estimate_starts(running, queued, slots=1)
{'a': 5.0, 'b': 9.0}
"""
from __future__ import annotations

import heapq
import statistics
from typing import Iterable, Optional

FALLBACK_ROUND_S = 0.5
"""Seconds per round assumed when nothing comparable has run yet."""


def remaining_seconds(run: dict) -> float:
    """Seconds a running run still needs at its pace so far (its start-up when no round yet)."""
    done, total = run.get("rounds_done") or 0, run.get("rounds") or 1
    elapsed = run.get("elapsed_s") or 0.0
    if done <= 0:
        return max(1.0, (run.get("round_s") or FALLBACK_ROUND_S) * total - elapsed)
    return max(0.0, elapsed / done * (total - done))


def estimate_starts(running: list[dict], queued: list[dict], slots: int) -> dict[str, float]:
    """Seconds from now until each queued run (in queue order) starts.

    ``running``: dicts with ``rounds``, ``rounds_done``, ``elapsed_s`` (and ``round_s``);
    ``queued``: dicts with ``id``, ``rounds`` and ``round_s`` (expected seconds per round).
    """
    free = [remaining_seconds(r) for r in running][:slots]
    free += [0.0] * (max(1, slots) - len(free))
    heapq.heapify(free)
    starts = {}
    for q in queued:
        start = heapq.heappop(free)
        starts[q["id"]] = start
        heapq.heappush(free, start + (q.get("rounds") or 1) * (q.get("round_s") or FALLBACK_ROUND_S))
    return starts


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

"""Who trains next: the job queue's fair-share policy, pure (no process, no store, no clock).

``slots`` jobs train at once. Next is the first waiting job (runs paused for fair share
first) whose owner trains fewer than their share (``slots`` // owners with jobs training or
waiting, at least 1). When every slot is busy it gets one by pausing the youngest run of
an owner over their share (paused after its current round; it resumes, first in line, when
a slot frees). Only runs and local sweeps (between two rounds of a batch) can pause: one owner's
other jobs (audits, Ray sweeps) hold at most half the slots (at least 1).

>>> owners = {"a1": "A", "a2": "A", "b": "B"}
>>> next_move(["b"], [], ["a1", "a2"], owners, pausable={"a1", "a2", "b"}, slots=2)
Move(start='b', pause='a2')
>>> next_move(["b"], [], ["a1"], owners, pausable={"a1", "b"}, slots=2)
Move(start='b', pause=None)
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Collection, Mapping, Optional


@dataclass(frozen=True)
class Move:
    """Start (or resume, when it is paused) job ``start``; first pause run ``pause`` when given."""

    start: str
    pause: Optional[str] = None


def fixed_cap(slots: int) -> int:
    """How many of one owner's jobs that cannot pause may hold a slot: half of them, at least 1."""
    return max(1, slots // 2)


def next_move(waiting: list[str], paused: list[str], training: list[str], owners: Mapping[str, Optional[str]],
              *, pausable: Collection[str], slots: int, stopping: Collection[str] = ()) -> Optional[Move]:
    """The next step of the queue (module doc), or None while nothing may start.

    ``waiting``: queued jobs in order; ``paused``: runs paused for fair share; ``training``:
    jobs holding a slot, oldest first; ``owners``: every job's owner; ``pausable``: the jobs
    that can pause (runs); ``stopping``: jobs asked to stop (never paused for another)."""
    cap = fixed_cap(slots)
    running = Counter(owners.get(i) for i in training)
    fixed = Counter(owners.get(i) for i in training if i not in pausable)
    candidates = [i for i in [*paused, *waiting] if i in pausable or fixed[owners.get(i)] < cap]
    if not candidates:
        return None
    share = max(1, slots // len({owners.get(i) for i in [*candidates, *training]}))
    under = [i for i in candidates if running[owners.get(i)] < share]
    if len(training) < slots:
        return Move((under or candidates)[0])
    over = [i for i in training if running[owners.get(i)] > share and i in pausable and i not in stopping]
    return Move(under[0], over[-1]) if under and over else None


def lifetime_over(record: dict, last_beat: float, now: float) -> Optional[str]:
    """Why a job of ``record`` must stop now, or None: its owner's page stopped refreshing its
    heartbeat for the record's ``grace_s`` (the host's ``owner_grace_s``), or it has been training
    longer than its ``max_seconds`` (``max_run_seconds``). Runs check the same in their worker;
    the job manager checks it for sweeps and audits.

    >>> lifetime_over({"grace_s": 120, "started": 0.0}, last_beat=10.0, now=200.0)
    "its owner's page was closed: nobody watched it for 120 s"
    >>> lifetime_over({"max_seconds": 60, "started": 0.0}, last_beat=99.0, now=100.0)
    "it reached the server's limit of 60 s per job (host limit max_run_seconds)"
    """
    grace, cap, started = record.get("grace_s"), record.get("max_seconds"), record.get("started")
    if cap and started is not None and now - started > cap:
        return f"it reached the server's limit of {cap:g} s per job (host limit max_run_seconds)"
    if grace and now - last_beat > grace:
        return f"its owner's page was closed: nobody watched it for {grace:g} s"
    return None

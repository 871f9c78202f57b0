"""Who trains next: the job queue's fair-share policy, pure (no process, no store, no clock).

``slots`` jobs train at once. Next is the first waiting job (runs paused for fair share
first) whose owner trains fewer than their share (``slots`` // owners with jobs training or
waiting, at least 1). When every slot is busy it gets one by pausing the youngest run of
an owner over their share (paused after its current round; it resumes, first in line, when
a slot frees). Only runs can pause: one owner's other jobs (sweeps, audits) hold at most
half the slots (at least 1).

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


def next_move(waiting: list[str], paused: list[str], training: list[str], owners: Mapping[str, Optional[str]],
              *, pausable: Collection[str], slots: int, stopping: Collection[str] = ()) -> Optional[Move]:
    """The next step of the queue (module doc), or None while nothing may start.

    ``waiting``: queued jobs in order; ``paused``: runs paused for fair share; ``training``:
    jobs holding a slot, oldest first; ``owners``: every job's owner; ``pausable``: the jobs
    that can pause (runs); ``stopping``: jobs asked to stop (never paused for another)."""
    fixed_cap = max(1, slots // 2)
    running = Counter(owners.get(i) for i in training)
    fixed = Counter(owners.get(i) for i in training if i not in pausable)
    candidates = [i for i in [*paused, *waiting] if i in pausable or fixed[owners.get(i)] < fixed_cap]
    if not candidates:
        return None
    share = max(1, slots // len({owners.get(i) for i in [*candidates, *training]}))
    under = [i for i in candidates if running[owners.get(i)] < share]
    if len(training) < slots:
        return Move((under or candidates)[0])
    over = [i for i in training if running[owners.get(i)] > share and i in pausable and i not in stopping]
    return Move(under[0], over[-1]) if under and over else None

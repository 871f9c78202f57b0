"""Our numbers for a row of a paper's table, against which the paper's claims are checked.

:class:`RowStats` holds a row's final accuracy per seed and its seed-mean curve;
:meth:`fedcore.papers.spec.Claim.check` reads them (the claim kinds: :mod:`fedcore.papers.spec`).

>>> from fedcore.papers.spec import Claim
>>> c = Claim("order", ("c", "b", "a"))
>>> r = c.check({"a": RowStats([0.5]), "b": RowStats([0.6]), "c": RowStats([0.7])},
...             {"a": "A", "b": "B", "c": "C"})
>>> r["holds"], r["detail"]
(True, 'C 70.00 ≥ B 60.00 ≥ A 50.00')
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence


@dataclass(frozen=True)
class RowStats:
    """Our numbers for one row: final accuracy per seed and the seed-mean curve."""

    finals: Sequence[float]
    curve: Sequence[Optional[float]] = ()
    rounds: Sequence[int] = ()

    @property
    def mean(self) -> Optional[float]:
        return sum(self.finals) / len(self.finals) if self.finals else None

    @property
    def std(self) -> Optional[float]:
        """Sample std over seeds (n - 1; 0 for one seed; :func:`fedcore.sweep.rows.mean_std`), None without runs."""
        from ..sweep.rows import mean_std

        return mean_std(list(self.finals))[1] if self.finals else None

    def rounds_to(self, target: float) -> Optional[int]:
        """First round at which the seed-mean accuracy reaches ``target`` (None: never)."""
        for rnd, acc in zip(self.rounds, self.curve):
            if acc is not None and acc >= target:
                return int(rnd)
        return None


def window_means(accuracies: Sequence[float], window: int = 10) -> list[float]:
    """``out[T - window]`` = mean accuracy of rounds ``T - window + 1 .. T`` (rounds from 1)."""
    out, total = [], 0.0
    for i, acc in enumerate(accuracies):
        total += acc
        if i >= window:
            total -= accuracies[i - window]
        if i >= window - 1:
            out.append(total / window)
    return out


def plateau_round(accuracies: Sequence[float], *, window: int = 10, horizon: int = 50,
                  gain: float = 0.005) -> Optional[tuple[int, float]]:
    """Issue 39's rule for a T that a paper leaves open: the first round ``T`` where the
    ``window``-round mean accuracy stops rising, i.e. no ``window``-round mean of the next
    ``horizon`` rounds exceeds the one at ``T`` by ``gain`` or more; ``(T, mean at T)``, or None
    when no round of ``accuracies`` (one per round, from round 1) has ``horizon`` rounds after it
    that meet the rule.

    >>> t, mean = plateau_round([min(t, 7) / 10 for t in range(1, 80)], window=2, horizon=5, gain=0.06)
    >>> t, round(mean, 2)   # the 2-round mean rises by 0.1 a round up to T = 7, then by 0.05 once
    (7, 0.65)
    """
    means = window_means(accuracies, window)
    for i in range(len(means) - horizon):
        if max(means[i + 1:i + horizon + 1]) - means[i] < gain:
            return i + window, means[i]
    return None

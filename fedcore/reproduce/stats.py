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

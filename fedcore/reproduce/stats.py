"""Our numbers for a row of a paper's table, and KDP-FL's plateau rule for T.

:class:`RowStats` holds a row's final accuracy per seed, every seed's curve and its headline ε;
:meth:`fedcore.papers.spec.Claim.check` pairs the rows of a claim by seed and applies the one
rule of every verdict, :func:`fedcore.papers.verdict.paired_rule` (re-exported here with
:data:`~fedcore.papers.verdict.RULE_TEXT`; the claim kinds: :mod:`fedcore.papers.spec`).

>>> from fedcore.papers.spec import Claim
>>> c = Claim("order", ("c", "b", "a"))
>>> rows = {k: RowStats([v, v + 0.01, v + 0.02], seeds=(0, 1, 2), epsilon=1.0) for k, v in
...         (("a", 0.5), ("b", 0.6), ("c", 0.7))}
>>> r = c.check(rows, {"a": "A", "b": "B", "c": "C"})
>>> r["verdict"], r["detail"]
('holds', 'C 71.00 ≥ B 61.00 ≥ A 51.00; paired by seed (n=3): C − B +10.00 [+10.00, +10.00], ...')
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

from ..papers.verdict import (LEVEL, MAX_SEEDS_TO_DECIDE, RULE_TEXT, common_rounds, first_at,  # noqa: F401
                              paired_rule, seeds_to_decide, t_quantile)


@dataclass(frozen=True)
class RowStats:
    """Our numbers for one row: final accuracy per seed (``seeds`` their ids), every seed's curve
    at ``rounds`` (None where a seed was not evaluated), the headline ε (the largest over seeds;
    ``math.inf`` when nothing is noised, None when not recorded) and the accountant that gave it."""

    finals: Sequence[float]
    curves: Sequence[Sequence[Optional[float]]] = ()
    rounds: Sequence[int] = ()
    seeds: Sequence[int] = ()
    epsilon: Optional[float] = None
    accountant: Optional[str] = None

    @property
    def mean(self) -> Optional[float]:
        return sum(self.finals) / len(self.finals) if self.finals else None

    @property
    def std(self) -> Optional[float]:
        """Sample std over seeds (n - 1; 0 for one seed; :func:`fedcore.sweep.rows.mean_std`), None without runs."""
        from ..sweep.rows import mean_std

        return mean_std(list(self.finals))[1] if self.finals else None

    def by_seed(self) -> dict:
        """``{seed: final accuracy}`` (seeds 0, 1, ... when the ids were not recorded)."""
        return dict(zip(self.seeds or range(len(self.finals)), self.finals))

    def curve(self, grid: Optional[Sequence[int]] = None) -> list[Optional[float]]:
        """The seed-mean curve, a value only at rounds where every seed was evaluated."""
        grid = set(common_rounds(self.curves) if grid is None else grid)
        return [sum(v) / len(v) if i in grid else None for i, v in enumerate(zip(*self.curves))]

    def rounds_to(self, target: float, grid: Optional[Sequence[int]] = None) -> Optional[int]:
        """First round at which the seed-mean accuracy reaches ``target``, read only at rounds where
        every seed was evaluated (None: never)."""
        grid = common_rounds(self.curves) if grid is None else grid
        return first_at(self.rounds, self.curve(grid), target, grid)

    def rounds_to_by_seed(self, target: float, grid: Sequence[int]) -> dict:
        """``{seed: first round of grid at target}``, ``rounds[-1] + 1`` for a seed that never reaches it."""
        never = int(self.rounds[-1]) + 1 if self.rounds else 1
        return {s: first_at(self.rounds, c, target, grid) or never
                for s, c in zip(self.seeds or range(len(self.curves)), self.curves)}


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
    """The plateau rule for a T that a paper leaves open (issues 39 and 52): on ``accuracies`` (one
    per round, every round, from round 1; the seed mean: :func:`plateau_of_seeds`), the first round
    ``T`` whose trailing ``window``-round mean is not exceeded by ``gain`` or more by any trailing
    ``window``-round mean of the next ``horizon`` rounds; ``(T, mean at T)``, or None when no round
    has ``horizon`` rounds after it that meet the rule.

    >>> t, mean = plateau_round([min(t, 7) / 10 for t in range(1, 80)], window=2, horizon=5, gain=0.06)
    >>> t, round(mean, 2)   # the 2-round mean rises by 0.1 a round up to T = 7, then by 0.05 once
    (7, 0.65)
    """
    means = window_means(accuracies, window)
    for i in range(len(means) - horizon):
        if max(means[i + 1:i + horizon + 1]) - means[i] < gain:
            return i + window, means[i]
    return None


def plateau_of_seeds(curves: Sequence[Sequence[Optional[float]]], **rule) -> Optional[tuple[int, float, int]]:
    """:func:`plateau_round` on the seed-mean curve: ``(T, mean at T, seeds)``; it needs every seed
    evaluated at every round (a ValueError says which round is missing), never a mean of fewer seeds."""
    missing = [i + 1 for i, values in enumerate(zip(*curves)) if any(v is None for v in values)]
    if missing:
        raise ValueError(f"the plateau rule reads every round of every seed; round {missing[0]} is missing "
                         f"in some seed ({len(missing)} rounds in all)")
    found = plateau_round([sum(v) / len(v) for v in zip(*curves)], **rule)
    return None if found is None else (*found, len(curves))

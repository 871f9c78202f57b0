"""Our numbers for a row of a paper's table, and the one rule that turns them into a verdict.

:class:`RowStats` holds a row's final accuracy per seed, every seed's curve and its headline ε;
:meth:`fedcore.papers.spec.Claim.check` pairs the rows of a claim by seed and applies
:func:`paired_rule` (the claim kinds: :mod:`fedcore.papers.spec`).

>>> from fedcore.papers.spec import Claim
>>> c = Claim("order", ("c", "b", "a"))
>>> rows = {k: RowStats([v, v + 0.01, v + 0.02], seeds=(0, 1, 2), epsilon=1.0) for k, v in
...         (("a", 0.5), ("b", 0.6), ("c", 0.7))}
>>> r = c.check(rows, {"a": "A", "b": "B", "c": "C"})
>>> r["verdict"], r["detail"]
('holds', 'C 71.00 ≥ B 61.00 ≥ A 51.00; paired by seed (n=3): C − B +10.00 [+10.00, +10.00], ...')
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Sequence

LEVEL = 0.95
"""Two-sided confidence of :func:`paired_rule`'s interval."""
MAX_SEEDS_TO_DECIDE = 1000
"""Beyond this many seeds :func:`seeds_to_decide` says "more than" (a gap this small is no finding)."""
RULE_TEXT = (
    "**The paired rule.** A claim \"X ≥ Y, within t points\" is judged on the paired differences "
    "d_s = X_s − Y_s of the seeds s both rows ran (the same seed: the same data split, sampling and "
    "initialisation): their mean and its 95 % Student-t interval, mean ± t(0.975, n − 1) · sd / √n "
    "(Bouthillier et al. 2021; Henderson et al. 2018; Colas et al. 2018). It **holds** when the whole "
    "interval lies above −t, **does not hold** when it lies wholly below −t, and is **inconclusive** "
    "otherwise (or with one seed: no spread), with the seeds that would decide it at the observed "
    "spread. A chain X ≥ Y ≥ Z is judged step by step (holds when every step holds, does not hold when "
    "one does not). \"Reaches the target in fewer rounds\" pairs each seed's first round at the target, "
    "read only at rounds where every seed of the claim's rows was evaluated (a seed that never reaches "
    "it counts as the last round + 1, a bound). **Equal privacy or no verdict**: a decided claim whose "
    "rows' headline ε (the largest over seeds) differ by more than 1 %, or were computed by different "
    "accountants, reads **unequal privacy** instead (claims that compare budgets by design, e.g. "
    "LDP-FL's ε sweep, are exempt and say so).")
"""The rule in words, as the report's header and the Papers page state it (:func:`paired_rule`)."""


def t_quantile(p: float, df: int) -> float:
    """Student t quantile (scipy.special.stdtrit: scipy comes with scikit-learn)."""
    from scipy.special import stdtrit

    return float(stdtrit(df, p))


def seeds_to_decide(mean: float, sd: float, threshold: float, level: float = LEVEL) -> Optional[int]:
    """The fewest seeds n whose interval ``mean ± t · sd / √n`` would clear ``threshold`` at this
    mean and spread (None: never, the mean sits on the threshold, or more than ``MAX_SEEDS_TO_DECIDE``)."""
    gap = abs(mean - threshold)
    if gap == 0:
        return None
    for n in range(2, MAX_SEEDS_TO_DECIDE + 1):
        if t_quantile(0.5 + level / 2, n - 1) * sd / math.sqrt(n) < gap:
            return n
    return None


def paired_rule(diffs: Sequence[float], threshold: float = 0.0, level: float = LEVEL) -> dict:
    """The verdict of a claim "difference ≥ ``threshold``" from per-seed paired differences
    (the rule :data:`RULE_TEXT` states): ``{"verdict", "n", "mean", "low", "high", "seeds_needed"}``.

    The interval is ``mean ± t(0.975, n − 1) · sd / √n`` (sd: sample std, n − 1); "holds" when
    ``low > threshold``, "does not hold" when ``high < threshold``, else "inconclusive";
    ``seeds_needed`` (only when inconclusive): seeds that would decide it at this mean and sd.

    >>> r = paired_rule([0.031, 0.012, 0.020], threshold=-0.01)   # "≥, within 1 point": every seed clears it
    >>> r["verdict"], round(r["low"], 4), round(r["high"], 4)
    ('holds', -0.0027, 0.0447)
    >>> r = paired_rule([-0.180, 0.032, -0.121, -0.005, -0.204])   # PLDP-FL F-MNIST non-IID, C − A
    >>> r["verdict"], r["seeds_needed"]
    ('inconclusive', 8)
    """
    n = len(diffs)
    mean = sum(diffs) / n if n else None
    out = {"n": n, "mean": mean, "low": None, "high": None, "seeds_needed": None, "threshold": threshold}
    if n < 2:
        return {**out, "verdict": "inconclusive" if n else "not checked", "seeds_needed": 2 if n else None}
    sd = math.sqrt(sum((d - mean) ** 2 for d in diffs) / (n - 1))
    half = t_quantile(0.5 + level / 2, n - 1) * sd / math.sqrt(n)
    low, high = mean - half, mean + half
    verdict = "holds" if low > threshold else "does not hold" if high < threshold else "inconclusive"
    needed = seeds_to_decide(mean, sd, threshold, level) if verdict == "inconclusive" else None
    return {**out, "verdict": verdict, "low": low, "high": high, "seeds_needed": needed}


def common_rounds(curves: Sequence[Sequence[Optional[float]]]) -> list[int]:
    """Indices of the rounds at which every curve has a value (the grid every seed was evaluated on)."""
    return [i for i, values in enumerate(zip(*curves)) if all(v is not None for v in values)] if curves else []


def first_at(rounds: Sequence[int], curve: Sequence[Optional[float]], target: float,
             grid: Sequence[int]) -> Optional[int]:
    """First round of ``grid`` (indices) at which ``curve`` reaches ``target`` (None: never)."""
    return next((int(rounds[i]) for i in grid if curve[i] is not None and curve[i] >= target), None)


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

"""Membership's cap for a run's whole (ε, δ) profile, drawn beside the worst-case record's run.

Membership (hypothesis-testing view of DP; Kairouz, Oh & Viswanath 2015, Thm 2.1): every test
of "in" against "out" satisfies ``TPR <= e^ε FPR + δ`` and ``TPR <= 1 - e^-ε (1 - δ - FPR)``,
for every (ε, δ) the run is proven to satisfy: the cap is the smallest over the run's profile.
The caps drawn beside each attack are the exact curves of the game it plays
(:mod:`fedcore.accounting.games`); this one is the run's, shown beside them.

>>> round(membership_cap(0.01, 1.0, 0.0), 4)
0.0272
"""
from __future__ import annotations

import math


def membership_cap(fpr: float, epsilon: float, delta: float, profile=()) -> float:
    """The largest TPR at ``fpr`` of any membership test against an (ε, δ)-DP model; with
    ``profile`` (more ``(ε, δ)`` guarantees of the same run, :meth:`fedcore.accounting.Ledger.profile`)
    the smallest over all of them, which is tighter (``shared/ATTACKS.md`` §4).

    >>> round(membership_cap(0.01, 1.0, 1e-5, [(0.5, 0.01), (0.8, 1e-3)]), 4)   # the δ = 1e-3 pair
    0.0233
    """
    return min(_one_cap(fpr, e, d) for e, d in [(epsilon, delta), *profile])


def _one_cap(fpr: float, epsilon: float, delta: float) -> float:
    if not math.isfinite(epsilon) or epsilon > 700:
        return 1.0
    return min(1.0, math.exp(epsilon) * fpr + delta, 1.0 - math.exp(-epsilon) * (1.0 - delta - fpr))

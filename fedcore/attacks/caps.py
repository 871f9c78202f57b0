"""The success an (ε, δ)-DP run allows an attacker: the caps drawn beside every attack.

Reconstruction (informed adversary; Balle, Cherubin & Hayes 2022; Hayes, Mahloujifar & Balle
2023): if the release is (ε, δ)-DP for the adjacency that swaps the protected unit among n
equally likely candidates, any guess re-identifies it with probability at most
``e^ε / n + δ``; for a protected *set* of k of the n candidates (a batch), the guess lands in
it with probability at most ``e^ε k / n + δ`` (sum the per-candidate bound over the set).

Membership (hypothesis-testing view of DP; Kairouz, Oh & Viswanath 2015, Thm 2.1): every test
of "in" against "out" satisfies ``TPR <= e^ε FPR + δ`` and ``TPR <= 1 - e^-ε (1 - δ - FPR)``,
for every (ε, δ) the run is proven to satisfy: the cap is the smallest over the run's profile.

Adjacency: local and user-level ε cover any change of a client's data, so a swap costs ε;
record-level ε (add/remove one record) costs ``(2ε, (1 + e^ε) δ)`` for a replacement and, by
group privacy, ``(kε', k e^{(k-1)ε'} δ')`` for k replacements (Dwork & Roth 2014, Thm 2.2).

>>> round(reconstruction_cap(1.0, 1e-5, 0.01), 4)
0.0272
>>> reconstruction_cap(math.inf, 1e-5, 0.01)
1.0
>>> round(membership_cap(0.01, 1.0, 0.0), 4)
0.0272
"""
from __future__ import annotations

import math


def reconstruction_cap(epsilon: float, delta: float, chance: float) -> float:
    """``min(1, e^ε · chance + δ)``: re-identification's cap for a protected set whose share of
    the candidates is ``chance`` (1 when ε is infinite)."""
    if not math.isfinite(epsilon) or epsilon > 700:
        return 1.0
    return min(1.0, math.exp(epsilon) * chance + delta)


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


def swap_privacy(threat_model: str, epsilon: float, delta: float, swapped: int = 1) -> tuple[float, float]:
    """(ε, δ) for swapping ``swapped`` of a client's records under ``threat_model``'s guarantee:
    itself for local / central (user-level) ε; replace-one and group privacy for record-level."""
    if threat_model != "record" or not math.isfinite(epsilon):
        return epsilon, delta
    eps1, delta1 = 2.0 * epsilon, (1.0 + math.exp(min(epsilon, 700))) * delta
    k = max(1, int(swapped))
    eps_k = k * eps1
    return eps_k, min(1.0, k * math.exp(min((k - 1) * eps1, 700)) * delta1)

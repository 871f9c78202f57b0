"""Composition of pure ε-DP releases by their privacy loss distribution (dp-accounting's PLD).

Summing the ε of k pure ε-DP releases (basic composition) is far from tight: LDP-FL's
two-point perturbation releases every weight of every round, k = d x T releases of ε
each, and the sum k ε (13,000 for the demo) is about twice what the k releases really
spend at δ = 1e-5. For pure ε-DP mechanisms the worst case of a k-fold composition is
k-fold randomized response (Kairouz, Oh & Viswanath 2015, Thm 3.3): its privacy loss is
±ε per release. dp-accounting's ``from_privacy_parameters(DifferentialPrivacyParameters(ε, 0))``
is that PLD; composing it gives an (ε', δ) bound valid for *any* k ε-DP releases
(two-point, the stochastic sign's per-coordinate randomized response, Laplace).

:func:`compose_pure` takes a client's releases as ``{ε: count}`` and returns the smaller of
the PLD bound and the plain sum. The PLD grid is a divisor of the smallest ε, so the
two-point loss values ±ε sit on the grid exactly (no discretisation loss); the result is
rounded *up* to the grid.

>>> round(compose_pure({1.0: 13000}, 1e-5))
6436
>>> compose_pure({0.5: 1}, 1e-5)        # one release: the pure ε itself
0.5
"""
from __future__ import annotations

import math
from functools import lru_cache
from typing import Mapping

MAX_UNIT = 30.0
"""Above this ε per release (e^ε past 10^13) composition saves nothing worth a PLD: the sum is kept."""
GRID_POINTS = 200_000
"""Largest support the composed PLD may have (its FFT costs ~10 ms at that size)."""


def compose_pure(releases: Mapping[float, float], delta: float) -> float:
    """Tightest (ε', delta) bound of the releases ``{ε: count}`` (PLD, or the sum if smaller)."""
    items = tuple(sorted((float(e), int(round(c))) for e, c in releases.items() if c > 0 and e > 0))
    if not items:
        return 0.0
    total = sum(e * c for e, c in items)
    if sum(c for _, c in items) == 1 or delta <= 0 or max(e for e, _ in items) > MAX_UNIT:
        return total
    try:
        return min(total, _pld_epsilon(items, float(delta)))
    except (OverflowError, ValueError, MemoryError):  # a PLD dp-accounting cannot build: the sum holds
        return total


@lru_cache(maxsize=4096)
def _pld_epsilon(items: tuple, delta: float) -> float:
    from dp_accounting.pld import common, privacy_loss_distribution as pld

    if any(math.isinf(e) for e, _ in items):
        return math.inf
    smallest = min(e for e, _ in items)
    span = sum(2 * e * c for e, c in items)              # width of the composed support
    per_unit = max(1, min(1000, int(GRID_POINTS * smallest / span)))
    interval = smallest / per_unit
    composed = None
    for eps, count in items:
        one = pld.from_privacy_parameters(common.DifferentialPrivacyParameters(eps, 0.0),
                                          value_discretization_interval=interval)
        part = one.self_compose(count) if count > 1 else one
        composed = part if composed is None else composed.compose(part)
    return float(composed.get_epsilon_for_delta(delta))


def exact_rr_delta(epsilon: float, k: int, eps_prime: float) -> float:
    """δ(ε') of k-fold randomized response with parameter ε, in closed form (Kairouz et al.
    2015, Thm 3.3): ``sum_{i: (k - 2i) ε > ε'} C(k, i) (e^{(k-i)ε} - e^{ε'} e^{iε}) / (1 + e^ε)^k``.
    The test of :func:`compose_pure`; computed in log space."""
    from math import exp, lgamma

    log_norm = k * math.log1p(math.exp(epsilon))
    out = 0.0
    for i in range(k + 1):
        loss = (k - 2 * i) * epsilon
        if loss <= eps_prime:
            break
        log_c = lgamma(k + 1) - lgamma(i + 1) - lgamma(k - i + 1)
        out += exp(log_c + (k - i) * epsilon - log_norm) * (1 - exp(eps_prime - loss))
    return max(out, 0.0)

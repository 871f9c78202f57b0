"""Personalised privacy budgets in tiers, as the papers assign them.

PLDP-FL (seed 000, Sec. 5) gives clients budgets from a few levels: e.g. the L/M/H set
{1,1,1,5,5,5,5,10,10,10} = levels (1, 5, 10) in fractions 30/40/30, or L/H = (1, 10) in
50/50. :func:`tiered_epsilons` builds such a per-client list for any number of clients.

>>> tiered_epsilons(10, (1, 5, 10), (0.3, 0.4, 0.3))
[1.0, 1.0, 1.0, 5.0, 5.0, 5.0, 5.0, 10.0, 10.0, 10.0]
>>> tiered_epsilons(3, (1, 5, 10), (0.3, 0.4, 0.3))
[1.0, 5.0, 10.0]
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

TIER_PRESETS: dict[str, dict] = {
    "L/M/H {1, 5, 10}, 30/40/30": {"levels": (1.0, 5.0, 10.0), "fractions": (0.3, 0.4, 0.3),
                                   "paper": "PLDP-FL (seed 000) IID MNIST / Covertype"},
    "L/H {1, 10}, 50/50": {"levels": (1.0, 10.0), "fractions": (0.5, 0.5),
                           "paper": "PLDP-FL (seed 000) Covertype L/H"},
    "L/M/H {5, 10, 15}, 30/40/30": {"levels": (5.0, 10.0, 15.0), "fractions": (0.3, 0.4, 0.3),
                                    "paper": "PLDP-FL (seed 000) non-IID MNIST"},
    "L/H {5, 15}, 50/50": {"levels": (5.0, 15.0), "fractions": (0.5, 0.5),
                           "paper": "PLDP-FL (seed 000) non-IID MNIST L/H"},
    "L/M/H {0.05, 0.5, 1}, 30/40/30": {"levels": (0.05, 0.5, 1.0), "fractions": (0.3, 0.4, 0.3),
                                       "paper": "PLDP-FL (seed 000) Fashion-MNIST"},
}


def tier_counts(num_clients: int, fractions: Sequence[float]) -> list[int]:
    """Clients per tier: ``fractions`` (normalised) times ``num_clients``, rounded by
    largest remainder so the counts add up to ``num_clients``."""
    f = np.asarray(fractions, dtype=float)
    if f.ndim != 1 or len(f) == 0 or np.any(f < 0) or f.sum() <= 0:
        raise ValueError(f"fractions must be non-negative with a positive sum; got {list(fractions)}")
    exact = f / f.sum() * num_clients
    counts = np.floor(exact).astype(int)
    for i in np.argsort(-(exact - counts), kind="stable")[: num_clients - counts.sum()]:
        counts[i] += 1
    return counts.tolist()


def tiered_epsilons(num_clients: int, levels: Sequence[float], fractions: Sequence[float]) -> list[float]:
    """Per-client epsilons: the first clients get ``levels[0]``, the next ``levels[1]``, ..."""
    if len(levels) != len(fractions):
        raise ValueError(f"need one fraction per level; got {len(levels)} levels and {len(fractions)} fractions")
    out: list[float] = []
    for level, count in zip(levels, tier_counts(num_clients, fractions)):
        out += [float(level)] * count
    return out

"""ULDP-FED's server: participation cap, optional dropout, sample-weighted averaging.

Seed 004, Algorithm 1 lines 2-6 (METHODS section 5). Each round the engine Poisson-samples
users with probability q (``sampling: poisson``); this aggregator then

- drops every candidate that already took part in ``max_participations`` = r rounds
  (event ``dropout``, reason ``cap``), so no user exceeds the r participations its budget
  is split over;
- with ``dropout`` on, keeps each remaining candidate only with probability r/T (the
  paper's "each user takes part in each round with probability r/T", Sec. 1.3; event
  ``dropout``, reason ``random``). Off by default: the paper's experiments (q = 0.1,
  T = 300, r = 50, about 30 participations per user, Fig. 5(j)) only apply the cap;
- aggregates Delta~ = sum_i p_i Delta~_i with p_i = n_i / n renormalised over the round's
  participants (eq. 5 / line 5; recalled users contribute their reused stored update).
  The engine then applies W^t = W^(t-1) + eta_g Delta~ (``privacy.server_lr``; the paper's
  minus is a sign slip given Delta = W_i - W).

It counts the participations of the users it selects; the ``uldp_gaussian`` mechanism
counts the same users (the engine passes exactly the selected ones to it).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..constraints import Boolean, Interval, setting
from ..events import MethodEvent
from .mean import FedAvgAggregator
from .registry import AGGREGATORS


@AGGREGATORS.register("uldp", summary="Participation cap r (optional r/T dropout), then n_i-weighted average.",
                      paper="ULDP-FED (seed 004), Algorithm 1 lines 2-6")
class UldpAggregator(FedAvgAggregator):
    """FedAvg weights plus ULDP-FED's participation cap and dropout in :meth:`select`."""

    @dataclass(frozen=True)
    class Options:
        """max_participations: r, the most rounds a user takes part in.
        dropout: keep each sampled user with probability r/T (paper Sec. 1.3)."""

        max_participations: int = setting(50, Interval(int, 1, None), "r (paper: 50 MNIST, 80-100 CIFAR-10)")
        dropout: bool = setting(False, Boolean(), "keep each sampled user with probability r/T")

    def __init__(self, options, ctx):
        super().__init__(options, ctx)
        self.participations_ = np.zeros(ctx.num_clients, dtype=np.int64)

    @property
    def stay_probability(self) -> float:
        """r/T with dropout on, else 1."""
        return min(1.0, self.options.max_participations / self.ctx.rounds) if self.options.dropout else 1.0

    def select(self, candidates, round, rng):
        cand = np.asarray(candidates, dtype=np.int64)
        r = self.options.max_participations
        capped = self.participations_[cand] >= r
        keep = ~capped
        dropped = np.zeros_like(keep)
        if self.options.dropout:
            dropped = keep & (rng.random(len(cand)) >= self.stay_probability)
            keep &= ~dropped
        events = [MethodEvent("dropout", int(c), {"reason": "cap", "participations": r}) for c in cand[capped]]
        events += [MethodEvent("dropout", int(c), {"reason": "random", "stay_probability": self.stay_probability})
                   for c in cand[dropped]]
        selected = cand[keep]
        self.participations_[selected] += 1
        return selected, events

"""PLDP-FL rule C: probability-based client selection (seed 000, Sec. 4; METHODS section 1).

Each client gets a fixed probability from its noise scale, computed once for the run:

    rho_i = 1 / sigma_i,        P_i = rho_i / sum_{j=1..N} rho_j      (over all N clients)

Mode ``threshold`` (the paper, default): every round the server draws one
omega ~ U(0, 1) and selects every candidate client with P_i > omega; the selected clients
train, upload, and the server averages their uploads, f = mean of the selected. Taken
literally this selects nobody in many rounds when N is large (all P_i <= 1/N for equal
budgets); then the model is kept and the engine emits a ``no_selection`` event.
Mode ``sample_m`` (option): draw ``m`` candidates without replacement with probabilities
proportional to P_i (numpy's ``Generator.choice(p=...)``).
Every round emits a ``selection`` event: mode, omega (threshold mode), the selected ids,
and the signals ``empty_round`` (1 when nobody was selected) and ``empty_round_rate``
(the fraction of rounds so far without a selected client; under the literal rule,
P(none) = 1 - max_i P_i: 17-52 % of rounds with PLDP-FL's 3-client sets, 81-85 % with 10).

Option ``normalize``: ``"sum"`` (the paper, P_i = rho_i / sum_j rho_j; one omega selects
the top-k clients by eps, on average one client) or ``"max"`` (ablation C-max,
P_i = rho_i / max_j rho_j: the least noisy client is always selected, never an empty round).

Where P comes from. Selection happens *before* training, so the server must know each
sigma_i in advance (PLDP-FL: the server knows every eps_i and the calibration):

1. if the engine hands the aggregator the run's mechanism (:meth:`attach_mechanism`)
   and the mechanism reports :meth:`~fedcore.mechanisms.base.Mechanism.noise_scale`,
   P is computed from it before round 1 (exact paper behaviour);
2. otherwise P is learned from ``Upload.noise_std``: until every client's sigma_i has
   been seen, ``select`` lets all candidates train (a ``selection`` event with
   ``"calibrating": true``) and the round is a plain mean (rule A); with full
   participation this is round 1 only. The learnt P is then fixed for the run;
3. a mechanism without any noise scale (``none``) gives uniform P_i = 1/N, announced by a
   ``uniform_fallback`` event.

Sign uploads (ldp-sign) are averaged the same way; the engine steps along sign(f).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..constraints import Choice, Interval, setting
from ..events import MethodEvent
from .base import Aggregate, Aggregator, weighted_sum
from .registry import AGGREGATORS
from .weighted import inverse_noise_weights

MODES = ("threshold", "sample_m")
NORMALIZATIONS = ("sum", "max")


def threshold_selection(probabilities: np.ndarray, candidates: np.ndarray, omega: float) -> np.ndarray:
    """The candidates whose selection probability exceeds ``omega`` (PLDP-FL rule C).

    >>> threshold_selection(np.array([0.1, 0.3, 0.6]), np.arange(3), 0.2).tolist()
    [1, 2]
    """
    candidates = np.asarray(candidates, dtype=np.int64)
    return candidates[probabilities[candidates] > omega]


@AGGREGATORS.register("probabilistic",
                      summary="Select clients with probability P_i ~ 1/sigma_i, average them (rule C).",
                      paper="PLDP-FL (seed 000), rule C")
class ProbabilisticAggregator(Aggregator):
    """Rule C. ``probabilities_`` is ``P [N]`` once known (None while calibrating)."""

    needs_linkable = True

    @dataclass(frozen=True)
    class Options:
        """``mode``: "threshold" (one omega per round, select P_i > omega; the paper) or
        "sample_m" (``m`` clients without replacement with probabilities P_i)."""

        mode: str = setting("threshold", Choice(MODES), "threshold: select P_i > omega (the paper); sample_m: m clients")
        m: int = setting(1, Interval(int, 1, None), "clients per round for mode=sample_m")
        normalize: str = setting("sum", Choice(NORMALIZATIONS),
                                 "sum: P_i = rho_i / sum_j rho_j (the paper); max: P_i = rho_i / max_j rho_j "
                                 "(C-max: the least noisy client is always selected)")

    def __init__(self, options, ctx):
        super().__init__(options, ctx)
        self.probabilities_: Optional[np.ndarray] = None
        self._seen_sigma = np.full(ctx.num_clients, np.nan)
        self._pending: list[MethodEvent] = []
        self._rounds = 0
        self._empty = 0
        self._last_empty = 0.0

    # --- where P comes from ---------------------------------------------------------
    def attach_mechanism(self, mechanism) -> None:
        """Take sigma_i from ``mechanism.noise_scale()`` (if it has one) before round 1."""
        sigma = mechanism.noise_scale()
        if sigma is not None:
            self._pending.append(self._set_probabilities(sigma.detach().cpu().numpy(), source="mechanism"))

    def _set_probabilities(self, sigma: np.ndarray, source: str) -> MethodEvent:
        import torch

        p = inverse_noise_weights(torch.as_tensor(sigma, dtype=torch.float64)).numpy()
        if self.options.normalize == "max":
            p = p / p.max()
        self.probabilities_ = p
        return MethodEvent("selection_probabilities", None, {
            "source": source, "probabilities": [float(x) for x in p]})

    def _learn_from(self, upload) -> list[MethodEvent]:
        if upload.noise_std is None:
            self.probabilities_ = np.full(self.ctx.num_clients, 1.0 / self.ctx.num_clients)
            return [MethodEvent("uniform_fallback", None, {
                "reason": "the mechanism reports no noise scale, so rule C has no 1/sigma_i; "
                          "every client gets P_i = 1/N"})]
        ids = upload.clients.cpu().numpy()
        self._seen_sigma[ids] = upload.noise_std.double().cpu().numpy()
        if np.isnan(self._seen_sigma).any():
            return []
        return [self._set_probabilities(self._seen_sigma, source="uploads")]

    # --- the two hooks ---------------------------------------------------------------
    def select(self, candidates, round, rng):
        candidates = np.asarray(candidates, dtype=np.int64)
        events, self._pending = self._pending, []
        if self.probabilities_ is None:
            events.append(MethodEvent("selection", None, {
                "calibrating": True, "selected": candidates.tolist(),
                "reason": "sigma_i not yet known for every client; all candidates train"}))
            return candidates, events
        p = self.probabilities_
        if self.options.mode == "threshold":
            omega = float(rng.random())
            chosen = threshold_selection(p, candidates, omega)
            data = {"mode": "threshold", "omega": omega}
        else:
            weights = p[candidates]
            k = min(self.options.m, int((weights > 0).sum()))
            chosen = (np.sort(rng.choice(candidates, size=k, replace=False, p=weights / weights.sum()))
                      if k > 0 else candidates[:0])
            data = {"mode": "sample_m", "m": self.options.m}
        events.append(MethodEvent("selection", None, {**data, "selected": chosen.tolist()}))
        self._rounds += 1
        self._last_empty = float(len(chosen) == 0)
        self._empty += int(len(chosen) == 0)
        return chosen, events

    def round_signals(self) -> dict[str, float]:
        """``empty_round`` of the round just selected and the run's ``empty_round_rate`` so far."""
        if self._rounds == 0:
            return {}
        return {"empty_round": self._last_empty, "empty_round_rate": self._empty / self._rounds}

    def aggregate(self, upload, round) -> Aggregate:
        import torch  # here, not at the top: resolving a config that names this loads no torch

        events = self._learn_from(upload) if self.probabilities_ is None else []
        values = upload.values
        m = values.shape[0]
        w = torch.full((m,), 1.0 / m, dtype=values.dtype, device=values.device)
        return Aggregate(weighted_sum(values, w), w, events)

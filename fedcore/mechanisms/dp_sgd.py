"""KDP-FL's client: DP-SGD local training (seed 003, Alg. 1 and Eqs. 3-5; METHODS section 4).

Two placements of the noise, option ``placement``:

- ``"step"`` (default; METHODS' revised reading): standard DP-SGD (Abadi et al. 2016,
  Alg. 1). At every local step the client adds ``N(0, z^2 M^2 I)`` to the *sum* of its
  clipped per-sample gradients and divides by the batch size (the engine does it,
  :meth:`step_noise_std`); the upload is the resulting update, no extra noise. ``z`` is
  the smallest multiplier for which ``T * S_i`` steps of the Poisson(``B / n_i``)-subsampled
  Gaussian are ``(eps_i, delta_i)``-DP (RDP accountant; every step a client could run,
  no amplification by client sampling, since the server sees who takes part). The
  ledger composes exactly the steps each client ran (``S_i`` per upload at rate
  ``B / n_i``). The upload's per-coordinate noise variance, which the Kalman server takes
  as R, is ``sum_s (lr c_s z M / B)^2`` with ``c_s = (1 - mu^(S - s)) / (1 - mu)`` for
  momentum ``mu`` (``c_s = 1`` for plain SGD): ``S (lr z M / B)^2``.
- ``"round"`` (the literal Eq. 3): the client sends ``g = (w0 - w)/lambda + N(0, sigma^2 M^2 I)``
  once per round; described below. Its true L2 sensitivity is ``2 S_i M`` (``2 S_i M /
  (1 - mu)`` with momentum) in gradient units, not ``M``.

Literal Eq. 3 (``placement="round"``). Local training clips every per-sample gradient to L2 norm ``M`` (``clip_norm``; the engine
does it when ``per_sample_clip`` is set) and averages the batch: ``w <- w - lambda * mean
clip(g_b)``. After the round's local steps the client sends
``g = (w0 - w) / lambda + N(0, sigma^2 M^2 I)`` (Eq. 3). The engine's update is
``Delta = w - w0 = -lambda (w0 - w) / lambda``, so in update units the upload is
``Delta + N(0, (lambda sigma M)^2 I)`` (the sign of zero-mean noise is immaterial), and
``noise_std = lambda sigma M`` is what KDP-FL's Kalman filter takes as R.

Calibration of the noise multiplier ``sigma`` with a real accountant (RDP of the
Poisson-subsampled Gaussian, Mironov, Talwar & Zhang 2019), the smallest ``sigma`` that
reaches each client's ``(eps_i, delta_i)``, per distinct (eps, delta, size) group:

- ``calibration="paper"`` (default; Eq. 4-5 with the asymptotic constant replaced by the
  accountant): ``T`` compositions, one per round, with sampling probability
  ``q_i = participation * min(1, S_i B / n_i)``, the chance that a record is touched in a
  round (Eq. 4's ``C B E / |D|``). ``S_i`` is the client's local steps per round
  (``local.steps``, or ``epochs * ceil(n_i / B)``).
- ``calibration="per_step"``: standard DP-SGD accounting (Abadi et al. 2016), ``T * S_i``
  compositions with ``q_i = min(1, B / n_i)``.

Both treat one noisy release as having L2 sensitivity ``M``, i.e. they describe DP-SGD with
noise added at every step. KDP-FL adds it once, after ``S_i`` steps, to a sum of ``S_i``
clipped mean gradients; a single record changes the trajectory, so that sum's L2 range is
bounded only by ``2 S_i M`` (``2 S_i M / (1 - mu)`` with momentum ``mu``). The placement is
therefore much weaker than the accounting suggests. The ledger shows both, labelled:

- ``gaussian`` (the RDP column): the rigorous view of what ran, one Gaussian release per
  upload with noise multiplier ``sigma (1 - mu) / (2 S_i)`` and no amplification; left
  out (no RDP figure) with weight decay, whose step is not bounded by the clip;
- claim ``"paper (KDP-FL)"`` (or ``"DP-SGD per-step accountant"``): the calibration's own
  accountant, cumulative, charged at each upload (the paper reading counts every round so
  far, as its amplification by client sampling does; per-step counts the client's own
  steps). It reaches ``eps_i`` after ``T`` rounds by construction;
- ``spent`` (basic): ``eps_i / T`` per upload, the round's share of the calibrated budget.

Rounds the calibration covers, option ``rounds`` (``placement="step"``): ``"all"`` (default)
calibrates for every one of the ``T`` rounds, as if the client took part in each; with client
sampling at rate ``q_c = participation`` a client takes part in about ``q_c T`` of them and a
run spends only part of its budget. ``"participation"`` calibrates for ``m`` rounds, the
``1 - 1/N`` quantile of the Binomial(``T``, ``q_c``) count of rounds a client takes part in
(``m * S_i`` steps; no amplification is claimed from the client sampling itself); a client that
took part in ``m`` rounds has spent its budget and is not selected again (event ``dropout``,
reason ``budget``), so no client's headline ε exceeds its target.
``noise_multiplier``: a fixed ``z`` instead of the calibrated one (``0``: clipping only, no noise,
ε = ∞), for the decomposition rows of a reproduction.

The noise is solved per distinct group on the ledger's exact accountant (dp-accounting's PLD,
:func:`fedcore.accounting.calibrate.calibrate_noise_multiplier`, from the vectorised RDP solution of
:class:`fedcore.accounting.rdp.SampledGaussianRdp`); ``calibration="paper"`` keeps the paper's moments
accountant (RDP), so a reproduction draws the paper's noise and shows its exact ε beside the claim.
"""
from __future__ import annotations

import numpy as np
import torch

from ..accounting.calibrate import calibrate_noise_multiplier
from ..accounting.ledger import GaussianRecord
from ..accounting.rdp import INT_ORDERS, SampledGaussianRdp, rdp_epsilons
from .base import Upload
from .dp_sgd_spec import DpSgdSpec


def participation_rounds(rounds: int, participation: float, clients: int) -> int:
    """The ``1 - 1/clients`` quantile of Binomial(``rounds``, ``participation``): the rounds a
    client takes part in, exceeded by fewer than one client per run on average.

    >>> participation_rounds(50, 0.2, 100), participation_rounds(10, 1.0, 5)
    (17, 10)
    """
    from math import comb

    q = min(1.0, max(0.0, participation))
    if q >= 1.0:
        return int(rounds)
    tail, target = 1.0, 1.0 / max(clients, 1)
    for m in range(rounds + 1):
        tail -= comb(rounds, m) * q ** m * (1 - q) ** (rounds - m)   # P(count > m)
        if tail <= target:
            return max(m, 1)
    return int(rounds)


class DpSgdMechanism(DpSgdSpec):
    """Per-sample clip to ``clip_norm``; noise per step (default) or once per round (Eq. 3)."""

    def __init__(self, options, ctx):
        super().__init__(options, ctx)
        self.per_sample_clip = options.clip_norm
        local = ctx.local
        n = ctx.client_sizes.double().cpu().numpy()
        b = local.batch_size
        self.steps = np.full_like(n, local.steps) if local.steps > 0 else local.epochs * np.ceil(n / b)
        self.per_step = options.placement == "step"
        self.poisson_batches = self.per_step and options.batching == "poisson"
        rounds = ctx.rounds
        if self.per_step:
            q = np.minimum(1.0, b / n)
            per_round, self.claim_label = self.steps, ""
            if options.rounds == "participation":
                rounds = participation_rounds(ctx.rounds, ctx.participation, len(n))
        elif options.calibration == "paper":
            q = ctx.participation * np.minimum(1.0, self.steps * b / n)
            per_round, self.claim_label = np.ones_like(n), "paper (KDP-FL)"
        else:
            q = np.minimum(1.0, b / n)
            per_round, self.claim_label = self.steps, "DP-SGD per-step accountant"
        self.sample_rate = q
        eps = ctx.epsilon.double().cpu().numpy()
        delta = ctx.delta.double().cpu().numpy()
        keys = np.stack([eps, delta, q, per_round])
        groups, member = np.unique(keys, axis=1, return_inverse=True)
        if options.noise_multiplier >= 0:
            z = np.full(groups.shape[1], float(options.noise_multiplier))
        else:
            z = calibrate_noise_multiplier(groups[0], groups[1], groups[2], rounds * groups[3],
                                           paper=not self.per_step and options.calibration == "paper")
        self.accounted_rounds = rounds
        self.noise_multiplier = z[member.ravel()]                                    # [N]
        with np.errstate(all="ignore"):   # z = 0 (clipping only): no bound, RDP infinite
            unit = np.where(z[:, None] > 0, SampledGaussianRdp(groups[2])(np.maximum(z, 1e-12)), np.inf)
        self._rdp_unit = per_round[:, None] * unit[member.ravel()]
        self._uploads = np.zeros(len(n), dtype=np.int64)
        self._claimed = np.zeros(len(n))
        self.momentum = local.momentum if local.optimizer == "momentum" else 0.0
        self.drift = 2 * self.steps / (1 - self.momentum)   # L2 range of (w0 - w)/lr, in units of M

    def step_noise_std(self, clients):
        """``z_i M`` per client (noise on the clipped gradient sum), or None for Eq. 3."""
        if not self.per_step:
            return None
        z = torch.as_tensor(self.noise_multiplier[clients.cpu().numpy()], device=clients.device)
        return (z * self.options.clip_norm).to(torch.float32)

    def upload_noise_std(self) -> np.ndarray:
        """``[N]`` per-coordinate std of the noise each client's upload carries (update units)."""
        lr, m_clip = self.ctx.local.lr, self.options.clip_norm
        if not self.per_step:
            return lr * self.noise_multiplier * m_clip
        mu, b = self.momentum, self.ctx.local.batch_size
        out = np.empty_like(self.noise_multiplier)
        for s_count in np.unique(self.steps):
            k = np.arange(1, int(s_count) + 1)                 # steps left after each noise draw
            c = (1 - mu ** k) / (1 - mu) if mu else np.ones_like(k, dtype=np.float64)
            sel = self.steps == s_count
            out[sel] = lr * self.noise_multiplier[sel] * m_clip / b * np.sqrt((c ** 2).sum())
        return out

    def noise_scale(self) -> torch.Tensor:
        """Noise standard deviation of every client's upload ``[N]``, in update units."""
        return torch.as_tensor(self.upload_noise_std(), dtype=torch.float32, device=self.ctx.device)

    def may_take_part(self, clients):
        """With ``rounds="participation"`` (per-step noise), a client retires after the ``m`` rounds
        its noise was calibrated for."""
        if not (self.per_step and self.options.rounds == "participation"):
            return super().may_take_part(clients)
        return self._uploads[clients] < self.accounted_rounds

    def privatize(self, updates, clients, round, gen) -> Upload:
        ids = clients.cpu().numpy()
        self._uploads[ids] += 1
        device = updates.device
        std = torch.as_tensor(self.upload_noise_std()[ids], dtype=updates.dtype, device=device)
        z = torch.as_tensor(self.noise_multiplier[ids], dtype=updates.dtype, device=device)
        spent = self.ctx.epsilon[clients] / self.ctx.rounds
        signals = {"noise_multiplier_mean": float(z.mean()), "upload_noise_std_mean": float(std.mean())}
        if self.per_step:
            gaussian = GaussianRecord(noise_multiplier=z, sample_rate=self.sample_rate[ids],
                                      steps=self.steps[ids])
            return Upload(values=updates, clients=clients, noise_std=std, spent=spent, gaussian=gaussian,
                          signals=signals)
        noise = torch.randn(updates.shape, generator=gen, device=device, dtype=updates.dtype)
        units = np.full(len(ids), round) if self.options.calibration == "paper" else self._uploads[ids]
        cumulative = rdp_epsilons(units[:, None] * self._rdp_unit[ids],
                                  self.ctx.delta[clients].double().cpu().numpy(), INT_ORDERS)
        increment = cumulative - self._claimed[ids]
        self._claimed[ids] = cumulative
        gaussian = None
        if self.ctx.local.weight_decay == 0:
            rigorous = self.noise_multiplier[ids] / self.drift[ids]
            gaussian = GaussianRecord(noise_multiplier=torch.as_tensor(rigorous, device=device))
        signals["eq3_sensitivity_over_M"] = float(self.drift[ids].mean())
        return Upload(values=updates + std[:, None] * noise, clients=clients, noise_std=std,
                      spent=spent, gaussian=gaussian,
                      claims={self.claim_label: torch.as_tensor(increment, dtype=torch.float64, device=device)},
                      signals=signals)

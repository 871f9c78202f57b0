"""HW-DPFL's Gaussian perturbation of the uploaded model, once per round (seed 002, Sec. 3-4).

Client k adds Z_k ~ N(0, sigma_k^2 I_d) to its local model before upload
(w~_k = w_k + Z_k, Algorithm 1; here to the update Delta_k, which is the same thing for
the server's convex combination sum_k tau_k w~_k). METHODS section 3, adopted: noise once
per round (the paper's algorithm box also shows it per batch step; that variant needs
noise inside local training and is not offered here).

Calibration (Theorem 1, with Lemma 2's sensitivity Delta_f = 2 eta E G):

    sigma_k^2 = 32 gamma^2 eta^2 E^2 G^2 ln(1.25 gamma / delta) / eps^2
              = 8 gamma^2 Delta_f^2 ln(1.25 gamma / delta) / eps^2,      gamma = E b / n_k

Reading of the symbols (the paper's E counts local *update steps*, as Lemma 2's
sensitivity and gamma = E b / n_k both need): E = the client's number of local SGD steps
(``local.steps``, or ``local.epochs * ceil(n_k / b)`` in epoch mode, where gamma is then
capped at 1), b = ``local.batch_size``, eta = ``local.lr`` (divided by 1 - momentum for
the momentum optimizer, which bounds one step's movement), G = ``grad_bound`` (the
paper's "maximal local gradient norm" 1). ``clip_gradients`` (default on) clips every
per-sample gradient to G during local training, which makes Assumption 1 true.

``noise``: ``"calibrated"`` (default) takes sigma_k from (eps_k, delta_k) above;
``"level"`` sets sigma_k = ``sigma`` directly, as the paper's experiments do
(sigma in {0.2, 0.5, 1}).

Ledger (METHODS section 8), per participation:

- ``spent``: the per-round eps that sigma_k buys under Theorem 1 (= eps_k when calibrated),
  composed by basic composition;
- claim ``"paper (HW-DPFL Thm 2)"``: the moments-accountant total after k participations,
  eps_hat = eps * sqrt(k ln(1/delta) / (2 ln(1.25 gamma / delta))), recorded as increments;
- ``gaussian`` (only with ``clip_gradients``): a rigorous RDP record of the Gaussian
  mechanism on the update, noise multiplier sigma_k / Delta_f (Delta_f bounds how far two
  neighbouring datasets can move the update; no amplification by sampling is claimed).
  Weight decay is ignored in Delta_f, as in the paper.

Placement (option ``placement``; METHODS section 3, revised reading):

- ``"round"`` (default): the above, noise once on the upload; threat model *local* (the
  sensitivity 2 eta E G bounds how far *any* two datasets of the client move the update).
- ``"step"``: the experiments' sigma read as a DP-SGD noise *multiplier* (Abadi et al.
  2016): every local step adds ``N(0, sigma^2 G^2 I)`` to the sum of the clipped
  per-sample gradients before dividing by b (``noise="level"``: sigma as given;
  ``"calibrated"``: the smallest multiplier for which ``T * E`` steps at
  ``q = b / n_k`` are ``(eps_k, delta_k)``-DP, RDP accountant). Threat model *record*;
  the ledger composes each client's steps at ``q = b / n_k``, which holds for Poisson-sampled
  batches: option ``batching`` ``"poisson"`` (default, as DP-SGD's) draws them; ``"shuffle"``
  (how records made before the option trained) keeps fixed-size shuffled batches and carries
  the caveat that the bound assumes Poisson sampling. Needs ``clip_gradients``.
  The measured gap to the paper at lambda = 0.05, 50 rounds comes from clipping (no
  noise: 78.8 %), not from sigma; see docs/reproduction.md.

Signal ``noise_std_mean`` (mean sigma of the round). :meth:`noise_scale` gives sigma_k [N]
(round placement: the upload's noise; step placement: the std that the per-step noise
leaves on the upload, ``eta sigma G sqrt(E) / b``).
"""
from __future__ import annotations

import torch

from ..accounting.ledger import GaussianRecord
from .base import Upload
from .hw_gaussian_spec import HwGaussianSpec

THM2_CLAIM = "paper (HW-DPFL Thm 2)"


def hw_dpfl_sigma(epsilon: torch.Tensor, delta: torch.Tensor, gamma: torch.Tensor,
                  sensitivity: torch.Tensor) -> torch.Tensor:
    """Theorem 1: sigma = sqrt(8 gamma^2 Delta_f^2 ln(1.25 gamma / delta)) / eps.

    >>> hw_dpfl_sigma(torch.tensor(1.0), torch.tensor(1e-5), torch.tensor(1.0), torch.tensor(1.0))
    tensor(9.6896)
    """
    return torch.sqrt(8 * gamma ** 2 * sensitivity ** 2 * torch.log(1.25 * gamma / delta)) / epsilon


def hw_dpfl_epsilon(sigma: torch.Tensor, delta: torch.Tensor, gamma: torch.Tensor,
                    sensitivity: torch.Tensor) -> torch.Tensor:
    """Theorem 1 solved for eps: the per-round eps that noise ``sigma`` gives."""
    return torch.sqrt(8 * gamma ** 2 * sensitivity ** 2 * torch.log(1.25 * gamma / delta)) / sigma


def hw_dpfl_total_epsilon(epsilon: torch.Tensor, delta: torch.Tensor, gamma: torch.Tensor,
                          rounds) -> torch.Tensor:
    """Theorem 2: eps_hat = eps * sqrt(T ln(1/delta) / (2 ln(1.25 gamma / delta))).

    >>> hw_dpfl_total_epsilon(torch.tensor(1.0), torch.tensor(1e-5), torch.tensor(1.0), 4)
    tensor(1.4007)
    """
    return epsilon * torch.sqrt(torch.as_tensor(rounds, dtype=epsilon.dtype) * torch.log(1 / delta)
                                / (2 * torch.log(1.25 * gamma / delta)))


def local_steps(ctx) -> torch.Tensor:
    """Each client's number of local SGD steps per round ``[N]`` (the paper's E)."""
    local = ctx.local
    if local.steps > 0:
        return torch.full((ctx.num_clients,), float(local.steps), dtype=torch.float64, device=ctx.device)
    n = ctx.client_sizes.to(torch.float64)
    return local.epochs * torch.ceil(n / local.batch_size)


class HwGaussianMechanism(HwGaussianSpec):
    """sigma_k fixed for the run (``sigma_`` [N]); per-sample gradient clipping at G."""

    def __init__(self, options, ctx):
        super().__init__(options, ctx)
        if options.clip_gradients:
            self.per_sample_clip = options.grad_bound
        local = ctx.local
        steps = local_steps(ctx)
        lr = local.lr / (1.0 - local.momentum) if local.optimizer == "momentum" else local.lr
        n = ctx.client_sizes.to(torch.float64).clamp(min=1.0)
        delta = ctx.delta.to(torch.float64)
        self.gamma_ = (steps * local.batch_size / n).clamp(max=1.0)
        self.sensitivity_ = 2 * lr * steps * options.grad_bound            # Lemma 2
        if options.noise == "calibrated":
            self.sigma_ = hw_dpfl_sigma(ctx.epsilon.to(torch.float64), delta, self.gamma_, self.sensitivity_)
        else:
            self.sigma_ = torch.full_like(self.gamma_, options.sigma)
        self.round_epsilon_ = hw_dpfl_epsilon(self.sigma_, delta, self.gamma_, self.sensitivity_)
        self.participations_ = torch.zeros(ctx.num_clients, dtype=torch.float64, device=ctx.device)
        self.per_step = options.placement == "step"
        self.poisson_batches = self.per_step and options.batching == "poisson"
        if self.per_step:
            self.steps_ = steps
            self.sample_rate_ = (local.batch_size / n).clamp(max=1.0)
            if options.noise == "calibrated":
                from ..accounting.calibrate import calibrate_noise_multiplier

                z = calibrate_noise_multiplier(ctx.epsilon.double().cpu().numpy(), delta.cpu().numpy(),
                                               self.sample_rate_.cpu().numpy(), (ctx.rounds * steps).cpu().numpy())
                self.multiplier_ = torch.as_tensor(z, dtype=torch.float64, device=ctx.device)
            else:
                self.multiplier_ = torch.full_like(self.gamma_, options.sigma)
            # the per-step noise left on the upload: sqrt(E) steps of lr * z G / b (plain SGD)
            self.sigma_ = lr * self.multiplier_ * options.grad_bound / local.batch_size * torch.sqrt(steps)

    def step_noise_std(self, clients):
        """Per-step placement: ``sigma G`` on each client's clipped gradient sum."""
        if not self.per_step:
            return None
        return (self.multiplier_[clients] * self.options.grad_bound).to(torch.float32)

    def noise_scale(self) -> torch.Tensor:
        return self.sigma_

    def privatize(self, updates, clients, round, gen) -> Upload:
        sigma = self.sigma_[clients]
        if self.per_step:
            gaussian = GaussianRecord(noise_multiplier=self.multiplier_[clients],
                                      sample_rate=self.sample_rate_[clients], steps=self.steps_[clients])
            return Upload(values=updates, clients=clients, noise_std=sigma.to(updates.dtype),
                          spent=self.ctx.epsilon[clients] / self.ctx.rounds, gaussian=gaussian,
                          signals={"noise_std_mean": float(sigma.mean()),
                                   "noise_multiplier": float(self.multiplier_[clients].mean())})
        noise = torch.randn(updates.shape, generator=gen, device=updates.device, dtype=updates.dtype)
        values = updates + sigma.to(updates.dtype)[:, None] * noise
        eps = self.round_epsilon_[clients]
        k = self.participations_[clients] + 1
        self.participations_[clients] = k
        per_unit = hw_dpfl_total_epsilon(eps, self.ctx.delta[clients].to(torch.float64),
                                         self.gamma_[clients], 1)
        claim = per_unit * (torch.sqrt(k) - torch.sqrt(k - 1))
        gaussian = None
        if self.options.clip_gradients:
            gaussian = GaussianRecord(noise_multiplier=sigma / self.sensitivity_[clients])
        return Upload(values=values, clients=clients, noise_std=sigma.to(updates.dtype),
                      spent=eps, gaussian=gaussian, claims={THM2_CLAIM: claim},
                      signals={"noise_std_mean": float(sigma.mean())})

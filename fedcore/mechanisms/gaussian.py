"""PLDP-FL's Gaussian perturbation for IID data (seed 000, Sec. 3.1; METHODS section 1).

Each client clips its update element-wise to ``[-c, c]`` and adds ``N(0, sigma_i^2)`` to
every coordinate, with the paper's calibration (the dump lost the radical; METHODS'
adopted reading)::

    sigma_i = sqrt( 4 q^2 R / (1 - q) * ( 2 ln(1/delta_i) / eps_i^2 + 1 / eps_i ) )

``q`` is the probability with which a client samples each of its records per round,
``R`` the number of rounds, ``delta_i`` the client's delta (``1/|D_i|`` in the paper).
The formula is the closed form of an RDP argument: with the small-``q`` bound
``RDP(alpha) <= 2 q^2 alpha / ((1 - q) z^2)`` per round of a ``q``-subsampled Gaussian
with noise multiplier ``z``, ``R`` rounds and the order ``alpha = 1 + 2 ln(1/delta)/eps``,
``z = sigma_i`` gives exactly ``(eps_i, delta_i)``. So ``sigma_i`` is a noise *multiplier*
for an L2 sensitivity of 1; the paper never scales it by the clipping bound.

Sensitivity. Two clipped updates lie in the box ``[-c, c]^d``, so the L2 distance between
any two of them (the LDP neighbourhood: any two inputs) is at most the box's diameter
``2 c sqrt(d)``. ``scale_by_sensitivity=True`` multiplies ``sigma_i`` by it, so that the
multiplier the accountant sees is the paper's ``sigma_i``; the default (off) is the paper.

What the ledger shows, per upload:

- ``spent`` (basic composition) and the claim ``"paper (PLDP-FL)"``: ``eps_i / R``, the
  per-round share of the budget the calibration targets over ``R`` rounds.
- ``gaussian``: the RDP accountant's view, noise multiplier
  ``actual noise std / (2 c sqrt(d))`` and sample rate 1: the engine trains on all of a
  client's records every round, so no amplification by record sampling is claimed
  (``q`` enters the calibration only, as in the paper).

Threat model: local (each upload is noised against the server). Headline: the RDP record.

``noise_std`` is the noise actually added (PLDP-FL's aggregators B and C use
``rho_i = 1 / sigma_i``).
"""
from __future__ import annotations

import math

import numpy as np
import torch

from ..accounting.ledger import GaussianRecord
from .base import Upload
from .gaussian_spec import GaussianSpec
from .scalar import (VARIANCE, EpsilonReading, Knob, Release, ScalarDemo, ScalarLaw, approximate_meaning,
                     exact_delta_check, g)


def pldp_sigma(epsilon: torch.Tensor, delta: torch.Tensor, sample_rate: float,
               rounds: int) -> torch.Tensor:
    """PLDP-FL's per-client standard deviation (seed 000, Sec. 3.1), element-wise.

    >>> round(float(pldp_sigma(torch.tensor(1.0), torch.tensor(0.01), 0.5, 4)), 4)
    9.0378
    """
    eps = epsilon.double()
    log_inv_delta = torch.log(1.0 / delta.double())
    factor = 4 * sample_rate ** 2 * rounds / (1 - sample_rate)
    return torch.sqrt(factor * (2 * log_inv_delta / eps ** 2 + 1 / eps)).to(epsilon.dtype)


class GaussianMechanism(GaussianSpec):
    """Clip each coordinate to ``[-clip, clip]``, add ``N(0, sigma_i^2)``."""

    def __init__(self, options, ctx):
        super().__init__(options, ctx)
        o = options
        self.sensitivity = 2 * o.clip * math.sqrt(ctx.num_params)
        sigma = pldp_sigma(ctx.epsilon, self.accounting_delta(), o.sample_rate, ctx.rounds)
        self.sigma = sigma * self.sensitivity if o.scale_by_sensitivity else sigma   # [N]

    def noise_scale(self) -> torch.Tensor:
        """sigma_i of every client ``[N]`` (PLDP-FL rules B and C weigh by ``1/sigma_i``)."""
        return self.sigma

    def privatize(self, updates, clients, round, gen) -> Upload:
        c = self.options.clip
        clipped = updates.clamp(-c, c)
        sigma = self.sigma[clients].to(updates.dtype)
        noise = torch.randn(updates.shape, generator=gen, device=updates.device, dtype=updates.dtype)
        per_round = self.ctx.epsilon[clients] / self.ctx.rounds
        return Upload(
            values=clipped + sigma[:, None] * noise, clients=clients, noise_std=sigma,
            spent=per_round,
            gaussian=GaussianRecord(noise_multiplier=sigma / self.sensitivity),
            claims={"paper (PLDP-FL)": per_round},
            signals={"clipped_fraction": float((updates.abs() > c).float().mean()),
                     "noise_std_mean": float(sigma.mean())})


# --- one number (the Mechanisms page) ---------------------------------------------------------
class GaussianScalar(ScalarLaw):
    """One number in ``[-c, c]`` with PLDP-FL's sigma over R rounds (unscaled by the clip)."""

    demo = ScalarDemo("gaussian", "approximate", VARIANCE, (
        Knob("clip", "clip c (range [-c, c])", 0.1, 10.0, 2.0, 0.1, "PLDP-FL: c = 2 (Fashion-MNIST)"),
        Knob("sample_rate", "record sampling rate q", 0.05, 0.95, 0.8, 0.05,
             "PLDP-FL's q; the calibration divides by 1 - q"),
        Knob("rounds", "rounds R the budget covers", 1, 100, 1, 1,
             "sigma grows like sqrt(R): the whole budget is split over R rounds", integer=True)))

    def scale(self, epsilon, delta, options, rounds):
        eps = torch.as_tensor(np.asarray(epsilon, dtype=np.float64))
        return pldp_sigma(eps, torch.full_like(eps, float(delta)), options["sample_rate"], rounds).numpy()

    def reading(self, r: Release) -> EpsilonReading:
        exact_line, warning = exact_delta_check(r)
        q = r.options["sample_rate"]
        return EpsilonReading(
            f"**(ε, δ)-LDP** for the whole run of R = {r.rounds} round(s) with record sampling q = {g(q)} "
            "(PLDP-FL's calibration, Sec. 3.1; noise not scaled by the clip range, as in the paper).",
            approximate_meaning(r),
            (f"σ = √(4q²R/(1−q)·(2 ln(1/δ)/ε² + 1/ε)) = **{g(r.law.scale)}**.", exact_line,
             f"Per round the ledger charges ε/R = {g(r.epsilon / r.rounds)} (basic composition)."),
            warning + (" The paper's claim relies on amplification by sampling q and on σ being a noise "
                       "multiplier for sensitivity 1." if warning else ""))


GaussianMechanism.scalar = GaussianScalar()

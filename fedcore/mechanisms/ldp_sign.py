"""PLDP-FL's stochastic sign for non-IID data (seed 000, Sec. 3.1; METHODS section 1).

From Jin et al., "Stochastic-Sign SGD for Federated Learning with Theoretical Guarantees"
(arXiv:2002.10940, the DP variant): each coordinate ``p`` of the element-wise clipped
update (``[-c, c]``) becomes::

    +1 with probability Phi(p / sigma_i),   -1 otherwise,
    sigma_i = Delta_2 * sqrt(2 ln(1.25 / delta_i)) / eps_i

(``Phi`` the standard normal CDF, ``Delta_2`` the L2 sensitivity). Since
``P(p + sigma Z > 0) = Phi(p / sigma)`` for ``Z ~ N(0, 1)``, the output is exactly
``sign(p + N(0, sigma_i^2))``: a post-processing of the Gaussian mechanism, which is how it
is sampled here and why its privacy is the Gaussian mechanism's. The server aggregates
the signs and applies ``W += eta_s * sign(f(...))`` (the engine does this for
``upload_kind = "sign"``).

Budget per round. ``sigma_i`` is the classical Gaussian-mechanism calibration of one
release (Dwork & Roth, Thm A.1) and is recomputed identically every round, so the paper
charges ``eps_i`` per round: ``spent`` and the claim ``"paper (PLDP-FL)"`` are ``eps_i``
per round (basic composition over rounds). Two caveats the ledger makes visible:
Thm A.1 only holds for ``eps < 1``, and the paper's ``Delta_2`` (8 on MNIST) is a setting,
not the sensitivity of the clipped update: two vectors in ``[-c, c]^d`` can be
``2 c sqrt(d)`` apart. The ``gaussian`` record therefore uses that diameter, noise
multiplier ``sigma_i / (2 c sqrt(d))``, so the RDP column is a rigorous bound for what
ran; it agrees with the paper when ``l2_sensitivity = 2 c sqrt(d)``.

``deterministic=True`` is the paper's no-privacy baseline: upload ``sign(Delta_i)``
(threat model "none", headline infinity).

Threat model: local. Headline: the smaller of the RDP record above and the pure-eps
bound of the sign as randomized response: each coordinate's P(+1) lies in
``[Phi(-c/sigma_i), Phi(c/sigma_i)]``, so one coordinate is
``ln(Phi(c/sigma_i) / Phi(-c/sigma_i))``-LDP and a round, ``d`` coordinates, composes to
``d`` times that (:func:`sign_pure_epsilon`).
"""
from __future__ import annotations

import math

import numpy as np
import torch
from scipy.special import ndtr

from ..accounting.ledger import GaussianRecord
from .base import Upload
from .ldp_sign_spec import LdpSignSpec
from .scalar import (SIGN_ERROR, EpsilonReading, Knob, OutputLaw, Release, ScalarDemo, ScalarLaw,
                     approximate_meaning, g)
from .uldp_gaussian import gaussian_multiplier


def ldp_sign_sigma(epsilon: torch.Tensor, delta: torch.Tensor, l2_sensitivity: float) -> torch.Tensor:
    """``Delta_2 sqrt(2 ln(1.25/delta_i)) / eps_i``, element-wise (Gaussian mechanism)."""
    return (l2_sensitivity * gaussian_multiplier(epsilon, delta)).to(epsilon.dtype)


def sign_pure_epsilon(clip: float, sigma: torch.Tensor, d: int) -> torch.Tensor:
    """Pure eps of one round of the stochastic sign: ``d * ln(Phi(c/sigma) / Phi(-c/sigma))``.

    >>> round(float(sign_pure_epsilon(1.0, torch.tensor(1.0), 1)), 2)
    1.67
    """
    x = clip / sigma.double()
    log_cdf = torch.special.log_ndtr
    return (d * (log_cdf(x) - log_cdf(-x))).to(sigma.dtype)


class LdpSignMechanism(LdpSignSpec):
    """Clip to ``[-clip, clip]``, upload ``sign(p + N(0, sigma_i^2))`` per coordinate."""

    def __init__(self, options, ctx):
        super().__init__(options, ctx)
        o = options
        self.sigma = ldp_sign_sigma(ctx.epsilon, self.accounting_delta(), o.l2_sensitivity)   # [N]
        self.box_diameter = 2 * o.clip * math.sqrt(ctx.num_params)

    def noise_scale(self):
        """sigma_i of every client ``[N]``; None for the noise-free ``deterministic`` sign."""
        return None if self.options.deterministic else self.sigma

    def privatize(self, updates, clients, round, gen) -> Upload:
        c = self.options.clip
        signals = {"clipped_fraction": float((updates.abs() > c).float().mean())}
        if self.options.deterministic:
            return Upload(values=torch.sign(updates), clients=clients, is_sign=True,
                          spent=torch.zeros(len(clients), device=updates.device), signals=signals)
        sigma = self.sigma[clients].to(updates.dtype)
        noise = torch.randn(updates.shape, generator=gen, device=updates.device, dtype=updates.dtype)
        noisy = updates.clamp(-c, c) + sigma[:, None] * noise
        signs = torch.where(noisy > 0, 1.0, -1.0).to(updates.dtype)
        per_round = self.ctx.epsilon[clients]
        return Upload(values=signs, clients=clients, is_sign=True, noise_std=sigma, spent=per_round,
                      pure_epsilon=sign_pure_epsilon(c, sigma, self.ctx.num_params),
                      pure_count=torch.full_like(sigma, self.ctx.num_params),
                      gaussian=GaussianRecord(noise_multiplier=sigma / self.box_diameter),
                      claims={"paper (PLDP-FL)": per_round},
                      signals={**signals, "noise_std_mean": float(sigma.mean())})


# --- one number (the Mechanisms page) ---------------------------------------------------------
def ldp_sign_p_plus(w, sigma):
    """PLDP-FL Sec. 3.1 (seed 000; Jin et al. 2020): ``P(+1) = Phi(w / sigma)``, ``w`` clipped."""
    return ndtr(np.asarray(w, dtype=float) / np.asarray(sigma, dtype=float))


def sign_error(w, sigma):
    """Probability that ``ldp_sign`` releases the wrong sign: ``Phi(-|w| / sigma)``.

    The true sign of ``w = 0`` is taken as ``+1`` (the mechanism's tie rule), so the error
    is 1/2 there, as the formula gives.
    """
    return ndtr(-np.abs(np.asarray(w, dtype=float)) / np.asarray(sigma, dtype=float))


def empirical_sign_error(signs, w: float) -> float:
    """Fraction of released signs that differ from the sign of ``w`` (``+1`` for ``w >= 0``)."""
    truth = 1.0 if w >= 0 else -1.0
    return float(np.mean(np.asarray(signs) != truth))


class LdpSignScalar(ScalarLaw):
    """One number in ``[-c, c]`` released as a sign; the demo sets ``Delta_2 = 2 c``."""

    demo = ScalarDemo("ldp_sign", "approximate", SIGN_ERROR, (
        Knob("clip", "clip c (range [-c, c])", 0.1, 10.0, 4.0, 0.1,
             "PLDP-FL non-IID MNIST: c = 4; the demo sets Delta_2 = 2c, the width of the range"),))

    def options(self, values):
        o = super().options(values)
        return {**o, "l2_sensitivity": 2 * o["clip"]}

    def scale(self, epsilon, delta, options, rounds):
        eps = torch.as_tensor(np.asarray(epsilon, dtype=np.float64))
        return ldp_sign_sigma(eps, torch.full_like(eps, float(delta)), options["l2_sensitivity"]).numpy()

    def law(self, wc, epsilon, scale, options, hi):
        p_plus = float(ldp_sign_p_plus(wc, scale))
        mean = 2 * p_plus - 1
        return OutputLaw("mass", mean, 1 - mean ** 2, scale, "σ", (-1.0, 1.0), (1 - p_plus, p_plus))

    def error(self, wc, epsilon, scale, options, hi):
        return sign_error(wc, scale)

    def empirical(self, draws, w):
        return np.array([empirical_sign_error(row, w) for row in draws])

    def reading(self, r: Release) -> EpsilonReading:
        sens, law = r.hi - r.lo, r.law
        p_lo, p_hi = float(ndtr(r.lo / law.scale)), float(ndtr(r.hi / law.scale))
        eps_bit = math.log(p_hi / p_lo)
        root = math.sqrt(2 * math.log(1.25 / r.delta))
        worked = (f"σ = Δ₂·√(2 ln(1.25/δ))/ε = {g(sens)}·{g(root)}/{g(r.epsilon)} "
                  f"= {g(law.scale)} (classical Gaussian calibration, Dwork & Roth Thm A.1"
                  + (", which is only proven for ε < 1)." if r.epsilon >= 1 else ")."),
                  f"Only one bit leaves the client: P(+1) ranges from Φ({g(r.lo)}/σ) = {g(p_lo)} to "
                  f"Φ({g(r.hi)}/σ) = {g(p_hi)}. So the released sign is in fact pure ε′-LDP with "
                  f"ε′ = ln({g(p_hi)}/{g(p_lo)}) = **{g(eps_bit)}** (post-processing never hurts).",
                  f"For w = {g(r.wc)}: P(+1) = {g(law.probs[1])}, P(wrong sign) = "
                  f"{g(float(sign_error(r.wc, law.scale)))}.")
        return EpsilonReading(
            f"**(ε, δ)-LDP** per round (PLDP-FL, Sec. 3.1): ε = {g(r.epsilon)}, δ = {r.delta:.0e}, "
            "as a post-processing of the Gaussian mechanism.", approximate_meaning(r), worked)


LdpSignMechanism.scalar = LdpSignScalar()

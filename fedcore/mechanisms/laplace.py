"""The Laplace mechanism on the clipped update: a pure-eps LDP baseline (Dwork et al. 2006).

Not one of the five papers' methods; it is here to show what pure eps-LDP on a whole
update costs next to them. Each client clips its update element-wise to ``[-c, c]`` and
adds independent ``Laplace(0, b_i)`` noise to every coordinate with::

    b_i = Delta_1 / eps_i,   Delta_1 = 2 c d  (default)

``Delta_1`` is the L1 diameter of the box ``[-c, c]^d``, i.e. the L1 sensitivity under
LDP (any two inputs); ``l1_sensitivity`` overrides it (e.g. for a bound you can justify
yourself). One release is eps_i-LDP, so ``spent`` is ``eps_i`` per round and the ledger
composes additively (pure eps, no RDP record). ``noise_std`` is ``sqrt(2) b_i``.
Threat model: local. The headline's pure eps is ``eps_i * max(1, 2 c d / Delta_1)``: an
override smaller than the box's diameter does not shrink the true sensitivity.
"""
from __future__ import annotations

import math

import numpy as np
import torch

from .base import Upload
from .laplace_spec import LaplaceSpec
from .scalar import VARIANCE, EpsilonReading, Knob, OutputLaw, Release, ScalarDemo, ScalarLaw, g, pure_meaning


def laplace_noise(shape, scale: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """``Laplace(0, scale)`` samples as the difference of two exponentials."""
    e = torch.empty((2, *shape), device=scale.device, dtype=scale.dtype).exponential_(generator=gen)
    return scale * (e[0] - e[1])


class LaplaceMechanism(LaplaceSpec):
    """Clip to ``[-clip, clip]``, add ``Laplace(0, Delta_1 / eps_i)`` per coordinate."""

    def __init__(self, options, ctx):
        super().__init__(options, ctx)
        self.l1_sensitivity = options.l1_sensitivity or 2 * options.clip * ctx.num_params

    def noise_scale(self) -> torch.Tensor:
        """Noise standard deviation ``sqrt(2) Delta_1 / eps_i`` of every client ``[N]``."""
        return 2 ** 0.5 * self.l1_sensitivity / self.ctx.epsilon

    def privatize(self, updates, clients, round, gen) -> Upload:
        c = self.options.clip
        eps = self.ctx.epsilon[clients].to(updates.dtype)
        scale = self.l1_sensitivity / eps
        noisy = updates.clamp(-c, c) + laplace_noise(updates.shape, scale[:, None], gen)
        rigorous = eps * max(1.0, 2 * c * self.ctx.num_params / self.l1_sensitivity)
        return Upload(values=noisy, clients=clients, noise_std=scale * 2 ** 0.5, spent=eps, pure_epsilon=rigorous,
                      signals={"clipped_fraction": float((updates.abs() > c).float().mean())})


# --- one number (the Mechanisms page) ---------------------------------------------------------
class LaplaceScalar(ScalarLaw):
    """One number in ``[-c, c]``: L1 sensitivity ``2 c``, scale ``b = 2 c / eps``."""

    demo = ScalarDemo("laplace", "pure", VARIANCE, (
        Knob("clip", "clip c (range [-c, c])", 0.01, 1.0, 0.05, 0.01,
             "L1 sensitivity of one number in [-c, c] is 2c"),))

    def scale(self, epsilon, delta, options, rounds):
        return 2 * options["clip"] / np.asarray(epsilon, dtype=float)

    def law(self, wc, epsilon, scale, options, hi):
        return OutputLaw("laplace", wc, 2 * scale ** 2, scale, "b")

    def error(self, wc, epsilon, scale, options, hi):
        return 2 * scale ** 2

    def reading(self, r: Release) -> EpsilonReading:
        sens, law = r.hi - r.lo, r.law
        return EpsilonReading(
            f"**Pure ε-LDP** (Laplace mechanism): noise scale b = Δ₁/ε = {g(sens)}/{g(r.epsilon)} = "
            f"{g(law.scale)} for one number in [{g(r.lo)}, {g(r.hi)}].",
            pure_meaning(r),
            (f"Moving the input by Δ multiplies the density of any output by at most e^(Δ/b); the widest "
             f"move is Δ₁ = {g(sens)}, giving e^({g(sens)}/{g(law.scale)}) = {g(math.exp(r.epsilon))} = e^ε.",
             f"Noise standard deviation √2·b = {g(math.sqrt(law.variance))}: at this ε the released value "
             f"is w ± {g(math.sqrt(law.variance))} for a range of width {g(sens)}."))


LaplaceMechanism.scalar = LaplaceScalar()

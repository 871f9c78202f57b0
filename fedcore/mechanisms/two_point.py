"""LDP-FL's two-point mechanism with splitting and shuffling (seed 001, Eq. 2; METHODS section 2).

Each weight ``w``, clipped to ``[c - r, c + r]`` (``c`` the range centre, ``r`` its
radius), is replaced by one of two values::

    w* = c + r (e^eps + 1)/(e^eps - 1)  with probability
         [(w - c)(e^eps - 1) + r (e^eps + 1)] / [2 r (e^eps + 1)]
    w* = c - r (e^eps + 1)/(e^eps - 1)  otherwise.

Unbiased: ``E[w*] = w``. Variance: ``r^2 ((e^eps + 1)/(e^eps - 1))^2 - (w - c)^2``.
eps-LDP per weight: the probability of either output ranges over
``[1/(e^eps + 1), e^eps/(e^eps + 1)]``, a ratio of at most ``e^eps``. This needs ``c`` and
``r`` independent of the client's data, which shapes the per-layer option below.

Splitting and shuffling (``shuffle=True``, the paper): every weight travels separately and
anonymously, so the server receives, for each parameter position, the *multiset* of the
clients' values. Simulated faithfully: each column of the ``[m, d]`` upload is permuted
independently across clients, and the upload is marked unlinkable. Averaging is
unaffected; rules that weight clients (fedavg, PLDP-FL's B and C, Hellinger) are
impossible, and the compatibility rules refuse them at configuration time: they read
``traits_for(options)``, whose ``shuffled`` follows the ``shuffle`` option (the class
attribute stays False; the instance attribute reflects the option).

Budget per round, what the ledger shows:

- ``spent`` (basic composition, rigorous): ``d * eps`` per round, the ``d`` weights of one
  client composed, which is the figure without shuffling (the paper's ``d T eps`` over
  ``T`` rounds);
- claim ``"composed eps (no shuffling)"``: the same ``d * eps`` per round, labelled;
- claim ``"per-weight eps (with shuffling)"`` (only when shuffling): ``eps`` per round, the
  paper's argument that anonymity removes the composition over weights and rounds. It is
  the paper's claim, not a theorem: amplification by shuffling (Erlingsson et al. 2019)
  gives a central guarantee, not this local one.

Threat model: local. Headline: the pure ``d * eps`` per round (rigorous, composed over
rounds); the shuffling figure stays a labelled claim resting on the anonymity assumption.
With ``layer_range="own_update"`` the outputs reveal the range, so no bound is claimed
(headline infinity).

Per-layer ranges (``per_layer=True``; the paper's CIFAR-10 choice sets each layer's range
from that layer's values). Two sources:

- ``layer_range = "previous_global"`` (default, LDP-honest): each layer's ``[lo, hi]`` is
  the range of that layer in the previous round's global update, which the server already
  broadcast (post-processing of private outputs). To keep the noisy aggregate from feeding
  an ever wider range back, each layer's interval is intersected with the fixed
  ``[center - radius, center + radius]``: per-layer ranges can only tighten the global one.
  Round 1 (and any layer whose previous range is empty) uses the fixed range.
- ``layer_range = "own_update"`` (paper-literal): each client uses the range of its own
  update's layer. Its outputs ``c_l +- r_l (e^eps+1)/(e^eps-1)`` then reveal ``c_l`` and
  ``r_l``, functions of the private data: **not** eps-LDP; offered to reproduce the paper.
"""
from __future__ import annotations

import math
from typing import Optional

import numpy as np
import torch

from .base import Upload
from .scalar import VARIANCE, EpsilonReading, Knob, OutputLaw, Release, ScalarDemo, ScalarLaw, g, pure_meaning
from .two_point_spec import TwoPointSpec


def two_point(w: torch.Tensor, center, radius, epsilon, gen: torch.Generator) -> torch.Tensor:
    """LDP-FL Eq. 2 on ``w`` (already clipped to ``[center - radius, center + radius]``).

    ``center``, ``radius`` and ``epsilon`` broadcast against ``w``. Written with
    ``t = tanh(eps/2) = (e^eps - 1)/(e^eps + 1)`` so that large eps stays finite: the outputs
    are ``center +- radius / t`` and ``P(high) = (1 + t (w - center) / radius) / 2``.
    """
    t = torch.tanh(epsilon / 2)
    p_high = (1 + t * (w - center) / radius) / 2
    high = torch.rand(w.shape, generator=gen, device=w.device, dtype=w.dtype) < p_high
    return center + torch.where(high, radius / t, -radius / t)


def shuffle_columns(values: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """Permute each column of ``values [m, d]`` independently across its ``m`` rows."""
    keys = torch.rand(values.shape, generator=gen, device=values.device)
    return values.gather(0, keys.argsort(dim=0))


class TwoPointMechanism(TwoPointSpec):
    """Clip to ``[c - r, c + r]``, randomise each weight to two points, shuffle columns."""

    def __init__(self, options, ctx):
        super().__init__(options, ctx)
        self.shuffled = options.shuffle
        self._previous: Optional[torch.Tensor] = None   # last global update, update units

    def _ranges(self, updates: torch.Tensor) -> tuple:
        """Centre and radius, scalars or broadcastable against ``updates [m, d]``."""
        o = self.options
        if not o.per_layer:
            return o.center, o.radius
        source = updates if o.layer_range == "own_update" else self._previous
        if source is None:
            return o.center, o.radius
        source = source.reshape(-1, updates.shape[1])                   # [1 or m, d]
        lo, hi = torch.empty_like(source), torch.empty_like(source)
        for sl in self.ctx.layer_slices.values():
            lo[:, sl] = source[:, sl].amin(dim=1, keepdim=True)
            hi[:, sl] = source[:, sl].amax(dim=1, keepdim=True)
        if o.layer_range == "previous_global":
            lo = lo.clamp(min=o.center - o.radius)
            hi = hi.clamp(max=o.center + o.radius)
        empty = hi <= lo
        center = torch.where(empty, o.center, (lo + hi) / 2)
        radius = torch.where(empty, o.radius, (hi - lo) / 2)
        return center, radius

    def privatize(self, updates, clients, round, gen) -> Upload:
        center, radius = self._ranges(updates)
        clipped = torch.clamp(updates, center - radius, center + radius)
        eps = self.ctx.epsilon[clients].to(updates.dtype)
        values = two_point(clipped, center, radius, eps[:, None], gen)
        widest = float(radius.max()) if torch.is_tensor(radius) else radius
        std_bound = widest / torch.tanh(eps / 2)   # the standard deviation at w = c, the largest
        if self.options.shuffle:
            values = shuffle_columns(values, gen)
        composed = eps * self.ctx.num_params
        claims = {"composed eps (no shuffling)": composed}
        if self.options.shuffle:
            claims["per-weight eps (with shuffling)"] = eps
        literal = self.options.per_layer and self.options.layer_range == "own_update"
        return Upload(values=values, clients=clients, noise_std=std_bound, spent=composed, claims=claims,
                      pure_epsilon=None if literal else composed,
                      pure_count=torch.full_like(eps, self.ctx.num_params),
                      linkable=not self.options.shuffle,
                      signals={"clipped_fraction": float((clipped != updates).float().mean())})

    def after_round(self, global_update, round) -> None:
        if global_update is not None:
            self._previous = global_update.detach() / self.ctx.server_lr


# --- one number (the Mechanisms page) ---------------------------------------------------------
def two_point_law(w, epsilon, center: float, radius: float):
    """LDP-FL Eq. 2 (seed 001): outputs ``c -+ r (e^eps + 1)/(e^eps - 1)`` and their probabilities.

    ``P(high) = [(w - c)(e^eps - 1) + r (e^eps + 1)] / [2 r (e^eps + 1)]``; returns
    ``(low, high, p_low, p_high)``, broadcasting over arrays.
    """
    w, eps = np.asarray(w, dtype=float), np.asarray(epsilon, dtype=float)
    e = np.exp(eps)
    magnitude = radius * (e + 1) / (e - 1)
    p_high = ((w - center) * (e - 1) + radius * (e + 1)) / (2 * radius * (e + 1))
    return center - magnitude, center + magnitude, 1 - p_high, p_high


def two_point_variance(w, epsilon, center: float, radius: float):
    """LDP-FL Sec. 4.3 (seed 001): ``Var[w*] = r^2 ((e^eps + 1)/(e^eps - 1))^2 - (w - c)^2``."""
    e = np.exp(np.asarray(epsilon, dtype=float))
    return radius ** 2 * ((e + 1) / (e - 1)) ** 2 - (np.asarray(w, dtype=float) - center) ** 2


class TwoPointScalar(ScalarLaw):
    """One weight in ``[-r, r]`` (no shuffling: it only permutes who sent which value)."""

    demo = ScalarDemo("two_point", "pure", VARIANCE, (
        Knob("radius", "clip radius r (range [-r, r])", 0.01, 1.0, 0.075, 0.005,
             "LDP-FL uses r = 0.075 on MNIST and Fashion-MNIST"),), fixed={"shuffle": False})

    def clip_range(self, options):
        return -options["radius"], options["radius"]

    def scale(self, epsilon, delta, options, rounds):
        return two_point_law(0.0, epsilon, 0.0, options["radius"])[1]

    def law(self, wc, epsilon, scale, options, hi):
        low, high, p_low, p_high = two_point_law(wc, epsilon, 0.0, hi)
        return OutputLaw("mass", wc, float(two_point_variance(wc, epsilon, 0.0, hi)), scale,
                         "output magnitude r(e^ε+1)/(e^ε-1)", (float(low), float(high)),
                         (float(p_low), float(p_high)))

    def error(self, wc, epsilon, scale, options, hi):
        return two_point_variance(wc, epsilon, 0.0, hi)

    def reading(self, r: Release) -> EpsilonReading:
        ratio = math.exp(r.epsilon)
        p_min, p_max = 1 / (ratio + 1), ratio / (ratio + 1)
        law = r.law
        return EpsilonReading(
            f"**Pure ε-LDP** per weight (LDP-FL, Theorem 1): ε = {g(r.epsilon)} for each released number.",
            pure_meaning(r),
            (f"The only possible outputs are ±{g(law.points[1])}, whatever the input.",
             f"P(output = +{g(law.points[1])}) ranges from 1/(e^ε+1) = {g(p_min)} (input {g(r.lo)}) "
             f"to e^ε/(e^ε+1) = {g(p_max)} (input {g(r.hi)}): ratio {g(p_max / p_min)} = e^ε.",
             f"For w = {g(law.mean)}: P(+) = {g(law.probs[1])}, so the server's estimate is unbiased "
             f"but has standard deviation {g(math.sqrt(law.variance))}.",
             "A client's d weights over T rounds compose to d·T·ε; LDP-FL's splitting and shuffling "
             "argue for ε per weight instead (the run ledger shows both)."))


TwoPointMechanism.scalar = TwoPointScalar()

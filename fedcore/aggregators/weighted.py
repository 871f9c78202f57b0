"""PLDP-FL rule B: average weighted by each client's inverse noise scale (seed 000, Sec. 4).

Option ``weights``: ``"inverse_std"`` (default, the paper: alpha_i ~ 1/sigma_i) or
``"inverse_variance"`` (ablation B-IVW: alpha_i ~ 1/sigma_i^2, the weights that minimise the
variance of a weighted mean of independent unbiased noisy uploads).

With rho_i = 1 / sigma_i (sigma_i = the noise standard deviation client i's mechanism used,
``Upload.noise_std``), the server computes

    alpha_i = rho_i / sum_j rho_j,        f = sum_i alpha_i G~_i

over the round's uploaders (METHODS section 1, rule B). Less noisy clients, i.e. those
with a larger personal budget eps_i, count more. The rule needs to know which upload
came from which client, so it is impossible under LDP-FL's shuffling.

On sign uploads (PLDP-FL non-IID, ldp-sign mechanism) the same weights are applied to
the +-1 vectors; the engine then steps along ``sign(f)``.

Fallbacks, both stated rather than silent:

- uploads without a noise scale (``noise_std is None``, e.g. mechanism ``none``): uniform
  weights, and a ``uniform_fallback`` event each such round;
- clients with sigma_i = 0 (rho_i infinite): the weight is shared equally by those
  noise-free clients (the limit of alpha when their sigmas shrink at the same rate).

>>> import torch
>>> inverse_noise_weights(torch.tensor([1.0, 1.0, 0.5])).tolist()
[0.25, 0.25, 0.5]
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..constraints import Choice, setting
from ..events import MethodEvent
from .base import WeightedSum
from .registry import AGGREGATORS

if TYPE_CHECKING:
    import torch

WEIGHTINGS = ("inverse_std", "inverse_variance")


def inverse_noise_weights(noise_std: torch.Tensor, power: float = 1.0) -> torch.Tensor:
    """``alpha_i = sigma_i^-p / sum_j sigma_j^-p`` for ``noise_std [m]`` (float64 inside);
    ``power`` 1 is rule B, 2 the inverse-variance ablation B-IVW.

    Entries with sigma_i = 0 share the whole weight equally (see the module docstring).

    >>> import torch
    >>> inverse_noise_weights(torch.tensor([1.0, 2.0]), power=2).tolist()
    [0.800000011920929, 0.20000000298023224]
    """
    import torch

    sigma = noise_std.to(torch.float64)
    if (sigma < 0).any():
        raise ValueError("noise standard deviations must be >= 0")
    exact = sigma == 0
    rho = exact.to(torch.float64) if exact.any() else sigma ** -power
    return (rho / rho.sum()).to(noise_std.dtype)


@AGGREGATORS.register("weighted", summary="Average weighted by 1/sigma_i, the clients' inverse noise (rule B).",
                      paper="PLDP-FL (seed 000), rule B")
class WeightedAggregator(WeightedSum):
    """alpha_i proportional to 1 / sigma_i over the uploaders; needs linkable uploads."""

    needs_linkable = True

    @dataclass(frozen=True)
    class Options:
        """``weights``: inverse_std (rule B, the paper) or inverse_variance (ablation B-IVW)."""

        weights: str = setting("inverse_std", Choice(WEIGHTINGS),
                               "inverse_std: alpha_i ~ 1/sigma_i (the paper's rule B); inverse_variance: "
                               "alpha_i ~ 1/sigma_i^2 (B-IVW, the minimum-variance weights)")

    def weights(self, upload):
        import torch  # here, not at the top: resolving a config that names this loads no torch

        values = upload.values
        m = values.shape[0]
        if upload.noise_std is None:
            event = MethodEvent("uniform_fallback", None, {
                "reason": "the mechanism reports no noise scale, so rule B has no 1/sigma_i "
                          "to weight by; the uploads were averaged uniformly"})
            return torch.full((m,), 1.0 / m, dtype=values.dtype, device=values.device), [event]
        power = 2.0 if self.options.weights == "inverse_variance" else 1.0
        return inverse_noise_weights(upload.noise_std.to(values.device), power).to(values.dtype), []

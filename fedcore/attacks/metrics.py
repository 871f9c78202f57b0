"""Metrics a person can read, each beside its chance level (``shared/ATTACKS.md`` §2).

- **re-identified**: the nearest neighbour (L2, same preprocessing) of the reconstruction
  among the n images of the client is one of the k images its update was computed from;
  chance ``k / n``;
- **label recovered**: chance ``1 / classes``;
- **PSNR** ``= 10 log10(peak² / MSE)`` against the used image closest to the reconstruction
  (for one example, the example itself).

>>> import torch
>>> images = torch.eye(4)
>>> guess = nearest(torch.tensor([[0.9, 0.1, 0.0, 0.0]]), images)
>>> guess.tolist(), round(psnr(torch.tensor([0.5, 0.5]), torch.tensor([0.5, 0.6]), peak=1.0), 2)
([0], 23.01)
"""
from __future__ import annotations

import math

import torch


def nearest(recon: torch.Tensor, candidates: torch.Tensor) -> torch.Tensor:
    """``[k]`` index of each reconstruction's nearest candidate (``recon [k, p]``, ``candidates [n, p]``)."""
    return torch.cdist(recon.double(), candidates.double()).argmin(1)


def psnr(recon: torch.Tensor, truth: torch.Tensor, peak: float) -> float:
    """Peak signal-to-noise ratio in dB (capped at 100 dB for an exact copy)."""
    return psnr_from_mse(float(((recon.double() - truth.double()) ** 2).mean()), peak)


def psnr_from_mse(mse: float, peak: float) -> float:
    """``10 log10(peak² / mse)`` dB, capped at 100 dB for an exact copy."""
    return 100.0 if mse <= peak * peak * 1e-10 else 10.0 * math.log10(peak * peak / mse)


def standard_error(successes: float, trials: int) -> float:
    """Binomial standard error of a success rate over ``trials``."""
    if trials <= 0:
        return math.nan
    p = successes / trials
    return math.sqrt(max(p * (1.0 - p), 1.0 / trials) / trials)

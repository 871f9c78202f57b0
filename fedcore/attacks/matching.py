"""Gradient matching for updates the analytic inversion cannot read: conv models, many steps.

Inverting Gradients (Geiping, Bauermeister, Dröge & Moeller 2020, Eq. 4), which refines DLG
(Zhu, Liu & Han 2019): find the input whose gradient points where the received update does,

    min_x  1 - ⟨∇θ ℓ(f(x), y), g⟩ / (‖∇θ ℓ(f(x), y)‖ ‖g‖)  +  α · TV(x),     g = -update

with signed Adam steps and a box constraint to the data's range. The label ``y`` comes from the
output bias (iDLG, :func:`fedcore.attacks.inversion.recover_label`). A multi-step FedAvg update
is treated as one gradient (its direction is the sum of the steps'), which is exactly why the
attack weakens with local training (SoK, arXiv:2404.05403). The search stops at a time budget,
reported with the result.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import torch
from torch.func import functional_call

from .registry import Attack, reconstruction_game, register


@dataclass
class Matched:
    image: torch.Tensor     # [*input_shape]
    seconds: float
    iterations: int
    loss: float


def total_variation(x: torch.Tensor) -> torch.Tensor:
    """Mean absolute difference of neighbouring pixels (the last two axes)."""
    return (x[..., 1:, :] - x[..., :-1, :]).abs().mean() + (x[..., :, 1:] - x[..., :, :-1]).abs().mean()


def match_gradient(model: torch.nn.Module, params: dict, update: torch.Tensor, label: int,
                   input_shape: tuple, box: tuple[float, float], budget_s: float = 2.0,
                   tv: float = 1e-2, lr: float = 0.1, seed: int = 0, steps: int | None = None) -> Matched:
    """The input whose gradient at ``params`` best matches ``-update [d]`` within ``budget_s`` seconds, or, with
    ``steps``, after exactly that many steps whatever the host's load (the same search every time)."""
    gen = torch.Generator(device=update.device).manual_seed(seed)
    lo, hi = box
    x = (lo + (hi - lo) * torch.rand((1, *input_shape), generator=gen, device=update.device)).requires_grad_()
    target = -update.detach().float()
    target = target / target.norm().clamp(min=1e-30)
    fixed = {k: v.detach().requires_grad_() for k, v in params.items()}
    y = torch.tensor([label], device=update.device)
    opt = torch.optim.Adam([x], lr=lr)
    t0, done, loss = time.perf_counter(), 0, torch.tensor(0.0)
    while done < steps if steps is not None else time.perf_counter() - t0 < budget_s:
        opt.zero_grad()
        out = functional_call(model, fixed, (x,))
        ce = -torch.log_softmax(out, -1).gather(1, y[:, None]).sum()
        grads = torch.autograd.grad(ce, list(fixed.values()), create_graph=True)
        g = torch.cat([gr.reshape(-1) for gr in grads])
        loss = 1 - (g @ target) / g.norm().clamp(min=1e-30) + tv * total_variation(x)
        (gx,) = torch.autograd.grad(loss, [x])
        x.grad = gx.sign()
        opt.step()
        with torch.no_grad():
            x.clamp_(lo, hi)
        done += 1
    return Matched(x.detach()[0], time.perf_counter() - t0, done, float(loss.detach()))


register(Attack("gradient_matching", "reconstruction",
                "min_x 1 - cos(∇θ ℓ(f(x), y), g) + α · TV(x)", ("raw", "upload", "aggregate"), "any", reconstruction_game),
         summary="Gradient matching for updates the analytic inversion cannot read (conv models, many steps).",
         paper="Geiping et al. 2020 Eq. 4; Zhu, Liu & Han 2019")

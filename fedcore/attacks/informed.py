"""The informed adversary's re-identification: match the update against every candidate's own.

The adversary of the cap (Balle, Cherubin & Hayes 2022, "Reconstructing training data with
informed adversaries"; ``shared/ATTACKS.md`` §3) knows the global model and the n images the
client may have trained on. For each candidate z_j it computes the update that image alone
would give, ``u_j = -∇θ ℓ(f_θ(x_j), y_j)`` at the round's global parameters, and guesses the
candidate most aligned with what it received ``v``:

    ĵ = argmax_j ⟨v, u_j⟩ / (‖v‖ ‖u_j‖)

For one example, one step and isotropic Gaussian noise after L2 clipping this is close to the
likelihood-ratio guess among real candidates, so a mechanism that adds far less noise than it
accounts shows up here (the planted σ/10 of ``tests/test_attacks.py``); real digits' updates are
too alike to expose σ/3, which the worst-case record does (:mod:`.worst_case`). Unlike the
analytic inversion it needs no linear first layer: one ``vmap(grad)`` over the candidates.
"""
from __future__ import annotations

import torch
from torch.func import functional_call, vmap


def candidate_updates(model: torch.nn.Module, params: dict, x: torch.Tensor, y: torch.Tensor,
                      chunk: int = 512) -> torch.Tensor:
    """``[n, d]``: each candidate's single-example update direction ``-∇θ ℓ`` (flattened).

    One copy of the parameters per candidate, a ``vmap`` of the forward pass and one plain
    backward (as :mod:`fedcore.engine.local` trains): ``torch.func.grad``'s first call would
    import ``torch._dynamo``, a second of start-up on every run that carries the attack."""
    rows = []
    for i in range(0, len(x), chunk):
        xs, ys = x[i:i + chunk], y[i:i + chunk]
        copies = {k: v.detach().unsqueeze(0).repeat(len(xs), *([1] * v.dim())).requires_grad_()
                  for k, v in params.items()}
        logits = vmap(lambda p, xi: functional_call(model, p, (xi[None],))[0])(copies, xs)
        loss = -torch.log_softmax(logits, -1).gather(1, ys[:, None]).sum()
        grads = torch.autograd.grad(loss, list(copies.values()))
        rows.append(-torch.cat([g.reshape(len(xs), -1) for g in grads], 1))
    return torch.cat(rows)


def match_candidates(received: torch.Tensor, updates: torch.Tensor) -> int:
    """Index of the candidate whose update is most aligned (cosine) with ``received [d]``."""
    norms = updates.norm(dim=1).clamp(min=1e-30)
    return int(((updates @ received.to(updates.dtype)) / norms).argmax())

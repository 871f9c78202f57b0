"""The plain per-client PyTorch loop: the baseline the batched engine is checked against.

Each client gets its own ``nn.Module`` copy and ``torch.optim.SGD`` and walks the same
batches as the batched engine (from the same :class:`BatchPlan`). Used by the tests
(equality to tolerance) and the benchmarks (speed-up, and the Flower clients' local
training). Not used by real runs. DP-SGD's per-sample clipping is done the plain way, one
sample at a time (microbatches of 1).
"""
from __future__ import annotations

import copy

import torch
import torch.nn.functional as F

from typing import Optional

from ..config import LocalConfig
from .plan import BatchPlan


def clipped_backward(net: torch.nn.Module, x: torch.Tensor, y: torch.Tensor, clip: float) -> None:
    """Set ``p.grad`` to DP-SGD's gradient: each sample's gradient clipped to L2 norm
    ``clip``, then averaged over the batch (Abadi et al. 2016, Alg. 1)."""
    params = list(net.parameters())
    total = [torch.zeros_like(p) for p in params]
    for i in range(len(y)):
        grads = torch.autograd.grad(F.cross_entropy(net(x[i:i + 1]), y[i:i + 1]), params)
        norm = torch.sqrt(sum(g.pow(2).sum() for g in grads))
        scale = (clip / (norm + 1e-12)).clamp(max=1.0)
        for t, g in zip(total, grads):
            t.add_(scale * g)
    for p, t in zip(params, total):
        p.grad = t / len(y)


def train_clients_loop(model: torch.nn.Module, start: dict[str, torch.Tensor], x_all, y_all,
                       plan: BatchPlan, local: LocalConfig,
                       clip: Optional[float] = None) -> dict[str, torch.Tensor]:
    """Same contract as :func:`fedcore.engine.local.train_clients`."""
    results = []
    for c in range(plan.index.shape[0]):
        net = copy.deepcopy(model)
        net.load_state_dict(start, strict=False)
        opt = torch.optim.SGD(net.parameters(), lr=local.lr, weight_decay=local.weight_decay,
                              momentum=local.momentum if local.optimizer == "momentum" else 0.0)
        for batch in plan.client_batches(c):
            opt.zero_grad()
            if clip is None:
                F.cross_entropy(net(x_all[batch]), y_all[batch]).backward()
            else:
                clipped_backward(net, x_all[batch], y_all[batch], clip)
            opt.step()
        results.append({k: v.detach() for k, v in net.named_parameters()})
    return {k: torch.stack([r[k] for r in results]) for k in results[0]}

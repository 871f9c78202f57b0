"""The plain per-client PyTorch loop: the baseline the batched engine is checked against.

Each client gets its own ``nn.Module`` copy and ``torch.optim.SGD`` and walks the same
batches as the batched engine (from the same :class:`BatchPlan`). Used by the tests
(equality to tolerance) and the benchmarks (speed-up). Not used by real runs.
"""
from __future__ import annotations

import copy

import torch
import torch.nn.functional as F

from ..config import LocalConfig
from .plan import BatchPlan


def train_clients_loop(model: torch.nn.Module, start: dict[str, torch.Tensor], x_all, y_all,
                       plan: BatchPlan, local: LocalConfig) -> dict[str, torch.Tensor]:
    """Same contract as :func:`fedcore.engine.local.train_clients` (no DP clipping)."""
    results = []
    for c in range(plan.index.shape[0]):
        net = copy.deepcopy(model)
        net.load_state_dict(start, strict=False)
        opt = torch.optim.SGD(net.parameters(), lr=local.lr, weight_decay=local.weight_decay,
                              momentum=local.momentum if local.optimizer == "momentum" else 0.0)
        for batch in plan.client_batches(c):
            opt.zero_grad()
            F.cross_entropy(net(x_all[batch]), y_all[batch]).backward()
            opt.step()
        results.append({k: v.detach() for k, v in net.named_parameters()})
    return {k: torch.stack([r[k] for r in results]) for k in results[0]}

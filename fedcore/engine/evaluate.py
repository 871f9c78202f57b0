"""Test-set accuracy and mean cross-entropy of the global model."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch.func import functional_call


@torch.no_grad()
def evaluate(model: torch.nn.Module, params: dict[str, torch.Tensor], x: torch.Tensor,
             y: torch.Tensor, chunk: int = 4096) -> tuple[float, float]:
    """Return ``(accuracy, loss)`` of ``model`` with ``params`` on ``(x, y)``."""
    correct, total_loss = 0, 0.0
    for i in range(0, len(y), chunk):
        logits = functional_call(model, params, (x[i:i + chunk],))
        total_loss += F.cross_entropy(logits, y[i:i + chunk], reduction="sum").item()
        correct += (logits.argmax(1) == y[i:i + chunk]).sum().item()
    n = max(1, len(y))
    return correct / n, total_loss / n

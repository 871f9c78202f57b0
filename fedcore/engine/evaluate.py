"""Test-set accuracy and mean cross-entropy of the global model."""
from __future__ import annotations

from typing import Optional

import torch
import torch.nn.functional as F
from torch.func import functional_call

CPU_CHUNK = 1024
"""Test samples per forward pass on CPU: 4096 samples of a small CNN spill the caches and
take about twice as long (docs/benchmarks.md); on a GPU the chunk is 8192."""


@torch.no_grad()
def evaluate(model: torch.nn.Module, params: dict[str, torch.Tensor], x: torch.Tensor,
             y: torch.Tensor, chunk: Optional[int] = None) -> tuple[float, float]:
    """Return ``(accuracy, loss)`` of ``model`` with ``params`` on ``(x, y)``."""
    chunk = chunk or (CPU_CHUNK if x.device.type == "cpu" else 8192)
    correct, total_loss = 0, 0.0
    for i in range(0, len(y), chunk):
        logits = functional_call(model, params, (x[i:i + chunk],))
        total_loss += F.cross_entropy(logits, y[i:i + chunk], reduction="sum").item()
        correct += (logits.argmax(1) == y[i:i + chunk]).sum().item()
    n = max(1, len(y))
    return correct / n, total_loss / n

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
    correct = torch.zeros((), dtype=torch.long, device=x.device)
    total_loss = torch.zeros((), dtype=torch.float64, device=x.device)
    for i in range(0, len(y), chunk):  # sums stay on the device: one host sync per evaluation
        logits = functional_call(model, params, (x[i:i + chunk],))
        total_loss += F.cross_entropy(logits, y[i:i + chunk], reduction="sum").double()
        correct += (logits.argmax(1) == y[i:i + chunk]).sum()
    n = max(1, len(y))
    return int(correct.item()) / n, float(total_loss.item()) / n

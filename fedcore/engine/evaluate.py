"""Test-set accuracy and mean cross-entropy of the global model."""
from __future__ import annotations

from typing import Callable, Optional

import torch
import torch.nn.functional as F
from torch.func import functional_call

CPU_CHUNK = 1024
"""Test samples per forward pass on CPU: 4096 samples of a small CNN spill the caches and
take about twice as long (docs/benchmarks.md); on a GPU the chunk is 8192."""


@torch.no_grad()
def evaluate(model: torch.nn.Module, params: dict[str, torch.Tensor], x: torch.Tensor,
             y: torch.Tensor, chunk: Optional[int] = None, graphs=None,
             meanwhile: Optional[Callable[[], None]] = None) -> tuple[float, float]:
    """Return ``(accuracy, loss)`` of ``model`` with ``params`` on ``(x, y)``. ``graphs`` (a
    :class:`~fedcore.engine.graphs.StepGraphs`, on CUDA): the whole pass is replayed as one captured
    graph, the parameters copied in (the same kernels on the same data, so the same sums), where a
    chunk's activations fit :data:`~fedcore.engine.graphs.GRAPH_BYTES` (a graph keeps its memory).
    ``meanwhile``: host work run once the pass is queued and before its sums are read (the round's
    ledger entry: on a GPU it overlaps the device's pass; on a CPU it simply comes after it)."""
    chunk = chunk or (CPU_CHUNK if x.device.type == "cpu" else 8192)
    sums = None
    if graphs is not None:
        from .local import activation_floats

        sums = graphs.evaluate(lambda p: accuracy_sums(model, p, x, y, chunk), params, (id(x), chunk),
                               size=lambda: 4 * min(chunk, len(y)) * activation_floats(model, tuple(x.shape[1:])))
    correct, total_loss = sums if sums is not None else accuracy_sums(model, params, x, y, chunk)
    if meanwhile is not None:
        meanwhile()
    n = max(1, len(y))
    return int(correct.item()) / n, float(total_loss.item()) / n


def accuracy_sums(model: torch.nn.Module, params: dict[str, torch.Tensor], x: torch.Tensor, y: torch.Tensor,
                  chunk: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Correct predictions and the summed cross-entropy (float64) over ``(x, y)``, ``chunk`` samples
    per forward; both stay on the device (one host sync per evaluation, in :func:`evaluate`)."""
    correct = torch.zeros((), dtype=torch.long, device=x.device)
    total_loss = torch.zeros((), dtype=torch.float64, device=x.device)
    for i in range(0, len(y), chunk):
        logits = functional_call(model, params, (x[i:i + chunk],))
        total_loss += F.cross_entropy(logits, y[i:i + chunk], reduction="sum").double()
        correct += (logits.argmax(1) == y[i:i + chunk]).sum()
    return correct, total_loss

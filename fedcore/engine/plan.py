"""Which samples each client uses at each local step, for all clients at once.

Clients hold different numbers of samples, so the plan is padded: ``index[c, s, b]`` is
the training-set row that client ``c`` uses as the ``b``-th example of its ``s``-th
local step, ``mask`` marks real examples, and ``active[c, s]`` says whether client ``c``
takes step ``s`` at all (a client with fewer samples finishes its epoch earlier and idles,
leaving its parameters and momentum untouched). Epoch mode matches a per-client
``DataLoader(shuffle=True, drop_last=False)``: every sample once per epoch, the last batch
partial.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from ..config import LocalConfig


@dataclass
class BatchPlan:
    """``index`` [m, S, B] long, ``mask`` [m, S, B] float, ``active`` [m, S] float."""

    index: torch.Tensor
    mask: torch.Tensor
    active: torch.Tensor

    @property
    def steps(self) -> int:
        return self.index.shape[1]

    def client_batches(self, c: int) -> list[torch.Tensor]:
        """Client ``c``'s batches in order, without padding (for reference loops)."""
        return [self.index[c, s][self.mask[c, s].bool()] for s in range(self.steps)
                if self.active[c, s] > 0]


def pad_client_indices(indices: list, device) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-client index arrays -> ``padded [N, n_max]`` (pad = 0) and ``counts [N]``."""
    counts = torch.tensor([len(ix) for ix in indices], dtype=torch.long)
    padded = torch.zeros(len(indices), max(1, int(counts.max())), dtype=torch.long)
    for c, ix in enumerate(indices):
        padded[c, : len(ix)] = torch.as_tensor(ix, dtype=torch.long)
    return padded.to(device), counts.to(device)


def make_plan(padded: torch.Tensor, counts: torch.Tensor, local: LocalConfig,
              gen: torch.Generator) -> BatchPlan:
    """Batch plan for the clients whose rows are ``padded [m, n_max]`` / ``counts [m]``."""
    if local.steps > 0:
        return _steps_plan(padded, counts, local.steps, local.batch_size, gen)
    return _epochs_plan(padded, counts, local.epochs, local.batch_size, gen)


def _epochs_plan(padded, counts, epochs, batch, gen) -> BatchPlan:
    m, n_max = padded.shape
    n_max = max(1, int(counts.max()))
    padded = padded[:, :n_max]
    per_epoch = math.ceil(n_max / batch)
    width = per_epoch * batch
    pos = torch.arange(n_max, device=padded.device)
    valid = pos[None, :] < counts[:, None]
    blocks, masks = [], []
    for _ in range(epochs):
        keys = torch.rand(m, n_max, generator=gen, device=padded.device)
        keys = keys.masked_fill(~valid, 2.0)  # padding sorts last
        order = padded.gather(1, keys.argsort(dim=1))
        blocks.append(torch.nn.functional.pad(order, (0, width - n_max)))
        masks.append(torch.nn.functional.pad(valid, (0, width - n_max)))
    index = torch.cat(blocks, 1).view(m, epochs * per_epoch, batch)
    mask = torch.cat(masks, 1).view(m, epochs * per_epoch, batch).float()
    return BatchPlan(index, mask, (mask.sum(-1) > 0).float())


def _steps_plan(padded, counts, steps, batch, gen) -> BatchPlan:
    m = padded.shape[0]
    u = torch.rand(m, steps, batch, generator=gen, device=padded.device)
    pos = (u * counts[:, None, None]).long().clamp(max=padded.shape[1] - 1)
    index = padded.gather(1, pos.view(m, -1)).view(m, steps, batch)
    mask = (counts > 0).float()[:, None, None].expand(m, steps, batch).contiguous()
    return BatchPlan(index, mask, mask[..., 0].contiguous())

"""Which samples each client uses at each local step, for all clients at once.

Clients hold different numbers of samples, so the plan is padded: ``index[c, s, b]`` is
the training-set row that client ``c`` uses as the ``b``-th example of its ``s``-th
local step, ``mask`` marks real examples, and ``active[c, s]`` says whether client ``c``
takes step ``s`` at all (a client with fewer samples finishes its epoch earlier and idles,
leaving its parameters and momentum untouched). Epoch mode matches a per-client
``DataLoader(shuffle=True, drop_last=False)``: every sample once per epoch, the last batch
partial.

Poisson mode (:func:`make_plan` with ``poisson=True``, DP-SGD's record-level accounting):
as many steps as the other modes take (``epochs * ceil(n / B)`` or ``local.steps``), and at
every step each of the client's n samples joins the batch independently with probability
``q = min(1, B / n)``: batch sizes are Binomial(n, q), the sampling the subsampled-Gaussian
RDP bound assumes (Abadi et al. 2016; Mironov, Talwar & Zhang 2019). The plan then carries
``expected`` [m] = q n: DP-SGD divides the clipped sum and its noise by the *expected*
batch size, not the drawn one (which would depend on the data), as Opacus does.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import torch

from ..config import LocalConfig


@dataclass
class BatchPlan:
    """``index`` [m, S, B] long, ``mask`` [m, S, B] float, ``active`` [m, S] float;
    ``expected`` [m] the expected batch size of a Poisson plan (None otherwise)."""

    index: torch.Tensor
    mask: torch.Tensor
    active: torch.Tensor
    expected: Optional[torch.Tensor] = None

    @property
    def steps(self) -> int:
        return self.index.shape[1]

    def rows(self, clients: slice) -> "BatchPlan":
        """The plan of the clients ``clients`` (a slice of the rows) alone."""
        return BatchPlan(self.index[clients], self.mask[clients], self.active[clients],
                         None if self.expected is None else self.expected[clients])

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
              gen: torch.Generator, poisson: bool = False) -> BatchPlan:
    """Batch plan for the clients whose rows are ``padded [m, n_max]`` / ``counts [m]``
    (``poisson``: Poisson-sampled batches, see the module doc)."""
    if poisson:
        return _poisson_plan(padded, counts, local, gen)
    if local.steps > 0:
        return _steps_plan(padded, counts, local.steps, local.batch_size, gen)
    return _epochs_plan(padded, counts, local.epochs, local.batch_size, gen)


def _epochs_plan(padded, counts, epochs, batch, gen) -> BatchPlan:
    m, n_max = padded.shape
    n_max = max(1, int(counts.max()))
    padded = padded[:, :n_max]
    per_epoch = math.ceil(n_max / batch)
    width = per_epoch * batch
    real = torch.arange(width, device=padded.device) < counts[:, None]   # each epoch: a client's first n_i
    padding = real[:, :n_max].logical_not()
    index = padded.new_zeros((m, epochs, width))
    for e in range(epochs):
        keys = torch.rand(m, n_max, generator=gen, device=padded.device).masked_fill_(padding, 2.0)  # padding last
        index[:, e, :n_max] = padded.gather(1, keys.argsort(dim=1))
    mask = real.float().view(m, per_epoch, batch)
    active = mask[:, :, 0].contiguous()                        # a step is taken when its first example is real
    return BatchPlan(index.view(m, epochs * per_epoch, batch), repeat_steps(mask, epochs),
                     repeat_steps(active, epochs))


def repeat_steps(x: torch.Tensor, times: int) -> torch.Tensor:
    """``x [m, S, ...]`` repeated ``times`` times along the steps (itself for once)."""
    return x if times == 1 else x.repeat(1, times, *([1] * (x.dim() - 2)))


def _steps_plan(padded, counts, steps, batch, gen) -> BatchPlan:
    m = padded.shape[0]
    u = torch.rand(m, steps, batch, generator=gen, device=padded.device)
    pos = (u * counts[:, None, None]).long().clamp(max=padded.shape[1] - 1)
    index = padded.gather(1, pos.view(m, -1)).view(m, steps, batch)
    mask = (counts > 0).float()[:, None, None].expand(m, steps, batch).contiguous()
    return BatchPlan(index, mask, mask[..., 0].contiguous())


def poisson_steps(counts, local: LocalConfig):
    """Steps per client of a Poisson plan: those of the epoch or steps mode it replaces."""
    if local.steps > 0:
        return torch.full_like(counts, local.steps)
    return local.epochs * torch.div(counts + local.batch_size - 1, local.batch_size, rounding_mode="floor")


def _poisson_plan(padded, counts, local: LocalConfig, gen) -> BatchPlan:
    m = padded.shape[0]
    n_max = max(1, int(counts.max()))
    padded = padded[:, :n_max]
    steps = poisson_steps(counts, local)
    total = max(1, int(steps.max()))
    q = (local.batch_size / counts.clamp(min=1).double()).clamp(max=1.0)
    valid = torch.arange(n_max, device=padded.device)[None, :] < counts[:, None]       # [m, n]
    live = torch.arange(total, device=padded.device)[None, :] < steps[:, None]         # [m, S]
    drawn = torch.rand(m, total, n_max, generator=gen, device=padded.device, dtype=torch.float64)
    take = (drawn < q[:, None, None]) & valid[:, None, :] & live[:, :, None]           # [m, S, n]
    width = max(1, int(take.sum(-1).max()))
    order = torch.sort((~take).to(torch.int8), dim=-1, stable=True).indices[..., :width]  # taken first
    index = padded.gather(1, order.reshape(m, -1)).view(m, total, width)
    mask = take.gather(2, order).float()
    return BatchPlan(index, mask, live.float(), expected=(q * counts.double()).float())

"""Conversions between parameter dicts and flat vectors (one row per client)."""
from __future__ import annotations

import math

import torch


def layer_slices(params: dict[str, torch.Tensor]) -> dict[str, slice]:
    """Slice of each named parameter inside the flat ``d``-vector."""
    out, start = {}, 0
    for name, p in params.items():
        out[name] = slice(start, start + p.numel())
        start += p.numel()
    return out


def flatten(params: dict[str, torch.Tensor]) -> torch.Tensor:
    """``{name: tensor}`` -> ``[d]``."""
    return torch.cat([p.reshape(-1) for p in params.values()])


def flatten_stacked(params: dict[str, torch.Tensor]) -> torch.Tensor:
    """``{name: [m, ...]}`` -> ``[m, d]``.

    When the tensors are views of one contiguous ``[m, d]`` buffer laid out in this
    order (what :func:`fedcore.engine.local.train_clients` returns), that buffer is
    returned as is, without a copy (at 6000 clients of a linear model, a copy is 190 MB).
    """
    base = _shared_base(params)
    if base is not None:
        return base
    return torch.cat([p.reshape(p.shape[0], -1) for p in params.values()], dim=1)


def _shared_base(params: dict[str, torch.Tensor]):
    """The ``[m, d]`` rows (the first ``m`` of a contiguous buffer) whose consecutive
    column blocks are ``params``, else None."""
    values = list(params.values())
    base = values[0]._base if values else None
    if base is None or base.dim() != 2 or not base.is_contiguous() or values[0].dim() < 1:
        return None
    (rows, d), m = base.shape, values[0].shape[0]
    col = 0
    for p in values:
        if p._base is not base or p.dim() < 1 or p.shape[0] != m or m > rows or p.stride(0) != d \
                or p.storage_offset() != base.storage_offset() + col \
                or p.stride()[1:] != torch.empty(p.shape[1:], device="meta").stride():
            return None
        col += math.prod(p.shape[1:])
    if col != d:
        return None
    return base if m == rows else base[:m]


def unflatten(vector: torch.Tensor, like: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """``[d]`` -> ``{name: tensor}`` shaped like ``like``."""
    return {name: vector[s].view_as(like[name]) for name, s in layer_slices(like).items()}

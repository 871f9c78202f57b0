"""Conversions between parameter dicts and flat vectors (one row per client)."""
from __future__ import annotations

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
    """``{name: [m, ...]}`` -> ``[m, d]``."""
    return torch.cat([p.reshape(p.shape[0], -1) for p in params.values()], dim=1)


def unflatten(vector: torch.Tensor, like: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """``[d]`` -> ``{name: tensor}`` shaped like ``like``."""
    return {name: vector[s].view_as(like[name]) for name, s in layer_slices(like).items()}

"""Unweighted and sample-weighted averaging.

``mean``: PLDP-FL rule A, f = (1/m) sum_i Delta~_i (seed 000, Sec. 4).
``fedavg``: McMahan et al. 2017, f = sum_i (n_i / sum_j n_j) Delta~_i over the uploaders.
"""
from __future__ import annotations

from .base import WeightedSum
from .registry import AGGREGATORS


@AGGREGATORS.register("mean", summary="Arithmetic mean of the uploads (rule A).",
                      paper="PLDP-FL (seed 000), rule A")
class MeanAggregator(WeightedSum):
    """Every upload counts the same; works on shuffled (unlinkable) uploads."""

    def weights(self, upload):
        import torch  # here, not at the top: resolving a config that names these loads no torch

        m = upload.values.shape[0]
        return torch.full((m,), 1.0 / m, device=upload.values.device), []


@AGGREGATORS.register("fedavg", summary="Average weighted by each client's number of samples.",
                      paper="McMahan et al. 2017 (FedAvg)")
class FedAvgAggregator(WeightedSum):
    """Weights n_i / sum_j n_j, renormalised over the clients that uploaded.

    The weights are computed on the host (the sizes are whole numbers, so their float64 sum is
    exact in any order) and sent to the device once: no small kernels per round."""

    needs_linkable = True

    def __init__(self, options, ctx):
        super().__init__(options, ctx)
        self.sizes = ctx.client_sizes.double().cpu().numpy()

    def weights(self, upload):
        import torch

        n = self.sizes[upload.clients.numpy(force=True)]
        return torch.from_numpy(n / n.sum()).to(device=upload.values.device, dtype=upload.values.dtype), []

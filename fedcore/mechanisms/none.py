"""No privacy: the update is uploaded as it is (plain FedAvg, McMahan et al. 2017)."""
from __future__ import annotations

from .base import Mechanism, Upload
from .registry import MECHANISMS


@MECHANISMS.register("none", summary="No perturbation: the exact update is uploaded.",
                     paper="McMahan et al. 2017 (FedAvg)")
class NoMechanism(Mechanism):
    """Identity mechanism; no guarantee: threat model "none", headline epsilon infinite."""

    threat_model = "none"
    streams = True   # the identity, no draws: blocks of rows give what all rows give

    def privatize(self, updates, clients, round, gen) -> Upload:
        import torch  # on first use: resolving a config that names this mechanism loads no torch

        return Upload(values=updates, clients=clients,
                      spent=torch.zeros(len(clients), device=updates.device))

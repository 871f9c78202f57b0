"""Per-client privacy ledger (METHODS section 8).

Records *what happened* each round (the Opacus accountant lesson) and derives, per client:

- ``basic``: cumulative epsilon under basic (sequential) composition, always;
- ``rdp``: (eps, delta_i)-DP from the RDP accountant of dp-accounting, for clients whose
  rounds all used a Gaussian-based mechanism (None where a non-Gaussian round occurred);
- any labelled *claim* a mechanism reports (e.g. LDP-FL's "per-weight eps with
  shuffling" vs "composed eps without shuffling", a paper's closed-form total), so a
  paper's figure and the accountant's are shown side by side.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np
import torch

from .rdp import ORDERS, gaussian_rdp, rdp_epsilon


@dataclass
class GaussianRecord:
    """One round of a Gaussian mechanism for the uploading clients.

    ``noise_multiplier`` [m] (noise std / L2 sensitivity), ``sample_rate`` the Poisson
    rate of each step, ``steps`` how many such steps the round composed (DP-SGD: local
    steps; update-level Gaussian: 1).
    """

    noise_multiplier: torch.Tensor
    sample_rate: float = 1.0
    steps: int = 1


class Ledger:
    """Cumulative privacy spent by each of ``num_clients`` clients."""

    def __init__(self, num_clients: int, delta: np.ndarray):
        self.delta = np.asarray(delta, dtype=np.float64)
        self.basic = np.zeros(num_clients)
        self.rdp = np.zeros((num_clients, len(ORDERS)))
        self.gaussian_only = np.ones(num_clients, dtype=bool)
        self.claims: dict[str, np.ndarray] = {}
        self._rdp_eps = np.zeros(num_clients)

    def record(self, clients: torch.Tensor, spent: Optional[torch.Tensor],
               gaussian: Optional[GaussianRecord] = None,
               claims: Optional[dict[str, torch.Tensor]] = None) -> None:
        """Add one round's spending for ``clients`` (tensors aligned with ``clients``)."""
        ids = clients.cpu().numpy()
        if spent is not None:
            np.add.at(self.basic, ids, spent.double().cpu().numpy())
        for label, values in (claims or {}).items():
            arr = self.claims.setdefault(label, np.zeros_like(self.basic))
            np.add.at(arr, ids, values.double().cpu().numpy())
        if gaussian is None:
            if spent is not None:
                self.gaussian_only[ids[spent.cpu().numpy() > 0]] = False
            return
        for cid, z in zip(ids, gaussian.noise_multiplier.double().cpu().numpy()):
            self.rdp[cid] += gaussian.steps * gaussian_rdp(float(z), gaussian.sample_rate)
            self._rdp_eps[cid] = rdp_epsilon(self.rdp[cid], float(self.delta[cid]))

    def views(self) -> dict[str, list]:
        """Named per-client cumulative figures, for the event stream."""
        out: dict[str, list] = {}
        if self.rdp.any():
            out["rdp"] = [float(e) if ok else None for e, ok in zip(self._rdp_eps, self.gaussian_only)]
        for label, values in self.claims.items():
            out[label] = values.tolist()
        return out

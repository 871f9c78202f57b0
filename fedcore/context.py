"""What mechanisms and aggregators may know about a run (fixed for the whole run)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .config import LocalConfig


@dataclass
class RunContext:
    """Per-run facts, with per-client quantities as ``[N]`` tensors on the run's device.

    ``layer_slices`` maps each parameter name to its slice of the flat ``d``-vector, for
    per-layer mechanisms (LDP-FL's per-layer ranges). ``label_counts`` is the
    ``[N, classes]`` histogram of the partition (HW-DPFL's server assumes it knows it).
    """

    num_clients: int
    client_sizes: torch.Tensor
    epsilon: torch.Tensor
    delta: torch.Tensor
    rounds: int
    participation: float
    num_params: int
    layer_slices: dict[str, slice]
    label_counts: np.ndarray
    num_classes: int
    local: LocalConfig
    device: torch.device
    server_lr: float = 1.0

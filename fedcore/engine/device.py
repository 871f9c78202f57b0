"""Device choice: ``auto`` = CUDA when present, else CPU (same code on both)."""
from __future__ import annotations

import torch

from ..errors import ConfigError


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise ConfigError("device", name, "no CUDA GPU is visible here; use 'auto' or 'cpu'")
    return torch.device(name)

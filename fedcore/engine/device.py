"""Device choice: ``auto`` = CUDA when present, else CPU (same code on both)."""
from __future__ import annotations

import threading
from typing import Optional

import torch

from ..errors import ConfigError


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise ConfigError("device", name, "no CUDA GPU is visible here; use 'auto' or 'cpu'")
    return torch.device(name)


def start_device(device: torch.device) -> Optional[threading.Thread]:
    """On CUDA, a started thread that creates the context and loads cuBLAS and cuDNN (a first matmul and
    convolution) while the caller parses the dataset on the host; None elsewhere. Issue 41: on a fresh H100
    host, W3's setup took 9.8 s before round 1 (about 1 s on a warm H200), parse and CUDA start one after
    the other. An error here is left to the caller's first CUDA call, which meets and reports it."""
    if device.type != "cuda":
        return None

    def start() -> None:
        try:
            x = torch.ones(1, 1, 8, 8, device=device)
            (x[0, 0] @ x[0, 0]).sum().add_(torch.nn.functional.conv2d(x, x[:, :, :3, :3]).sum()).item()
        except Exception:   # noqa: BLE001
            pass

    thread = threading.Thread(target=start, name="fedcore-device-start", daemon=True)
    thread.start()
    return thread

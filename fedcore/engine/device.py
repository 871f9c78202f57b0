"""Device choice: ``auto`` = CUDA when present, else CPU (same code on both)."""
from __future__ import annotations

import importlib
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


def import_beside(name: str) -> threading.Thread:
    """Import module ``name`` in a started daemon thread, beside the caller's work (a later ``import`` of it
    waits for this one to finish: Python's per-module import lock). On a GPU host, where wall time is the
    measure and cores are many: W3's run imports dp-accounting (1.07 CPU-s on the H200's host) for its PLD
    at its end, after its last round, where nothing else runs beside it. An error is left to that import."""
    def load() -> None:
        try:
            importlib.import_module(name)
        except Exception:   # noqa: BLE001
            pass

    thread = threading.Thread(target=load, name=f"fedcore-import-{name}", daemon=True)
    thread.start()
    return thread

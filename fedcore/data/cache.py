"""On-disk cache of decoded dataset tensors, so a second process starts fast.

Decoding the original files (gzip'd IDX for MNIST, pickled batches for CIFAR-10, a
joblib dump for Covertype) costs seconds; ``torch.load`` of the decoded tensors costs
milliseconds. The cache lives in ``<root>/fedcore_cache/<key>.pt``; bump the key's
version suffix when a loader's decoding changes. Delete the folder to force a rebuild.
"""
from __future__ import annotations

import pickle
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from ..files import write_atomic

if TYPE_CHECKING:
    import torch

CACHE_DIR = "fedcore_cache"

Tensors = dict[str, "torch.Tensor"]


def cached_tensors(root: Path, key: str, build: Callable[[], Tensors], *, warn: bool = True) -> Tensors:
    """Return ``build()``, stored as ``<root>/fedcore_cache/<key>.pt`` after the first call.

    The file is written atomically (temporary file, then rename), so concurrent
    processes never read half a file; if the root is read-only the result is simply not
    cached (with a warning unless ``warn`` is false).
    """
    import torch

    path = Path(root) / CACHE_DIR / f"{key}.pt"
    if path.is_file():
        try:
            return torch.load(path, weights_only=True)
        except (OSError, RuntimeError, EOFError, pickle.UnpicklingError):
            pass  # unreadable cache: rebuild it below
    tensors = build()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, lambda f: torch.save(tensors, f))
    except OSError as err:
        if warn:
            warnings.warn(f"could not cache {key} under {path.parent}: {err}", stacklevel=2)
    return tensors

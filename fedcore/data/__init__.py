"""Datasets: the registry, the :class:`Dataset` tensors and :func:`load_dataset`.

>>> from fedcore.data import load_dataset, DATASETS
>>> DATASETS.names()
['cifar10', 'covertype', 'digits', 'fashion_mnist', 'mnist']
>>> load_dataset("digits")
Dataset('digits', train=1437, test=360, input_shape=(1, 8, 8), num_classes=10, device='cpu')

Files live under :func:`data_root` (``$FEDCORE_DATA``); ``FEDCORE_OFFLINE=1`` forbids
downloads, and a dataset that is neither present nor downloadable raises
:class:`~fedcore.errors.DatasetUnavailable` naming the files to put there.
"""
from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ConfigError
from .base import Dataset, DatasetFacts
from .registry import DATASETS
from .root import data_root, downloads_allowed

if TYPE_CHECKING:
    import torch

__all__ = ["DATASETS", "Dataset", "DatasetFacts", "data_root", "dataset_facts", "load_dataset"]


def dataset_facts(name: str) -> DatasetFacts | None:
    """Sizes, shape, classes and offline files of a registered dataset, without loading it (its
    module is imported, not torch); None for an unknown name.

    >>> dataset_facts("digits")
    DatasetFacts(train_size=1437, input_shape=(1, 8, 8), num_classes=10, test_size=360, files=())
    """
    return DATASETS.entry(name).facts if name in DATASETS else None

_LOADED: dict[tuple[str, str, str], Dataset] = {}
_LOCK = threading.RLock()


def load_dataset(name: str, device: str | torch.device = "cpu", root: str | Path | None = None,
                 download: bool | None = None) -> Dataset:
    """Load a registered dataset with its tensors on ``device``.

    Parameters
    ----------
    name : str
        A name in :data:`DATASETS` (``digits``, ``mnist``, ``fashion_mnist``,
        ``cifar10``, ``covertype``).
    device : str or torch.device
        Where the tensors live (``"cpu"``, ``"cuda"``, ...).
    root : path, optional
        The data root; default :func:`data_root`.
    download : bool, optional
        Whether missing files may be downloaded; ``None`` means yes unless the
        environment sets ``FEDCORE_OFFLINE=1``.

    Returns
    -------
    Dataset
        The same object for the same ``(name, root, device)`` within a process; the
        decoded tensors are also cached in ``<root>/fedcore_cache/`` across processes.

    Raises
    ------
    ConfigError
        ``name`` is not registered.
    DatasetUnavailable
        The files are absent (or corrupted) and could not be downloaded.
    """
    import torch

    if name not in DATASETS:
        raise ConfigError("dataset", name, "must be one of: " + ", ".join(DATASETS.names()))
    root = Path(root).expanduser() if root is not None else data_root()
    root = root.resolve()
    device = torch.device(device)
    key = (name, str(root), str(device))
    with _LOCK:
        if key not in _LOADED:
            if device.type == "cpu":
                _LOADED[key] = DATASETS.get(name)(root, downloads_allowed(download))
            else:
                _LOADED[key] = load_dataset(name, "cpu", root, download).to(device)
        return _LOADED[key]

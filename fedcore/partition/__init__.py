"""Partitioners: how the training set is split across clients (METHODS section 6).

>>> import numpy as np
>>> from fedcore.partition import make_partition, PARTITIONERS
>>> PARTITIONERS.names()
['dirichlet', 'iid', 'kclass', 'mixed', 'shards']
>>> labels = np.repeat(np.arange(10), 100)
>>> p = make_partition("shards", labels, 10, num_classes=10, seed=0, alpha=0.5,
...                    shards_per_client=2)
>>> p.sizes.tolist()
[100, 100, 100, 100, 100, 100, 100, 100, 100, 100]
"""
from __future__ import annotations

import inspect

import numpy as np

from ..errors import ConfigError
from . import dirichlet, iid, kclass, mixed, shards  # noqa: F401  (registers the partitioners)
from .base import Partition
from .registry import PARTITIONERS

__all__ = ["PARTITIONERS", "Partition", "make_partition"]

_SHARED = ("labels", "num_clients", "num_classes", "rng")


def _params(fn) -> list[str]:
    """The scheme-specific keyword parameters of a partitioner."""
    return [p for p in inspect.signature(fn).parameters if p not in _SHARED]


def make_partition(kind: str, labels: np.ndarray, num_clients: int, *, num_classes: int,
                   seed: int, **params) -> Partition:
    """Split ``labels``' rows across ``num_clients`` clients with partitioner ``kind``.

    Parameters
    ----------
    kind : str
        A name in :data:`PARTITIONERS`.
    labels : np.ndarray
        ``[n]`` integer class ids of the training set.
    num_clients : int
        Number of clients.
    num_classes : int
        Number of classes.
    seed : int
        Seed of the ``np.random.Generator`` handed to the partitioner: the same seed
        gives the same partition.
    **params
        Any of ``alpha``, ``min_size``, ``shards_per_client``, ``classes_per_client``,
        ``iid_fraction``, ``size_cv``; each partitioner receives only those in its
        signature, so a whole ``PartitionConfig`` can be passed.

    Raises
    ------
    ConfigError
        Unknown ``kind``, a parameter no partitioner knows, or an out-of-range value.
    PartitionError
        The data cannot be split this way (the message says what to change).
    """
    if kind not in PARTITIONERS:
        raise ConfigError("partition.kind", kind, "must be one of: " + ", ".join(PARTITIONERS.names()))
    known = {p for e in PARTITIONERS.entries() for p in _params(e.obj)}
    for name in sorted(set(params) - known):
        raise ConfigError(f"partition.{name}", params[name],
                          "is not a partition parameter; known: " + ", ".join(sorted(known)))
    fn = PARTITIONERS.get(kind)
    wanted = {k: v for k, v in params.items() if k in _params(fn)}
    return fn(np.asarray(labels), num_clients, num_classes, np.random.default_rng(seed), **wanted)

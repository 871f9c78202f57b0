"""Partitioners: how the training set is split across clients (METHODS section 6).

>>> import numpy as np
>>> from fedcore.partition import make_partition, PARTITIONERS
>>> PARTITIONERS.names()
['dirichlet', 'iid', 'kclass', 'mixed', 'shards']
>>> labels = np.repeat(np.arange(10), 100)
>>> p = make_partition("shards", labels, 10, num_classes=10, seed=0, options={"shards_per_client": 2})
>>> p.sizes.tolist()
[100, 100, 100, 100, 100, 100, 100, 100, 100, 100]
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ..errors import ConfigError
from . import dirichlet, iid, kclass, mixed, shards  # noqa: F401  (registers the partitioners)
from ..options import parse_options
from .base import Partition
from .registry import PARTITIONERS

__all__ = ["PARTITIONERS", "Partition", "make_partition", "partitioner_options"]

def partitioner_options(kind: str, options: dict, prefix: str = "partition"):
    """Partitioner ``kind``'s ``Options`` from a mapping, checked (unknown names, ranges)."""
    PARTITIONERS.check("partition.kind", kind)
    cls = PARTITIONERS.get(kind).Options
    known = [f.name for f in dataclasses.fields(cls)]
    for name in options:
        if name not in known:
            raise ConfigError(f"{prefix}.{name}", options[name], f"is not an option of the {kind} partitioner; "
                              f"its options: {', '.join(known) or '(none)'}")
    return parse_options(cls, dict(options), prefix)


def make_partition(kind: str, labels: np.ndarray, num_clients: int, *, num_classes: int,
                   seed: int, options: dict | None = None, **params) -> Partition:
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
    options : dict
        The partitioner's options (``PartitionConfig.options``), checked strictly against
        its ``Options``.
    **params
        Options as keywords; a keyword that another partitioner declares is ignored, so
        one set of keywords can be passed to any partitioner.

    Raises
    ------
    ConfigError
        Unknown ``kind``, an option no partitioner knows, or an out-of-range value.
    PartitionError
        The data cannot be split this way (the message says what to change).
    """
    PARTITIONERS.check("partition.kind", kind)
    fn = PARTITIONERS.get(kind)
    own = {f.name for f in dataclasses.fields(fn.Options)}
    known = {f.name for e in PARTITIONERS.entries() for f in dataclasses.fields(e.obj.Options)}
    for name in sorted(set(params) - known):
        raise ConfigError(f"partition.{name}", params[name], "unknown option; known: " + ", ".join(sorted(known)))
    opts = partitioner_options(kind, {**{k: v for k, v in params.items() if k in own}, **(options or {})})
    return fn(np.asarray(labels), num_clients, num_classes, np.random.default_rng(seed),
              **dataclasses.asdict(opts))

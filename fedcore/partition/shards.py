"""McMahan's pathological shards: sort by label, cut into shards, deal them out."""
from __future__ import annotations

import numpy as np

from dataclasses import dataclass

from ..constraints import Interval, setting
from ..errors import PartitionError
from .base import Partition, check_labels
from .registry import register_partitioner


@dataclass(frozen=True)
class ShardsOptions:
    """Options of the shards partitioner (``partition.NAME`` in the config)."""

    shards_per_client: int = setting(2, Interval(int, 1, 10_000), "label-sorted shards dealt to each client")


@register_partitioner(
    "shards",
    options=ShardsOptions,
    summary="Sort by label, cut into equal shards, each client gets shards_per_client of them.",
    paper="McMahan et al. 2017 (FedAvg) pathological non-IID; ULDP-FED (seed 004)",
)
def shards(labels: np.ndarray, num_clients: int, num_classes: int,
           rng: np.random.Generator, *, shards_per_client: int) -> Partition:
    """Sort the samples by label, cut them into equal shards, deal each client some shards.

    McMahan et al. (2017), "Communication-Efficient Learning of Deep Networks from
    Decentralized Data": MNIST sorted by digit, 200 shards of 300, 2 shards per client,
    so most clients see only two digits (ULDP-FED uses the same split). Here there are
    ``num_clients * shards_per_client`` shards of ``n // (num_clients *
    shards_per_client)`` samples; the remainder (fewer than one shard per client) is
    left out, chosen at random so no class loses more than its share. A shard may
    straddle a label boundary, so a client holds at most ``2 * shards_per_client``
    classes, and exactly ``shards_per_client`` or fewer when the class sizes are
    multiples of the shard size.

    Parameters
    ----------
    labels, num_clients, num_classes, rng
        As :func:`~fedcore.partition.make_partition` hands them to every partitioner; ``rng`` is the
        source of the tie order within a label and of the dealing.
    shards_per_client : int
        Shards (hence, roughly, classes) per client, >= 1.

    Examples
    --------
    >>> import numpy as np
    >>> p = shards(np.repeat(np.arange(4), 6), 4, 4, np.random.default_rng(0))
    >>> p.label_counts.tolist()
    [[3, 3, 0, 0], [0, 3, 0, 3], [3, 0, 3, 0], [0, 0, 3, 3]]
    """
    labels = check_labels(labels, num_clients, num_classes)
    num_shards = num_clients * shards_per_client
    shard_size = labels.size // num_shards
    if shard_size == 0:
        raise PartitionError(
            f"shards: {num_clients} clients x {shards_per_client} shards = {num_shards} "
            f"shards, more than the {labels.size} samples, so shards would be empty; "
            f"lower shards_per_client or num_clients so that their product is at most "
            f"{labels.size}")
    kept = rng.permutation(labels.size)[:num_shards * shard_size]
    by_label = kept[np.argsort(labels[kept], kind="stable")].reshape(num_shards, shard_size)
    dealt = rng.permutation(num_shards).reshape(num_clients, shards_per_client)
    return Partition.from_indices([by_label[row].ravel() for row in dealt], labels, num_classes)

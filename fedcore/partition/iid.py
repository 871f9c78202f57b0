"""IID partition: shuffle the samples, then split them into equal parts."""
from __future__ import annotations

import numpy as np

from .base import Partition, check_labels
from .registry import register_partitioner


@register_partitioner(
    "iid",
    summary="Shuffle, then equal split: every client sees the global label mix.",
    paper="McMahan et al. 2017 (FedAvg); KDP-FL (seed 003) IID setting",
)
def iid(labels: np.ndarray, num_clients: int, num_classes: int,
        rng: np.random.Generator) -> Partition:
    """Shuffle all samples and split them into ``num_clients`` parts of equal size.

    The IID baseline of McMahan et al. (2017, "Communication-Efficient Learning of
    Deep Networks from Decentralized Data") and KDP-FL's "shuffle then equal split".
    Sizes differ by at most one; every sample is used exactly once.

    Parameters
    ----------
    labels, num_clients, num_classes, rng
        As :func:`~fedcore.partition.make_partition` hands them to every partitioner; ``rng`` is the
        source of the shuffle.

    Examples
    --------
    >>> import numpy as np
    >>> p = iid(np.repeat(np.arange(3), 4), 5, 3, np.random.default_rng(0))
    >>> p.sizes.tolist()
    [3, 3, 2, 2, 2]
    """
    labels = check_labels(labels, num_clients, num_classes)
    parts = np.array_split(rng.permutation(labels.size), num_clients)
    return Partition.from_indices(parts, labels, num_classes)

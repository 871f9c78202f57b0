"""Dirichlet label-skew partition (Hsu et al. 2019; flwr-datasets semantics)."""
from __future__ import annotations

import numpy as np

from dataclasses import dataclass

from ..constraints import Interval, setting
from ..errors import PartitionError
from .base import Partition, check_labels
from .registry import register_partitioner

MAX_ATTEMPTS = 10
"""Resampling rounds before giving up on ``min_size`` (flwr-datasets uses 10 too)."""


@dataclass(frozen=True)
class DirichletOptions:
    """Options of the dirichlet partitioner (``partition.NAME`` in the config)."""

    alpha: float = setting(0.5, Interval(float, 0, 1e6, closed="right", step=0.1),
                           "Dirichlet concentration: small = skewed label mix per client (0.1), large = nearly IID (1000)")
    min_size: int = setting(10, Interval(int, 0, 1_000_000), "smallest acceptable client size (resampled, then an error)")


@register_partitioner(
    "dirichlet",
    options=DirichletOptions,
    summary="Per class, client shares ~ Dir(alpha): small alpha = few classes per client.",
    paper="Hsu et al. 2019; Yurochkin et al. 2019; flwr-datasets DirichletPartitioner; "
          "PLDP-FL (seed 000) non-IID setting",
)
def dirichlet(labels: np.ndarray, num_clients: int, num_classes: int,
              rng: np.random.Generator, *, alpha: float, min_size: int) -> Partition:
    """Split each class across clients in proportions drawn from ``Dir(alpha)``.

    Hsu, Qi and Brown (2019), "Measuring the Effects of Non-Identical Data Distribution
    for Federated Visual Classification"; the sampling loop follows flwr-datasets'
    ``DirichletPartitioner`` (after Yurochkin et al. 2019) without its optional
    self-balancing: for every class ``c`` draw ``p ~ Dir(alpha * 1_N)`` and give client
    ``i`` the next ``p_i`` share of class ``c``'s shuffled samples (cut points are
    rounded; flwr-datasets truncates, which hands every class's remainder to the last
    client). If some client ends up with fewer than ``min_size`` samples the whole draw
    is repeated, up to :data:`MAX_ATTEMPTS` times. Every sample is used exactly once.

    Parameters
    ----------
    labels, num_clients, num_classes, rng
        As :func:`~fedcore.partition.make_partition` hands them to every partitioner; ``rng`` is the
        source of the shuffles and the Dirichlet draws.
    alpha, min_size
        :class:`DirichletOptions`: ``alpha -> 0`` gives each class (almost) entirely to one client,
        ``alpha = 1000`` every client (almost) the global label mix; ``min_size`` 0 accepts empty clients.

    Raises
    ------
    PartitionError
        ``min_size * num_clients`` exceeds the data, or no draw within
        :data:`MAX_ATTEMPTS` gave every client ``min_size`` samples.

    Examples
    --------
    >>> import numpy as np
    >>> labels = np.repeat(np.arange(3), 20)
    >>> p = dirichlet(labels, 3, 3, np.random.default_rng(0), alpha=0.5, min_size=5)
    >>> p.label_counts.tolist()
    [[0, 6, 13], [8, 11, 0], [12, 3, 7]]
    """
    labels = check_labels(labels, num_clients, num_classes)
    if min_size * num_clients > labels.size:
        raise PartitionError(
            f"Dirichlet partition: {num_clients} clients x min_size {min_size} needs "
            f"{min_size * num_clients} samples but there are only {labels.size}; lower "
            f"min_size to at most {labels.size // num_clients} or use fewer clients")
    by_class = [rng.permutation(np.flatnonzero(labels == c)) for c in range(num_classes)]
    concentration = np.full(num_clients, float(alpha))
    best = 0
    for _ in range(MAX_ATTEMPTS):
        shares: list[list[np.ndarray]] = [[] for _ in range(num_clients)]
        for rows in by_class:
            cuts = np.rint(np.cumsum(rng.dirichlet(concentration))[:-1] * rows.size)
            cuts = cuts.astype(np.int64)
            for client, part in zip(shares, np.split(rows, cuts)):
                client.append(part)
        parts = [np.concatenate(s) for s in shares]
        smallest = min(part.size for part in parts)
        if smallest >= min_size:
            return Partition.from_indices(parts, labels, num_classes)
        best = max(best, smallest)
    raise PartitionError(
        f"Dirichlet partition with alpha={alpha} gave some client fewer than "
        f"min_size={min_size} samples in all {MAX_ATTEMPTS} attempts (the best attempt's "
        f"smallest client had {best}); raise alpha for more even shares, lower min_size, "
        f"or use fewer than {num_clients} clients")

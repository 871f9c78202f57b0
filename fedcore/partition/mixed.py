"""HW-DPFL's mixed population: a fraction of clients IID, the rest k-class."""
from __future__ import annotations

import numpy as np

from dataclasses import dataclass

from ..constraints import Interval, setting
from ..errors import PartitionError
from .base import Partition, check_labels
from .kclass import assign_classes, check_classes_per_client, draw_counts
from .registry import register_partitioner


@dataclass(frozen=True)
class MixedOptions:
    """Options of the mixed partitioner (``partition.NAME`` in the config)."""

    iid_fraction: float = setting(0.8, Interval(float, 0, 1, suggested=(0.0, 1.0), step=0.05),
                                  "fraction of clients with IID data")
    classes_per_client: int = setting(2, Interval(int, 1, 10_000), "classes each non-IID client holds")


@register_partitioner(
    "mixed",
    options=MixedOptions,
    summary="A fraction iid_fraction of clients get IID data, the rest classes_per_client classes.",
    paper="HW-DPFL (seed 002): 80% of clients IID, the rest non-IID",
)
def mixed(labels: np.ndarray, num_clients: int, num_classes: int,
          rng: np.random.Generator, *, iid_fraction: float, classes_per_client: int) -> Partition:
    """Make ``round(iid_fraction * num_clients)`` clients IID and the others k-class.

    HW-DPFL (seed 002) trains 100 MNIST clients of 600 images each, "the fraction of
    clients with IID data 0.8", the rest non-IID. Here every client gets the same
    size ``m`` (``n / num_clients``, shrunk by one common factor until the classes the
    k-class clients draw on still leave the IID clients the global label mix):

    1. the k-class clients pick ``classes_per_client`` classes each, balancing demand
       against supply (:func:`~fedcore.partition.kclass.assign_classes`), and draw
       ``m / classes_per_client`` samples of each;
    2. the IID clients share a pool drawn class by class in the global proportions,
       shuffled and split equally (sizes differ by at most one).

    On MNIST with 100 clients ``m`` is 587 (the scarcest digit, 5, limits it); rows
    that do not fit are left out. Which clients are IID is random; recover it from
    ``label_counts`` (IID clients hold every class).

    Parameters
    ----------
    labels, num_clients, num_classes, rng
        As :func:`~fedcore.partition.make_partition` hands them to every partitioner; ``rng`` is the
        source of all the randomness.
    iid_fraction, classes_per_client
        :class:`MixedOptions`.

    Examples
    --------
    >>> import numpy as np
    >>> labels = np.repeat(np.arange(4), 30)
    >>> p = mixed(labels, 4, 4, np.random.default_rng(0), iid_fraction=0.5)
    >>> p.label_counts.tolist()
    [[15, 15, 0, 0], [0, 0, 15, 15], [5, 10, 9, 6], [10, 5, 6, 9]]
    """
    labels = check_labels(labels, num_clients, num_classes)
    n_iid = round(iid_fraction * num_clients)
    n_k = num_clients - n_iid
    k = classes_per_client
    supply = np.bincount(labels, minlength=num_classes)
    size = labels.size / num_clients
    held = np.zeros((0, num_classes), dtype=bool)
    if n_k:
        check_classes_per_client(k, supply)
        held = assign_classes(np.full(n_k, size), supply, k, rng)
    mix = supply / labels.size
    demand = held.sum(axis=0) * size / max(k, 1) + n_iid * size * mix
    used = demand > 0
    scale = min(1.0, float(np.min(supply[used] / demand[used])))
    per_class = int(np.floor(scale * size / k)) if n_k else 0
    if n_k and per_class < 1:
        raise PartitionError(
            f"mixed: with {num_clients} clients the k-class clients get less than one "
            f"sample of each of their {k} classes; lower num_clients or classes_per_client")
    counts = np.vstack([held * per_class,  # k-class clients, then one row: the IID pool
                        np.floor(scale * n_iid * size * mix)]).astype(np.int64)
    *kclass_rows, pool = draw_counts(labels, counts, rng)
    parts = kclass_rows + np.array_split(rng.permutation(pool), n_iid) if n_iid else kclass_rows
    placed = rng.permutation(num_clients)
    return Partition.from_indices([parts[j] for j in np.argsort(placed)], labels, num_classes)

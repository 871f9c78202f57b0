"""HW-DPFL's mixed population: a fraction of clients IID, the rest k-class."""
from __future__ import annotations

import numpy as np

from ..errors import ConfigError
from .base import Partition, check_labels
from .iid import iid
from .kclass import kclass
from .registry import PARTITIONERS


@PARTITIONERS.register(
    "mixed",
    summary="A fraction iid_fraction of clients get IID data, the rest classes_per_client classes.",
    paper="HW-DPFL (seed 002): 80% of clients IID, the rest non-IID",
)
def mixed(labels: np.ndarray, num_clients: int, num_classes: int,
          rng: np.random.Generator, iid_fraction: float = 0.8,
          classes_per_client: int = 2) -> Partition:
    """Make ``round(iid_fraction * num_clients)`` clients IID and the others k-class.

    HW-DPFL (seed 002) trains 100 MNIST clients of 600 images, "the fraction of clients
    with IID data 0.8", the rest non-IID. The data is first split at random in
    proportion to the two groups; the IID group's pool is split by :func:`iid`, the
    other by :func:`kclass` with equal target sizes (``size_cv=0``: the paper gives
    every client the same amount of data; the k-class clients can end up slightly
    smaller where a class runs short). Which clients are IID is random; recover it from
    ``label_counts`` (IID clients hold all classes).

    Parameters
    ----------
    labels : np.ndarray
        ``[n]`` integer class ids.
    num_clients : int
        Number of clients.
    num_classes : int
        Number of classes.
    rng : np.random.Generator
        Source of all the randomness.
    iid_fraction : float
        Fraction of IID clients, in [0, 1].
    classes_per_client : int
        Classes per non-IID client.

    Examples
    --------
    >>> import numpy as np
    >>> labels = np.repeat(np.arange(4), 30)
    >>> p = mixed(labels, 4, 4, np.random.default_rng(0), iid_fraction=0.5)
    >>> (p.label_counts > 0).sum(axis=1).tolist()
    [2, 4, 4, 2]
    """
    labels = check_labels(labels, num_clients, num_classes)
    if not 0 <= iid_fraction <= 1:
        raise ConfigError("partition.iid_fraction", iid_fraction, "must be a number in [0, 1]")
    n_iid = round(iid_fraction * num_clients)
    pool = rng.permutation(labels.size)
    cut = round(labels.size * n_iid / num_clients)
    parts: list[np.ndarray] = []
    if n_iid:
        rows = pool[:cut]
        parts += [rows[ix] for ix in iid(labels[rows], n_iid, num_classes, rng).indices]
    if n_iid < num_clients:
        rows = pool[cut:]
        split = kclass(labels[rows], num_clients - n_iid, num_classes, rng,
                       classes_per_client=classes_per_client, size_cv=0.0)
        parts += [rows[ix] for ix in split.indices]
    placed = rng.permutation(num_clients)
    return Partition.from_indices([parts[j] for j in np.argsort(placed)], labels, num_classes)

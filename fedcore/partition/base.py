"""The :class:`Partition` every partitioner returns, and the checks they all share."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..errors import ConfigError, PartitionError


@dataclass(eq=False, repr=False)
class Partition:
    """Which training samples each client holds.

    Parameters
    ----------
    indices : list of np.ndarray
        ``indices[i]`` are client ``i``'s row numbers into the label array (sorted,
        int64); no row appears twice across clients. Rows may be left unassigned
        (shards drop the remainder, kclass what does not fit).
    label_counts : np.ndarray
        ``[num_clients, num_classes]`` histogram: ``label_counts[i, c]`` samples of class
        ``c`` on client ``i`` (the dashboard's heatmap).
    """

    indices: list[np.ndarray]
    label_counts: np.ndarray

    @classmethod
    def from_indices(cls, indices: Sequence[np.ndarray], labels: np.ndarray,
                     num_classes: int) -> Partition:
        """Sort each client's rows and count its labels."""
        rows = [np.sort(np.asarray(ix, dtype=np.int64)) for ix in indices]
        counts = np.array([np.bincount(labels[ix], minlength=num_classes) for ix in rows],
                          dtype=np.int64).reshape(len(rows), num_classes)
        return cls(rows, counts)

    @property
    def sizes(self) -> np.ndarray:
        """Samples per client, ``[num_clients]`` int64."""
        return np.array([len(ix) for ix in self.indices], dtype=np.int64)

    @property
    def num_clients(self) -> int:
        return len(self.indices)

    def __repr__(self) -> str:
        return (f"Partition(num_clients={self.num_clients}, num_classes="
                f"{self.label_counts.shape[1]}, sizes={self.sizes.tolist()})")


def check_labels(labels: np.ndarray, num_clients: int, num_classes: int) -> np.ndarray:
    """Validate the arguments every partitioner shares; return ``labels`` as int64."""
    labels = np.asarray(labels)
    if labels.ndim != 1 or not (labels.size == 0 or np.issubdtype(labels.dtype, np.integer)):
        raise PartitionError(f"labels must be a 1-D array of integer class ids; got shape "
                             f"{labels.shape} and dtype {labels.dtype}")
    if isinstance(num_classes, bool) or not isinstance(num_classes, (int, np.integer)) \
            or num_classes < 1:
        raise ConfigError("num_classes", num_classes, "must be an integer >= 1")
    if labels.size and (labels.min() < 0 or labels.max() >= num_classes):
        raise PartitionError(f"labels must lie in 0..{num_classes - 1} (num_classes="
                             f"{num_classes}); got values from {labels.min()} to {labels.max()}")
    if isinstance(num_clients, bool) or not isinstance(num_clients, (int, np.integer)) \
            or num_clients < 1:
        raise ConfigError("num_clients", num_clients, "must be an integer >= 1")
    if num_clients > labels.size:
        raise PartitionError(f"cannot give {num_clients} clients at least one sample each from "
                             f"{labels.size} samples; use at most {labels.size} clients")
    return labels.astype(np.int64, copy=False)

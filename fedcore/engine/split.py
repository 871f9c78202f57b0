"""Which rows a run trains and tests on, and how the training rows are split across clients.

One function, used by the engine before round 1 (:func:`fedcore.engine.setup.prepare`) and by
the dashboard's split preview (:func:`partition_preview`), so the
heatmap shown before Run is the split the run trains on. Checks that need the data raise
``ConfigError`` naming the field.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..config import RunConfig
from ..errors import ConfigError
from ..partition import Partition, make_partition


@dataclass
class DataSplit:
    """``train_rows`` / ``test_rows``: rows of the dataset used; ``partition`` indexes into
    the *subsampled* training rows."""

    train_rows: np.ndarray
    test_rows: np.ndarray
    partition: Partition


def subsample(n: int, size: int, rng: np.random.Generator) -> np.ndarray:
    """``size`` sorted rows of ``n`` drawn without replacement (all of them for 0)."""
    return np.sort(rng.permutation(n)[:size]) if 0 < size < n else np.arange(n)


def split_data(cfg: RunConfig, train_labels: np.ndarray, num_test: int, num_classes: int) -> DataSplit:
    """Subsample the train / test sets (``train_size`` / ``test_size``), then partition."""
    name = cfg.dataset
    for field, size, have in (("train_size", cfg.train_size, len(train_labels)), ("test_size", cfg.test_size, num_test)):
        if size > have:
            raise ConfigError(field, size, f"must be <= {have}, the number of samples {name} has (0 = all)")
    rng = np.random.default_rng(cfg.seed)
    train_rows = subsample(len(train_labels), cfg.train_size, rng)
    test_rows = subsample(num_test, cfg.test_size, rng)
    if cfg.num_clients > len(train_rows):
        raise ConfigError("num_clients", cfg.num_clients,
                          f"must be <= {len(train_rows)}, the number of training samples of {name}")
    p = cfg.partition
    partition = make_partition(p.kind, np.asarray(train_labels)[train_rows], cfg.num_clients,
                               num_classes=num_classes, seed=cfg.seed, options=p.options)
    empty = [i for i, ix in enumerate(partition.indices) if len(ix) == 0]
    if empty:
        raise ConfigError("partition.kind", p.kind, f"left client {empty[0]} without data; "
                          "use fewer clients or another partition")
    return DataSplit(train_rows, test_rows, partition)


def partition_preview(cfg: RunConfig, download: bool = False) -> Partition:
    """The :class:`Partition` of ``cfg``'s training set, computed without training (the Playground's
    preview): the same subsample, partitioner and seed as a run, on the CPU.

    Raises ``DatasetUnavailable`` when the data is not on disk and ``download`` is off,
    ``ConfigError`` / ``PartitionError`` when the split is impossible.
    """
    from ..data import load_dataset

    data = load_dataset(cfg.dataset, device="cpu", download=download)
    return split_data(cfg, data.y_train.numpy(), len(data.y_test), data.num_classes).partition

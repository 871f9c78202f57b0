"""The data split a config will use, computed without training (the Playground's preview).

:func:`partition_preview` repeats exactly what :func:`fedcore.engine.setup.prepare` does
before round 1 (same training-set subsample, same partitioner, same seed), on the CPU,
so the label-distribution heatmap shown before Run is the one the run will train on.
"""
from __future__ import annotations

import numpy as np

from ..config import RunConfig
from ..data import load_dataset
from ..errors import ConfigError
from ..partition import Partition, make_partition


def partition_preview(cfg: RunConfig, download: bool = False) -> Partition:
    """The :class:`Partition` of ``cfg``'s training set.

    Raises ``DatasetUnavailable`` when the data is not on disk and ``download`` is off,
    ``ConfigError`` / ``PartitionError`` when the split is impossible.
    """
    from ..engine.setup import _subsample  # the same subsample the run draws

    data = load_dataset(cfg.dataset, device="cpu", download=download)
    rng = np.random.default_rng(cfg.seed)
    labels = data.y_train.numpy()[_subsample(len(data.y_train), cfg.train_size, rng)]
    if cfg.num_clients > len(labels):  # the engine's own check, same message
        raise ConfigError("num_clients", cfg.num_clients,
                          f"must be <= {len(labels)}, the number of training samples of {cfg.dataset}")
    p = cfg.partition
    return make_partition(p.kind, labels, cfg.num_clients, num_classes=data.num_classes, seed=cfg.seed,
                          alpha=p.alpha, min_size=p.min_size, shards_per_client=p.shards_per_client,
                          classes_per_client=p.classes_per_client, iid_fraction=p.iid_fraction,
                          size_cv=p.size_cv)

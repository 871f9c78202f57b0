"""The data split a config will use, computed without training (the Playground's preview).

:func:`partition_preview` calls the split function of :func:`fedcore.engine.setup.prepare`
(same training-set subsample, same partitioner, same seed), on the CPU,
so the label-distribution heatmap shown before Run is the one the run will train on.
"""
from __future__ import annotations

from ..config import RunConfig
from ..data import load_dataset
from ..engine.split import split_data
from ..partition import Partition


def partition_preview(cfg: RunConfig, download: bool = False) -> Partition:
    """The :class:`Partition` of ``cfg``'s training set (the engine's own :func:`split_data`).

    Raises ``DatasetUnavailable`` when the data is not on disk and ``download`` is off,
    ``ConfigError`` / ``PartitionError`` when the split is impossible.
    """
    data = load_dataset(cfg.dataset, device="cpu", download=download)
    return split_data(cfg, data.y_train.numpy(), len(data.y_test), data.num_classes).partition

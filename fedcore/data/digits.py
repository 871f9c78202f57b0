"""scikit-learn's handwritten digits: the bundled, always-offline default dataset."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from .base import Dataset
from .registry import DATASETS

SPLIT_SEED = 0
"""Fixed seed of the stratified 80/20 split, so every run sees the same test set."""


@DATASETS.register(
    "digits",
    summary="8x8 handwritten digits (1797 images, 10 classes), bundled with scikit-learn; works offline.",
    paper="PLDP-FL (seed 000)",
)
def load_digits(root: Path | None = None, download: bool = False) -> Dataset:
    """Load the UCI optical digits bundled with scikit-learn (no files, no network).

    Pixels 0..16 are scaled to [0, 1] and shaped ``[1, 8, 8]``; the split is a
    stratified 80/20 (1437 / 360) with the fixed seed :data:`SPLIT_SEED`. ``root`` and
    ``download`` are accepted for a uniform loader signature and ignored. scikit-learn is
    imported here, not at the top: it pulls in scipy and pandas (1-2 s of start-up) that
    runs on other datasets do not need.

    >>> ds = load_digits()
    >>> ds.x_train.shape, ds.x_test.shape, ds.num_classes
    (torch.Size([1437, 1, 8, 8]), torch.Size([360, 1, 8, 8]), 10)
    """
    from sklearn.datasets import load_digits as sklearn_digits
    from sklearn.model_selection import train_test_split

    images, labels = sklearn_digits(return_X_y=True)
    x = (images / 16.0).astype(np.float32).reshape(-1, 1, 8, 8)
    x_tr, x_te, y_tr, y_te = train_test_split(
        x, labels, test_size=0.2, stratify=labels, random_state=SPLIT_SEED)
    return Dataset("digits", torch.from_numpy(x_tr), torch.from_numpy(y_tr).long(),
                   torch.from_numpy(x_te), torch.from_numpy(y_te).long(),
                   num_classes=10, input_shape=(1, 8, 8))

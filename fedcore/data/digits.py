"""scikit-learn's handwritten digits: the bundled, always-offline default dataset."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from .base import Dataset, DatasetFacts
from .cache import Tensors, cached_tensors
from .registry import DATASETS
from .root import data_root

SPLIT_SEED = 0
"""Fixed seed of the stratified 80/20 split, so every run sees the same test set."""
CACHE_KEY = "digits-split-v1"
FACTS = DatasetFacts(train_size=1437, input_shape=(1, 8, 8), num_classes=10, test_size=360)


@DATASETS.register(
    "digits",
    summary="8x8 handwritten digits (1797 images, 10 classes), bundled with scikit-learn; works offline.",
    paper="PLDP-FL (seed 000)",
    facts=FACTS,
)
def load_digits(root: Path | None = None, download: bool = False) -> Dataset:
    """Load the UCI optical digits bundled with scikit-learn (no files, no network).

    Pixels 0..16 are scaled to [0, 1] and shaped ``[1, 8, 8]``; the split is a
    stratified 80/20 (1437 / 360) with the fixed seed :data:`SPLIT_SEED`. ``root`` only
    chooses where the split is cached (``download`` is ignored): the first load imports
    scikit-learn (it pulls in scipy, about 1 s of start-up) and stores the split as
    ``<root>/fedcore_cache/digits-split-v1.pt``; later processes read that file in
    milliseconds. A read-only root just means no cache (silently: digits must work
    everywhere).

    >>> ds = load_digits()
    >>> ds.x_train.shape, ds.x_test.shape, ds.num_classes
    (torch.Size([1437, 1, 8, 8]), torch.Size([360, 1, 8, 8]), 10)
    """
    t = cached_tensors(root if root is not None else data_root(), CACHE_KEY, _split, warn=False)
    return Dataset("digits", t["x_train"], t["y_train"], t["x_test"], t["y_test"],
                   num_classes=FACTS.num_classes, input_shape=FACTS.input_shape)


def _split() -> Tensors:
    """The stratified 80/20 split of scikit-learn's digits, pixels scaled to [0, 1]."""
    from sklearn.datasets import load_digits as sklearn_digits
    import torch
    from sklearn.model_selection import train_test_split

    images, labels = sklearn_digits(return_X_y=True)
    x = (images / 16.0).astype(np.float32).reshape(-1, 1, 8, 8)
    x_tr, x_te, y_tr, y_te = train_test_split(
        x, labels, test_size=0.2, stratify=labels, random_state=SPLIT_SEED)
    return {"x_train": torch.from_numpy(x_tr), "y_train": torch.from_numpy(y_tr).long(),
            "x_test": torch.from_numpy(x_te), "y_test": torch.from_numpy(y_te).long()}

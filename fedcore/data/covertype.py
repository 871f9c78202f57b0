"""UCI Covertype: 581012 forest cells, 54 cartographic features, 7 cover types."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from .base import Dataset, DatasetFacts
from .cache import Tensors, cached_tensors
from .registry import DATASETS
from .root import fetching

SPLIT_SEED = 0
TEST_SIZE = 30_000
"""Test rows; datasets with fewer than 150000 rows (test copies) hold out 20% instead."""
EXPECTED = ("covertype/samples_py3, covertype/targets_py3 (joblib dumps written by "
            "sklearn.datasets.fetch_covtype(data_home=<root>))")
FACTS = DatasetFacts(train_size=551_012, input_shape=(54,), num_classes=7, test_size=TEST_SIZE,
                     files=("covertype/samples_py3", "fedcore_cache/covertype-v1.pt"))


def _standardised_split(x: np.ndarray, y: np.ndarray) -> Tensors:
    """Stratified seeded split, then standardise with the training mean and std."""
    import torch
    from sklearn.model_selection import train_test_split

    test_size = min(TEST_SIZE, max(1, round(0.2 * len(y))))
    x_tr, x_te, y_tr, y_te = train_test_split(
        x, y, test_size=test_size, stratify=y, random_state=SPLIT_SEED)
    mean, std = x_tr.mean(axis=0), x_tr.std(axis=0)
    std[std == 0] = 1.0  # a constant column stays 0 instead of becoming NaN

    def scale(part: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(((part - mean) / std).astype(np.float32))

    return {"x_train": scale(x_tr), "y_train": torch.from_numpy(y_tr).long(),
            "x_test": scale(x_te), "y_test": torch.from_numpy(y_te).long()}


@DATASETS.register(
    "covertype",
    summary="UCI forest Covertype, 54 tabular features, 7 classes, 551012/30000 rows (scikit-learn).",
    paper="PLDP-FL (seed 000)",
    facts=FACTS,
)
def load_covertype(root: Path, download: bool = True) -> Dataset:
    """Covertype (Blackard & Dean 1999) via :func:`sklearn.datasets.fetch_covtype`.

    scikit-learn keeps its joblib dumps in ``<root>/covertype/`` (``data_home=root``).
    Labels 1..7 become 0..6. The split is stratified and seeded (:data:`SPLIT_SEED`),
    with :data:`TEST_SIZE` test rows, or 20% for small copies; the 54 features are
    standardised with the training mean and std (columns constant in training are
    left centred).
    """

    def decode() -> Tensors:
        from sklearn.datasets import fetch_covtype

        with fetching("covertype", root, EXPECTED, download):
            x, y = fetch_covtype(data_home=str(root), download_if_missing=download,
                                 return_X_y=True, n_retries=1)
        return _standardised_split(np.asarray(x, dtype=np.float64), np.asarray(y) - 1)

    raw = cached_tensors(root, "covertype-v1", decode)
    return Dataset("covertype", raw["x_train"], raw["y_train"], raw["x_test"], raw["y_test"],
                   num_classes=FACTS.num_classes, input_shape=FACTS.input_shape)

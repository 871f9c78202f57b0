"""A plugin: any CSV file as a fedcore dataset (numeric or text columns, one label column).

``FEDCORE_PLUGINS=examples.tabular_csv`` (from the repository's folder) registers ``wine_csv``: the
UCI wine table shipped in ``examples/data/wine.csv`` (178 wines, 13 measurements, the cultivar as
label; Aeberhard & Forina 1991, CC BY 4.0), so no download is needed::

    FEDCORE_PLUGINS=examples.tabular_csv python -m fedcore run --preset demo --set dataset=wine_csv

For your own file call :func:`register_csv` from your plugin module::

    from examples.tabular_csv import register_csv
    register_csv("my_table", "data/my_table.csv", label="outcome")

Numeric columns are standardised (with the training rows' mean and std), text columns one-hot
encoded, the label's values numbered in sorted order; a seeded 80/20 split keeps one test set.
"""
from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from fedcore.data import DATASETS, Dataset, DatasetFacts

HERE = Path(__file__).resolve().parent


def read_table(path: str | Path, label: str, test_fraction: float = 0.2, seed: int = 0):
    """``(x_train, y_train, x_test, y_test, classes)`` as numpy arrays from the CSV at ``path``."""
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    if not rows or label not in rows[0]:
        raise ValueError(f"{path}: no column {label!r}; columns: {', '.join(rows[0]) if rows else '(empty file)'}")
    classes = sorted({r[label] for r in rows})
    y = np.array([classes.index(r[label]) for r in rows], dtype=np.int64)
    test = np.random.default_rng(seed).permutation(len(rows))[: max(1, round(test_fraction * len(rows)))]
    is_test = np.zeros(len(rows), dtype=bool)
    is_test[test] = True
    columns = []
    for name in (c for c in rows[0] if c != label):
        values = [r[name] for r in rows]
        try:
            col = np.array(values, dtype=np.float64)[:, None]
            mean, std = col[~is_test].mean(), col[~is_test].std() or 1.0
            columns.append((col - mean) / std)
        except ValueError:                         # text: one column per value
            levels = sorted(set(values))
            columns.append(np.array([[v == level for level in levels] for v in values], dtype=np.float64))
    x = np.hstack(columns).astype(np.float32)
    return x[~is_test], y[~is_test], x[is_test], y[is_test], classes


def register_csv(name: str, path: str | Path, label: str, summary: str = "") -> None:
    """Register the CSV at ``path`` as dataset ``name`` (read once here for its facts)."""
    x_train, y_train, x_test, y_test, classes = read_table(path, label)
    facts = DatasetFacts(len(y_train), (x_train.shape[1],), len(classes), len(y_test))

    @DATASETS.register(name, summary=summary or f"CSV {Path(path).name}, label column {label!r}", facts=facts)
    def load(root=None, download=False) -> Dataset:
        import torch

        parts = read_table(path, label)[:4]
        xtr, ytr, xte, yte = (torch.from_numpy(a) for a in parts)
        return Dataset(name, xtr, ytr, xte, yte, num_classes=len(classes), input_shape=facts.input_shape)


register_csv("wine_csv", HERE / "data" / "wine.csv", label="cultivar",
             summary="UCI wine (178 wines, 13 measurements, 3 cultivars), from a CSV file; an example plugin.")

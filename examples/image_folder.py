"""A plugin: a folder of images in torchvision's ``ImageFolder`` layout as a fedcore dataset.

The layout is one sub-folder per class, its name the label::

    my_images/cat/001.png
    my_images/dog/xyz.jpg

``FEDCORE_PLUGINS=examples.image_folder`` registers ``digits_folder``: the folder named by
``FEDCORE_IMAGE_FOLDER``, or by default ``<data root>/digits_folder``, which this module first writes
from scikit-learn's bundled digits (50 PNGs per class, 8x8 grey), so no download is needed::

    FEDCORE_PLUGINS=examples.image_folder python -m fedcore run --preset demo --set dataset=digits_folder

For your own folder call :func:`register_image_folder` from your plugin module. Images are read
as grey (``channels=1``) or RGB (3), resized to ``size`` and scaled to [0, 1]; a seeded 80/20
split keeps one test set.
"""
from __future__ import annotations

import os
from pathlib import Path

from fedcore.data import DATASETS, Dataset, DatasetFacts, data_root

EXTENSIONS = (".png", ".jpg", ".jpeg", ".bmp", ".gif", ".tif", ".tiff", ".webp")


def image_files(root: Path) -> list[tuple[Path, int]]:
    """``(file, class index)`` in ImageFolder's order: classes and files sorted by name."""
    classes = sorted(d.name for d in root.iterdir() if d.is_dir())
    return [(f, i) for i, c in enumerate(classes) for f in sorted((root / c).iterdir())
            if f.suffix.lower() in EXTENSIONS]


def split(n: int, seed: int = 0, test_fraction: float = 0.2):
    import numpy as np

    order = np.random.default_rng(seed).permutation(n)
    cut = max(1, round(test_fraction * n))
    return sorted(order[cut:]), sorted(order[:cut])


def register_image_folder(name: str, root: str | Path, size: tuple[int, int] = (28, 28), channels: int = 1,
                          summary: str = "") -> None:
    """Register the ImageFolder at ``root`` as dataset ``name`` (its files are counted here)."""
    root = Path(root)
    files = image_files(root)
    classes = len({c for _, c in files})
    train, test = split(len(files))
    facts = DatasetFacts(len(train), (channels, *size), classes, len(test))

    @DATASETS.register(name, summary=summary or f"images in {root.name}/ (ImageFolder layout)", facts=facts)
    def load(data=None, download=False) -> Dataset:
        import torch
        from torchvision import datasets, transforms

        mode = transforms.Grayscale(1) if channels == 1 else transforms.Lambda(lambda im: im.convert("RGB"))
        folder = datasets.ImageFolder(str(root), transform=transforms.Compose(
            [mode, transforms.Resize(size), transforms.ToTensor()]))
        x = torch.stack([folder[i][0] for i in range(len(folder))])
        y = torch.tensor(folder.targets, dtype=torch.int64)
        tr, te = torch.tensor(train), torch.tensor(test)
        return Dataset(name, x[tr], y[tr], x[te], y[te], num_classes=classes, input_shape=facts.input_shape)


def write_digits_folder(root: Path, per_class: int = 50) -> Path:
    """scikit-learn's digits as PNG files in ImageFolder layout under ``root``, written beside it and
    renamed into place, so a process starting meanwhile never counts half a folder."""
    import shutil

    from PIL import Image
    from sklearn.datasets import load_digits

    digits = load_digits()
    tmp = root.with_name(f"{root.name}.{os.getpid()}.tmp")
    for k in range(10):
        folder = tmp / str(k)
        folder.mkdir(parents=True, exist_ok=True)
        for j, image in enumerate(digits.images[digits.target == k][:per_class]):
            Image.fromarray((image * 255 / 16).astype("uint8"), mode="L").save(folder / f"{j:03d}.png")
    try:
        tmp.rename(root)
    except OSError:              # another process was first: keep its folder
        shutil.rmtree(tmp, ignore_errors=True)
    return root


def default_folder() -> Path:
    root = Path(os.environ.get("FEDCORE_IMAGE_FOLDER") or data_root() / "digits_folder")
    return root if root.is_dir() else write_digits_folder(root)


register_image_folder("digits_folder", default_folder(), size=(8, 8),
                      summary="digits as an ImageFolder of PNG files (8x8 grey, 500 images); an example plugin.")

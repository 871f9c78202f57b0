"""The dataset registry; each dataset module registers its loader here.

A loader is ``load(root: Path, download: bool) -> Dataset`` returning CPU tensors;
:func:`fedcore.data.load_dataset` adds the device move and the in-process cache.
"""
from ..registry import Registry

DATASETS = Registry("dataset", modules={
    "fedcore.data.digits": ("digits",),
    "fedcore.data.covertype": ("covertype",),
    "fedcore.data.vision": ("mnist", "fashion_mnist", "cifar10"),
})

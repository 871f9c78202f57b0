"""The :class:`Dataset` every loader returns: train/test tensors plus their shape."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch


@dataclass(frozen=True)
class DatasetFacts:
    """A dataset as known without loading it (declared by ``DATASETS.register(..., facts=...)``):
    training and test examples, one example's shape, classes, and the files under the data root any one of
    which lets it load offline (none: bundled)."""

    train_size: int
    input_shape: tuple[int, ...]
    num_classes: int
    test_size: int
    files: tuple[str, ...] = ()


@dataclass(frozen=True, eq=False, repr=False)
class Dataset:
    """A classification dataset held as tensors, already normalised for training.

    Parameters
    ----------
    name : str
        The registry name (``"mnist"``, ...).
    x_train, x_test : torch.Tensor
        float32 features, shape ``[n, *input_shape]``.
    y_train, y_test : torch.Tensor
        int64 labels in ``0 .. num_classes - 1``.
    num_classes : int
        Number of label values.
    input_shape : tuple of int
        Shape of one example, e.g. ``(1, 28, 28)`` or ``(54,)``.

    Instances are shared by the in-process cache of :func:`fedcore.data.load_dataset`:
    treat the tensors as read-only.
    """

    name: str
    x_train: torch.Tensor
    y_train: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor
    num_classes: int
    input_shape: tuple[int, ...]

    def __post_init__(self) -> None:
        import torch  # here: `fedcore.data` (the registry, names) loads no torch

        for split in ("train", "test"):
            x, y = getattr(self, f"x_{split}"), getattr(self, f"y_{split}")
            if x.dtype != torch.float32 or y.dtype != torch.int64:
                raise TypeError(f"{self.name} {split}: need float32 x and int64 y, "
                                f"got {x.dtype} and {y.dtype}")
            if tuple(x.shape[1:]) != tuple(self.input_shape) or len(x) != len(y):
                raise ValueError(f"{self.name} {split}: x {tuple(x.shape)} and y "
                                 f"{tuple(y.shape)} do not match input_shape {self.input_shape}")

    @property
    def device(self) -> torch.device:
        return self.x_train.device

    def to(self, device: str | torch.device) -> Dataset:
        """A copy with every tensor on ``device`` (``self`` when already there)."""
        import torch

        device = torch.device(device)
        if self.device == device:
            return self
        moved = {f: getattr(self, f).to(device) for f in ("x_train", "y_train", "x_test", "y_test")}
        return dataclasses.replace(self, **moved)

    def __repr__(self) -> str:
        return (f"Dataset({self.name!r}, train={len(self.y_train)}, test={len(self.y_test)}, "
                f"input_shape={self.input_shape}, num_classes={self.num_classes}, "
                f"device={str(self.device)!r})")

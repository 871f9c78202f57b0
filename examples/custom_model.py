"""A plugin: your own ``nn.Module`` as a fedcore model.

``FEDCORE_PLUGINS=examples.custom_model`` registers ``tiny_cnn``, a small convolutional net for
any image shape::

    FEDCORE_PLUGINS=examples.custom_model python -m fedcore run --preset demo --set model=tiny_cnn

A model factory takes ``(input_shape, num_classes)`` (one example's shape, no batch axis) and returns
an ``nn.Module`` mapping a batch to logits. The engine trains many clients' copies at once with
``torch.func.vmap``, so a model must not mix the examples of a batch or change state in place: no
batch norm (use ``nn.GroupNorm``), no in-place activations (``inplace=False``), no dropout.
"""
from __future__ import annotations

from torch import nn

from fedcore.models import MODELS


class TinyCNN(nn.Module):
    """conv3x3(8, same) - ReLU - conv3x3(16, same) - ReLU - average pool to 4x4 - fc(classes)."""

    def __init__(self, input_shape: tuple[int, ...], num_classes: int):
        super().__init__()
        channels = input_shape[0] if len(input_shape) == 3 else 1
        self.features = nn.Sequential(nn.Conv2d(channels, 8, 3, padding=1), nn.ReLU(),
                                      nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(4))
        self.fc = nn.Linear(16 * 4 * 4, num_classes)

    def forward(self, x):
        if x.dim() == 2:                      # tabular rows: one channel, one row of pixels
            x = x[:, None, None, :]
        return self.fc(self.features(x).flatten(1))


@MODELS.register("tiny_cnn", summary="Two 3x3 convolutions, average pooling to 4x4, one linear layer; an example plugin.")
def tiny_cnn(input_shape: tuple[int, ...], num_classes: int) -> nn.Module:
    return TinyCNN(input_shape, num_classes)

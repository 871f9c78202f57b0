"""The shared skeleton of the papers' small CNNs: blocks of convolutions, each block ended
by a 2x2 max-pool, then a fully connected head.

``cnn_*``, ``lenet5`` and ``vgg_small`` are this class with different numbers; the
smallest image each accepts is computed by arithmetic (:func:`min_side`), and a smaller
one is refused with a :class:`~fedcore.errors.ConfigError` naming the model.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Sequence

from torch import Tensor, nn

from fedcore.errors import ConfigError
from fedcore.models.linear import FlatMLP


def side_after(side: int, blocks: Sequence[Sequence[int]], kernel_size: int, padding: int) -> int:
    """Spatial side after ``blocks`` of stride-1 convolutions and a 2x2 max-pool each;
    0 if the stack collapses (a convolution or a pool gets less than its window)."""
    for block in blocks:
        for _ in block:
            side = side + 2 * padding - kernel_size + 1
            if side < 1:
                return 0
        side //= 2
        if side < 1:
            return 0
    return side


def min_side(blocks: Sequence[Sequence[int]], kernel_size: int, padding: int) -> int:
    """Smallest image side the conv stack accepts (``side_after`` is monotone in side)."""
    side = 1
    while side_after(side, blocks, kernel_size, padding) == 0:
        side += 1
    return side


def require_image(name: str, input_shape: tuple[int, ...], smallest: int) -> tuple[int, int, int]:
    """Return ``(C, H, W)`` or raise ConfigError if ``name`` cannot take ``input_shape``."""
    shape = tuple(input_shape)
    if len(shape) != 3:
        size = f" of at least {smallest}x{smallest}" if smallest > 1 else ""
        need = f"needs images (channels, height, width){size}"
    elif min(shape[1:]) < smallest:
        need = f"needs images of at least {smallest}x{smallest}"
    else:
        return shape  # type: ignore[return-value]
    raise ConfigError("model", name, f"{need}; this dataset's input shape is {shape}")


class ConvPoolNet(nn.Module):
    """``[conv(k) - ReLU] x len(block) - maxpool2x2`` per block, then flatten and an MLP head.

    Parameters
    ----------
    name : registry name, used in the error for an input that is too small.
    input_shape : ``(C, H, W)``; the first convolution takes ``C`` channels.
    num_classes : number of logits.
    blocks : output channels of the convolutions, one tuple per pooled block, e.g.
        ``((10,), (20,))`` for two single-conv blocks.
    kernel_size, padding : of every convolution (stride 1).
    hidden : widths of the hidden fully connected layers.

    Layers are named ``features.conv1, features.relu1, features.pool1, ...`` and
    ``classifier.fc1, ...``, so LDP-FL's per-layer ranges can be keyed by name.
    """

    def __init__(self, name: str, input_shape: tuple[int, ...], num_classes: int, *,
                 blocks: Sequence[Sequence[int]], kernel_size: int, padding: int, hidden: Sequence[int]):
        super().__init__()
        smallest = min_side(blocks, kernel_size, padding)
        channels, height, width = require_image(name, input_shape, smallest)
        layers: list[tuple[str, nn.Module]] = []
        conv = 0
        for b, block in enumerate(blocks, start=1):
            for out_channels in block:
                conv += 1
                layers += [(f"conv{conv}", nn.Conv2d(channels, out_channels, kernel_size, padding=padding)),
                           (f"relu{conv}", nn.ReLU())]
                channels = out_channels
            layers.append((f"pool{b}", nn.MaxPool2d(2)))
        self.features = nn.Sequential(OrderedDict(layers))
        sides = (side_after(height, blocks, kernel_size, padding), side_after(width, blocks, kernel_size, padding))
        self.classifier = FlatMLP((channels, *sides), num_classes, hidden)

    def forward(self, x: Tensor) -> Tensor:
        return self.classifier(self.features(x))

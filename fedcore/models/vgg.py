"""A small VGG for CIFAR-10, LDP-FL's "redesigned small VGG" (Simonyan & Zisserman 2014)."""
from __future__ import annotations

from torch import nn

from fedcore.models.registry import MODELS
from fedcore.models.convnet import ConvPoolNet


@MODELS.register(
    "vgg_small",
    summary="Small VGG: three blocks of two conv3x3 (32, 64, 128) + pool, then fc128-fc.",
    paper="LDP-FL (seed 001)",
)
def vgg_small(input_shape: tuple[int, ...], num_classes: int) -> nn.Module:
    """LDP-FL's CIFAR-10 network (paper section 5). The paper only says it redesigned "a
    small VGG"; our reading keeps VGG's defining trait, stacks of 3x3 'same'
    convolutions between 2x2 max-pools:

        [conv3x3(32) x2 - pool] - [conv3x3(64) x2 - pool] - [conv3x3(128) x2 - pool]
        - fc128 - fc(num_classes)

    ReLU after every conv and hidden fc; no batch norm and no dropout (neither works
    with per-sample gradients under ``vmap``). About 0.55 M parameters on 3x32x32.
    Accepts images of at least 8x8.
    """
    return ConvPoolNet("vgg_small", input_shape, num_classes, blocks=((32, 32), (64, 64), (128, 128)),
                       kernel_size=3, padding=1, hidden=(128,))

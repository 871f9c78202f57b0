"""ResNet-18 (He et al. 2016) with GroupNorm, KDP-FL's CIFAR-10 model at a smaller depth."""
from __future__ import annotations

import math

from torch import nn

from fedcore.models.registry import MODELS
from fedcore.models.convnet import require_image

GROUPS = 32
SMALL_IMAGE = 64  # at most this many pixels a side: CIFAR stem


def group_norm(channels: int) -> nn.GroupNorm:
    """GroupNorm with 32 groups, or fewer when ``channels`` is not divisible by 32
    (Wu & He 2018). It normalises each sample on its own and keeps no running statistics."""
    return nn.GroupNorm(math.gcd(GROUPS, channels), channels)


@MODELS.register(
    "resnet18",
    summary="ResNet-18 with GroupNorm instead of BatchNorm; 3x3 stem for images <= 64 px.",
    paper="He et al. 2016",
)
def resnet18(input_shape: tuple[int, ...], num_classes: int) -> nn.Module:
    """``torchvision.models.resnet18(weights=None)`` adapted for private federated training.

    KDP-FL trains ResNet-50 on CIFAR-10; METHODS section 4 accepts ResNet-18. Changes
    from torchvision's model, each standard:

    - every BatchNorm is a GroupNorm (32 groups): batch-norm statistics mix the samples
      of a batch and are updated in place, which breaks DP-SGD's per-sample clipping
      and ``torch.func.vmap`` (Opacus makes the same substitution);
    - for images of at most 64 pixels a side (CIFAR, MNIST, digits) the 7x7 stride-2
      stem and its max-pool are replaced by a 3x3 stride-1 convolution, the usual
      CIFAR ResNet-18 (an ImageNet stem would shrink 32x32 to 8x8 at once); larger
      images keep the ImageNet stem;
    - the first convolution takes ``input_shape[0]`` channels.

    About 11.2 M parameters. Accepts any ``(C, H, W)`` image.
    """
    channels, height, width = require_image("resnet18", input_shape, 1)
    import torchvision  # here, not at the top: it costs ~1 s of start-up (torch._dynamo)

    model = torchvision.models.resnet18(weights=None, num_classes=num_classes, norm_layer=group_norm)
    if max(height, width) <= SMALL_IMAGE:
        model.conv1 = nn.Conv2d(channels, 64, kernel_size=3, stride=1, padding=1, bias=False)
        model.maxpool = nn.Identity()
    elif channels != 3:
        model.conv1 = nn.Conv2d(channels, 64, kernel_size=7, stride=2, padding=3, bias=False)
    nn.init.kaiming_normal_(model.conv1.weight, mode="fan_out", nonlinearity="relu")
    return model

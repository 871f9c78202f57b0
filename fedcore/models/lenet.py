"""LeNet-5 (LeCun et al. 1998), the CIFAR-10 CNN of ULDP-FED."""
from __future__ import annotations

from torch import nn

from fedcore.models.registry import MODELS
from fedcore.models.convnet import ConvPoolNet


@MODELS.register(
    "lenet5",
    summary="LeNet-5: conv5x5(6)-pool-conv5x5(16)-pool-fc120-fc84-fc, no padding.",
    paper="ULDP-FED (seed 004)",
)
def lenet5(input_shape: tuple[int, ...], num_classes: int) -> nn.Module:
    """ULDP-FED's CIFAR-10 CNN (paper section 4.1): conv5x5(6) - pool2x2 - conv5x5(16) -
    pool2x2 - fc120 - fc84 - fc(num_classes), ReLU and max-pooling (the modern LeNet-5
    of the PyTorch CIFAR-10 tutorial).

    Unpadded: 62,006 parameters on 3x32x32 with 10 classes; on 1x28x28 the feature map
    is 16x4x4. Needs images of at least 16x16, so it refuses the 8x8 digits.
    """
    return ConvPoolNet("lenet5", input_shape, num_classes, blocks=((6,), (16,)),
                       kernel_size=5, padding=0, hidden=(120, 84))
